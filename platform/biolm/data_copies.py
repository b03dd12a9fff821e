"""A loaded dataset as files, and back: how the platform hands a score process the data it scores on.

The score process (``python -m workers.engine score``) must rebuild the worker's formulation from exactly
the examples the worker read and the same examples with their gold (:mod:`workers.engine.withheld`). The
platform writes each copy as ``{split}.jsonl`` with its label set, notes and typed test gold
(:func:`write_copy`), and the engine reads it back into the same :class:`~biolm.dataset_io.LoadedDataset`
(:func:`read_copy`): its fingerprint is recomputed from the rows and checked, so a copy changed on the
way is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from biolm.contract.scores import DataCopy
from biolm.dataset_io import LoadedDataset, fingerprint_of
from biolm.specs import DatasetSpec


def write_copy(loaded: LoadedDataset, directory: Path) -> DataCopy:
    """``loaded``'s splits under ``directory``, one JSON object a line, and the record that names them."""
    directory.mkdir(parents=True, exist_ok=True)
    for split, rows in loaded.splits.items():
        lines = (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
        (directory / f"{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    (directory / "fingerprint").write_text(loaded.fingerprint, encoding="utf-8")
    return DataCopy(str(directory), list(loaded.label_set), list(loaded.notes), loaded.test_types)


def read_copy(copy: DataCopy, spec: DatasetSpec) -> LoadedDataset:
    """The dataset :func:`write_copy` wrote, for ``spec``; a ValueError when its rows are not the ones written."""
    directory = Path(copy.directory)
    splits = {}
    for path in sorted(directory.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            splits[path.stem] = [json.loads(line) for line in handle if line.strip()]
    written = (directory / "fingerprint").read_text(encoding="utf-8").strip()
    fingerprint = fingerprint_of(splits)
    if fingerprint != written:
        raise ValueError(f"the data copy in {directory} has fingerprint {fingerprint}, not the {written} written")
    return LoadedDataset(spec, splits, list(copy.label_set), fingerprint, list(copy.notes), copy.test_types)
