"""Tagging schemes for token tasks: BIO, BIOUL and IO, and exact conversions between them.

Gu et al. 2021 (section 5 and the tagging-scheme ablation, Table 11 of the paper's text) train NER
under three schemes and find the difference minuscule: BIO (B begins an entity, I continues
it), BIOUL (adds L for an entity's last word and U for a one-word entity; the paper's text
swaps the two letters, we use the usual reading: U = unit, L = last) and IO (only inside or
outside). Every scheme is scored the same way: the model's tags are converted back to the
dataset's own tags and scored with seqeval's default (conlleval) entity reading (METRICS.md).

Conversions go through entity spans read by conlleval's chunking rules, so any input, even
an ill-formed one (``O I-X``, an entity that starts with I-), converts to the same entities
that :func:`workers.engine.metrics.tagging.entity_f1` would credit. Untyped tags (``B``/``I``,
BLURB's NER files) stay untyped; typed tags (``B-Chemical``, PICO's ``I-PAR``) keep their type.

One loss is inherent to IO: two adjacent entities of the same type (``B-X I-X B-X``) become a
single run ``I-X I-X I-X``, which converts back to one entity (``B-X I-X I-X``). That is why
IO is a modelling choice, not a lossless encoding; on BLURB's NER sets such pairs are rare.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from workers.engine.metrics.tagging import conlleval_entities, parse_tag

SCHEMES = ("bio", "bioul", "io")
OUTSIDE = "O"
UNTYPED = "_"  # the metric's (seqeval's) type for untyped tags
_PREFIXES = {"bio": ("B", "I"), "bioul": ("B", "I", "L", "U"), "io": ("I",)}

Entity = tuple[str | None, int, int]  # (type or None for untyped tags, first word, end word exclusive)


def split_tag(tag: str) -> tuple[str, str | None]:
    """``B-Chemical`` -> ``("B", "Chemical")``, ``B`` -> ``("B", None)``, ``O`` -> ``("O", None)``.

    The metric's parser (:func:`workers.engine.metrics.tagging.parse_tag`), with ``None`` for
    the untyped placeholder, so training and scoring read tags alike.
    """
    prefix, entity_type = parse_tag(tag)
    return prefix, (None if entity_type == UNTYPED else entity_type)


def join_tag(prefix: str, entity_type: str | None) -> str:
    """The inverse of :func:`split_tag` for a non-outside tag."""
    return prefix if entity_type is None else f"{prefix}-{entity_type}"


def entity_types(names: Iterable[str]) -> tuple[str | None, ...]:
    """The entity types of a label set, in order of first appearance (``None`` for untyped tags).

    Mixing untyped (``B``) and typed (``B-X``) tags in one label set is an error: the type of an
    untyped word next to a typed one would be ambiguous.
    """
    types: dict[str | None, None] = {}
    for name in names:
        prefix, entity_type = split_tag(name)
        if prefix != OUTSIDE:
            types.setdefault(entity_type)
    if None in types and len(types) > 1:
        raise ValueError(f"the tags {sorted(names)} mix untyped (B, I) and typed (B-X) tags")
    return tuple(types)


def scheme_labels(types: Sequence[str | None], scheme: str) -> tuple[str, ...]:
    """The label names a model predicts under ``scheme``: ``O`` first, then each type's prefixes.

    The order is fixed (types in the order given, prefixes in the scheme's order B I L U), so
    the same dataset and scheme always give the same head layout.
    """
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown tagging scheme {scheme!r}; use one of {', '.join(SCHEMES)}")
    return (OUTSIDE, *(join_tag(prefix, t) for t in types for prefix in _PREFIXES[scheme]))


def entities(tags: Sequence[str]) -> list[Entity]:
    """Entity spans in order, chunked exactly as the entity-F1 metric chunks them (conlleval's rules).

    So ``O I-X`` is an entity, as conlleval counts it, and converting a prediction between
    schemes cannot change what it scores.
    """
    return [
        (None if entity_type == UNTYPED else entity_type, begin, end)
        for entity_type, begin, end in sorted(conlleval_entities(tags), key=lambda span: span[1])
    ]


def tags_from_entities(spans: Iterable[Entity], length: int, scheme: str) -> list[str]:
    """``length`` tags writing ``spans`` (non-overlapping) in ``scheme``."""
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown tagging scheme {scheme!r}; use one of {', '.join(SCHEMES)}")
    tags = [OUTSIDE] * length
    for entity_type, start, end in spans:
        if not 0 <= start < end <= length:
            raise ValueError(f"entity span [{start}, {end}) is outside a sequence of {length} tags")
        if any(tag != OUTSIDE for tag in tags[start:end]):
            raise ValueError(f"entity span [{start}, {end}) overlaps another entity")
        for i in range(start, end):
            if scheme == "io":
                prefix = "I"
            elif scheme == "bio":
                prefix = "B" if i == start else "I"
            elif end - start == 1:
                prefix = "U"
            else:
                prefix = "B" if i == start else "L" if i == end - 1 else "I"
            tags[i] = join_tag(prefix, entity_type)
    return tags


def convert(tags: Sequence[str], scheme: str) -> list[str]:
    """``tags`` (any of BIO, IOB1-style I- starts, BIOUL, IOBES, IO) rewritten in ``scheme``.

    Entities are preserved exactly (conlleval's reading of the input), except that IO merges
    adjacent entities of the same type, which it cannot tell apart (module docstring).
    Well-formed BIO converted to a scheme and back to BIO is the identity for BIO and BIOUL.
    """
    return tags_from_entities(entities(tags), len(tags), scheme)


def dataset_scheme(names: Iterable[str]) -> str:
    """The scheme a dataset's tags are written in, for writing predictions back in its own form.

    BLURB's NER files and the clinical sets use B-tags (``bio``); EBM PICO's files have only
    ``I-`` tags (``io``), so its predictions are written as ``I-PAR`` rather than ``B-PAR``.
    """
    return "bio" if any(split_tag(name)[0] != OUTSIDE and split_tag(name)[0] != "I" for name in names) else "io"


def allowed_transitions(names: Sequence[str], scheme: str) -> list[list[bool]]:
    """``allowed[i][j]``: may tag ``names[j]`` follow ``names[i]`` in a well-formed ``scheme`` sequence?

    BIO: ``I-X`` only after ``B-X`` or ``I-X``. BIOUL: after ``O``, ``L-*`` or ``U-*`` come ``O``,
    ``B-*`` or ``U-*``; after ``B-X`` or ``I-X`` come ``I-X`` or ``L-X``. IO: anything. Used as
    the CRF's hard constraints, so Viterbi never outputs a sequence the scheme cannot write.
    """
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown tagging scheme {scheme!r}; use one of {', '.join(SCHEMES)}")
    parsed = [split_tag(name) for name in names]
    for (prefix, _), name in zip(parsed, names, strict=True):
        if prefix != OUTSIDE and prefix not in _PREFIXES[scheme]:
            raise ValueError(f"tag {name!r} is not written in the {scheme} scheme")

    def allowed(before: tuple[str, str | None], after: tuple[str, str | None]) -> bool:
        (p, t), (q, u) = before, after
        if scheme == "bio":
            return q != "I" or (p in "BI" and t == u)
        if scheme == "bioul":
            if p in ("B", "I"):
                return q in ("I", "L") and t == u
            return q in (OUTSIDE, "B", "U")
        return True

    return [[allowed(before, after) for after in parsed] for before in parsed]
