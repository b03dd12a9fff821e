"""The per-class tables an include template shows (``leaderboard/_per_class.html``), read where they are shown.

A tag rather than view context, so the model and dataset pages each gain the section with one
``{% include %}`` line and their views stay as they are.
"""

from django import template

from leaderboard import per_class_tables
from registry.models import Dataset, LanguageModel

register = template.Library()


@register.simple_tag(takes_context=True)
def class_tables(context: template.Context, model: LanguageModel | None = None, dataset: Dataset | None = None) -> list:
    """The model's tables (its page checked it is visible), or those of the models the reader may see on ``dataset``.

    An include passes the variable it was given; the other is unset (an empty string), hence truth tests.
    """
    if model:
        return per_class_tables.for_model(model)
    if dataset:
        user = context["request"].user
        return per_class_tables.for_dataset(dataset, LanguageModel.objects.visible_to(user))
    return []


@register.simple_tag
def class_tables_missing(dataset: Dataset | None = None) -> str:
    """One line saying why ``dataset`` has no per-type figures
    (:func:`leaderboard.per_class_tables.missing_reason`), or ''."""
    return per_class_tables.missing_reason(dataset) if dataset else ""
