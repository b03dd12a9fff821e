"""Answer-string scores: SQuAD v1.1 exact match and token F1, BioASQ factoid strict/lenient accuracy and MRR."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from workers.engine.metrics.common import check_aligned

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


def _mean_over_questions(gold: Sequence, pred: Sequence, score: Callable[[str, str], float]) -> float:
    check_aligned(gold, pred, "questions")
    if not len(gold):
        raise ValueError("no questions to score")
    return 100 * sum(max(score(p, a) for a in _answers(g)) for g, p in zip(gold, pred, strict=True)) / len(gold)


def exact_match(gold: Sequence[str | Iterable[str]], pred: Sequence[str]) -> float:
    """SQuAD v1.1 exact match, best over a question's gold answers (emrQA as in Li et al. 2022)."""
    return _mean_over_questions(gold, pred, lambda p, a: float(normalize_answer(p) == normalize_answer(a)))


def squad_f1(gold: Sequence[str | Iterable[str]], pred: Sequence[str]) -> float:
    """SQuAD v1.1 token F1, best over gold answers. As in v1.1, two empty answers score F1 0 (EM 1)."""
    return _mean_over_questions(gold, pred, _token_f1)


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


def strict_accuracy(gold: Sequence[Any], pred: Sequence[Any]) -> float:
    """BioASQ factoid strict accuracy: the top answer is a gold synonym (Bioformer, Fang et al. 2023)."""
    ranks = _first_correct_ranks(gold, pred, 1)
    return 100 * sum(r is not None for r in ranks) / len(ranks)


def lenient_accuracy(gold: Sequence[Any], pred: Sequence[Any], *, k: int = 5) -> float:
    """BioASQ factoid lenient accuracy: a gold synonym is among the top ``k`` (5) answers."""
    ranks = _first_correct_ranks(gold, pred, k)
    return 100 * sum(r is not None for r in ranks) / len(ranks)


def mrr(gold: Sequence[Any], pred: Sequence[Any], *, k: int = 5) -> float:
    """BioASQ factoid mean reciprocal rank over the top ``k`` (5) answers; a miss counts 0."""
    ranks = _first_correct_ranks(gold, pred, k)
    return 100 * sum(1 / r for r in ranks if r is not None) / len(ranks)
