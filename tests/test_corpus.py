"""Corpus preprocessors are applied, streaming, to corpus files (biolm.corpus)."""

from __future__ import annotations

import gzip
import itertools
import tracemalloc
from pathlib import Path

import pytest

from biolm import corpus
from biolm.dataset_io import DataFormatError
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import ImplementationError, PreprocessorSpec

ROOT = Path(__file__).resolve().parents[1]
DEMO_CORPUS = ROOT / "plugins" / "datasets" / "demo" / "corpus.txt"


@pytest.fixture(scope="module")
def preprocessors() -> dict[str, PreprocessorSpec]:
    return collect_contributions(get_plugin_manager(load_entrypoints=False)).preprocessors


def test_the_demo_corpus_streams_one_document_per_line():
    documents = list(corpus.read_documents(DEMO_CORPUS))
    lines = [line for line in DEMO_CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert documents == lines and len(documents) == 111


def test_the_clinical_cleaning_preprocessor_is_applied_to_a_corpus_file(tmp_path, preprocessors):
    path = tmp_path / "notes.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("Patient [**Known lastname 123**] seen   on [**2101-3-4**].\n\n[**Name**]\nBP 120/80 ¶ stable\n")
    cleaned = list(corpus.preprocess_corpus(path, [preprocessors["clinical-longformer-clean"]]))
    assert cleaned == ["patient seen on .", "bp 120/80 stable"]


def test_preprocessors_compose_in_order(tmp_path, preprocessors):
    path = tmp_path / "corpus.txt"
    path.write_text("\ufeffFirst  Doc\n   \nSECOND [**x**]\n", encoding="utf-8")
    chain = [preprocessors["drop-empty"], preprocessors["clinical-longformer-clean"]]
    assert list(corpus.preprocess_corpus(path, chain)) == ["first doc", "second"]


def test_a_corpus_larger_than_the_memory_it_may_use_streams_through(tmp_path, preprocessors):
    path = tmp_path / "big.txt"
    line = "Aspirin [**Name**] reduced FEVER in patients with influenza; " * 40 + "\n"  # ~2.6 kB
    with path.open("w", encoding="utf-8") as handle:
        for _ in range(8_000):  # ~20 MB
            handle.write(line)
    tracemalloc.start()
    count = sum(1 for _ in corpus.preprocess_corpus(path, [preprocessors["clinical-longformer-clean"]]))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 8_000
    assert peak < 2_000_000, f"peak {peak:,} bytes for a {path.stat().st_size:,}-byte corpus"


def test_bad_utf8_and_overlong_lines_are_errors_naming_file_and_line(tmp_path, monkeypatch):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nnot \xff utf-8\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:2: not UTF-8"):
        list(corpus.read_documents(path))
    monkeypatch.setattr(corpus, "MAX_LINE_BYTES", 10)
    path.write_bytes(b"short\n" + b"x" * 50)
    with pytest.raises(DataFormatError, match=r"bad\.txt:2: a line longer than 10 bytes"):
        list(corpus.read_documents(path))
    with pytest.raises(DataFormatError, match="corpus file not found"):
        list(corpus.read_documents(tmp_path / "missing.txt"))


def test_a_preprocessor_that_breaks_its_contract_is_named():
    returns_text = PreprocessorSpec("joined", "Joined", "", lambda documents: " ".join(documents))
    yields_numbers = PreprocessorSpec("lengths", "Lengths", "", lambda documents: (len(d) for d in documents))
    with pytest.raises(ImplementationError, match="preprocessor joined returned str"):
        list(corpus.apply_preprocessors(["a"], [returns_text]))
    with pytest.raises(ImplementationError, match="preprocessor lengths produced int"):
        list(corpus.apply_preprocessors(["a"], [yields_numbers]))


def test_preprocessing_is_lazy_so_the_first_document_comes_before_the_input_ends(preprocessors):
    endless = (f"Document {n}" for n in itertools.count())
    stream = corpus.apply_preprocessors(
        endless, [preprocessors["drop-empty"], preprocessors["clinical-longformer-clean"]]
    )
    assert list(itertools.islice(stream, 2)) == ["document 0", "document 1"]


def test_gatortron_cleaning_drops_empty_and_duplicate_documents_and_normalises_characters(tmp_path, preprocessors):
    path = tmp_path / "notes.txt"
    path.write_text(
        "BP 120/80 &amp; stable\xa0today\n\x07\n BP 120/80 & stable today \nPain\u2009score 3\x0b/10\n",
        encoding="utf-8",
    )
    cleaned = list(corpus.preprocess_corpus(path, [preprocessors["gatortron-clean"]]))
    assert cleaned == ["BP 120/80 & stable today", "Pain score 3/10"]


def test_sentence_segmentation_keeps_abbreviations_initials_and_decimals_inside_sentences(preprocessors):
    text = (
        "Cells were lysed (Fig. 2). We saw e.g. growth of 3.5 mm. Dr. Smith and J. Doe agreed with Smith et al. "
        'in 2019. (A) shows this! Is it "real"? Yes.'
    )
    (segmented,) = corpus.apply_preprocessors([text], [preprocessors["sentences"]])
    assert segmented.split("\n") == [
        "Cells were lysed (Fig. 2).",
        "We saw e.g. growth of 3.5 mm.",
        "Dr. Smith and J. Doe agreed with Smith et al. in 2019.",
        "(A) shows this!",
        'Is it "real"?',
        "Yes.",
    ]
