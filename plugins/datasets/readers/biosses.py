"""BLURB BIOSSES (``{train,dev,test}.tsv``) into the ``regression`` schema.

The files have the header ``pair_id<TAB>sent1<TAB>sent2<TAB>score``; the score is the mean of
five annotators on the 0-4 scale, kept as it is (no rescaling: Pearson correlation, BLURB's
metric, does not care). The 64/16/20 split is BLUE's, hard-coded by BLURB's preprocessor.
A score that is not a number is reported with its file and line.
"""

from __future__ import annotations

import math
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_tsv
from biolm.specs import AdapterSpec
from plugins.datasets.readers.sentence_common import split_files

HEADER = ("pair_id", "sent1", "sent2", "score")


def read_biosses(directory: Path) -> dict[str, list[dict]]:
    files = split_files(directory, {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",)})
    return {split: _read_pairs(path) for split, path in files.items()}


def _read_pairs(path: Path) -> list[dict]:
    examples = []
    for line, (pair_id, sent1, sent2, score_text) in read_tsv(path, 4, header=HEADER):
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise DataFormatError(path, f"expected a numeric similarity score in column 4, got {score_text!r}", line)
        examples.append({"id": pair_id, "text": sent1, "text_pair": sent2, "score": score, "_where": f"{path}:{line}"})
    return examples


ADAPTERS: dict[str, AdapterSpec] = {
    "biosses": AdapterSpec(
        schema="regression", reader="plugins.datasets.readers.biosses:read_biosses", default_path="BIOSSES/blurb"
    ),
}
