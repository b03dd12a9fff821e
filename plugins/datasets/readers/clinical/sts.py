"""n2c2 2019 / OHNLP clinical semantic textual similarity into the ``regression`` schema.

The release has ``clinicalSTS2019.train.txt`` (1,642 pairs) with lines
``sentence1<TAB>sentence2<TAB>score`` (no header; the score is the 0-5 similarity, a float) and
``clinicalSTS2019.test.txt`` (412 pairs) whose gold scores came separately as
``clinicalSTS2019.test.gs.sim.txt``, one score per line in the order of the test pairs. A test
file that carries its scores in a third column is read as it is when the gold file is absent.
Scores outside 0-5, a score that is not a number, a wrong number of columns or a gold file
with more or fewer scores than test pairs are DataFormatErrors with file and line.

There is no official dev set. ``clinicalSTS2019.dev.txt`` (same layout as train) is used if
present; otherwise dev is carved out of train by pair: ``dev_fraction`` (default 0.1) of the
pairs, chosen by the SHA-256 of their id ``train-<line>`` (see ``_shared``), so 164 of the 1,642.
Ids are ``<split>-<line>``.
"""

from __future__ import annotations

import math
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_lines, read_tsv
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import carve_dev, in_split_order

TRAIN = "clinicalSTS2019.train.txt"
DEV = "clinicalSTS2019.dev.txt"
TEST = "clinicalSTS2019.test.txt"
GOLD = "clinicalSTS2019.test.gs.sim.txt"


def read_n2c2_2019_sts(directory: Path, dev_fraction: float = 0.1) -> dict[str, list[dict]]:
    for name in (TRAIN, TEST):
        if not (directory / name).exists():
            split = "train" if name == TRAIN else "test"
            raise DataFormatError(directory, f"missing the {split} split: looked for {name}")
    splits = {"train": _read_pairs(directory / TRAIN, "train"), "test": _read_test(directory)}
    if (directory / DEV).exists():
        return in_split_order({**splits, "dev": _read_pairs(directory / DEV, "dev")})
    return carve_dev(splits, dev_fraction, directory / TRAIN, group=lambda e: e["id"])


def _score(value: str, path: Path, line: int) -> float:
    try:
        score = float(value)
    except ValueError:
        raise DataFormatError(path, f"expected a similarity score between 0 and 5, got {value!r}", line) from None
    if not (math.isfinite(score) and 0 <= score <= 5):
        raise DataFormatError(path, f"similarity score {value!r} is outside 0-5", line)
    return score


def _pair(split: str, line: int, fields: list[str], score: float, path: Path) -> dict:
    return {
        "id": f"{split}-{line}",
        "text": fields[0],
        "text_pair": fields[1],
        "score": score,
        "_where": f"{path}:{line}",
    }


def _read_pairs(path: Path, split: str) -> list[dict]:
    return [_pair(split, line, fields, _score(fields[2], path, line), path) for line, fields in read_tsv(path, 3)]


def _read_test(directory: Path) -> list[dict]:
    path, gold_path = directory / TEST, directory / GOLD
    rows = list(read_tsv(path, (2, 3)))
    if gold_path.exists():
        scores = [(line, text.strip()) for line, text in read_lines(gold_path) if text.strip()]
        if len(scores) != len(rows):
            raise DataFormatError(
                gold_path,
                f"{len(scores)} gold scores for the {len(rows)} sentence pairs of {TEST}; expected one per pair",
            )
        return [
            _pair("test", line, fields, _score(value, gold_path, gold_line), path)
            for (line, fields), (gold_line, value) in zip(rows, scores, strict=True)
        ]
    for line, fields in rows:
        if len(fields) != 3:
            raise DataFormatError(path, f"a pair without a score, and no gold-standard file {GOLD} beside it", line)
    return _read_pairs(path, "test")


ADAPTERS: dict[str, AdapterSpec] = {
    "n2c2-2019-sts": AdapterSpec(
        schema="regression",
        reader="plugins.datasets.readers.clinical.sts:read_n2c2_2019_sts",
        options={"dev_fraction": 0.1},
        default_path="n2c2-2019-sts/original",
    ),
}
