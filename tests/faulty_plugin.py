"""A plugin package whose code fails in every way a plugin's code can, written to a folder for tests to load.

A metric that divides by zero in a helper, one that returns NaN, one that returns a percentage
above 100, one that returns text, one that runs out of memory, a reader shared by two datasets
that raises ``ValueError``, a reader that refuses its file the documented way (``DataFormatError``),
a reader that yields nothing, one whose filter leaves its train split empty, one that cuts an
empty optional dev split (as it may), a formulation that refuses empty input (``ValueError``, as
its contract allows) and fails on a missing key, a corpus preprocessor that fails on a document
without a title, and a dataset scored with the dividing metric.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from biolm.plugins import Contributions, collect_contributions, get_plugin_manager

PLUGIN = """
from pathlib import Path

from biolm import hookimpl
from biolm.canonical_jsonl import READER
from biolm.specs import AdapterSpec, DatasetSpec, MetricSpec, PreprocessorSpec, TaskTypeSpec

DATA = str(Path(__file__).resolve().parent / "data")


@hookimpl
def biolm_corpus_preprocessors():
    return [PreprocessorSpec("acme-titles", "Titles", "Keeps each document's title.", "acme_faulty.corpus:titles")]


@hookimpl
def biolm_task_types():
    return [
        TaskTypeSpec("acme-polarity", "Polarity", "A formulation that refuses, or fails.", "classification",
                     "acme_faulty.formulation:Polarity", "accuracy")
    ]


@hookimpl
def biolm_metrics():
    return [
        MetricSpec("acme-zero", "Zero", "Divides by zero.", "acme_faulty.metrics:zero"),
        MetricSpec("acme-nan", "NaN", "Returns NaN.", "acme_faulty.metrics:not_a_number"),
        MetricSpec("acme-percent", "Percent", "Returns 250.", "acme_faulty.metrics:above_a_hundred"),
        MetricSpec("acme-text", "Text", "Returns a word.", "acme_faulty.metrics:a_word"),
        MetricSpec("acme-oom", "OOM", "Runs out of memory.", "acme_faulty.metrics:out_of_memory"),
    ]


@hookimpl
def biolm_datasets():
    def dataset(slug, reader, metric="accuracy", optional_splits=()):
        adapter = AdapterSpec("classification", reader, default_path=DATA, optional_splits=optional_splits)
        return DatasetSpec(slug, slug, "document-classification", metric, "biomedical", "Invented.", adapter=adapter)

    return [
        dataset("acme-a", "acme_faulty.reader:read"),
        dataset("acme-b", "acme_faulty.reader:read"),
        dataset("acme-refusing", "acme_faulty.reader:refuse"),
        dataset("acme-scored", READER, "acme-zero"),
        dataset("acme-empty", "acme_faulty.reader:nothing"),
        dataset("acme-untrained", "acme_faulty.reader:sideways_only"),
        dataset("acme-no-dev", "acme_faulty.reader:without_dev", optional_splits=("dev",)),
    ]
"""

METRICS = """
import math


def zero(gold, predictions):
    return _ratio(len(gold), 0)


def _ratio(a, b):
    return 100 * a / b


def not_a_number(gold, predictions):
    return math.nan


def above_a_hundred(gold, predictions):
    return 250.0


def a_word(gold, predictions):
    return "excellent"


def out_of_memory(gold, predictions):
    raise MemoryError("cannot allocate 80 GiB")
"""

READER = """
from biolm.canonical_jsonl import read_canonical_jsonl
from biolm.errors import DataFormatError


def read(directory, **options):
    raise ValueError("line 2 has no label")


def refuse(directory, **options):
    raise DataFormatError(directory / "train.tsv", "expected 3 columns, found 2", 2)


def nothing(directory, **options):
    return {split: [] for split in ("train", "dev", "test") if (directory / f"{split}.tsv").exists()}


def sideways_only(directory, **options):
    splits = read_canonical_jsonl(directory)
    splits["train"] = [row for row in splits["train"] if row["labels"] == ["sideways"]]
    return splits


def without_dev(directory, **options):
    splits = read_canonical_jsonl(directory)
    splits["dev"] = []
    return splits
"""


FORMULATION = """
class Polarity:
    def encode(self, rows):
        if not rows:
            raise ValueError("no examples to encode")
        return [row["polarity"] for row in rows]
"""


CORPUS = """
def titles(documents):
    for document in documents:
        yield document.split("|")[1]
"""


def line_of(source: str, text: str) -> int:
    return source.splitlines().index(text) + 1


def write_polarity_splits(folder: Path, sizes: dict[str, int]) -> Path:
    """Canonical classification splits of invented findings, labels ``up`` and ``down`` in turn."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in sizes.items():
        rows = [
            {"id": f"{split}-{i}", "text": f"Treatment {'raised' if i % 2 == 0 else 'lowered'} levels .",
             "text_pair": "", "labels": ["up" if i % 2 == 0 else "down"]}
            for i in range(n)
        ]  # fmt: skip
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def write_package(root: Path) -> Path:
    package = root / "acme_faulty"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN)
    (package / "metrics.py").write_text(METRICS)
    (package / "reader.py").write_text(READER)
    (package / "formulation.py").write_text(FORMULATION)
    (package / "corpus.py").write_text(CORPUS)
    write_polarity_splits(package / "data", {"train": 24, "dev": 8, "test": 8})
    return root


@contextmanager
def loaded(root: Path) -> Iterator[Contributions]:
    """The built-in plugins and ``acme`` (written under ``root``), importable for as long as the block lasts."""
    write_package(root)
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("acme_faulty")
        yield collect_contributions(get_plugin_manager(load_entrypoints=False, extra_plugins=[("acme", module)]))
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m.startswith("acme_faulty")]:
            del sys.modules[name]
