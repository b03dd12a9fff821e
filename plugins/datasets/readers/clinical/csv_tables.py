"""Report-level CSV tables (OpenI / MIMIC-CXR findings, MIMIC-AKI) into the ``classification`` schema.

Neither set has an official distribution file: Li et al. 2022 build them from the reports (OpenI,
MIMIC-CXR) or from MIMIC-III notes (the AKI cohort of Li et al. 2018), so we read the tables
its code works with. ``train.csv``, ``dev.csv`` and ``test.csv`` (comma-separated, a header
line, quoted fields may span lines, UTF-8), one row per report or admission:

* **OpenI / MIMIC-CXR** (``openi``, multi-label): an id column, the report text and one 0/1
  column per finding, the header naming the findings. Both ``id,text,<finding>...`` and the
  layout of Clinical-Longformer's example files (``,<finding>...,TXT``: a nameless id column
  first, the text last, scores written ``0.0``/``1.0``) are accepted; the id column is ``id`` or
  nameless, the text column ``text``, ``txt`` or ``report`` (any case), every other column is a
  finding. ``labels`` lists the findings marked 1 (empty for a normal report). A value other than
  0/1 (e.g. CheXpert's -1 for "uncertain": map those first) is an error with file, line and
  column. Li et al. 2022 only test on OpenI (all 3,684 reports), so train and dev are optional.
* **MIMIC-AKI** (``mimic-aki``): columns ``id``, ``text`` and ``label`` (0/1, ``0.0``/``1.0``
  accepted); the text is all notes of the first 24 hours, often very long, and is kept whole
  (the CSV field size limit is raised for it).

A header without the expected columns, a row with a different number of fields, an empty id, a
missing split file, an empty file or text that is not UTF-8 is a DataFormatError with file and
line (the line where the row starts).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from biolm.dataset_io import DataFormatError
from biolm.errors import Where
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import SPLITS, decode_utf8
from plugins.datasets.readers.sentence_common import field_line

ID_NAMES = ("id", "")
TEXT_NAMES = ("text", "txt", "report")
BINARY = {"0": "0", "1": "1", "0.0": "0", "1.0": "1"}


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line where the row starts, fields)`` of a CSV file, blank rows skipped."""
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(io.StringIO(decode_utf8(path), newline=""))
    line = 1
    try:
        for fields in reader:
            if fields and any(f.strip() for f in fields):
                yield line, fields
            line = reader.line_num + 1
    except csv.Error as exc:
        raise DataFormatError(path, f"broken CSV: {exc}", line) from None


def _split_files(directory: Path, optional: tuple[str, ...] = ()) -> dict[str, Path]:
    files = {}
    for split in SPLITS:
        path = directory / f"{split}.csv"
        if path.exists():
            files[split] = path
        elif split not in optional:
            raise DataFormatError(directory, f"missing the {split} split: looked for {split}.csv")
    return files


def _header(path: Path, rows: Iterator[tuple[int, list[str]]], expected: str) -> tuple[int, int, int, list[str]]:
    """The header's line, the id column, the text column and the header of a table."""
    line, header = next(rows)
    names = [name.strip().lower() for name in header]
    ids = [i for i, name in enumerate(names) if name in ID_NAMES]
    texts = [i for i, name in enumerate(names) if name in TEXT_NAMES]
    if len(ids) != 1 or len(texts) != 1:
        raise DataFormatError(path, f"expected the header {expected}, got {','.join(header)[:120]!r}", line)
    return line, ids[0], texts[0], header


def _fields(path: Path, line: int, fields: list[str], header: list[str], id_column: int) -> None:
    if len(fields) != len(header):
        raise DataFormatError(
            path, f"expected {len(header)} comma-separated fields as in the header, found {len(fields)}", line
        )
    if not fields[id_column].strip():
        raise DataFormatError(path, "empty id", line)


# --- OpenI / MIMIC-CXR ------------------------------------------------------------------------


def read_findings_csv(directory: Path) -> dict[str, list[dict]]:
    return {split: _read_findings(path) for split, path in _split_files(directory, ("train", "dev")).items()}


def _read_findings(path: Path) -> list[dict]:
    rows = _rows(path)
    header_line, id_column, text_column, header = _header(path, rows, "id,text,<finding>,<finding>...")
    findings = [(i, name.strip()) for i, name in enumerate(header) if i not in (id_column, text_column)]
    if not findings or any(not name for _, name in findings):
        raise DataFormatError(
            path, "expected one named 0/1 column per finding after the id and text columns", header_line
        )
    examples = []
    for line, fields in rows:
        _fields(path, line, fields, header, id_column)
        labels = []
        for column, name in findings:
            value = BINARY.get(fields[column].strip())
            if value is None:
                raise DataFormatError(
                    path, f"column {name!r} must be 0 or 1, got {fields[column]!r}", field_line(line, fields, column)
                )
            if value == "1":
                labels.append(name)
        label_line = field_line(line, fields, findings[0][0])
        examples.append(_example(fields, id_column, text_column, labels, path, line, label_line))
    return examples


# --- MIMIC-AKI --------------------------------------------------------------------------------


def read_label_csv(directory: Path) -> dict[str, list[dict]]:
    return {split: _read_labels(path) for split, path in _split_files(directory).items()}


def _read_labels(path: Path) -> list[dict]:
    rows = _rows(path)
    header_line, id_column, text_column, header = _header(path, rows, "id,text,label")
    names = [name.strip().lower() for name in header]
    if len(header) != 3 or "label" not in names:
        raise DataFormatError(path, f"expected the header id,text,label, got {','.join(header)[:120]!r}", header_line)
    label_column = names.index("label")
    examples = []
    for line, fields in rows:
        _fields(path, line, fields, header, id_column)
        value = fields[label_column].strip()
        label_line = field_line(line, fields, label_column)
        examples.append(_example(fields, id_column, text_column, [BINARY.get(value, value)], path, line, label_line))
    return examples


def _example(
    fields: list[str], id_column: int, text_column: int, labels: list[str], path: Path, line: int, label_line: int
) -> dict:
    """One note; a note's text may span lines, so ``_where`` also knows the line of its text and labels."""
    return {
        "id": fields[id_column].strip(),
        "text": fields[text_column],
        "text_pair": "",
        "labels": labels,
        "_where": Where(
            f"{path}:{line}",
            fields={"text": f"{path}:{field_line(line, fields, text_column)}", "labels": f"{path}:{label_line}"},
        ),
    }


ADAPTERS: dict[str, AdapterSpec] = {
    "openi": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.clinical.csv_tables:read_findings_csv",
        default_path="OpenI/csv",
        optional_splits=("train", "dev"),
        multi_label=True,
    ),
    "mimic-aki": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.clinical.csv_tables:read_label_csv",
        default_path="MIMIC-AKI/csv",
    ),
}
