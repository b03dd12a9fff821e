"""Score decoded predictions with the dataset's metric (and the usual companions).

This maps each canonical schema onto the inputs :mod:`workers.engine.metrics` expects,
and picks the negative class that BLURB's relation metrics leave out (ChemProt ``false``,
DDI ``DDI-false``, GAD ``0``): METRICS.md's micro F1 counts only the positive classes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
    dataset: DatasetSpec,
    labels: LabelSpace,
    rows: Sequence[dict],
    predicted: Sequence,
    logits: np.ndarray | None = None,
) -> dict[str, float | None]:
    """``{metric slug: value}`` for the dataset's metric and its schema's companions.

    A metric that is undefined on this split (Pearson of a single pair, AUC with one class)
    is ``None`` rather than an error, so a tiny dev split cannot abort a whole grid.
    """
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
        try:
            if slug == "roc-auc":
                scores[slug] = _roc_auc(labels, gold, logits)
            else:
                scores[slug] = METRICS[slug](gold, pred, **options)
        except ValueError:
            scores[slug] = None
    return scores


def _roc_auc(labels: LabelSpace, gold: list, logits: np.ndarray | None) -> float:
    """AUC from the model's scores: the positive class's logit margin, or per-label logits."""
    if logits is None:
        raise ValueError("ROC AUC needs the model's scores")
    if labels.kind == "multi":
        matrix = np.array([[name in row for name in labels.names] for row in gold])
        return METRICS["roc-auc"](matrix, logits)
    negative = negative_label(labels)
    positive = next(i for i, name in enumerate(labels.names) if name != negative)
    margin = logits[:, positive] - np.delete(logits, positive, axis=1).max(axis=1)
    return METRICS["roc-auc"](gold, margin, positive=labels.names[positive])
