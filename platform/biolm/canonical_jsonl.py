"""Datasets already in a canonical schema, as JSON Lines: the format for your own data.

Layout: ``<directory>/{train,dev,test}.jsonl`` (``.jsonl.gz`` also read), one example per line,
each a JSON object with exactly the fields of the adapter's schema (``biolm.schemas``); blank
lines are skipped. Because the examples are canonical already, this reader only parses: the
fields, labels, tag counts and spans are checked by ``validate_examples`` like every other
dataset's, and its errors quote the ``file:line`` this reader records in ``_where``. What only a
JSONL parser can see is reported here with file and line: a line that is not JSON, a line that
is not an object, a key repeated within an object, and the reserved key ``_where``.

A plugin's dataset in this format names the reader as ``READER``.
"""

from __future__ import annotations

import json
from pathlib import Path

from biolm.dataset_io import DataFormatError, RepeatedKeyError, read_lines, reject_repeated_keys
from biolm.specs import SPLIT_NAMES

READER = "biolm.canonical_jsonl:read_canonical_jsonl"
SPLIT_FILES = {split: (f"{split}.jsonl", f"{split}.jsonl.gz") for split in SPLIT_NAMES}


def read_canonical_jsonl(directory: Path, optional: tuple[str, ...] | list[str] = ()) -> dict[str, list[dict]]:
    """Read ``directory / {train,dev,test}.jsonl``; every split file must exist but the ``optional`` ones."""
    folder = Path(directory)
    if not folder.is_dir():
        raise DataFormatError(folder, "is not a directory")
    splits = {}
    for split, names in SPLIT_FILES.items():
        path = next((folder / name for name in names if (folder / name).is_file()), None)
        if path is None:
            if split in optional:
                continue
            raise DataFormatError(folder, f"no {split} file: looked for {' or '.join(repr(n) for n in names)}")
        splits[split] = read_jsonl(path)
    return splits


def canonical_folds(directory: Path, folds: int) -> dict[int, Path]:
    """The cross-validation folds the platform sends a worker: ``directory/<k>/`` with ``train.jsonl`` in it.

    A fold has train and test (and no dev); :func:`biolm.cross_validation.fold_directories`
    names any fold that is missing.
    """
    root = Path(directory)
    return {
        k: root / str(k)
        for k in range(1, folds + 1)
        if any((root / str(k) / n).is_file() for n in SPLIT_FILES["train"])
    }


def read_jsonl(path: Path) -> list[dict]:
    """The objects of a JSON Lines file, each with ``"_where": "file:line"``."""
    examples = []
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        try:
            value = json.loads(line, object_pairs_hook=reject_repeated_keys)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line_no) from None
        except RepeatedKeyError as exc:
            raise DataFormatError(path, f"the key {exc.key!r} appears twice in one object", line_no) from None
        if not isinstance(value, dict):
            raise DataFormatError(path, f"expected one JSON object per line, found {_json_type(value)}", line_no)
        if "_where" in value:
            raise DataFormatError(path, "the key '_where' is reserved for error locations", line_no)
        value["_where"] = f"{path}:{line_no}"
        examples.append(value)
    return examples


def _json_type(value: object) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
