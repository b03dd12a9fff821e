"""Test-set contamination: the share of each dataset's test examples whose 13-grams occur in the corpus.

A model pretrained on text that contains a benchmark's test examples is scored on text it has
seen. GPT-3's authors measured this with 13-gram overlap; no encoder leaderboard reports it, so
biolm does, for every registered dataset whose files are present, and stores the report with
the model.

Words are lower-cased runs of letters and digits (``\\w+``), so tokenization differences
between a CoNLL file (``( 5 )``) and raw text (``(5)``) do not hide an overlap. An example is
contaminated when any of its 13-word shingles occurs in the corpus; a text of 8 to 12 words
counts when its whole word sequence occurs, and shorter ones are too short to judge (counted
apart). Memory is bounded by the test sets, not the corpus: their shingles are hashed into one
set and the corpus is streamed past it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from biolm.dataset_io import load_dataset_files
from biolm.errors import DataFormatError
from biolm.schemas import get_schema
from biolm.specs import DatasetSpec

N = 13
MIN_WORDS = 8  # shorter texts ("Methods :", "( a )") would match almost any corpus: not judged
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _key(sequence: list[str]) -> int:
    return hash(tuple(sequence))  # within one process: test sets and corpus are hashed by the same run


def shingles(tokens: list[str], n: int = N) -> set[int]:
    """Hashes of the ``n``-word windows of ``tokens`` (the whole sequence when it is shorter)."""
    if len(tokens) < MIN_WORDS:
        return set()
    if len(tokens) <= n:
        return {_key(tokens)}
    return {_key(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


@dataclass
class DatasetTestShingles:
    dataset: str
    examples: list[set[int]]  # each example's shingles
    short_lengths: set[int]  # word counts of its texts shorter than N (matched as whole sequences)


def collect_test_shingles(
    datasets: Mapping[str, DatasetSpec], directory_of
) -> tuple[list[DatasetTestShingles], dict[str, str]]:
    """The test examples' shingles of every dataset whose files load; the others with the reason."""
    found, skipped = [], {}
    for slug, spec in sorted(datasets.items()):
        if spec.adapter is None:
            skipped[slug] = "no adapter"
            continue
        directory = directory_of(spec)
        if not Path(directory).is_dir():
            skipped[slug] = f"files not found at {directory}"
            continue
        try:
            rows = load_dataset_files(spec, directory).splits.get("test", [])
        except (DataFormatError, OSError) as exc:
            skipped[slug] = f"not loaded: {exc}"
            continue
        if not rows:
            skipped[slug] = "no test split"
            continue
        schema = get_schema(spec.adapter.schema)
        texts = [[words(text) for text in schema.texts([row])] for row in rows]
        examples = [set().union(*(shingles(tokens) for tokens in row_texts)) for row_texts in texts]
        short = {len(tokens) for row_texts in texts for tokens in row_texts if MIN_WORDS <= len(tokens) < N}
        found.append(DatasetTestShingles(slug, examples, short))
    return found, skipped


def contamination(
    documents: Iterable[str], sets: list[DatasetTestShingles], skipped: Mapping[str, str] | None = None
) -> dict:
    """Stream ``documents`` once; per dataset, how many test examples share a shingle with them."""
    wanted: set[int] = set().union(*(s for test in sets for s in test.examples)) if sets else set()
    short_lengths = sorted(set().union(*(test.short_lengths for test in sets))) if sets else []
    seen: set[int] = set()
    for document in documents:
        tokens = words(document)
        for i in range(max(len(tokens) - N + 1, 1)):
            key = _key(tokens[i : i + N])
            if key in wanted:
                seen.add(key)
        # an example shorter than N words matches only as the same word sequence; look for those too
        for length in short_lengths:
            for i in range(len(tokens) - length + 1):
                key = _key(tokens[i : i + length])
                if key in wanted:
                    seen.add(key)
    report = {}
    for test in sets:
        hit = sum(1 for example in test.examples if example & seen)
        judged = sum(1 for example in test.examples if example)
        report[test.dataset] = {
            "test_examples": len(test.examples),
            "too_short_to_judge": len(test.examples) - judged,
            "contaminated": hit,
            "share": hit / judged if judged else None,
        }
    return {"n": N, "datasets": report, "skipped": dict(skipped or {})}
