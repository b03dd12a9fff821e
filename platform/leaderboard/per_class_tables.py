"""Per-class scores on the model and dataset pages: ChemProt's and DDI's relation types, PICO's elements,
NER's entity types, HoC's hallmarks.

The figures are computed once, when a result is recorded (:func:`leaderboard.recording.record`
through :mod:`workers.engine.per_class_counts`), from the stored test predictions, and stored as
:class:`~leaderboard.models.ResultClasses`. What is stored is already safe to show: aggregates per
class (support, precision, recall and F1, seeds combined), only for classes with at least ten
gold instances in the test split, and never anything per example. This module only reads them
for the pages and the API, so a page costs one query whatever the number of results.

Where the dataset's files merged its classes and the predictions are untyped (JNLPBA: BLURB's
B/I/O, scored per GENIA type against the typed test copy the import kept), a row has recall and
support only: precision and F1 are None, since no untyped prediction belongs to a type.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from leaderboard.models import ResultClasses
from registry.models import Dataset, LanguageModel

# Display names of classes whose stored names are codes (EBM PICO's element tags).
CLASS_NAMES = {"PAR": "Participants (P)", "INT": "Interventions (I)", "OUT": "Outcomes (O)"}

# What one gold instance of a class is, by the metric that counts it.
UNITS = {
    "entity-f1": "entity mentions",
    "entity-precision": "entity mentions",
    "entity-recall": "entity mentions",
    "token-macro-f1": "words",
    "average-micro-f1": "abstracts",
}


@dataclass(frozen=True)
class ClassRow:
    """One class's figures as a table row."""

    name: str
    support: int
    precision: float | None  # None: untyped predictions against typed gold, not attributable to a class
    recall: float
    f1: float | None


@dataclass(frozen=True)
class ClassTable:
    """One result's per-class figures: whose, on what, the rows, and how many classes were too small to show."""

    model: LanguageModel
    dataset: Dataset
    metric_name: str
    unit: str
    rows: list[ClassRow]
    below_threshold: int
    min_support: int
    n_seeds: int | None
    anchor: str

    @property
    def recall_only(self) -> bool:
        """True when the predictions carry no class (untyped spans): only recall and support are defined."""
        return any(row.precision is None for row in self.rows)

    @property
    def caption(self) -> str:
        runs = f"; {self.n_seeds} runs combined as the score is" if self.n_seeds and self.n_seeds > 1 else ""
        return f"{self.model.name} on {self.dataset.name}: {self.metric_name} per class, test split (0-100{runs})"


def table_of(row: ResultClasses) -> ClassTable:
    """A stored breakdown as the pages show it."""
    result, figures = row.result, row.figures
    rows = [
        ClassRow(CLASS_NAMES.get(c["name"], c["name"]), c["support"], c["precision"], c["recall"], c["f1"])
        for c in figures.get("classes", [])
    ]
    return ClassTable(
        model=result.language_model,
        dataset=result.dataset,
        metric_name=result.metric.name,
        unit=UNITS.get(result.metric.slug, "examples"),
        rows=rows,
        below_threshold=int(figures.get("below_threshold", 0)),
        min_support=int(figures.get("min_support", 10)),
        n_seeds=result.n_seeds,
        anchor=f"classes-{result.dataset.slug}-{result.pk}",
    )


def missing_reason(dataset: Dataset) -> str:
    """Why ``dataset`` shows no per-class figures though its classes exist in the corpus ('' when nothing to say).

    A dataset whose adapter reads typed test gold beside its files (``test_types``: JNLPBA) has
    per-type figures only when its latest import found that copy.
    """
    adapter = dataset.adapter or {}
    if not adapter.get("test_types"):
        return ""
    from registry.imports import typed_gold_path  # loads the datasets library: only for such datasets

    imported = dataset.imports.order_by("-imported_at").first()
    if imported is not None and typed_gold_path(imported.stored_path).is_file():
        return ""
    return (
        f"{dataset.name}'s files merge its entity types and its import had no typed copy of the test split "
        "beside them (crichton-IOB/test.tsv), so no per-type figures can be shown."
    )


def _stored() -> QuerySet[ResultClasses]:
    return ResultClasses.objects.select_related("result__language_model", "result__dataset", "result__metric")


def for_model(model: LanguageModel) -> list[ClassTable]:
    """The model's per-class tables, one per result that has them, by dataset name (the caller checked visibility)."""
    rows = _stored().filter(result__language_model=model).order_by("result__dataset__name", "result__metric__name")
    return [table_of(row) for row in rows]


def for_dataset(dataset: Dataset, visible: QuerySet[LanguageModel]) -> list[ClassTable]:
    """Per-class tables of the models the reader may see on ``dataset``: the dataset's metric, best result first."""
    rows = (
        _stored()
        .filter(result__dataset=dataset, result__metric=dataset.metric_id, result__language_model__in=visible)
        .order_by("-result__value" if dataset.metric.higher_is_better else "result__value", "result__pk")
    )
    return [table_of(row) for row in rows]
