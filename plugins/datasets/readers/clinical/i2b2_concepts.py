"""i2b2 2010 concepts and i2b2 2012 events/time expressions into the ``token-tagging`` schema.

Both corpora are pre-tokenised discharge summaries, one sentence per line, tokens separated by
spaces; we keep those sentences and tokens (one example per non-empty line, id
``<record>-<line>``) and write the annotations as BIO tags. See ``_shared`` for overlaps, mentions
crossing a line break (they exist in 2010; tagged as one piece per line) and the dev split.

**i2b2 2010** (``concept_assertion_relation_training_data`` and the test reference standard).
Each record is ``txt/<record>.txt`` with ``concept/<record>.con`` (the test reference standard
calls the directory ``concepts/``; both are accepted) beside the ``txt/`` directory, e.g.
``train/beth/txt/record-13.txt`` and ``train/beth/concept/record-13.con``. A concept line reads
``c="<lower-cased text>" <line>:<token> <line>:<token>||t="<type>"``: lines count from 1, tokens
from 0, the end token is included, types are problem, treatment and test. The official test
archives are flat: put ``test_data/*.txt`` in ``test/txt/`` and the reference standard's
``concepts/*.con`` in ``test/concepts/``. The quoted text is checked against the tokens (ignoring
case and white space, as the file lower-cases it) so offsets that point at the wrong words are
reported, not silently learned. An empty ``.con`` file means a record without concepts.

**i2b2 2012** (``2012-07-15.original-annotation.release`` for train, the ground truth
``merged_xml`` for test). One XML file per record: the note is the CDATA of ``<TEXT>`` and the
annotations are ``<EVENT .../>`` (types PROBLEM, TEST, TREATMENT, CLINICAL_DEPT, EVIDENTIAL,
OCCURRENCE) and ``<TIMEX3 .../>`` (DATE, TIME, DURATION, FREQUENCY) tags with character offsets
``start``/``end`` into that CDATA (end exclusive). SECTIME and TLINK tags are not concepts and are
ignored. Quirks of the official files that decide how we read them:

* Several files are not well-formed XML (BigBio's loader drops 14 of them; clinicalBERT's
  preprocessing replaces bare ``&`` before parsing). So we do not use an XML parser: the note is the raw text
  between ``<TEXT><![CDATA[`` and ``]]></TEXT>`` (line ends normalised to LF) and each tag is
  read from its line, which also gives the line for error messages.
* ``text`` attributes are not compared with the note: they are XML-unescaped while the CDATA
  keeps ``&apos;`` literally, and public preprocessing (clinicalBERT) disables the comparison on
  the test set. Offsets are range-checked.
* A few EVENTs have an empty ``type``; they cannot be tagged and are skipped.

Option ``types`` keeps only some types (Yang et al. 2022 tag only PROBLEM, TEST and TREATMENT).

Splits: ``train/``, ``test/`` and optionally ``dev/`` directories, searched recursively (2012: the
XML files of ``2012-07-15.original-annotation.release`` in ``train/``, those of the ground truth's
``merged_xml`` in ``test/``); without ``dev/``, dev is carved out of train by record
(``dev_fraction``, default 0.1). The releases have 170/256 (2010, the part distributed today)
and 190/120 (2012) train/test records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_lines
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import (
    OVERLAP_POLICIES,
    LineIndex,
    Mention,
    check_option,
    decode_utf8,
    files_under,
    read_split_directories,
    record_files,
    resolve_overlaps,
    tagged_examples,
)

CONCEPT_LINE = re.compile(
    r'^c="(?P<text>.*)" (?P<l1>\d+):(?P<t1>\d+) (?P<l2>\d+):(?P<t2>\d+)\|\|t="(?P<type>[^"]+)"\s*$'
)
CONCEPT_FORMAT = 'c="<text>" <line>:<token> <line>:<token>||t="<type>"'
CONCEPT_DIRS = ("concept", "concepts")
_TOKEN = re.compile(r"\S+")


# --- i2b2 2010 --------------------------------------------------------------------------------


def read_i2b2_2010(directory: Path, dev_fraction: float = 0.1, overlaps: str = "error") -> dict[str, list[dict]]:
    check_option(overlaps, OVERLAP_POLICIES, "overlaps", directory)
    return read_split_directories(directory, lambda split, path: _read_2010_split(path, overlaps), dev_fraction)


def _read_2010_split(split_dir: Path, overlaps: str) -> list[dict]:
    texts = [path for path in files_under(split_dir, ".txt") if path.parent.name == "txt"]
    if not texts:
        raise DataFormatError(split_dir, "no records: expected txt/<record>.txt files with concept/<record>.con beside")
    examples = []
    for txt in texts:
        examples.extend(_read_2010_record(txt, concept_file(txt), overlaps))
    return examples


def concept_file(txt: Path) -> Path:
    candidates = [txt.parent.parent / name / f"{txt.stem}.con" for name in CONCEPT_DIRS]
    for path in candidates:
        if path.exists():
            return path
    raise DataFormatError(txt, f"no concept file for this record: looked for {' and '.join(map(str, candidates))}")


def _read_2010_record(txt: Path, con: Path, overlaps: str) -> list[dict]:
    lines = [line for _, line in read_lines(txt)]
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    tokens = [[m.span() for m in _TOKEN.finditer(line)] for line in lines]
    text = "\n".join(lines)
    mentions = []
    if con.stat().st_size:
        for con_line, entry in read_lines(con):
            if not entry.strip():
                continue
            match = CONCEPT_LINE.match(entry)
            if match is None:
                raise DataFormatError(con, f"expected a concept line {CONCEPT_FORMAT}, got {entry[:80]!r}", con_line)
            l1, t1, l2, t2 = (int(match[k]) for k in ("l1", "t1", "l2", "t2"))
            for line_no, token in ((l1, t1), (l2, t2)):
                if not 1 <= line_no <= len(lines):
                    raise DataFormatError(
                        con,
                        f"concept offset {line_no}:{token} is beyond the {len(lines)} lines of {txt.name}",
                        con_line,
                    )
                if not 0 <= token < len(tokens[line_no - 1]):
                    raise DataFormatError(
                        con,
                        f"concept offset {line_no}:{token} is out of range: line {line_no} of {txt.name} has "
                        f"{len(tokens[line_no - 1])} tokens (numbered from 0)",
                        con_line,
                    )
            if (l2, t2) < (l1, t1):
                raise DataFormatError(con, f"concept ends ({l2}:{t2}) before it starts ({l1}:{t1})", con_line)
            start = starts[l1 - 1] + tokens[l1 - 1][t1][0]
            end = starts[l2 - 1] + tokens[l2 - 1][t2][1]
            found = text[start:end]
            if "".join(found.split()).lower() != "".join(match["text"].split()).lower():
                raise DataFormatError(
                    con,
                    f'concept c="{match["text"]}" does not match the tokens {" ".join(found.split())!r} '
                    f"at {l1}:{t1}-{l2}:{t2} of {txt.name}",
                    con_line,
                )
            mentions.append(Mention(start, end, match["type"], f"{con}:{con_line}"))
    return tagged_examples(
        text,
        resolve_overlaps(mentions, overlaps, "concept"),
        document_id=txt.stem,
        source=txt,
        first_line=1,
        unit="line",
        tokenizer="whitespace",
    )


# --- i2b2 2012 --------------------------------------------------------------------------------

TEXT_OPEN, TEXT_CLOSE = "<TEXT><![CDATA[", "]]></TEXT>"
_TAG = re.compile(r"<(EVENT|TIMEX3)\s(.*?)/>")
_TAG_START = re.compile(r"<(EVENT|TIMEX3)\b")


def read_i2b2_2012(
    directory: Path, dev_fraction: float = 0.1, overlaps: str = "error", types: Sequence[str] | None = None
) -> dict[str, list[dict]]:
    check_option(overlaps, OVERLAP_POLICIES, "overlaps", directory)

    def read_split(split: str, path: Path) -> list[dict]:
        files = record_files(path, ".xml", f"<record>.xml files in {split}/")
        return [example for file in files for example in _read_2012_record(file, overlaps, types)]

    return read_split_directories(directory, read_split, dev_fraction)


def _attribute(body: str, name: str) -> str | None:
    found = re.search(rf'(?:^|\s){name}="([^"]*)"', body)
    return found.group(1) if found else None


def _read_2012_record(path: Path, overlaps: str, types: Sequence[str] | None) -> list[dict]:
    raw = decode_utf8(path).replace("\r\n", "\n")
    opening = raw.find(TEXT_OPEN)
    closing = raw.find(TEXT_CLOSE, opening + 1)
    if opening < 0 or closing < 0:
        raise DataFormatError(
            path,
            f"expected the note as <TEXT><![CDATA[ ... ]]></TEXT>; found no {TEXT_OPEN if opening < 0 else TEXT_CLOSE}",
        )
    text = raw[opening + len(TEXT_OPEN) : closing]
    lines = LineIndex(raw)
    mentions = []
    tags_start = lines.line(closing)
    for line_no, line in enumerate(raw[closing:].split("\n"), start=tags_start):
        matches = list(_TAG.finditer(line))
        if len(matches) != len(_TAG_START.findall(line)):
            raise DataFormatError(
                path, f"an EVENT/TIMEX3 tag that is not closed with '/>' on its line: {line[:80]!r}", line_no
            )
        for match in matches:
            tag, body = match.group(1), match.group(2)
            values = {name: _attribute(body, name) for name in ("start", "end", "type")}
            missing = [name for name, value in values.items() if value is None]
            if missing:
                raise DataFormatError(path, f"{tag} tag without its {' and '.join(missing)} attribute", line_no)
            if not (values["start"].isdigit() and values["end"].isdigit()):
                raise DataFormatError(
                    path,
                    f"{tag} offsets must be integers, got start={values['start']!r} end={values['end']!r}",
                    line_no,
                )
            start, end = int(values["start"]), int(values["end"])
            label = values["type"].strip()
            if not 0 <= start < end <= len(text):
                raise DataFormatError(
                    path,
                    f"{tag} {_attribute(body, 'id') or ''} span [{start}, {end}) is out of range for a TEXT of "
                    f"{len(text)} characters",
                    line_no,
                )
            if not label or (types is not None and label not in types):
                continue
            mentions.append(Mention(start, end, label, f"{path}:{line_no}"))
    return tagged_examples(
        text,
        resolve_overlaps(mentions, overlaps, "annotation"),
        document_id=path.stem,
        source=path,
        first_line=lines.line(opening),
        unit="line",
        tokenizer="whitespace",
    )


ADAPTERS: dict[str, AdapterSpec] = {
    "i2b2-2010": AdapterSpec(
        schema="token-tagging",
        reader="plugins.datasets.readers.clinical.i2b2_concepts:read_i2b2_2010",
        options={"dev_fraction": 0.1, "overlaps": "error"},
        default_path="i2b2-2010/original",
    ),
    "i2b2-2012": AdapterSpec(
        schema="token-tagging",
        reader="plugins.datasets.readers.clinical.i2b2_concepts:read_i2b2_2012",
        options={"dev_fraction": 0.1, "overlaps": "error"},
        default_path="i2b2-2012/original",
    ),
}
