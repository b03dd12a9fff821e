"""A job's per-class test figures (ChemProt's relation types, PICO's elements, NER's entity types, HoC's hallmarks).

The figures are the dataset's own metric taken apart: its ``per_class`` counts
(:meth:`biolm.specs.MetricSpec.class_counts`), read from the stored test predictions by the
formulation that scored them (rebuilt as :func:`workers.engine.withheld.gold_scoring` rebuilds it),
so a class's counts pooled with the others give back the recorded micro score. Each run's
precision, recall and F1 per class are combined over seeds and folds with the protocol's own
statistic (:func:`biolm.protocols.combine`), as the recorded value is.

Only aggregates leave this module, and only for classes with at least :data:`MIN_SUPPORT` gold
instances in the test split (relation pairs, entity mentions, words, abstracts): with fewer, a
figure would come close to telling which examples carry the class. Classes below it are counted,
never named. Nothing per example is returned.

Where the dataset's files merged its classes but the import kept them aside (JNLPBA: BLURB's
untyped B/I/O, GENIA's five types from the typed copy of the test split, the gold copy's
``test_types``), the model's untyped spans are counted against each type's gold mentions: a
type's recall and support are told, its precision and F1 are None (an untyped prediction belongs
to no type).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from biolm.contract import ResultsDocument, parse_run_key
from biolm.protocols import RunValue, combine
from workers.engine.bootstrap import Data, split_parts
from workers.engine.metrics.common import Counts, scores_of
from workers.engine.withheld import gold_scoring

MIN_SUPPORT = 10  # gold instances a class needs in the test split before any figure of it is shown


@dataclass(frozen=True)
class ClassFigure:
    """One class's test figures: support (gold instances) and P/R/F1 on the 0-100 scale, runs combined."""

    name: str
    support: int
    precision: float | None  # None: the predictions carry no class (untyped spans against typed gold)
    recall: float
    f1: float | None


@dataclass(frozen=True)
class ClassBreakdown:
    """The classes shown (most gold instances first) and how many others had too few to show."""

    classes: tuple[ClassFigure, ...]
    below_threshold: int
    min_support: int

    def to_json(self) -> dict:
        return {
            "classes": [asdict(figure) for figure in self.classes],
            "below_threshold": self.below_threshold,
            "min_support": self.min_support,
        }


def per_class_figures(
    results: ResultsDocument, tokenizer_dir: Path, withheld: Data, gold: Data, min_support: int = MIN_SUPPORT
) -> ClassBreakdown | None:
    """The job's per-class figures on test; None when its metric has fewer than two classes or no per-class counts.

    ``withheld`` and ``gold`` are as for :func:`workers.engine.bootstrap.resampled_values` (one copy,
    or ``{fold: copy}`` under cross-validation); a class's support is its gold instances summed
    over the folds' test splits.
    """
    if not any(results.predictions.values()):
        return None
    predictions = {key: rows for key, rows in results.predictions.items() if rows}
    runs: dict[str, dict[int | None, list[tuple[int | None, int | str, Counts]]]] = {}
    for _, withheld_copy, gold_copy, run_keys in split_parts(results, predictions, withheld, gold, "per-class"):
        scoring = gold_scoring(results, tokenizer_dir, withheld_copy, gold_copy)
        typed = _typed_gold(gold_copy, scoring.rows)
        for key in run_keys:
            predicted, _ = scoring.run_inputs(results, key)
            counts = scoring.formulation.class_counts(scoring.rows, predicted, typed)
            if counts is None:
                return None
            fold, seed = parse_run_key(key)
            for name, count in counts.items():
                runs.setdefault(str(name), {}).setdefault(fold, []).append((fold, seed, count))
    if len(runs) < 2:  # one class (untyped NER): its figure is the score itself
        return None
    shown = [_figure(name, by_fold, results.statistic) for name, by_fold in runs.items()]
    kept = sorted((f for f in shown if f.support >= min_support), key=lambda f: (-f.support, f.name))
    return ClassBreakdown(tuple(kept), len(shown) - len(kept), min_support)


def _typed_gold(gold: Data, rows: list[dict]) -> list[list[str]] | None:
    """The typed test tags of ``rows`` (by example id) when the import kept them (``test_types``), else None."""
    types = getattr(gold, "test_types", None)
    if not types:
        return None
    missing = [row["id"] for row in rows if row["id"] not in types]
    if missing:
        raise ValueError(f"the typed test gold lacks {len(missing)} test examples (first {missing[0]!r})")
    return [types[row["id"]] for row in rows]


def _figure(name: str, by_fold: dict, statistic: str) -> ClassFigure:
    """One class's figures: each run's P/R/F1, combined over seeds then folds as the recorded value is.

    Without predicted counts (untyped predictions, typed gold) only recall is combined.
    """
    support = sum(entries[0][2].gold for entries in by_fold.values())  # every seed of a fold has the same gold
    untyped = any(count.predicted is None for entries in by_fold.values() for _, _, count in entries)
    scored = [
        (fold, seed, scores_of(count._replace(predicted=count.tp) if untyped else count))
        for entries in by_fold.values()
        for fold, seed, count in entries
    ]
    values: dict[str, float | None] = {}
    for field in ("precision", "recall", "f1"):
        summary = combine([RunValue(fold, seed, getattr(prf, field)) for fold, seed, prf in scored], statistic)
        values[field] = round(summary.value, 4) if summary is not None else 0.0
    if untyped:
        values["precision"] = values["f1"] = None
    return ClassFigure(name, support, **values)
