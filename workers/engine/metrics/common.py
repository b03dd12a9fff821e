"""Counting helpers shared by the metric modules: P/R/F from counts, alignment, label matrices."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, NamedTuple

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
