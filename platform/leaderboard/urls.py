import datetime

from django.urls import path, register_converter

from leaderboard import dev_example_views, model_page, predictions, views


class IsoDate:
    """A snapshot's date, ``YYYY-MM-DD``: one that no calendar has (``2026-02-30``, ``9999-99-99``) matches no URL,
    so every view that takes a date answers 404 for it rather than 500 from the database's date parsing."""

    regex = r"\d{4}-\d{2}-\d{2}"

    def to_python(self, value: str) -> str:
        datetime.date.fromisoformat(value)  # its ValueError tells Django's resolver that this pattern does not match
        return value

    def to_url(self, value) -> str:
        return str(value)


register_converter(IsoDate, "isodate")


class ModelSlug:
    """A language model's slug as plugin specs write it: biolm.name_patterns.SLUG_RE allows '.' (a published model's
    ``bioformer--biobert-base-v1.1``), which Django's ``<slug:>`` does not, so such a model had no page."""

    regex = r"[-a-zA-Z0-9_.]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)


register_converter(ModelSlug, "model_slug")


class ModelNamespace:
    """The owner part of a model's ``owner/name`` address: a username (Django's default validator allows
    letters, digits and ``@.+-_``) or ``papers``."""

    regex = r"[\w.@+-]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)


register_converter(ModelNamespace, "model_namespace")

app_name = "leaderboard"

urlpatterns = [
    path("", views.index, name="index"),
    path("how-ranks-work/", views.how_ranks, name="how-ranks"),
    path("leaderboard/<slug:slug>/", views.benchmark, name="benchmark"),
    path("leaderboard/<slug:slug>/export.<str:format>", views.export, name="export"),
    path("leaderboard/<slug:slug>/<isodate:date>/", views.snapshot, name="snapshot"),
    path("leaderboard/<slug:slug>/<isodate:date>/citation.bib", views.snapshot_bibtex, name="snapshot-bibtex"),
    path("compare/", views.compare, name="compare"),
    path("exports/results.jsonl", views.results_file, name="results-latest"),
    path("exports/results-<isodate:date>.jsonl", views.results_file, name="results-file"),
    path("models/<model_namespace:namespace>/<model_slug:name>/", model_page.model_detail, name="model"),
    path(
        "models/<model_namespace:namespace>/<model_slug:name>/predictions/<int:result_id>.jsonl",
        predictions.predictions,
        name="predictions",
    ),
    path(
        "models/<model_namespace:namespace>/<model_slug:name>/dev-examples/<int:result_id>/",
        dev_example_views.dev_example_page,
        name="dev-examples",
    ),
    # A model's URLs before addresses were owner/name: a redirect for whoever may see it, else 404.
    path("models/<model_slug:slug>/", model_page.moved_model, name="model-moved"),
    path(
        "models/<model_slug:slug>/predictions/<int:result_id>.jsonl", model_page.moved_model, name="predictions-moved"
    ),
]
