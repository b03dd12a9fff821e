"""The sampled gigabyte-scale corpus (issue 31): the same seed gives the same bytes, words keep their real counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from bench.synthetic_corpus import WordTable, write_synthetic_corpus

DOCUMENTS = ["alpha beta beta gamma.", "beta alpha", "delta beta beta beta epsilon alpha"]


@pytest.mark.official_data
def test_same_seed_gives_byte_identical_corpus_and_another_seed_does_not(official_data, tmp_path: Path) -> None:
    data = official_data("HoC", "blurb", "train.tsv").parents[2]
    first = write_synthetic_corpus(tmp_path / "a.txt", 300_000, seed=3, data=data)
    again = write_synthetic_corpus(tmp_path / "b.txt", 300_000, seed=3, data=data)
    other = write_synthetic_corpus(tmp_path / "c.txt", 300_000, seed=4, data=data)
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()
    assert (tmp_path / "a.txt").read_bytes() != (tmp_path / "c.txt").read_bytes()
    assert first["bytes"] == again["bytes"] == (tmp_path / "a.txt").stat().st_size >= 300_000
    assert other["bytes"] >= 300_000
    text = (tmp_path / "a.txt").read_text(encoding="utf-8")
    assert text.endswith("\n") and text.count("\n") == first["documents"]
    assert len(text.split()) == first["words"]


def test_sampled_words_follow_the_real_frequencies() -> None:
    table = WordTable(DOCUMENTS)
    text, ends = table.sample_chunk(np.random.Generator(np.random.PCG64(0)), 4000)
    counts = Counter(text.decode("utf-8").split())
    real = Counter(" ".join(DOCUMENTS).split())
    total, real_total = sum(counts.values()), sum(real.values())
    for word, n in real.items():
        assert counts[word] / total == pytest.approx(n / real_total, abs=0.02)
    assert set(counts) == set(real)
    assert ends[-1] == len(text) and text[ends[0] - 1 : ends[0]] == b"\n"


def test_document_lengths_are_drawn_from_the_real_ones() -> None:
    table = WordTable(DOCUMENTS)
    text, _ = table.sample_chunk(np.random.Generator(np.random.PCG64(1)), 300)
    lengths = {len(line.split()) for line in text.decode("utf-8").splitlines()}
    assert lengths == {4, 2, 6}
