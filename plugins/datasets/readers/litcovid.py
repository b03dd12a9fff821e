"""BioCreative VII LitCovid CSVs into the multi-label ``classification`` schema.

The track's files are ``BC7-LitCovid-Train.csv``, ``BC7-LitCovid-Dev.csv`` and
``BC7-LitCovid-Test-GS.csv`` (the test gold standard; the test file released during the
challenge had no labels). They are RFC 4180 CSV with a header row ``pmid, journal, title,
abstract, keywords, pub_type, authors, doi, label``; quoted fields may span several lines, so
an example's line is the line its record starts on. ``label`` holds one or more of the seven
topics separated by ``;``.

Each article becomes ``text`` = title and ``text_pair`` = abstract, the sentence-pair input the
Bioformer team used (Fang & Wang 2022: "the title is the first sentence, and the abstract is
the second sentence"); the other columns are not model input. Some LitCovid articles have no
abstract: ``text_pair`` is then ``""``. An article without a title falls back to its abstract
as ``text`` (validation needs a non-empty text). A row without any topic, a header missing a
required column, a row with the wrong number of fields, bad UTF-8 or broken quoting is a
DataFormatError with file and line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from biolm.dataset_io import DataFormatError
from biolm.errors import Where
from biolm.specs import AdapterSpec
from plugins.datasets.readers.sentence_common import field_line, split_files

CANDIDATES = {
    "train": ("BC7-LitCovid-Train.csv",),
    "dev": ("BC7-LitCovid-Dev.csv",),
    "test": ("BC7-LitCovid-Test-GS.csv",),
}
REQUIRED_COLUMNS = ("pmid", "title", "abstract", "label")


def read_litcovid(directory: Path) -> dict[str, list[dict]]:
    files = split_files(directory, CANDIDATES)
    return {split: read_articles(path) for split, path in files.items()}


def _decoded_lines(path: Path) -> Iterator[str]:
    """The file's lines (endings kept, as csv needs them), decoded one by one so bad UTF-8 has a line."""
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataFormatError(
                    path, f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)", line_no
                ) from None
            # CRLF read as LF, also inside quoted fields that span lines (a file saved on Windows)
            yield text[:-2] + "\n" if text.endswith("\r\n") else text


def _records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line the record starts on, fields)`` for every CSV record, header included."""
    reader = csv.reader(_decoded_lines(path), strict=True)
    line = 1
    try:
        for fields in reader:
            yield line, fields
            line = reader.line_num + 1
    except csv.Error as exc:
        raise DataFormatError(path, f"broken CSV record ({exc})", line) from None


FIELD_COLUMNS = (("id", "pmid"), ("text", "title"), ("text_pair", "abstract"), ("labels", "label"))


def read_articles(path: Path) -> list[dict]:
    records = _records(path)
    header_line, header = next(records, (1, None))
    if header is None:
        raise DataFormatError(path, "file is empty")
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise DataFormatError(
            path, f"expected a header with the columns {', '.join(REQUIRED_COLUMNS)}; missing {missing}", header_line
        )
    column = {name: header.index(name) for name in REQUIRED_COLUMNS}
    examples = []
    for line, fields in records:
        if not any(field.strip() for field in fields):
            continue
        if len(fields) != len(header):
            raise DataFormatError(path, f"expected {len(header)} comma-separated fields, found {len(fields)}", line)
        title, abstract = fields[column["title"]].strip(), fields[column["abstract"]].strip()
        topics = [topic.strip() for topic in fields[column["label"]].split(";") if topic.strip()]
        if not topics:
            raise DataFormatError(path, "expected at least one ';'-separated topic in the label column", line)
        examples.append(
            {
                "id": fields[column["pmid"]].strip(),
                "text": title or abstract,
                "text_pair": abstract if title else "",
                "labels": topics,
                "_where": Where(
                    f"{path}:{line}",
                    fields={name: f"{path}:{field_line(line, fields, column[key])}" for name, key in FIELD_COLUMNS},
                ),
            }
        )
    return examples


ADAPTERS: dict[str, AdapterSpec] = {
    "litcovid": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.litcovid:read_litcovid",
        default_path="LitCovid",
        multi_label=True,
    ),
}
