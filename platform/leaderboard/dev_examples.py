"""A run's dev examples beside its predictions: what a reader needs to see why a model scores what it scores.

HELM and lm-evaluation-harness let anyone read every example's input, gold and output. biolm's engine
returns each run's dev predictions in its results document (version 2, :mod:`biolm.contract.results`);
the dev split is the one the worker received, gold included, as the platform exported it
(:mod:`jobs.exports`). This module pairs them, example by example, in the shape of the dataset's
schema (:mod:`biolm.schemas`): a tagging example's gold and predicted entities, a relation's entity
pair, a question with its context and answers, a classification's labels, a regression's scores; and
says whether each is right. Nothing is computed but comparisons: the predictions are the stored ones.

The test split never appears here: its gold stays withheld (the predictions download gives ids and
predictions only). A dataset whose licence does not allow its text to be redistributed
(:attr:`registry.models.Dataset.shows_text`) shows ids, labels, entity pairs and predictions, not its text.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

PAGE_SIZE = 20


@dataclass(frozen=True)
class Marked:
    """A stretch of text, marked as an entity (its label) or not (label "")."""

    text: str
    label: str = ""


@dataclass(frozen=True)
class Example:
    """One dev example as the viewer shows it; ``right`` None where right and wrong are not defined (scores)."""

    id: str
    right: bool | None
    gold: str
    predicted: str
    text: str = ""
    text_pair: str = ""
    question: str = ""
    gold_marked: tuple[Marked, ...] = ()  # a tagging example's tokens, its gold entities marked
    predicted_marked: tuple[Marked, ...] = ()
    pair: tuple[str, str] = ()  # a relation's head and tail: "mention (type)"
    error: float | None = None  # a regression's predicted minus gold
    words: str = field(default="", repr=False)  # what the search looks in

    def matches(self, query: str) -> bool:
        return query.casefold() in self.words


def examples(schema: str, rows: Sequence[dict], predictions: Sequence, shows_text: bool) -> list[Example]:
    """The dev ``rows`` (gold included) paired with one run's ``predictions``, in order."""
    make = {"token-tagging": _tagging, "relation": _relation, "extractive-qa": _question,
            "classification": _classification, "regression": _regression}.get(schema, _classification)  # fmt: skip
    return [make(row, predicted, shows_text) for row, predicted in zip(rows, predictions, strict=True)]


def chosen(shown: Iterable[Example], errors_only: bool, query: str) -> list[Example]:
    """Those to list: the wrong ones only (a regression's, largest error first), and those the query finds."""
    picked = [e for e in shown if not query or e.matches(query)]
    if errors_only:
        wrong = [e for e in picked if e.right is False]
        scored = sorted((e for e in picked if e.right is None), key=lambda e: -abs(e.error or 0.0))
        picked = wrong + scored
    return picked


def entity_spans(tags: Sequence[str]) -> set[tuple[int, int, str]]:
    """The entities a BIO, IOB1 or BIOES tag sequence marks, as (first token, end token, type), end exclusive."""
    spans, start, kind = set(), None, ""
    for index, tag in enumerate([*tags, "O"]):
        prefix, _, label = (tag or "O").partition("-")
        opens = prefix in ("B", "S", "U") or (prefix in ("I", "E", "L") and (start is None or label != kind))
        if start is not None and (prefix == "O" or opens):
            spans.add((start, index, kind))
            start = None
        if opens:
            start, kind = index, label
        if start is not None and prefix in ("E", "L", "S", "U"):
            spans.add((start, index + 1, kind))
            start = None
    return spans


def _tagging(row: dict, predicted: Sequence[str], shows_text: bool) -> Example:
    tokens, gold_tags = list(row["tokens"]), list(row["tags"])
    gold, guessed = entity_spans(gold_tags), entity_spans(list(predicted or []))
    shown = tokens if shows_text else [f"#{i + 1}" for i in range(len(tokens))]
    return Example(
        id=str(row["id"]), right=gold == guessed, gold=_entities(shown, gold), predicted=_entities(shown, guessed),
        gold_marked=_marked(shown, gold), predicted_marked=_marked(shown, guessed),
        words=_words(row["id"], *(tokens if shows_text else ()), *gold_tags, *(predicted or [])),
    )  # fmt: skip


def _marked(tokens: list[str], spans: set[tuple[int, int, str]]) -> tuple[Marked, ...]:
    starts = {start: (end, kind) for start, end, kind in spans}
    parts, index = [], 0
    while index < len(tokens):
        if index in starts:
            end, kind = starts[index]
            parts.append(Marked(" ".join(tokens[index:end]), kind or "entity"))
            index = end
        else:
            parts.append(Marked(tokens[index]))
            index += 1
    return tuple(parts)


def _entities(tokens: list[str], spans: set[tuple[int, int, str]]) -> str:
    if not spans:
        return "no entity"
    return "; ".join(f"{' '.join(tokens[s:e])} ({kind})" for s, e, kind in sorted(spans))


def _relation(row: dict, predicted: str, shows_text: bool) -> Example:
    text, head, tail = row["text"], row["head"], row["tail"]
    pair = tuple(f"{text[span['start'] : span['end']]} ({span.get('type') or 'entity'})" for span in (head, tail))
    return Example(
        id=str(row["id"]), right=str(predicted) == str(row["label"]), gold=str(row["label"]), predicted=str(predicted),
        text=text if shows_text else "", pair=pair,
        words=_words(row["id"], text if shows_text else "", *pair, row["label"], predicted),
    )  # fmt: skip


def _question(row: dict, predicted, shows_text: bool) -> Example:
    answers = list(row["answers"]["text"])
    first = predicted[0] if isinstance(predicted, list) and predicted else predicted
    first = str(first or "")
    right = _normal(first) in {_normal(answer) for answer in answers}
    return Example(
        id=str(row["id"]), right=right, gold=" | ".join(answers) or "no answer", predicted=first or "no answer",
        text=row["context"] if shows_text else "", question=row["question"] if shows_text else "",
        words=_words(row["id"], *((row["question"], row["context"]) if shows_text else ()), *answers, first),
    )  # fmt: skip


def _classification(row: dict, predicted, shows_text: bool) -> Example:
    gold = [str(label) for label in row.get("labels") or [row.get("label", "")]]
    guessed = [str(label) for label in predicted] if isinstance(predicted, list) else [str(predicted)]
    return Example(
        id=str(row["id"]), right=set(gold) == set(guessed), gold=", ".join(gold) or "none",
        predicted=", ".join(guessed) or "none", text=row.get("text", "") if shows_text else "",
        text_pair=row.get("text_pair", "") if shows_text else "",
        words=_words(row["id"], *((row.get("text", ""), row.get("text_pair", "")) if shows_text else ()), *gold,
                     *guessed),
    )  # fmt: skip


def _regression(row: dict, predicted, shows_text: bool) -> Example:
    gold, guessed = float(row["score"]), float(predicted)
    return Example(
        id=str(row["id"]), right=None, gold=f"{gold:.2f}", predicted=f"{guessed:.2f}", error=guessed - gold,
        text=row["text"] if shows_text else "", text_pair=row["text_pair"] if shows_text else "",
        words=_words(row["id"], *((row["text"], row["text_pair"]) if shows_text else ())),
    )  # fmt: skip


def _normal(answer: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    answer = "".join(ch for ch in answer.lower() if ch not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", answer).split())


def _words(*parts) -> str:
    return " ".join(str(part) for part in parts).casefold()
