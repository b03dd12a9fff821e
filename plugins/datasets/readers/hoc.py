"""BLURB HoC (Hallmarks of Cancer) into the multi-label ``classification`` schema, one example per abstract.

The BLURB files are sentence-level (header ``labels<TAB>sentence<TAB>index``), but BLURB
evaluates HoC per abstract, as LinkBERT's preprocessing does: an abstract's labels are the OR
of its sentences' labels and its text is its sentences joined with single spaces in sentence
order (``<PMID>_s0``, ``_s1``, ...), in full; truncation is left to the engine. Abstracts
keep the order in which they first appear, and their id is the PMID. An abstract none of
whose sentences has a hallmark gets an empty label list (about 15% of them; the original
corpus calls this ``NULL``).

``labels`` is ten flags ``0_x,1_x,...,9_x`` (x = 0 or 1) whose positions follow the fixed
order of :data:`HALLMARKS` (the 10 top-level hallmarks of BLURB's preprocessor, alphabetical).
Anything else there, an index that is not ``<PMID>_s<n>``, or the same sentence twice is a
DataFormatError with file and line.
"""

from __future__ import annotations

import re
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_tsv
from biolm.specs import AdapterSpec
from plugins.datasets.blurb import HOC_HALLMARKS
from plugins.datasets.readers.sentence_common import split_files

HEADER = ("labels", "sentence", "index")
HALLMARKS = HOC_HALLMARKS  # the fixed order of the files' "<i>_<flag>" columns
_INDEX = re.compile(r"(\d+)_s(\d+)")
_FLAGS = ",".join(f"{i}_x" for i in range(len(HALLMARKS)))


def read_hoc(directory: Path) -> dict[str, list[dict]]:
    files = split_files(directory, {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",)})
    return {split: read_abstracts(path) for split, path in files.items()}


def parse_flags(value: str, path: Path, line: int) -> list[int]:
    """The positions of the hallmarks flagged 1 in ``0_0,1_1,...,9_0``."""
    parts = value.split(",")
    flagged = []
    if len(parts) == len(HALLMARKS):
        for position, part in enumerate(parts):
            if part == f"{position}_1":
                flagged.append(position)
            elif part != f"{position}_0":
                break
        else:
            return flagged
    raise DataFormatError(path, f"expected the labels column as {_FLAGS} (x = 0 or 1), got {value[:80]!r}", line)


def read_abstracts(path: Path) -> list[dict]:
    abstracts: dict[str, dict] = {}
    for line, (flags, sentence, index) in read_tsv(path, 3, header=HEADER):
        match = _INDEX.fullmatch(index)
        if match is None:
            raise DataFormatError(path, f"expected the index column as <PMID>_s<n>, got {index!r}", line)
        pmid, number = match.group(1), int(match.group(2))
        abstract = abstracts.setdefault(pmid, {"line": line, "sentences": {}, "flagged": set()})
        if number in abstract["sentences"]:
            raise DataFormatError(path, f"sentence {index} appears twice", line)
        abstract["sentences"][number] = sentence
        abstract["flagged"].update(parse_flags(flags, path, line))
    return [
        {
            "id": pmid,
            "text": " ".join(abstract["sentences"][n] for n in sorted(abstract["sentences"])),
            "text_pair": "",
            "labels": [HALLMARKS[position] for position in sorted(abstract["flagged"])],
            "_where": f"{path}:{abstract['line']}",
        }
        for pmid, abstract in abstracts.items()
    ]


ADAPTERS: dict[str, AdapterSpec] = {
    "hoc": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.hoc:read_hoc",
        default_path="HoC/blurb",
        multi_label=True,
    ),
}
