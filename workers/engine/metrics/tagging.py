"""Entity-level scores of tag sequences (NER, de-identification) and EBM PICO's word-level macro F1."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from workers.engine.metrics.common import (
    PRF,
    Counts,
    Sufficient,
    check_aligned,
    decomposes,
    mean_f1_value,
    prf_value,
    scores_of,
    sets_to_matrix,
)

# strict schemes: (allowed prefixes, one-token entity prefix, closing prefix an entity must end with)
_SCHEMES = {
    "IOB2": ("BIO", None, None),
    "IOBES": ("BIESO", "S", "E"),
    "BILOU": ("BILUO", "U", "L"),
    "IO": ("IO", None, None),
}
_SCHEME_ALIASES = {"BIO": "IOB2", "BIOES": "IOBES", "BIOUL": "BILOU"}
_AS_IOBES = {"U": "S", "L": "E"}


@lru_cache(maxsize=4096)
def parse_tag(label: str) -> tuple[str, str]:
    """(prefix, type) of a tag; untyped tags (``B``) get seqeval's placeholder type ``_``."""
    if label == "O":
        return "O", "_"
    if len(label) == 1 and label in "BIESUL":
        return label, "_"
    if len(label) > 2 and label[0] in "BIESUL" and label[1] == "-":
        return label[0], label[2:]
    raise ValueError(f"{label!r} is not a tag: expected O, a prefix (B I E S U L) or prefix-Type such as B-Chemical")


def conlleval_entities(seq: Sequence[str]) -> set[tuple[str, int, int]]:
    """Chunks by conlleval.pl's rules, which seqeval's default mode copies.

    An entity may start with ``I-`` (or follow a type change), so a prediction ``O I-X I-X``
    still earns credit. U-/L- are read as S-/E-: seqeval's default mode does not know them and
    silently merges or drops BIOUL entities (``B L B L`` yields one chunk, see the tests).
    """
    entities = set()
    prev_tag, prev_type, begin = "O", "", 0
    for i, label in enumerate([*seq, "O"]):
        tag, type_ = parse_tag(label)
        tag = _AS_IOBES.get(tag, tag)
        if prev_tag != "O" and (prev_tag in "ES" or tag in "BSO" or type_ != prev_type):
            entities.add((prev_type, begin, i))
        if tag != "O" and (tag in "BS" or prev_tag in "ESO" or type_ != prev_type):
            begin = i
        prev_tag, prev_type = tag, type_
    return entities


@lru_cache(maxsize=1 << 16)
def _conlleval_of(seq: tuple[str, ...]) -> frozenset[tuple[str, int, int]]:
    """:func:`conlleval_entities` of one sentence, remembered.

    A job's runs are scored against the same gold sentences, and a good model's predictions repeat
    most of them, so the bootstrap's one pass per run reads each distinct sentence once.
    """
    return frozenset(conlleval_entities(seq))


def _strict_entities(seq: Sequence[str], scheme: str) -> set[tuple[str, int, int]]:
    """Chunks as seqeval's strict mode reads them: only well-formed entities of the scheme count.

    IOB2: B-X then I-X*; IOBES/BILOU: S-X (U-X) alone, or B-X I-X* E-X (L-X); IO (not in seqeval):
    a maximal run of I-X. A prefix the scheme does not allow raises, as seqeval does.
    """
    allowed, unit, close = _SCHEMES[scheme]
    tags = [parse_tag(label) for label in seq]
    for (tag, _), label in zip(tags, seq, strict=True):
        if tag not in allowed:
            raise ValueError(f"tag {label!r} is not allowed in scheme {scheme} (prefixes {' '.join(allowed)})")
    entities, i = set(), 0
    while i < len(tags):
        tag, type_ = tags[i]
        if tag == unit:
            entities.add((type_, i, i + 1))
        elif tag == "B" or (scheme == "IO" and tag == "I"):
            j = i + 1
            while j < len(tags) and tags[j - 1][0] in "BI" and tags[j][0] in ("I", close) and tags[j][1] == type_:
                j += 1
            if close is None or tags[j - 1][0] == close:
                entities.add((type_, i, j))
            i = j
            continue
        i += 1
    return entities


def _extractor(mode: str, scheme: str | None) -> Callable[[Sequence[str]], set | frozenset]:
    """The chunk reader of ``mode`` (and ``scheme``), or ValueError naming what is wrong."""
    if mode == "conlleval":
        if scheme is not None:
            raise ValueError("scheme applies to mode='strict' only; conlleval mode reads any of B/I/E/S/U/L")
        return lambda seq: _conlleval_of(tuple(seq))
    if mode == "strict":
        name = _SCHEME_ALIASES.get((scheme or "IOB2").upper(), (scheme or "IOB2").upper())
        if name not in _SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}; use one of {sorted(_SCHEMES)}")
        return lambda seq: _strict_entities(seq, name)
    raise ValueError(f"mode must be 'conlleval' or 'strict', not {mode!r}")


def _sentence_entities(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], extract: Callable[[Sequence[str]], set]
) -> Iterator[tuple[int, set, set]]:
    """``(sentence number, gold entities, predicted entities)`` per sentence, every sentence checked for alignment."""
    check_aligned(gold, pred, "sentences")
    for k, (g, p) in enumerate(zip(gold, pred, strict=True)):
        check_aligned(g, p, f"tags in sentence {k}")
        yield k, extract(g), extract(p)


def entity_counts(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    *,
    mode: Literal["conlleval", "strict"] = "conlleval",
    scheme: str | None = None,
    typed_gold: Sequence[Sequence[str]] | None = None,
) -> dict[str, Counts]:
    """(TP, #predicted, #gold) entity mentions per entity type (JNLPBA's protein, DNA, ...), sorted by type.

    A mention counts for its type: a predicted span with the right boundaries but another type is
    a false positive of the predicted type and a miss of the gold one, as in the micro score,
    which pools these counts. Untyped tags (``B``) form the one type ``_``.

    ``typed_gold`` (the same sentences with typed tags, where ``gold`` and the predictions are
    untyped, as BLURB's JNLPBA merges GENIA's five types) counts each gold mention under its type
    from that copy: found when a predicted span has exactly its boundaries, as the untyped score
    matches. An untyped prediction belongs to no type, so ``predicted`` is None: only the
    recall of each type's mentions can be told.
    """
    extract = _extractor(mode, scheme)
    if typed_gold is not None:
        check_aligned(gold, typed_gold, "sentences of typed gold")
    tp: dict[str, int] = {}
    n_gold: dict[str, int] = {}
    n_pred: dict[str, int] = {}
    for k, gold_entities, pred_entities in _sentence_entities(gold, pred, extract):
        if typed_gold is not None:
            check_aligned(gold[k], typed_gold[k], f"typed tags in sentence {k}")
            gold_entities = extract(typed_gold[k])
            spans = {(start, end) for _, start, end in pred_entities}
            matched = {entity for entity in gold_entities if entity[1:] in spans}
            found = ((tp, matched), (n_gold, gold_entities))
        else:
            found = ((tp, gold_entities & pred_entities), (n_gold, gold_entities), (n_pred, pred_entities))
        for counter, entities in found:
            for type_, _, _ in entities:
                counter[type_] = counter.get(type_, 0) + 1
    types = sorted({*n_gold, *n_pred})
    if typed_gold is not None:
        return {t: Counts(tp.get(t, 0), None, n_gold[t]) for t in types}
    return {t: Counts(tp.get(t, 0), n_pred.get(t, 0), n_gold.get(t, 0)) for t in types}


def entity_statistics(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    *,
    mode: Literal["conlleval", "strict"] = "conlleval",
    scheme: str | None = None,
) -> np.ndarray:
    """``(sentences, 3)``: each sentence's (TP, #predicted, #gold) entity mentions, all types pooled.

    The micro entity scores are these columns summed (:func:`entity_scores`), so they are the
    scores' sufficient statistics: a bootstrap resample of sentences sums the rows it drew.
    """
    found = [(len(g & p), len(p), len(g)) for _, g, p in _sentence_entities(gold, pred, _extractor(mode, scheme))]
    return np.array(found, dtype=np.int64).reshape(len(found), 3)


def _entity_sufficient(which: int) -> Callable[..., Sufficient]:
    """The sufficient statistics of entity precision (0), recall (1) or F1 (2)."""

    def statistics(
        gold: Sequence[Sequence[str]],
        pred: Sequence[Sequence[str]],
        *,
        mode: Literal["conlleval", "strict"] = "conlleval",
        scheme: str | None = None,
    ) -> Sufficient:
        return Sufficient(entity_statistics(gold, pred, mode=mode, scheme=scheme), prf_value(which))

    return statistics


def entity_scores(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    *,
    mode: Literal["conlleval", "strict"] = "conlleval",
    scheme: str | None = None,
) -> PRF:
    """Micro P/R/F1 over entity mentions (exact span and type), as seqeval computes them.

    ``conlleval`` is seqeval's default and what the BLURB reference scripts report; ``strict``
    with a scheme gives lower numbers on the same predictions (METRICS.md: record the mode).
    Words, not sub-tokens: pass one tag per word. The summed :func:`entity_statistics`, which
    pool :func:`entity_counts`.
    """
    tp, n_pred, n_gold = (int(v) for v in entity_statistics(gold, pred, mode=mode, scheme=scheme).sum(0))
    return scores_of(Counts(tp, n_pred, n_gold))


@decomposes(_entity_sufficient(2))
def entity_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], **options: Any) -> float:
    """BLURB's NER metric (BC5-chem, BC5-disease, NCBI-disease, BC2GM, JNLPBA); options as entity_scores."""
    return _entity_sufficient(2)(gold, pred, **options).total()


@decomposes(_entity_sufficient(0))
def entity_precision(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], **options: Any) -> float:
    """Share of predicted entities that are gold entities; options as entity_scores."""
    return _entity_sufficient(0)(gold, pred, **options).total()


@decomposes(_entity_sufficient(1))
def entity_recall(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], **options: Any) -> float:
    """Share of gold entities predicted exactly; options as entity_scores."""
    return _entity_sufficient(1)(gold, pred, **options).total()


# --- word level (EBM PICO) -----------------------------------------------------------------------


def _element(tag: str) -> str:
    """``I-PAR`` -> ``PAR``: EBM PICO's files are IO-tagged, so the prefix carries no information."""
    return tag[2:] if len(tag) > 2 and tag[1] == "-" and tag[0] in "BIESUL" else tag


def _element_words(
    gold: Sequence[Sequence[Any]], pred: Sequence[Sequence[Any]], labels: Iterable[str] | None, outside: str
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(element names, gold and predicted ``(words, elements)`` boolean matrices): how every word is read."""
    check_aligned(gold, pred, "sentences")
    for k, (g, p) in enumerate(zip(gold, pred, strict=True)):
        check_aligned(g, p, f"words in sentence {k}")
    gold_words = [w if isinstance(w, str) else frozenset(w) for s in gold for w in s]
    pred_words = [w if isinstance(w, str) else frozenset(w) for s in pred for w in s]
    elements = {}  # each distinct word value (a tag, or a set of elements) -> its elements
    for w in {*gold_words, *pred_words}:
        members = [w] if isinstance(w, str) else w
        elements[w] = frozenset(_element(x) for x in members if x != outside)
    names = sorted(set().union(*elements.values())) if labels is None else labels
    names = list(dict.fromkeys(_element(x) for x in names if x != outside))
    if any(len(e) > 1 for e in elements.values()):
        return (
            names,
            sets_to_matrix([elements[w] for w in gold_words], names),
            sets_to_matrix([elements[w] for w in pred_words], names),
        )
    # one element per word at most: integer codes compared with each element (400k words in milliseconds)
    column = {name: j for j, name in enumerate(names)}
    other = len(names)  # outside words and elements not in names
    code = {w: column.get(next(iter(e)), other) if e else other for w, e in elements.items()}
    g = np.fromiter((code[w] for w in gold_words), dtype=np.int64, count=len(gold_words))
    p = np.fromiter((code[w] for w in pred_words), dtype=np.int64, count=len(pred_words))
    each = np.arange(other)
    return names, g[:, None] == each, p[:, None] == each


def element_statistics(
    gold: Sequence[Sequence[Any]],
    pred: Sequence[Sequence[Any]],
    *,
    labels: Iterable[str] | None = None,
    outside: str = "O",
) -> tuple[list[str], np.ndarray]:
    """(element names, ``(sentences, 3, elements)``): each sentence's (TP, #predicted, #gold) words per element.

    Summed over sentences they are :func:`element_counts`; a bootstrap resample of sentences sums
    the rows it drew, so the word-level macro F1 of any resample follows from these alone.
    """
    names, g, p = _element_words(gold, pred, labels, outside)
    ends = np.cumsum([len(sentence) for sentence in gold], dtype=np.int64)
    starts = ends - np.array([len(sentence) for sentence in gold], dtype=np.int64)
    parts = []
    for matrix in (g & p, p, g):  # per-sentence sums as differences of running totals: exact, and empty sentences are 0
        running = np.zeros((len(matrix) + 1, len(names)), dtype=np.int64)
        np.cumsum(matrix, axis=0, out=running[1:])
        parts.append(running[ends] - running[starts])
    return names, np.stack(parts, axis=1)


def element_counts(
    gold: Sequence[Sequence[Any]],
    pred: Sequence[Sequence[Any]],
    *,
    labels: Iterable[str] | None = None,
    outside: str = "O",
) -> dict[str, Counts]:
    """(TP, #predicted, #gold) words per PICO element (``PAR``, ``INT``, ``OUT``): :func:`token_macro_f1`'s parts.

    A word is a tag (``I-PAR``; prefixes are stripped, ``outside`` means no element) or a
    collection of elements, for corpora where one word belongs to several. ``labels`` fixes the
    elements counted (``I-PAR``-style names are accepted); by default those seen, minus
    ``outside``. An element in ``labels`` that never occurs counts zero everywhere. The summed
    :func:`element_statistics`.
    """
    names, per_sentence = element_statistics(gold, pred, labels=labels, outside=outside)
    sums = per_sentence.sum(0)
    return {name: Counts(int(sums[0, j]), int(sums[1, j]), int(sums[2, j])) for j, name in enumerate(names)}


def _token_macro_sufficient(
    gold: Sequence[Sequence[Any]],
    pred: Sequence[Sequence[Any]],
    *,
    labels: Iterable[str] | None = None,
    outside: str = "O",
) -> Sufficient:
    """Per sentence, its (TP, #predicted, #gold) words of each element, flattened: token_macro_f1's statistics."""
    names, per_sentence = element_statistics(gold, pred, labels=labels, outside=outside)
    return Sufficient(
        per_sentence.reshape(len(per_sentence), 3 * len(names)), mean_f1_value(len(names), only_present=False)
    )


@decomposes(_token_macro_sufficient)
def token_macro_f1(
    gold: Sequence[Sequence[Any]],
    pred: Sequence[Sequence[Any]],
    *,
    labels: Iterable[str] | None = None,
    outside: str = "O",
) -> float:
    """BLURB's EBM PICO score: every word scored on its own, F1 per element, then the mean.

    The elements' counts are :func:`element_counts` (which says how words and ``labels`` are
    read); an element in ``labels`` that never occurs scores 0, as in scikit-learn.
    """
    return _token_macro_sufficient(gold, pred, labels=labels, outside=outside).total()
