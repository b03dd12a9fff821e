"""i2b2 2010 relations into the ``relation`` schema: every candidate concept pair of a sentence.

The release is the one ``i2b2_concepts`` reads for concepts (see there for the layout): each
record is ``txt/<record>.txt`` (one sentence per line, tokens separated by spaces) with
``concept/<record>.con`` (``concepts/`` in the test reference standard) and ``rel/<record>.rel``
beside the ``txt/`` directory. A relation line reads::

    c="<first concept>" <line>:<token> <line>:<token>||r="<type>"||c="<second concept>" <line>:<token> <line>:<token>

with the offsets of the .con files (lines from 1, tokens from 0, end token included). The types
are TrIP, TrWP, TrCP, TrAP, TrNAP (a treatment and a problem), TeRP, TeCP (a test and a problem)
and PIP (two problems). An empty .rel file is a record without relations.

**Candidates** (the i2b2 2010 task definition, which Lewis et al. follow through BLUE): within one
line (= sentence), every pair of concepts whose types are treatment-problem, test-problem or
problem-problem is one example, labelled with the .rel type or **``false``** when the pair has no
relation. ``text`` is the line (surrounding white space removed), ``head``/``tail`` the two
concepts as character spans of that text with their concept types. ``head`` is the first
argument of the .rel line; for an unrelated pair, the treatment or test (the role the first
argument has in every Tr*/Te* relation), otherwise (two problems, or with ``pairs="all"`` any
other combination) the one earlier in the line. One example per pair: the .rel order decides
the direction, it never makes a second example. Ids are
``<record>-<line>-<first token>_<last token>-<first token>_<last token>`` (head, then tail).

Deviations and judgement calls:

* BLUE's converter (``create_i2b2_bert.py``) does not filter by type -- its type test is commented
  out -- so its ``false`` examples also include test-test, treatment-test, ... pairs that no
  i2b2 relation can hold. ``pairs="all"`` reproduces that; the default ``"typed"`` keeps the task's
  candidates.
* A concept crossing a line break cannot be a span of one sentence: it is no candidate, and a
  relation with it, or between concepts of different lines, is left out. Pairs whose spans partly
  overlap (the schema cannot hold them) are left out too. All three are counted in the log.
* Inconsistent annotations are errors with the file and line: a .rel line that does not parse,
  an argument whose offsets are out of range, whose quoted words differ from the tokens (case and
  white space ignored, the files lower-case them) or that is not a concept of the .con file, a
  relation of a concept with itself, concept types that do not fit the relation type (either
  order is accepted, the .rel order is kept), and the same span annotated with two concept types.
  Repeated relation lines with the same type are merged; a pair annotated with two different types
  is an error (``conflicts="first"`` keeps the first and logs the others).

Splits: ``train/``, ``test/`` and optionally ``dev/``, searched recursively; without ``dev/``, dev
is carved out of train by record (``dev_fraction``, default 0.1) from all train records, with or
without candidates, so the dev records are those of the ``i2b2-2010`` concept dataset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_lines
from biolm.errors import Where
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import (
    SPLITS,
    check_option,
    dev_documents,
    files_under,
    log,
    split_directories,
)
from plugins.datasets.readers.clinical.i2b2_concepts import CONCEPT_FORMAT, CONCEPT_LINE, concept_file

NEGATIVE = "false"
PAIRS = ("typed", "all")
CONFLICTS = ("error", "first")
_OFFSETS = r"(?P<l1{n}>\d+):(?P<t1{n}>\d+) (?P<l2{n}>\d+):(?P<t2{n}>\d+)"
RELATION_LINE = re.compile(
    rf'^c="(?P<text_a>.*?)" {_OFFSETS.format(n="a")}\|\|r="(?P<type>[^"]+)"'
    rf'\|\|c="(?P<text_b>.*)" {_OFFSETS.format(n="b")}\s*$'
)
RELATION_FORMAT = 'c="<text>" <line>:<token> <line>:<token>||r="<type>"||c="<text>" <line>:<token> <line>:<token>'
# Which concept types each relation type links (as a set: the .rel order is not checked).
RELATION_TYPES = {
    **dict.fromkeys(("TrIP", "TrWP", "TrCP", "TrAP", "TrNAP"), frozenset({"treatment", "problem"})),
    **dict.fromkeys(("TeRP", "TeCP"), frozenset({"test", "problem"})),
    "PIP": frozenset({"problem"}),
}
CANDIDATE_TYPES = set(RELATION_TYPES.values())
_WANTED = {
    frozenset({"treatment", "problem"}): "a treatment and a problem",
    frozenset({"test", "problem"}): "a test and a problem",
    frozenset({"problem"}): "two problems",
}
_TOKEN = re.compile(r"\S+")

Offsets = tuple[int, int, int, int]  # first line, first token, last line, last token


@dataclass(frozen=True)
class Concept:
    offsets: Offsets
    type: str
    line: int  # line of the .con file

    @property
    def single_line(self) -> bool:
        return self.offsets[0] == self.offsets[2]


@dataclass(frozen=True)
class Relation:
    type: str
    head: Concept
    tail: Concept
    line: int  # line of the .rel file


@dataclass
class Record:
    name: str
    txt: Path
    lines: list[str]
    tokens: list[list[tuple[int, int]]]  # per line, the character span of each token
    concepts: list[Concept]
    relations: dict[frozenset[Offsets], Relation]
    dropped_conflicts: int = 0
    con: Path | None = None  # the concept and relation files, which errors about a label name
    rel: Path | None = None


def read_i2b2_2010_relations(
    directory: Path, dev_fraction: float = 0.1, pairs: str = "typed", conflicts: str = "error"
) -> dict[str, list[dict]]:
    check_option(pairs, PAIRS, "pairs", directory)
    check_option(conflicts, CONFLICTS, "conflicts", directory)
    dirs = split_directories(directory)
    records = {split: _read_split(path, conflicts) for split, path in dirs.items() if path is not None}
    if dirs["dev"] is None:
        dev = dev_documents((record.name for record in records["train"]), dev_fraction, dirs["train"])
        train = records["train"]
        records["train"] = [record for record in train if record.name not in dev]
        records["dev"] = [record for record in train if record.name in dev]
    return {split: [e for record in records[split] for e in _candidates(record, pairs)] for split in SPLITS}


def _read_split(split_dir: Path, conflicts: str) -> list[Record]:
    texts = [path for path in files_under(split_dir, ".txt") if path.parent.name == "txt"]
    if not texts:
        raise DataFormatError(
            split_dir,
            "no records: expected txt/<record>.txt files with concept/<record>.con and rel/<record>.rel beside",
        )
    return [_read_record(txt, conflicts) for txt in texts]


def _relation_file(txt: Path) -> Path:
    path = txt.parent.parent / "rel" / f"{txt.stem}.rel"
    if not path.exists():
        raise DataFormatError(txt, f"no relation file for this record: looked for {path}")
    return path


def _entries(path: Path) -> list[tuple[int, str]]:
    """Non-blank lines; an empty file is a record without annotations."""
    if not path.stat().st_size:
        return []
    return [(number, line) for number, line in read_lines(path) if line.strip()]


def _read_record(txt: Path, conflicts: str) -> Record:
    lines = [line for _, line in read_lines(txt)]
    record = Record(txt.stem, txt, lines, [[m.span() for m in _TOKEN.finditer(line)] for line in lines], [], {})
    con = record.con = concept_file(txt)
    by_offsets: dict[Offsets, Concept] = {}
    for number, entry in _entries(con):
        match = CONCEPT_LINE.match(entry)
        if match is None:
            raise DataFormatError(con, f"expected a concept line {CONCEPT_FORMAT}, got {entry[:80]!r}", number)
        offsets = _checked_offsets(record, match, "", match["text"], con, number)
        concept = Concept(offsets, match["type"], number)
        known = by_offsets.setdefault(offsets, concept)
        if known.type != concept.type:
            raise DataFormatError(
                con,
                f"concept {_show(offsets)} is a {concept.type} here but a {known.type} on line {known.line}",
                number,
            )
        if known is concept:
            record.concepts.append(concept)
    rel = record.rel = _relation_file(txt)
    for number, entry in _entries(rel):
        match = RELATION_LINE.match(entry)
        if match is None:
            raise DataFormatError(rel, f"expected a relation line {RELATION_FORMAT}, got {entry[:80]!r}", number)
        head, tail = (_argument(record, by_offsets, match, side, rel, con, number) for side in ("a", "b"))
        relation = Relation(match["type"], head, tail, number)
        _check_types(relation, rel)
        key = frozenset({head.offsets, tail.offsets})
        known = record.relations.setdefault(key, relation)
        if known.type != relation.type:
            if conflicts == "error":
                raise DataFormatError(
                    rel,
                    f"{relation.type} between {_show(head.offsets)} and {_show(tail.offsets)} conflicts with "
                    f"{known.type} on line {known.line}; one example per pair needs one type "
                    "(adapter option conflicts='first' keeps the first)",
                    number,
                )
            record.dropped_conflicts += 1
    return record


def _argument(
    record: Record, concepts: dict[Offsets, Concept], match: re.Match, side: str, rel: Path, con: Path, number: int
) -> Concept:
    offsets = _checked_offsets(record, match, side, match[f"text_{side}"], rel, number)
    if offsets not in concepts:
        raise DataFormatError(
            rel, f'relation argument c="{match[f"text_{side}"]}" {_show(offsets)} is not a concept of {con}', number
        )
    return concepts[offsets]


def _check_types(relation: Relation, rel: Path) -> None:
    head, tail = relation.head, relation.tail
    if head.offsets == tail.offsets:
        raise DataFormatError(
            rel, f"relation {relation.type} links concept {_show(head.offsets)} to itself", relation.line
        )
    types = frozenset({head.type, tail.type})
    expected = RELATION_TYPES.get(relation.type)
    if types not in CANDIDATE_TYPES or (expected is not None and types != expected):
        wanted = _WANTED.get(expected, "a problem and a treatment, a test or another problem")
        raise DataFormatError(
            rel, f"relation {relation.type} must link {wanted}, got {head.type} and {tail.type}", relation.line
        )


def _checked_offsets(record: Record, match: re.Match, side: str, quoted: str, path: Path, number: int) -> Offsets:
    """The offsets of a concept or relation argument, checked against the record's tokens."""
    l1, t1, l2, t2 = (int(match[f"{key}{side}"]) for key in ("l1", "t1", "l2", "t2"))
    name = record.txt.name
    for line, token in ((l1, t1), (l2, t2)):
        if not 1 <= line <= len(record.lines):
            raise DataFormatError(
                path, f"offset {line}:{token} is beyond the {len(record.lines)} lines of {name}", number
            )
        count = len(record.tokens[line - 1])
        if not 0 <= token < count:
            raise DataFormatError(
                path,
                f"offset {line}:{token} is out of range: line {line} of {name} has {count} tokens (numbered from 0)",
                number,
            )
    if (l2, t2) < (l1, t1):
        raise DataFormatError(path, f"concept ends ({l2}:{t2}) before it starts ({l1}:{t1})", number)
    words = " ".join(_words(record, (l1, t1, l2, t2)))
    if "".join(words.split()).lower() != "".join(quoted.split()).lower():
        raise DataFormatError(
            path, f'c="{quoted}" does not match the tokens {words!r} at {l1}:{t1}-{l2}:{t2} of {name}', number
        )
    return l1, t1, l2, t2


def _words(record: Record, offsets: Offsets) -> list[str]:
    l1, t1, l2, t2 = offsets
    words = []
    for line in range(l1, l2 + 1):
        spans = record.tokens[line - 1]
        first = t1 if line == l1 else 0
        last = t2 if line == l2 else len(spans) - 1
        words.extend(record.lines[line - 1][a:b] for a, b in spans[first : last + 1])
    return words


def _show(offsets: Offsets) -> str:
    return f"{offsets[0]}:{offsets[1]} {offsets[2]}:{offsets[3]}"


# --- candidates -------------------------------------------------------------------------------


def _candidates(record: Record, pairs: str) -> list[dict]:
    by_line: dict[int, list[Concept]] = {}
    for concept in record.concepts:
        if concept.single_line:
            by_line.setdefault(concept.offsets[0], []).append(concept)
    examples, used, overlapping = [], set(), 0
    for line in sorted(by_line):
        concepts = sorted(by_line[line], key=lambda c: (c.offsets[1], c.offsets[3]))
        raw = record.lines[line - 1]
        lead = len(raw) - len(raw.lstrip())
        text = raw.strip()
        for index, first in enumerate(concepts):
            for second in concepts[index + 1 :]:
                types = frozenset({first.type, second.type})
                if pairs == "typed" and types not in CANDIDATE_TYPES:
                    continue
                key = frozenset({first.offsets, second.offsets})
                relation = record.relations.get(key)
                if relation is not None:
                    head, tail, label = relation.head, relation.tail, relation.type
                elif first.type == "problem" and second.type != "problem":
                    head, tail, label = second, first, NEGATIVE
                else:
                    head, tail, label = first, second, NEGATIVE
                head_span, tail_span = _span(record, head, lead), _span(record, tail, lead)
                if head_span[0] < tail_span[1] and tail_span[0] < head_span[1]:
                    overlapping += 1
                    continue
                if relation is not None:
                    used.add(key)
                examples.append(
                    {
                        "id": f"{record.name}-{line}-{_tokens(head)}-{_tokens(tail)}",
                        "text": text,
                        "head": {"start": head_span[0], "end": head_span[1], "type": head.type},
                        "tail": {"start": tail_span[0], "end": tail_span[1], "type": tail.type},
                        "label": label,
                        "_where": Where(
                            f"{record.txt}:{line}",
                            fields={
                                "label": f"{record.rel}:{relation.line}" if relation else f"{record.txt}:{line}",
                                "head": f"{record.con}:{head.line}",
                                "tail": f"{record.con}:{tail.line}",
                            },
                        ),
                    }
                )
    left_out = {
        "concept(s) across a line break": sum(not concept.single_line for concept in record.concepts),
        "relation(s) not within one line or between partly overlapping concepts": len(set(record.relations) - used),
        "partly overlapping pair(s)": overlapping,
        "conflicting relation line(s)": record.dropped_conflicts,
    }
    if any(left_out.values()):
        counts = ", ".join(f"{count} {what}" for what, count in left_out.items() if count)
        log.info("%s: left out %s", record.txt, counts)
    return examples


def _tokens(concept: Concept) -> str:
    return f"{concept.offsets[1]}_{concept.offsets[3]}"


def _span(record: Record, concept: Concept, lead: int) -> tuple[int, int]:
    line, first, _, last = concept.offsets
    spans = record.tokens[line - 1]
    return spans[first][0] - lead, spans[last][1] - lead


ADAPTERS: dict[str, AdapterSpec] = {
    "i2b2-2010-re": AdapterSpec(
        schema="relation",
        reader="plugins.datasets.readers.clinical.i2b2_relations:read_i2b2_2010_relations",
        options={"dev_fraction": 0.1, "pairs": "typed", "conflicts": "error"},
        default_path="i2b2-2010/original",
    ),
}
