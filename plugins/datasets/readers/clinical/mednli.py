"""MedNLI (PhysioNet release 1.0.0) into the ``classification`` schema as sentence pairs.

The release holds ``mli_train_v1.jsonl``, ``mli_dev_v1.jsonl`` and ``mli_test_v1.jsonl``
(11,232 / 1,395 / 1,422 pairs), one JSON object per line in the SNLI layout: ``sentence1``
(premise), ``sentence2`` (hypothesis), ``gold_label`` (entailment / contradiction / neutral),
``pairID``, plus parse trees that we do not need. ``text`` is the premise, ``text_pair`` the
hypothesis, ``labels`` the gold label and ``id`` the pairID. Blank lines are skipped; a line
that is not a JSON object with those four keys is a DataFormatError with its line.
"""

from __future__ import annotations

import json
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_lines
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import SPLITS

FILES = {split: f"mli_{split}_v1.jsonl" for split in SPLITS}
KEYS = ("sentence1", "sentence2", "gold_label", "pairID")


def read_mednli(directory: Path) -> dict[str, list[dict]]:
    splits = {}
    for split, name in FILES.items():
        path = directory / name
        if not path.exists():
            raise DataFormatError(directory, f"missing the {split} split: looked for {name}")
        splits[split] = list(_read_file(path))
    return splits


def _read_file(path: Path):
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, f"not a JSON object: {exc.msg} (column {exc.colno})", line_no) from None
        if not isinstance(record, dict):
            raise DataFormatError(path, f"expected a JSON object, got {type(record).__name__}", line_no)
        missing = [key for key in KEYS if key not in record]
        if missing:
            raise DataFormatError(path, f"expected the keys {list(KEYS)}; missing {missing}", line_no)
        for key in KEYS:
            if not isinstance(record[key], str):
                raise DataFormatError(path, f"{key} must be a string, got {record[key]!r:.60}", line_no)
        yield {
            "id": record["pairID"],
            "text": record["sentence1"],
            "text_pair": record["sentence2"],
            "labels": [record["gold_label"]],
            "_where": f"{path}:{line_no}",
        }


ADAPTERS: dict[str, AdapterSpec] = {
    "mednli": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.clinical.mednli:read_mednli",
        default_path="MedNLI/original",
    ),
}
