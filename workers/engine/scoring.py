"""Score decoded predictions with the dataset's metric (and the usual companions).

This maps each canonical schema onto the inputs :mod:`workers.engine.metrics` expects,
and picks the negative class that BLURB's relation metrics leave out (ChemProt ``false``,
DDI ``DDI-false``, GAD ``0``): METRICS.md's micro F1 counts only the positive classes.
"""

from __future__ import annotations

from collections.abc import Sequence

from biolm.specs import DatasetSpec
from workers.engine.encoding import LabelSpace
from workers.engine.metrics import METRICS

NEGATIVE_LABELS = ("false", "DDI-false", "0")
NEEDS_NEGATIVE = {"micro-f1", "binary-f1", "precision", "recall"}

COMPANIONS = {
    "token-tagging": ("entity-precision", "entity-recall", "entity-f1"),
    "classification": ("accuracy", "macro-f1"),
    "relation": ("accuracy", "macro-f1"),
    "regression": ("pearson",),
}


def negative_label(labels: LabelSpace) -> str | None:
    return next((name for name in NEGATIVE_LABELS if name in labels.names), None)


def gold_values(schema: str, labels: LabelSpace, rows: Sequence[dict]) -> list:
    if schema == "token-tagging":
        return [list(row["tags"]) for row in rows]
    if schema == "regression":
        return [float(row["score"]) for row in rows]
    if schema == "relation":
        return [row["label"] for row in rows]
    if labels.kind == "multi":
        return [frozenset(row["labels"]) for row in rows]
    return [row["labels"][0] for row in rows]


def score_predictions(
    dataset: DatasetSpec, labels: LabelSpace, rows: Sequence[dict], predicted: Sequence
) -> dict[str, float]:
    """``{metric slug: value}`` for the dataset's metric and its schema's companions."""
    schema = dataset.adapter.schema
    gold = gold_values(schema, labels, rows)
    pred = [frozenset(p) for p in predicted] if labels.kind == "multi" else list(predicted)
    slugs = list(dict.fromkeys((dataset.metric, *COMPANIONS.get(schema, ()))))
    if (
        schema == "token-tagging"
        and any(name.startswith("I-") for name in labels.names)
        and dataset.task_type == "pico"
    ):
        slugs = [s for s in slugs if not s.startswith("entity-")] or [dataset.metric]
    scores = {}
    negative = negative_label(labels)
    for slug in slugs:
        options = {}
        if slug in NEEDS_NEGATIVE and labels.kind != "multi":
            if negative is None:
                continue  # no negative class to leave out: micro F1 would equal accuracy
            options["negative"] = negative
        if slug == "macro-f1" and labels.kind != "multi":
            options["labels"] = [name for name in labels.names if name != negative] if negative else list(labels.names)
        if slug == "roc-auc":
            continue  # needs scores, not labels: computed from logits by the caller when the metric asks for it
        scores[slug] = METRICS[slug](gold, pred, **options)
    return scores
