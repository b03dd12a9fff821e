"""n2c2 2018 track 2 (medications and adverse drug events), brat standoff, into two schemas.

The release (``training_20180910``: 303 notes; gold-standard test: 202 notes) is one
``<note>.txt`` per discharge summary with its ``<note>.ann``::

    T1<TAB>Drug 10 17<TAB>aspirin
    T2<TAB>ADE 5 9;12 20<TAB>rash over chest        (discontinuous: fragments joined by a space)
    R1<TAB>ADE-Drug Arg1:T2 Arg2:T1

Offsets are characters of the .txt (read as is, line ends included). Entity types: Drug,
Strength, Dosage, Duration, Frequency, Form, Route, Reason, ADE; relation types:
``<attribute>-Drug`` with the attribute as Arg1 and the drug as Arg2. AnnotatorNotes (``#``),
attributes (``A``/``M``), normalisations (``N``) and equivalences (``*``) are ignored; any other
line that does not parse, a span outside the text, a span whose text differs from the .txt
(white space ignored), a repeated id, or a relation naming an undefined T-id is a DataFormatError
with the .ann file and line.

**Concepts** (``n2c2-2018-ade``, ``token-tagging``). A discontinuous entity is tagged over its
whole extent (first start to last end): in this corpus nearly all of them are one mention cut by
a line break, which brat cannot annotate across. The corpus does contain overlapping entities
(e.g. the same words as Reason and ADE); flat BIO keeps the longest (``overlaps="longest"``,
the default here; ``"error"`` reports them). Examples are sentences by default (``unit``;
a sentence never ends inside an entity, see ``_shared``), ids ``<note>-<line>``.

**Relations** (``n2c2-2018-ade-re``, ``relation``). One example per candidate (ADE, Drug) pair
whose sentences are at most ``window`` sentences apart (default 1: the same or the adjacent
sentence); ``text`` is the note from the first to the
last of those sentences, ``head`` the ADE (Arg1) and ``tail`` the Drug (Arg2) as spans relative
to ``text`` (discontinuous entities by their extent), ``label`` ``ADE-Drug`` if the .ann links
them and ``false`` otherwise; id ``<note>-<ADE id>-<Drug id>``. Entities annotated twice with
the same type and span are one candidate. Gold relations farther apart than the window, and
pairs whose spans partly overlap (the schema cannot hold them), are left out and counted in the
log (how many depends on the window, hence the option; ``window=0`` is same-sentence only).

Splits: ``train/`` (the files of ``training_20180910``), ``test/`` (the gold-standard test
notes) and optionally ``dev/``, directories of .txt/.ann pairs searched recursively; without
``dev/``, dev is carved out of train by note (``dev_fraction``, default 0.1).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_lines
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import (
    OVERLAP_POLICIES,
    UNITS,
    LineIndex,
    Mention,
    check_option,
    decode_utf8,
    files_under,
    log,
    read_split_directories,
    resolve_overlaps,
    segments,
    tagged_examples,
)

_ENTITY = re.compile(r"^(?P<id>T\d+)\t(?P<type>[^\s]+) (?P<spans>\d+ \d+(?:;\d+ \d+)*)\t(?P<text>.*)$")
_RELATION = re.compile(r"^(?P<id>R\d+)\t(?P<type>[^\s]+) Arg1:(?P<arg1>T\d+) Arg2:(?P<arg2>T\d+)\s*$")
_IGNORED = ("#", "A", "M", "N", "*")
ENTITY_FORMAT = "T<n><TAB><type> <start> <end>[;<start> <end>...]<TAB><text>"
RELATION_FORMAT = "R<n><TAB><type> Arg1:T<n> Arg2:T<n>"
ADE_DRUG = "ADE-Drug"


@dataclass(frozen=True)
class Entity:
    """A T line; ``start``/``end`` are its extent (first fragment start, last fragment end)."""

    id: str
    type: str
    fragments: tuple[tuple[int, int], ...]
    line: int
    start: int
    end: int


@dataclass(frozen=True)
class Relation:
    id: str
    type: str
    arg1: str
    arg2: str
    line: int


@dataclass
class Note:
    name: str
    txt: Path
    ann: Path
    text: str
    entities: dict[str, Entity]
    relations: list[Relation]


def read_note(txt: Path) -> Note:
    """A .txt and its .ann, parsed and checked."""
    ann = txt.with_suffix(".ann")
    if not ann.exists():
        raise DataFormatError(txt, f"no annotation file for this note: looked for {ann.name} beside it")
    text = decode_utf8(txt)
    entities: dict[str, Entity] = {}
    relations: list[Relation] = []
    lines = [] if ann.stat().st_size == 0 else read_lines(ann)
    for line_no, line in lines:
        if not line.strip() or line.startswith(_IGNORED):
            continue
        if line.startswith("T"):
            entity = _parse_entity(line, line_no, ann, text)
            if entity.id in entities:
                raise DataFormatError(
                    ann, f"{entity.id} is defined twice (first on line {entities[entity.id].line})", line_no
                )
            entities[entity.id] = entity
        elif line.startswith("R"):
            match = _RELATION.match(line)
            if match is None:
                raise DataFormatError(ann, f"expected a relation line {RELATION_FORMAT}, got {line[:80]!r}", line_no)
            relations.append(Relation(match["id"], match["type"], match["arg1"], match["arg2"], line_no))
        else:
            raise DataFormatError(
                ann, f"expected an entity line {ENTITY_FORMAT} or a relation line, got {line[:80]!r}", line_no
            )
    for relation in relations:
        for arg in (relation.arg1, relation.arg2):
            if arg not in entities:
                raise DataFormatError(
                    ann, f"relation {relation.id} refers to {arg}, which is not defined in {ann.name}", relation.line
                )
    return Note(txt.stem, txt, ann, text, entities, relations)


def _parse_entity(line: str, line_no: int, ann: Path, text: str) -> Entity:
    match = _ENTITY.match(line)
    if match is None:
        raise DataFormatError(ann, f"expected an entity line {ENTITY_FORMAT}, got {line[:80]!r}", line_no)
    fragments = []
    for fragment in match["spans"].split(";"):
        start, end = (int(x) for x in fragment.split())
        if not 0 <= start < end <= len(text):
            raise DataFormatError(
                ann,
                f"{match['id']} span [{start}, {end}) is out of range for the {len(text)} characters of the .txt",
                line_no,
            )
        fragments.append((start, end))
    found = " ".join(text[s:e] for s, e in fragments)
    if "".join(found.split()) != "".join(match["text"].split()):
        raise DataFormatError(
            ann, f"{match['id']} text {match['text']!r} does not match the .txt at {match['spans']}: {found!r}", line_no
        )
    return Entity(
        match["id"],
        match["type"],
        tuple(fragments),
        line_no,
        min(s for s, _ in fragments),
        max(e for _, e in fragments),
    )


def _notes(split_dir: Path) -> list[Note]:
    texts = list(files_under(split_dir, ".txt"))
    if not texts:
        raise DataFormatError(split_dir, "no notes: expected <note>.txt files with <note>.ann beside them")
    return [read_note(txt) for txt in texts]


def _read_splits(directory: Path, dev_fraction: float, build) -> dict[str, list[dict]]:
    splits = read_split_directories(
        directory,
        lambda split, path: [e for note in _notes(path) for e in build(note)],
        dev_fraction,
        group=lambda e: e["_note"],
    )
    for rows in splits.values():
        for row in rows:
            del row["_note"]
    return splits


# --- concepts ---------------------------------------------------------------------------------


def read_n2c2_2018_concepts(
    directory: Path, dev_fraction: float = 0.1, unit: str = "sentence", overlaps: str = "longest"
) -> dict[str, list[dict]]:
    check_option(unit, UNITS, "unit", directory)
    check_option(overlaps, OVERLAP_POLICIES, "overlaps", directory)

    def build(note: Note) -> list[dict]:
        mentions = [Mention(e.start, e.end, e.type, f"{note.ann}:{e.line}") for e in note.entities.values()]
        examples = tagged_examples(
            note.text,
            resolve_overlaps(mentions, overlaps, "entity"),
            document_id=note.name,
            source=note.txt,
            first_line=1,
            unit=unit,
            tokenizer="words",
        )
        for example in examples:
            example["_note"] = note.name
        return examples

    return _read_splits(directory, dev_fraction, build)


# --- relations --------------------------------------------------------------------------------


def read_n2c2_2018_relations(directory: Path, dev_fraction: float = 0.1, window: int = 1) -> dict[str, list[dict]]:
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise DataFormatError(directory, f"adapter option window must be a non-negative integer, got {window!r}")
    return _read_splits(directory, dev_fraction, lambda note: _candidates(note, window))


def _candidates(note: Note, window: int) -> list[dict]:
    canonical: dict[tuple[str, int, int], Entity] = {}
    alias: dict[str, str] = {}
    for entity in note.entities.values():
        kept = canonical.setdefault((entity.type, entity.start, entity.end), entity)
        alias[entity.id] = kept.id
    entities = list(canonical.values())
    mentions = [Mention(e.start, e.end, e.type, "") for e in entities]
    sentences = segments(note.text, "sentence", mentions)
    starts = [s for s, _ in sentences]
    gold = set()
    for relation in note.relations:
        if relation.type != ADE_DRUG:
            continue
        arg1, arg2 = note.entities[relation.arg1], note.entities[relation.arg2]
        if {arg1.type, arg2.type} != {"ADE", "Drug"}:
            raise DataFormatError(
                note.ann,
                f"relation {relation.id} {ADE_DRUG} must link an ADE and a Drug, got {arg1.type} and {arg2.type}",
                relation.line,
            )
        ade, drug = (arg1, arg2) if arg1.type == "ADE" else (arg2, arg1)
        gold.add((alias[ade.id], alias[drug.id]))
    lines = LineIndex(note.text)
    sentence_of = {e.id: bisect_right(starts, e.start) - 1 for e in entities}
    examples, found, skipped = [], set(), 0
    drugs_in: dict[int, list[Entity]] = {}
    for entity in entities:
        if entity.type == "Drug":
            drugs_in.setdefault(sentence_of[entity.id], []).append(entity)
    near = range(-window, window + 1)
    for ade in (e for e in entities if e.type == "ADE"):
        here = sentence_of[ade.id]
        for drug in (d for offset in near for d in drugs_in.get(here + offset, ())):
            first, last = sorted((here, sentence_of[drug.id]))
            overlap = ade.start < drug.end and drug.start < ade.end
            if overlap and (ade.start, ade.end) != (drug.start, drug.end):
                skipped += 1
                continue
            begin, finish = sentences[first][0], sentences[last][1]
            label = ADE_DRUG if (ade.id, drug.id) in gold else "false"
            if label == ADE_DRUG:
                found.add((ade.id, drug.id))
            examples.append(
                {
                    "id": f"{note.name}-{ade.id}-{drug.id}",
                    "text": note.text[begin:finish],
                    "head": {"start": ade.start - begin, "end": ade.end - begin, "type": "ADE"},
                    "tail": {"start": drug.start - begin, "end": drug.end - begin, "type": "Drug"},
                    "label": label,
                    "_where": f"{note.txt}:{lines.line(begin)}",
                    "_note": note.name,
                }
            )
    missed = len(gold - found)
    if missed or skipped:
        log.info(
            "%s: %d ADE-Drug relation(s) beyond a window of %d sentence(s), %d partly overlapping pair(s) left out",
            note.txt,
            missed,
            window,
            skipped,
        )
    return examples


ADAPTERS: dict[str, AdapterSpec] = {
    "n2c2-2018-ade": AdapterSpec(
        schema="token-tagging",
        reader="plugins.datasets.readers.clinical.n2c2_brat:read_n2c2_2018_concepts",
        options={"dev_fraction": 0.1, "unit": "sentence", "overlaps": "longest"},
        default_path="n2c2-2018-track2/original",
    ),
    "n2c2-2018-ade-re": AdapterSpec(
        schema="relation",
        reader="plugins.datasets.readers.clinical.n2c2_brat:read_n2c2_2018_relations",
        options={"dev_fraction": 0.1, "window": 1},
        default_path="n2c2-2018-track2/original",
    ),
}
