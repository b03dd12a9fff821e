"""Score decoded predictions with the task's metrics, each computed through its plugin spec.

The metrics are the dataset's own and its task type's companions (:attr:`Task.metric_slugs`).
Each :class:`~biolm.specs.MetricSpec` says what it reads: decoded predictions, or the model's
scores (ROC AUC), and which dataset facts it takes as options -- ``labels`` (the label names of
a single-label dataset) and ``negative`` (the class METRICS.md's "positive class" metrics leave
out: ChemProt ``false``, DDI ``DDI-false``, GAD ``0``, declared on the dataset's spec).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from biolm.specs import MetricSpec
from workers.engine.encoding import LabelSpace
from workers.engine.metrics.common import Counts
from workers.engine.task import Task


def negative_label(task: Task, labels: LabelSpace) -> str | None:
    """The dataset's negative class when it has one and the task is single-label."""
    negative = task.dataset.negative_label
    return negative if negative and labels.kind == "single" and negative in labels.names else None


def metric_context(task: Task, labels: LabelSpace) -> dict[str, Any]:
    """The dataset facts a metric may ask for (``MetricSpec.context``); None where they do not apply."""
    return {
        "labels": list(labels.names) if labels.kind == "single" else None,
        "negative": negative_label(task, labels),
    }


def compute_metric(spec: MetricSpec, gold: Any, predicted: Any, context: dict[str, Any], **extra: Any) -> float | None:
    """One metric's value, or None when it is undefined on these inputs (its ValueError)."""
    options = {name: context[name] for name in spec.context if context.get(name) is not None}
    try:
        return spec.compute(gold, predicted, **options, **extra)
    except ValueError:
        return None


def score_predictions(
    task: Task,
    labels: LabelSpace,
    rows: Sequence[dict],
    predicted: Sequence,
    logits: np.ndarray | None = None,
    gold: Sequence | None = None,
) -> dict[str, float | None]:
    """``{metric slug: value}`` for the task's metrics.

    ``gold`` defaults to the schema's gold values of ``rows``. A metric undefined on this split
    (Pearson of a single pair, AUC with one class) is ``None`` rather than an error, so a tiny
    dev split cannot abort a whole grid.
    """
    gold, pred = metric_inputs(task, labels, rows, predicted, gold)
    context = metric_context(task, labels)
    scores: dict[str, float | None] = {}
    for slug in task.metric_slugs:
        spec = task.metric(slug)
        if spec.inputs == "scores":
            scores[slug] = _score_from_logits(spec, task, labels, gold, logits, context)
        else:
            scores[slug] = compute_metric(spec, gold, pred, context)
    return scores


def metric_inputs(
    task: Task, labels: LabelSpace, rows: Sequence[dict], predicted: Sequence, gold: Sequence | None = None
) -> tuple[list, list]:
    """(gold, predictions) as the metrics read them: the schema's gold of ``rows`` unless given, label sets as sets."""
    multi = labels.kind == "multi"
    gold = list(gold) if gold is not None else task.schema.gold(rows, multi)
    pred = [frozenset(p) for p in predicted] if multi else list(predicted)
    return gold, pred


def class_counts(
    task: Task,
    labels: LabelSpace,
    rows: Sequence[dict],
    predicted: Sequence,
    gold: Sequence | None = None,
    typed_gold: Sequence | None = None,
) -> dict[Any, Counts] | None:
    """``{class: Counts}`` of the dataset's own metric on these predictions; None when it has no classes.

    The metric's ``per_class`` function gets the inputs and options :func:`score_predictions`
    gives the metric itself, so pooling the counts gives back the metric's micro score.
    ``typed_gold``: the rows' tags with the entity types the dataset's own files merged (JNLPBA),
    passed on so untyped predictions are counted per gold type (recall only; see
    :func:`workers.engine.metrics.tagging.entity_counts`).
    """
    spec = task.metric(task.dataset.metric)
    if spec.per_class is None or spec.inputs != "predictions":
        return None
    gold, pred = metric_inputs(task, labels, rows, predicted, gold)
    context = metric_context(task, labels)
    options = {name: context[name] for name in spec.context if context.get(name) is not None}
    if typed_gold is not None:
        options["typed_gold"] = list(typed_gold)
    return spec.class_counts(gold, pred, **options)


def _score_from_logits(
    spec: MetricSpec, task: Task, labels: LabelSpace, gold: list, logits: np.ndarray | None, context: dict
) -> float | None:
    """Metrics of the model's scores: per-label logits (multi-label), or the positive class's margin."""
    if logits is None:
        return None
    if labels.kind == "multi":
        matrix = np.array([[name in row for name in labels.names] for row in gold])
        return compute_metric(spec, matrix, logits, context)
    negative = negative_label(task, labels)
    positive = next(i for i, name in enumerate(labels.names) if name != negative)
    margin = logits[:, positive] - np.delete(logits, positive, axis=1).max(axis=1)
    return compute_metric(spec, gold, margin, context, positive=labels.names[positive])
