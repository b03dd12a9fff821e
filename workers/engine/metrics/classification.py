"""Scores of labels and real-valued outputs: classification F1 variants, HoC, accuracy, Pearson, ROC AUC."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from workers.engine.metrics.common import (
    Counts,
    Sufficient,
    check_aligned,
    decomposes,
    mean_f1_value,
    prf,
    prf_value,
    sets_to_matrix,
    vectorised,
)


def _is_multilabel(values: Any) -> bool:
    """Multi-label input is a 2-D array or a sequence of rows/sets; one hashable per example is not."""
    if isinstance(values, np.ndarray):
        return values.ndim == 2
    return len(values) > 0 and isinstance(values[0], (set, frozenset, list, tuple, np.ndarray))


def _indicator(gold: Any, pred: Any, labels: Sequence[Hashable] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Boolean example x label matrices from 0/1 rows or from one set of labels per example."""
    check_aligned(gold, pred)
    if any(len(rows) and isinstance(rows[0], (set, frozenset)) for rows in (gold, pred)):
        names = sorted(set().union(*gold, *pred), key=str) if labels is None else list(labels)
        return sets_to_matrix(gold, names), sets_to_matrix(pred, names)
    g, p = np.asarray(gold), np.asarray(pred)
    if g.shape != p.shape or g.ndim != 2:
        raise ValueError(f"multi-label gold and pred must be matrices of one shape, got {g.shape} and {p.shape}")
    if labels is not None:
        raise ValueError("labels= names the classes of label sets; with 0/1 matrices select the columns yourself")
    return g.astype(bool), p.astype(bool)


def _encode(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray, list[Hashable]]:
    """Integer codes of any hashable labels, so counting is numpy's bincount, not Python loops."""
    check_aligned(gold, pred)
    vocabulary: dict[Hashable, int] = {}
    g = np.fromiter((vocabulary.setdefault(x, len(vocabulary)) for x in gold), dtype=np.int64, count=len(gold))
    p = np.fromiter((vocabulary.setdefault(x, len(vocabulary)) for x in pred), dtype=np.int64, count=len(pred))
    return g, p, list(vocabulary)


def _as_set(value: Any) -> set:
    if value is None:
        return set()
    return set(value) if isinstance(value, (list, tuple, set, frozenset)) else {value}


def _positive_labels(seen: Iterable[Hashable], positive: Any, negative: Any, labels: Any) -> set:
    """The classes that count as positive, in order of precedence.

    ``positive`` (one label or several), else ``labels`` minus ``negative``, else every label seen
    minus ``negative`` (ChemProt: ``negative="false"``, DDI: ``"DDI-false"``), else, for 0/1 labels
    only, the class 1. Anything else raises: guessing the negative class of a relation set would
    silently turn micro F1 into accuracy.
    """
    if positive is not None:
        return _as_set(positive)
    if labels is not None:
        return set(labels) - _as_set(negative)
    seen = set(seen)
    if negative is not None:
        return seen - _as_set(negative)
    if seen <= {0, 1}:
        return {1}
    if seen <= {"0", "1"}:
        return {"1"}
    raise ValueError(f"say which classes are positive (positive=, negative= or labels=); labels seen: {sorted(seen)}")


def _positive_counts(gold: Any, pred: Any, positive: Any, negative: Any, labels: Any) -> np.ndarray:
    """``(examples, 3)``: each example's (TP, #predicted positive, #gold positive), as METRICS.md defines them.

    ChemProt/DDI/GAD pool these over the positive classes: the summed rows are the pooled
    :func:`class_counts`, so micro scores and the per-class figures come from one count.
    """
    if (_is_multilabel(gold) or _is_multilabel(pred)) and (positive is not None or negative is not None):
        raise ValueError("multi-label rows have no negative class: every label is positive; use labels=")
    return class_statistics(gold, pred, positive=positive, negative=negative, labels=labels)[1].sum(axis=2)


def class_statistics(
    gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None
) -> tuple[list[Hashable], np.ndarray]:
    """(classes, ``(examples, 3, classes)``): each example's (TP, #predicted, #gold) per counted class.

    The classes are :func:`class_counts`'s, which are these rows summed. Single-label: the classes
    :func:`_positive_labels` picks (ChemProt's relation types without ``false``), in the order of
    ``labels`` when given; a predicted negative is a miss of the gold class, as in the micro score.
    Multi-label rows (HoC): every label, named by the label sets or, for a 0/1 matrix, by column
    number; ``negative`` leaves names out, as macro F1 does.
    """
    if _is_multilabel(gold) or _is_multilabel(pred):
        if positive is not None:
            raise ValueError("multi-label rows have no single positive class; use labels=")
        if any(len(rows) and isinstance(rows[0], (set, frozenset)) for rows in (gold, pred)):
            names = list(labels) if labels is not None else sorted(set().union(*gold, *pred), key=str)
            names = [x for x in names if x not in _as_set(negative)]
            g, p = _indicator(gold, pred, names)
        else:
            g, p = _indicator(gold, pred, labels)
            names = list(range(g.shape[1]))
        return names, np.stack([g & p, p, g], axis=1).astype(np.int64)
    g, p, vocabulary = _encode(gold, pred)
    wanted = _positive_labels(vocabulary, positive, negative, labels)
    ordered = [x for x in dict.fromkeys([*(labels if labels is not None else ()), *vocabulary]) if x in wanted]
    ordered += sorted(wanted - set(ordered), key=str)  # a positive= class never seen
    return ordered, _one_hot_counts(g, p, vocabulary, ordered)


def _one_hot_counts(g: np.ndarray, p: np.ndarray, vocabulary: list[Hashable], names: list[Hashable]) -> np.ndarray:
    """``(examples, 3, names)`` 0/1 (TP, predicted, gold) of single-label codes; a name never seen counts 0."""
    index = {x: j for j, x in enumerate(vocabulary)}
    ids = np.array([index.get(name, -1) for name in names], dtype=np.int64)  # -1 matches no code
    gold_is, pred_is = g[:, None] == ids, p[:, None] == ids
    return np.stack([gold_is & pred_is, pred_is, gold_is], axis=1).astype(np.int64)


def class_counts(
    gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None
) -> dict[Hashable, Counts]:
    """Each counted class's (TP, #predicted, #gold), the parts the positive-class metrics pool or average.

    The summed :func:`class_statistics`, which says which classes count and how.
    """
    names, per_example = class_statistics(gold, pred, positive=positive, negative=negative, labels=labels)
    sums = per_example.sum(0)
    return {name: Counts(int(sums[0, j]), int(sums[1, j]), int(sums[2, j])) for j, name in enumerate(names)}


def _pooled_sufficient(which: int) -> Callable[..., Sufficient]:
    """The sufficient statistics of micro precision (0), recall (1) or F1 (2) over the positive classes.

    The positive classes are fixed by the options or by the labels seen: a resample sees a subset
    of them, and the classes it does not see add nothing to the pooled counts.
    """

    def statistics(
        gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None
    ) -> Sufficient:
        return Sufficient(_positive_counts(gold, pred, positive, negative, labels), prf_value(which))

    return statistics


@decomposes(_pooled_sufficient(2))
def micro_f1(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """Micro F1 over the positive classes (BLURB's ChemProt, DDI, GAD; LitCovid's multi-label rows)."""
    return _pooled_sufficient(2)(gold, pred, positive=positive, negative=negative, labels=labels).total()


@decomposes(_pooled_sufficient(0))
def precision(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """Micro precision over the positive classes: of a binary task, the positive class's precision."""
    return _pooled_sufficient(0)(gold, pred, positive=positive, negative=negative, labels=labels).total()


@decomposes(_pooled_sufficient(1))
def recall(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """Micro recall over the positive classes: of a binary task, the positive class's recall."""
    return _pooled_sufficient(1)(gold, pred, positive=positive, negative=negative, labels=labels).total()


def _binary_sufficient(
    gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None
) -> Sufficient:
    """binary_f1's statistics: the micro F1 statistics of its one positive class."""
    seen = set(gold) | set(pred)
    wanted = _positive_labels(seen, positive, negative, labels)
    if len(wanted) > 1:
        raise ValueError(f"binary-f1 needs one positive class, got {sorted(wanted, key=str)}; use micro-f1")
    return _pooled_sufficient(2)(gold, pred, positive=wanted)


@decomposes(_binary_sufficient)
def binary_f1(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """F1 of the one positive class (GAD, EU-ADR: 1; n2c2 ADE: ``positive="ADE-Drug"``)."""
    return _binary_sufficient(gold, pred, positive=positive, negative=negative, labels=labels).total()


def _macro_sufficient(
    gold: Any, pred: Any, *, labels: Sequence[Hashable] | None = None, negative: Any = None
) -> Sufficient:
    """macro_f1's statistics: per example, its (TP, #predicted, #gold) of each averaged class, flattened."""
    named = labels is not None
    if _is_multilabel(gold) or _is_multilabel(pred):
        sets = any(len(rows) and isinstance(rows[0], (set, frozenset)) for rows in (gold, pred))
        if negative is not None:  # label sets only: 0/1 matrices have no names to drop
            names = labels if labels is not None else sorted(set().union(*gold, *pred), key=str)
            labels = [x for x in names if x not in _as_set(negative)]
        g, p = _indicator(gold, pred, labels)
        per_example, only_present = np.stack([g & p, p, g], axis=1).astype(np.int64), sets and not named
    else:
        g, p, vocabulary = _encode(gold, pred)
        names = [x for x in (labels if labels is not None else vocabulary) if x not in _as_set(negative)]
        per_example, only_present = _one_hot_counts(g, p, vocabulary, names), not named
    classes = per_example.shape[2]
    return Sufficient(per_example.reshape(len(per_example), 3 * classes), mean_f1_value(classes, only_present))


@decomposes(_macro_sufficient)
def macro_f1(gold: Any, pred: Any, *, labels: Sequence[Hashable] | None = None, negative: Any = None) -> float:
    """Unweighted mean of per-class F1 (Lewis et al.'s ChemProt and HoC), as scikit-learn's macro.

    Classes default to every label in gold or pred; ``negative`` drops classes from the mean.
    """
    return _macro_sufficient(gold, pred, labels=labels, negative=negative).total()


def _average_micro_sufficient(
    gold: Any, pred: Any, *, definition: Literal["micro", "blue"] = "micro"
) -> Sufficient | None:
    """average_micro_f1's statistics under ``micro`` (per abstract: TP, #predicted, #gold labels); None for ``blue``.

    BLUE's definition averages per-abstract ratios and takes F1 of the means: not a formula of
    summed counts, so the bootstrap scores it with the metric itself.
    """
    if definition == "blue":
        return None
    if definition != "micro":
        raise ValueError(f"definition must be 'micro' or 'blue', not {definition!r}")
    g, p = _indicator(gold, pred)
    return Sufficient(np.stack([(g & p).sum(1), p.sum(1), g.sum(1)], axis=1).astype(np.int64), prf_value(2))


@decomposes(_average_micro_sufficient)
def average_micro_f1(gold: Any, pred: Any, *, definition: Literal["micro", "blue"] = "micro") -> float:
    """HoC's "average micro F1" over abstracts (rows are abstract-level labels, see pool_by_document).

    ``micro`` (the leaderboard's, as LinkBERT's ``utils_hoc.py`` reproduces BLURB): micro F1
    over the whole abstract x label 0/1 matrix. ``blue`` (BLUE's ``eval_hoc.py``): precision and
    recall per abstract, their means, then F1 of the two means. BLUE divides by zero on an
    abstract without gold labels; here a per-abstract ratio with an empty denominator counts 0, the
    convention BLUE itself uses for an abstract with no predicted label.
    """
    sufficient = _average_micro_sufficient(gold, pred, definition=definition)
    if sufficient is not None:
        return sufficient.total()
    g, p = _indicator(gold, pred)
    if not len(g):
        return 0.0
    doc_p, doc_r, _ = prf((g & p).sum(1), p.sum(1), g.sum(1))
    mean_p, mean_r = doc_p.mean(), doc_r.mean()
    return float(2 * mean_p * mean_r / (mean_p + mean_r)) if mean_p + mean_r else 0.0


def pool_by_document(document_ids: Sequence[Hashable], label_sets: Sequence[Iterable[Hashable]]) -> list[frozenset]:
    """OR sentence labels up to their abstract (HoC), in order of first appearance."""
    check_aligned(document_ids, label_sets)
    pooled: dict[Hashable, set] = {}
    for doc, labels in zip(document_ids, label_sets, strict=True):
        pooled.setdefault(doc, set()).update(labels)
    return [frozenset(v) for v in pooled.values()]


def _share(sums: np.ndarray) -> np.ndarray:
    """100 x correct / examples from summed (correct, examples); NaN without examples."""
    sums = np.asarray(sums, dtype=np.float64)
    return 100 * np.divide(sums[..., 0], sums[..., 1], out=np.full(sums.shape[:-1], np.nan), where=sums[..., 1] > 0)


def _accuracy_sufficient(gold: Any, pred: Any) -> Sufficient:
    """accuracy's statistics: per example, (1 if it matches whole, 1)."""
    check_aligned(gold, pred)
    if not len(gold):
        raise ValueError("accuracy of no examples is undefined")
    if _is_multilabel(gold) or _is_multilabel(pred):
        g, p = _indicator(gold, pred)
        correct = (g == p).all(1)
    else:
        g, p, _ = _encode(gold, pred)
        correct = g == p
    return Sufficient(np.stack([correct, np.ones_like(correct)], axis=1).astype(np.int64), _share)


@decomposes(_accuracy_sufficient)
def accuracy(gold: Any, pred: Any) -> float:
    """Share of exact matches (PubMedQA, BioASQ yes/no, MedNLI); multi-label rows must match whole."""
    return _accuracy_sufficient(gold, pred).total()


# --- real-valued outputs -------------------------------------------------------------------------


RESAMPLE_BLOCK = 64  # resamples gathered at once by the vectorised metrics: (64, examples) floats at a time


def _in_blocks(drawn: np.ndarray, compute: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``compute`` over ``drawn``'s resamples a block at a time, so memory stays ``RESAMPLE_BLOCK x examples``."""
    drawn = np.asarray(drawn)
    return np.concatenate([compute(drawn[i : i + RESAMPLE_BLOCK]) for i in range(0, len(drawn), RESAMPLE_BLOCK)])


def pearson_resampled(gold: Sequence[float], pred: Sequence[float], drawn: np.ndarray) -> np.ndarray:
    """:func:`pearson` on each resample (rows of ``drawn``), NaN where it raises: the same steps on rows.

    Each row is centred by its own mean (numpy sums a row as it sums a vector), so constant gold
    is undefined and constant predictions score 0 on exactly the resamples where :func:`pearson`
    says so; the correlation itself sums products row-wise instead of ``np.dot``, which moves it by
    rounding only (tested to 1e-9 against :func:`pearson`).
    """
    g, p = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    check_aligned(g, p)

    def block(rows: np.ndarray) -> np.ndarray:
        if rows.shape[1] < 2:
            return np.full(len(rows), np.nan)
        x, y = g[rows], p[rows]
        x, y = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
        defined, flat = x.any(axis=1), ~y.any(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
        return np.where(defined, np.where(flat, 0.0, 100 * np.clip(r, -1.0, 1.0)), np.nan)

    return _in_blocks(drawn, block)


@vectorised(pearson_resampled)
def pearson(gold: Sequence[float], pred: Sequence[float]) -> float:
    """Pearson r x 100 (BIOSSES, clinical STS). Constant predictions carry no signal: 0, not NaN."""
    g, p = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    check_aligned(g, p)
    if len(g) < 2:
        raise ValueError("Pearson correlation needs at least two examples")
    g, p = g - g.mean(), p - p.mean()
    if not np.any(g):
        raise ValueError("gold scores are constant: Pearson correlation is undefined")
    if not np.any(p):
        return 0.0
    r = np.dot(g, p) / np.sqrt(np.dot(g, g) * np.dot(p, p))
    return float(100 * np.clip(r, -1.0, 1.0))


def _auc(truth: np.ndarray, scores: np.ndarray) -> float:
    """Mann-Whitney AUC with midranks: ties between a positive and a negative count a half."""
    n_pos = int(truth.sum())
    n_neg = len(truth) - n_pos
    if not n_pos or not n_neg:
        raise ValueError("ROC AUC is undefined when gold holds only one class")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    midranks = np.cumsum(counts) - (counts - 1) / 2
    rank_sum = midranks[inverse.ravel()][truth].sum()
    return float((rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _auc_rows(truth: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """:func:`_auc` of each row of ``(rows, examples)`` truth and scores, NaN where a row holds one class.

    Midranks are half-integers and their sums exact in float64, so each row's value is exactly
    :func:`_auc`'s: a tie group spanning sorted positions ``first..last`` has midrank
    ``(first + last) / 2 + 1``, which is ``cumsum(counts) - (counts - 1) / 2``.
    """
    order = np.argsort(scores, axis=1, kind="stable")
    ranked, positive = np.take_along_axis(scores, order, 1), np.take_along_axis(truth, order, 1)
    n = ranked.shape[1]
    position = np.broadcast_to(np.arange(n), ranked.shape)
    starts = np.ones(ranked.shape, dtype=bool)
    starts[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    ends = np.ones(ranked.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, n)[:, ::-1], axis=1)[:, ::-1]
    rank_sum = np.where(positive, (first + last) / 2 + 1, 0.0).sum(axis=1)
    n_pos = positive.sum(axis=1)
    n_neg = n - n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), auc, np.nan)


def roc_auc_resampled(
    gold: Any, pred: Any, drawn: np.ndarray, *, positive: Any = None, average: Literal["weighted", "macro"] = "weighted"
) -> np.ndarray:
    """:func:`roc_auc` on each resample (rows of ``drawn``), NaN where it raises, ranks computed per row.

    The positive class is read from all of ``gold`` (a resample sees a subset of its labels, which
    picks the same class); if that raises, so does this, and the caller scores resample by resample.
    """
    scores = np.asarray(pred, dtype=float)
    if scores.ndim == 1:
        truth = np.asarray(gold)
        check_aligned(truth, scores)
        is_positive = np.isin(truth, list(_positive_labels(set(truth.tolist()), positive, None, None)))
        return _in_blocks(drawn, lambda rows: 100 * _auc_rows(is_positive[rows], scores[rows]))
    g = np.asarray(gold).astype(bool)
    if g.shape != scores.shape:
        raise ValueError(f"gold {g.shape} and scores {scores.shape} must have one shape")
    if average not in ("weighted", "macro"):
        raise ValueError(f"average must be 'weighted' or 'macro', not {average!r}")
    return _in_blocks(drawn, lambda rows: _label_average_rows(g[rows], scores[rows], average))


def _label_average_rows(truth: np.ndarray, scores: np.ndarray, average: str) -> np.ndarray:
    """Per resample (axis 0), :func:`roc_auc`'s mean over labels (axis 2) of each label's AUC; NaN where it raises."""
    aucs = np.stack([_auc_rows(truth[:, :, j], scores[:, :, j]) for j in range(truth.shape[2])], axis=1)
    if average == "macro":
        return 100 * aucs.mean(axis=1)  # NaN as soon as one label's AUC is undefined, where roc_auc raises
    support = truth.sum(axis=1)
    counted = support > 0
    undefined = ~counted.any(axis=1) | (counted & np.isnan(aucs)).any(axis=1)
    weights = np.where(counted, support, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = 100 * (np.where(counted, aucs, 0.0) * weights).sum(axis=1) / weights.sum(axis=1)
    return np.where(undefined, np.nan, value)


@vectorised(roc_auc_resampled)
def roc_auc(gold: Any, pred: Any, *, positive: Any = None, average: Literal["weighted", "macro"] = "weighted") -> float:
    """ROC AUC of scores (MIMIC-AKI); for multi-label rows the mean over labels (OpenI, Li et al. 2022).

    ``pred`` holds scores (probabilities or logits). Li et al. 2022's "sample number weighted average"
    weights each label's AUC by its gold positives, scikit-learn's ``average="weighted"``. A label
    with no gold positive has weight 0 and is skipped (scikit-learn raises instead).
    """
    scores = np.asarray(pred, dtype=float)
    if scores.ndim == 1:
        truth = np.asarray(gold)
        check_aligned(truth, scores)
        wanted = _positive_labels(set(truth.tolist()), positive, None, None)
        return 100 * _auc(np.isin(truth, list(wanted)), scores)
    g = np.asarray(gold).astype(bool)
    if g.shape != scores.shape:
        raise ValueError(f"gold {g.shape} and scores {scores.shape} must have one shape")
    support = g.sum(0)
    if average == "weighted":
        columns = np.flatnonzero(support)
        if not len(columns):
            raise ValueError("ROC AUC is undefined: no label has a gold positive")
        weights = support[columns]
    elif average == "macro":
        columns, weights = np.arange(g.shape[1]), None
    else:
        raise ValueError(f"average must be 'weighted' or 'macro', not {average!r}")
    return float(100 * np.average([_auc(g[:, j], scores[:, j]) for j in columns], weights=weights))
