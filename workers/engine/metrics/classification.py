"""Scores of labels and real-valued outputs: classification F1 variants, HoC, accuracy, Pearson, ROC AUC."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from workers.engine.metrics.common import Counts, check_aligned, prf, sets_to_matrix, total


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


def _positive_counts(gold: Any, pred: Any, positive: Any, negative: Any, labels: Any) -> tuple[Any, Any, Any]:
    """(TP, #predicted positive, #gold positive) as METRICS.md defines them for ChemProt/DDI/GAD.

    The pooled :func:`class_counts`: micro scores and the per-class figures come from one count.
    """
    if (_is_multilabel(gold) or _is_multilabel(pred)) and (positive is not None or negative is not None):
        raise ValueError("multi-label rows have no negative class: every label is positive; use labels=")
    return tuple(total(class_counts(gold, pred, positive=positive, negative=negative, labels=labels).values()))


def class_counts(
    gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None
) -> dict[Hashable, Counts]:
    """Each counted class's (TP, #predicted, #gold), the parts the positive-class metrics pool or average.

    Single-label: the classes :func:`_positive_labels` picks (ChemProt's relation types without
    ``false``), in the order of ``labels`` when given; a predicted negative is a miss of the gold
    class, as in the micro score. Multi-label rows (HoC): every label, named by the label sets or,
    for a 0/1 matrix, by column number; ``negative`` leaves names out, as macro F1 does.
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
        tp, n_pred, n_gold = (g & p).sum(0), p.sum(0), g.sum(0)
        return {name: Counts(int(tp[j]), int(n_pred[j]), int(n_gold[j])) for j, name in enumerate(names)}
    g, p, vocabulary = _encode(gold, pred)
    wanted = _positive_labels(vocabulary, positive, negative, labels)
    ordered = [x for x in dict.fromkeys([*(labels if labels is not None else ()), *vocabulary]) if x in wanted]
    ordered += sorted(wanted - set(ordered), key=str)  # a positive= class never seen
    size = len(vocabulary) + 1
    tp, n_pred, n_gold = (np.bincount(x, minlength=size) for x in (g[g == p], p, g))
    index = {x: j for j, x in enumerate(vocabulary)}
    column = {name: index.get(name, size - 1) for name in ordered}  # the extra, always empty bin: never seen
    return {
        name: Counts(int(tp[column[name]]), int(n_pred[column[name]]), int(n_gold[column[name]])) for name in ordered
    }


def micro_f1(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """Micro F1 over the positive classes (BLURB's ChemProt, DDI, GAD; LitCovid's multi-label rows)."""
    return float(prf(*_positive_counts(gold, pred, positive, negative, labels))[2])


def precision(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """Micro precision over the positive classes: of a binary task, the positive class's precision."""
    return float(prf(*_positive_counts(gold, pred, positive, negative, labels))[0])


def recall(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """Micro recall over the positive classes: of a binary task, the positive class's recall."""
    return float(prf(*_positive_counts(gold, pred, positive, negative, labels))[1])


def binary_f1(gold: Any, pred: Any, *, positive: Any = None, negative: Any = None, labels: Any = None) -> float:
    """F1 of the one positive class (GAD, EU-ADR: 1; n2c2 ADE: ``positive="ADE-Drug"``)."""
    seen = set(gold) | set(pred)
    wanted = _positive_labels(seen, positive, negative, labels)
    if len(wanted) > 1:
        raise ValueError(f"binary-f1 needs one positive class, got {sorted(wanted, key=str)}; use micro-f1")
    return micro_f1(gold, pred, positive=wanted)


def macro_f1(gold: Any, pred: Any, *, labels: Sequence[Hashable] | None = None, negative: Any = None) -> float:
    """Unweighted mean of per-class F1 (Lewis et al.'s ChemProt and HoC), as scikit-learn's macro.

    Classes default to every label in gold or pred; ``negative`` drops classes from the mean.
    """
    if _is_multilabel(gold) or _is_multilabel(pred):
        if negative is not None:  # label sets only: 0/1 matrices have no names to drop
            names = labels if labels is not None else sorted(set().union(*gold, *pred), key=str)
            labels = [x for x in names if x not in _as_set(negative)]
        g, p = _indicator(gold, pred, labels)
        return float(prf((g & p).sum(0), p.sum(0), g.sum(0))[2].mean()) if g.shape[1] else 0.0
    g, p, vocabulary = _encode(gold, pred)
    names = [x for x in (labels if labels is not None else vocabulary) if x not in _as_set(negative)]
    if not names:
        return 0.0
    index = {x: j for j, x in enumerate(vocabulary)}
    ids = np.array([index.get(x, -1) for x in names])  # -1: the extra, always empty bin (a label never seen)
    size = len(vocabulary) + 1
    tp = np.bincount(g[g == p], minlength=size)[ids]
    n_pred, n_gold = np.bincount(p, minlength=size)[ids], np.bincount(g, minlength=size)[ids]
    return float(prf(tp, n_pred, n_gold)[2].mean())


def average_micro_f1(gold: Any, pred: Any, *, definition: Literal["micro", "blue"] = "micro") -> float:
    """HoC's "average micro F1" over abstracts (rows are abstract-level labels, see pool_by_document).

    ``micro`` (the leaderboard's, as LinkBERT's ``utils_hoc.py`` reproduces BLURB): micro F1
    over the whole abstract x label 0/1 matrix. ``blue`` (BLUE's ``eval_hoc.py``): precision and
    recall per abstract, their means, then F1 of the two means. BLUE divides by zero on an
    abstract without gold labels; here a per-abstract ratio with an empty denominator counts 0, the
    convention BLUE itself uses for an abstract with no predicted label.
    """
    g, p = _indicator(gold, pred)
    if definition == "micro":
        return float(prf((g & p).sum(), p.sum(), g.sum())[2])
    if definition != "blue":
        raise ValueError(f"definition must be 'micro' or 'blue', not {definition!r}")
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


def accuracy(gold: Any, pred: Any) -> float:
    """Share of exact matches (PubMedQA, BioASQ yes/no, MedNLI); multi-label rows must match whole."""
    check_aligned(gold, pred)
    if not len(gold):
        raise ValueError("accuracy of no examples is undefined")
    if _is_multilabel(gold) or _is_multilabel(pred):
        g, p = _indicator(gold, pred)
        return float(100 * (g == p).all(1).mean())
    g, p, _ = _encode(gold, pred)
    return float(100 * (g == p).mean())


# --- real-valued outputs -------------------------------------------------------------------------


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
