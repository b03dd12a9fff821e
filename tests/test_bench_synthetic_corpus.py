"""Gigabyte-scale corpora: sampled (issue 31: real word counts) and by Heaps' law (issue 41: words keep growing)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from bench.heaps_corpus import (
    PREFIX_CHARACTERS,
    FormTable,
    HeapsFit,
    distinct_words_at,
    fit_heaps,
    heaps_fit,
    write_heaps_corpus,
)
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


# --- the Heaps'-law corpus (issue 41): distinct words keep growing as the real text's do -----------------


def _toy_documents(documents: int = 400) -> list[str]:
    """Biomedical-looking toy text: frequent short words, and rare long ones made of syllables."""
    rng = np.random.Generator(np.random.PCG64(7))
    common = ["the", "of", "and", "in", "to", "a", "with", "cells", "was", "for", "is", "by", "protein"]
    syllables = ["lym", "pho", "ma", "ace", "tyl", "trans", "fer", "ase", "car", "dio", "neph", "ro", "path", "y"]
    out = []
    for _ in range(documents):
        words = [
            rng.choice(common) if rng.random() < 0.6 else "".join(rng.choice(syllables, size=int(rng.integers(2, 6))))
            for _ in range(int(rng.integers(20, 80)))
        ]
        out.append(" ".join(words))
    return out


TOY_FIT = HeapsFit(K=6.3, beta=0.69, s=1.1, q=4.0, words=0, distinct_words=0, source_bytes=0, documents=0, r2=1.0,
                   max_relative_error=0.0)  # fmt: skip


def test_the_heaps_corpus_follows_its_fitted_curve_far_past_the_source_size(tmp_path: Path) -> None:
    documents = _toy_documents()
    made = write_heaps_corpus(tmp_path / "h.txt", 3_000_000, seed=1, documents=documents, fit=TOY_FIT)
    source_words = sum(len(d.split()) for d in documents)
    sizes = [10_000, 50_000, 200_000, 400_000]
    assert sizes[-1] > 10 * source_words
    for n, distinct in distinct_words_at(tmp_path / "h.txt", sizes).items():
        assert distinct == pytest.approx(TOY_FIT.K * n**TOY_FIT.beta, rel=0.10), n
    text = (tmp_path / "h.txt").read_text(encoding="utf-8")
    assert made["bytes"] == len(text.encode("utf-8")) >= 3_000_000 and text.count("\n") == made["documents"]
    assert made["words"] == len(text.split()) and made["distinct_words"] == len(set(text.split()))
    lengths = {len(line.split()) for line in text.splitlines()}
    assert lengths <= {len(d.split()) for d in documents}


def test_the_heaps_corpus_is_byte_identical_for_a_seed_and_differs_for_another(tmp_path: Path) -> None:
    documents = _toy_documents()
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        write_heaps_corpus(tmp_path / f"{name}.txt", 400_000, seed=seed, documents=documents, fit=TOY_FIT)
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()
    assert (tmp_path / "a.txt").read_bytes() != (tmp_path / "c.txt").read_bytes()


def test_new_word_forms_are_real_prefixes_and_tails_and_never_real_words() -> None:
    documents = _toy_documents()
    table = FormTable(documents, seed=0)
    table.extend_to(table.real_count + 5000)
    new = [form.decode("utf-8") for form in table.forms[table.real_count :]]
    assert len(set(new)) == len(new) == 5000 and not set(new) & table.real
    assert all(form[:PREFIX_CHARACTERS] in table.prefixes and form[PREFIX_CHARACTERS:] in table.tails for form in new)


def test_the_fit_recovers_the_growth_of_a_corpus_made_to_follow_it(tmp_path: Path) -> None:
    write_heaps_corpus(tmp_path / "h.txt", 2_000_000, seed=0, documents=_toy_documents(), fit=TOY_FIT)
    refit = fit_heaps((tmp_path / "h.txt").read_text(encoding="utf-8").splitlines())
    assert refit.beta == pytest.approx(TOY_FIT.beta, abs=0.03) and refit.r2 > 0.99


@pytest.mark.official_data
def test_the_real_text_grows_by_heaps_law_and_the_corpus_keeps_its_fit(official_data, tmp_path: Path) -> None:
    data = official_data("ChemProt", "original").parent.parent
    fit = heaps_fit(data)
    assert 0.5 < fit.beta < 0.85 and fit.r2 > 0.99 and fit.max_relative_error < 0.10
    assert fit.source_bytes > 10_000_000 and fit.distinct_words > 100_000
    write_heaps_corpus(tmp_path / "h.txt", 4_000_000, seed=0, data=data)
    for n, distinct in distinct_words_at(tmp_path / "h.txt", [10_000, 100_000, 500_000]).items():
        assert distinct == pytest.approx(fit.K * n**fit.beta, rel=0.10), n
