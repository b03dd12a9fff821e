"""OHSUMed in its public distribution into the single-label ``classification`` schema (as Li et al. 2022 use it).

The distribution (``ohsumed-first-20000-docs``: the first 20,000 cardiovascular-disease abstracts
of the OHSUMED collection, Joachims' text-categorisation release) is two directories,
``training/`` and ``test/``, each with one sub-directory per MeSH disease category ``C01`` ...
``C23`` holding one plain-text file per document, named by the document's id; a document filed
under several categories appears in each of their directories.

Li et al. 2022 follow their reference [44]: "only those cardiovascular diseases abstracts that are
associated with one and only one of the 23 disease categories are included". So a document found
in more than one category directory of its split is left out, and the others become one example
each: ``text`` is the file's text with its white space collapsed, ``labels`` its one category.
The release has no dev split: ``dev_fraction`` (default 10%) of the training documents, chosen by
a hash of their ids (the same documents on every machine), become dev.

A category directory with another name, a file that is not UTF-8 or is empty, a document id in
both splits, or a missing split directory is a DataFormatError naming the path.
"""

from __future__ import annotations

import re
from pathlib import Path

from biolm.dataset_io import DataFormatError
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import decode_utf8, dev_documents

SPLIT_DIRECTORIES = {"train": "training", "test": "test"}
CATEGORY = re.compile(r"^C(0[1-9]|1[0-9]|2[0-3])$")
_SPACES = re.compile(r"\s+")


def read_ohsumed(directory: Path, dev_fraction: float = 0.1) -> dict[str, list[dict]]:
    root = Path(directory)
    splits = {split: _read_split(root / name) for split, name in SPLIT_DIRECTORIES.items()}
    shared = sorted({row["id"] for row in splits["train"]} & {row["id"] for row in splits["test"]})
    if shared:
        raise DataFormatError(root, f"documents {shared[:5]} are in both training/ and test/")
    dev = dev_documents((row["id"] for row in splits["train"]), dev_fraction, root / "training")
    return {
        "train": [row for row in splits["train"] if row["id"] not in dev],
        "dev": [row for row in splits["train"] if row["id"] in dev],
        "test": splits["test"],
    }


def _read_split(directory: Path) -> list[dict]:
    if not directory.is_dir():
        raise DataFormatError(directory, "split directory not found (expected training/ and test/)")
    filed: dict[str, list[tuple[str, Path]]] = {}
    for category in sorted(directory.iterdir()):
        if not category.is_dir():
            continue
        if not CATEGORY.match(category.name):
            raise DataFormatError(category, "expected category directories C01 ... C23")
        for path in sorted(category.iterdir()):
            if path.is_file():
                filed.setdefault(path.name, []).append((category.name, path))
    if not filed:
        raise DataFormatError(directory, "no documents in its category directories")
    rows = []
    for document, places in sorted(filed.items()):
        if len(places) > 1:
            continue  # filed under several categories: not single-label (Li et al. 2022, following [44])
        category, path = places[0]
        text = _SPACES.sub(" ", decode_utf8(path)).strip()
        rows.append({"id": document, "text": text, "text_pair": "", "labels": [category], "_where": f"{path}:1"})
    return rows


ADAPTERS: dict[str, AdapterSpec] = {
    "ohsumed": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.ohsumed:read_ohsumed",
        options={"dev_fraction": 0.1},
        default_path="OHSUMed/ohsumed-first-20000-docs",
    ),
}
