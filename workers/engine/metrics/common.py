"""Counting helpers shared by the metric modules: P/R/F from counts, alignment, label matrices, statistics."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np


class PRF(NamedTuple):
    """Precision, recall and F1 on the 0-100 scale."""

    precision: float
    recall: float
    f1: float


class Counts(NamedTuple):
    """One class's counts, from which its precision, recall and F1 follow (:func:`prf`).

    ``gold`` is also the class's support: how many gold instances (relation pairs, entity mentions,
    words, abstracts) it has in the scored examples. ``predicted`` is None where predictions carry
    no class (untyped NER spans counted against typed gold): then only recall is defined.
    """

    tp: int
    predicted: int | None
    gold: int


def total(counts: Iterable[Counts]) -> Counts:
    """The counts of several classes pooled: what a micro average over them scores."""
    tp = predicted = gold = 0
    for c in counts:
        tp, predicted, gold = tp + c.tp, predicted + c.predicted, gold + c.gold
    return Counts(tp, predicted, gold)


def scores_of(counts: Counts) -> PRF:
    """Precision, recall and F1 (0-100) of one class's counts."""
    return PRF(*(float(v) for v in prf(counts.tp, counts.predicted, counts.gold)))


def prf(tp: Any, n_pred: Any, n_gold: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P, R, F (0-100) from counts, elementwise; 0 where undefined. F = 2TP / (#pred + #gold)."""
    tp, n_pred, n_gold = (np.asarray(a, dtype=float) for a in (tp, n_pred, n_gold))
    zeros = np.zeros(np.broadcast(tp, n_pred, n_gold).shape)
    p = np.divide(tp, n_pred, out=zeros.copy(), where=n_pred > 0)
    r = np.divide(tp, n_gold, out=zeros.copy(), where=n_gold > 0)
    f = np.divide(2 * tp, n_pred + n_gold, out=zeros.copy(), where=(n_pred + n_gold) > 0)
    return 100 * p, 100 * r, 100 * f


def check_aligned(gold: Sequence, pred: Sequence, what: str = "examples") -> None:
    """Raise unless gold and pred have one item each: a metric never drops what it cannot pair."""
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} {what} but pred has {len(pred)}; nothing may be dropped")


def sets_to_matrix(rows: Sequence[Iterable[Hashable]], names: Sequence[Hashable]) -> np.ndarray:
    """Boolean example x name matrix; members outside ``names`` are ignored."""
    column = {name: j for j, name in enumerate(names)}
    matrix = np.zeros((len(rows), len(names)), dtype=bool)
    for i, row in enumerate(rows):
        matrix[i, [column[x] for x in row if x in column]] = True
    return matrix


@dataclass(frozen=True)
class Sufficient:
    """A metric's per-example sufficient statistics and the formula that turns their sums into its value.

    ``per_example`` is ``(examples, k)``: row ``i`` holds what example ``i`` adds to the metric's
    counts (true positives, predicted and gold positives, correct answers, ...). The metric's value
    on any multiset of the examples is ``value(sum of their rows)``, so a bootstrap resample drawn
    with ``counts[i]`` copies of example ``i`` scores ``value(counts @ per_example)`` without
    reading a single prediction again. ``value`` takes sums of shape ``(..., k)`` and returns the
    values ``(...)`` elementwise, NaN where the metric is undefined. A metric that decomposes
    computes its own value as :meth:`total`, so the bootstrap and the metric are one implementation.
    """

    per_example: np.ndarray
    value: Callable[[np.ndarray], np.ndarray]

    def total(self) -> float:
        """The metric's value on the examples themselves: the formula applied to the plain sums."""
        return float(self.value(self.per_example.sum(0)))

    def resampled(self, counts: np.ndarray) -> np.ndarray:
        """``(resamples,)`` values, ``counts[r, i]`` being how often resample ``r`` drew example ``i``.

        Exact for count statistics: integer sums below 2**53 are exact in float64, whatever the order.
        """
        return self.value(np.asarray(counts, dtype=np.float64) @ self.per_example.astype(np.float64))


def prf_value(which: int) -> Callable[[np.ndarray], np.ndarray]:
    """The formula of precision (0), recall (1) or F1 (2) from summed ``(tp, #predicted, #gold)``."""

    def value(sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums)
        return prf(sums[..., 0], sums[..., 1], sums[..., 2])[which]

    return value


def mean_f1_value(classes: int, only_present: bool) -> Callable[[np.ndarray], np.ndarray]:
    """Mean F1 over ``classes`` from summed (tp..., #predicted..., #gold...) columns.

    ``only_present``: the classes are those seen (the default of macro F1 without ``labels``), so a
    resample averages over the classes it drew in gold or predictions; 0 when there is none.
    """

    def value(sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums, dtype=np.float64)
        tp, n_pred, n_gold = (sums[..., k * classes : (k + 1) * classes] for k in range(3))
        f1 = prf(tp, n_pred, n_gold)[2]
        count = ((n_pred + n_gold) > 0).sum(-1) if only_present else np.full(sums.shape[:-1], classes)
        if only_present:
            f1 = f1 * ((n_pred + n_gold) > 0)
        return np.divide(f1.sum(-1), count, out=np.zeros(count.shape), where=count > 0)

    return value


Metric = TypeVar("Metric", bound=Callable[..., float])


def decomposes(statistics: Callable[..., Sufficient | None]) -> Callable[[Metric], Metric]:
    """Mark a metric as a function of summed per-example statistics (its ``sufficient_statistics``).

    ``statistics`` takes the metric's arguments and options and returns its :class:`Sufficient`,
    or None when these options make the metric depend on more than sums (the bootstrap then
    scores each resample with the metric itself). It raises the metric's own ``ValueError`` when
    the metric is undefined on the examples given.
    """

    def mark(metric: Metric) -> Metric:
        metric.sufficient_statistics = statistics  # type: ignore[attr-defined]
        return metric

    return mark


def vectorised(resampled: Callable[..., np.ndarray]) -> Callable[[Metric], Metric]:
    """Mark a metric that does not decompose with its form over many resamples at once (``resampled``).

    ``resampled(gold, pred, drawn, **options)`` takes the ``(resamples, examples)`` indices of
    :func:`biolm.significance.resample_indices` and returns ``(resamples,)`` values, NaN where the
    metric raises its ``ValueError`` on that resample.
    """

    def mark(metric: Metric) -> Metric:
        metric.resampled = resampled  # type: ignore[attr-defined]
        return metric

    return mark
