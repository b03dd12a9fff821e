"""Answer-string scores: SQuAD v1.1 exact match and token F1, BioASQ factoid strict/lenient accuracy and MRR."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from workers.engine.metrics.common import Sufficient, check_aligned, decomposes

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """The SQuAD v1.1 script's normalisation: lower case, no punctuation or articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def _answers(value: str | Iterable[str]) -> list[str]:
    answers = [value] if isinstance(value, str) else list(value)
    if not answers:
        raise ValueError("a question without a gold answer cannot be scored")
    return answers


def _token_f1(prediction: str, answer: str) -> float:
    pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(answer).split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    return 2 * same / (len(pred_tokens) + len(gold_tokens)) if same else 0.0


def _question_scores(gold: Sequence, pred: Sequence, score: Callable[[str, str], float]) -> list[float]:
    """Each question's score: its best over the question's gold answers."""
    check_aligned(gold, pred, "questions")
    if not len(gold):
        raise ValueError("no questions to score")
    return [max(score(p, a) for a in _answers(g)) for g, p in zip(gold, pred, strict=True)]


def _mean(sums: np.ndarray) -> np.ndarray:
    """100 x summed question scores / questions, from summed (score, 1) columns: every answer metric's formula."""
    sums = np.asarray(sums, dtype=np.float64)
    return 100 * sums[..., 0] / sums[..., 1]


def _per_question(scores: Sequence[float]) -> Sufficient:
    """The (score, 1) rows of the questions: a resample of questions sums the rows it drew (:func:`_mean`)."""
    return Sufficient(np.column_stack([np.asarray(scores, dtype=np.float64), np.ones(len(scores))]), _mean)


def _mean_of(scores: Sequence[float]) -> float:
    """:func:`_mean` of the questions' scores, summed in order (Python's ``sum``, as the metrics always have)."""
    return float(_mean(np.array([sum(scores), len(scores)], dtype=np.float64)))


def _exact(prediction: str, answer: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(answer))


@decomposes(lambda gold, pred: _per_question(_question_scores(gold, pred, _exact)))
def exact_match(gold: Sequence[str | Iterable[str]], pred: Sequence[str]) -> float:
    """SQuAD v1.1 exact match, best over a question's gold answers (emrQA as in Li et al. 2022)."""
    return _mean_of(_question_scores(gold, pred, _exact))


@decomposes(lambda gold, pred: _per_question(_question_scores(gold, pred, _token_f1)))
def squad_f1(gold: Sequence[str | Iterable[str]], pred: Sequence[str]) -> float:
    """SQuAD v1.1 token F1, best over gold answers. As in v1.1, two empty answers score F1 0 (EM 1)."""
    return _mean_of(_question_scores(gold, pred, _token_f1))


def _synonyms(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value.strip().lower()}
    return set().union(*(_synonyms(v) for v in value)) if value else set()


def _first_correct_ranks(gold: Sequence[Any], pred: Sequence[Any], k: int) -> list[int | None]:
    """1-based rank of the first of the top ``k`` answers matching a gold synonym, or None.

    BioASQ factoid gold is a list of synonyms (or a list of synonym lists; all are accepted);
    matching ignores case, as the BioASQ evaluation does, and surrounding white space.
    """
    check_aligned(gold, pred, "questions")
    if not len(gold):
        raise ValueError("no questions to score")
    ranks = []
    for g, answers in zip(gold, pred, strict=True):
        synonyms = _synonyms(g)
        ranked = [answers] if isinstance(answers, str) else list(answers)
        hits = [r for r, a in enumerate(ranked[:k], 1) if a.strip().lower() in synonyms]
        ranks.append(hits[0] if hits else None)
    return ranks


def _hits(ranks: Sequence[int | None]) -> list[int]:
    return [int(r is not None) for r in ranks]


def _reciprocal(ranks: Sequence[int | None]) -> list[float]:
    return [1 / r if r is not None else 0.0 for r in ranks]


@decomposes(lambda gold, pred: _per_question(_hits(_first_correct_ranks(gold, pred, 1))))
def strict_accuracy(gold: Sequence[Any], pred: Sequence[Any]) -> float:
    """BioASQ factoid strict accuracy: the top answer is a gold synonym (Bioformer, Fang et al. 2023)."""
    return _mean_of(_hits(_first_correct_ranks(gold, pred, 1)))


@decomposes(lambda gold, pred, *, k=5: _per_question(_hits(_first_correct_ranks(gold, pred, k))))
def lenient_accuracy(gold: Sequence[Any], pred: Sequence[Any], *, k: int = 5) -> float:
    """BioASQ factoid lenient accuracy: a gold synonym is among the top ``k`` (5) answers."""
    return _mean_of(_hits(_first_correct_ranks(gold, pred, k)))


@decomposes(lambda gold, pred, *, k=5: _per_question(_reciprocal(_first_correct_ranks(gold, pred, k))))
def mrr(gold: Sequence[Any], pred: Sequence[Any], *, k: int = 5) -> float:
    """BioASQ factoid mean reciprocal rank over the top ``k`` (5) answers; a miss counts 0."""
    return _mean_of(_reciprocal(_first_correct_ranks(gold, pred, k)))
