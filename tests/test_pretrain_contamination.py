"""The contamination report: which test examples of the registered datasets a pretraining corpus contains."""

from __future__ import annotations

import re

import pytest
from official_data import official

from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.pretrain.contamination import MIN_WORDS, collect_test_shingles, contamination, shingles, words

DATASETS = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets
FOLDERS = {"hoc": ("HoC", "blurb"), "ncbi-disease": ("NCBI-disease", "blurb")}  # under the official data folder


@pytest.fixture(scope="module")
def sets(official_data):
    directories = {slug: official_data(*folder) for slug, folder in FOLDERS.items()}
    found, skipped = collect_test_shingles(
        {slug: DATASETS[slug] for slug in directories}, lambda s: directories[s.slug]
    )
    assert not skipped
    return found


def hoc_test_abstracts() -> list[str]:
    documents: dict[str, list[str]] = {}
    for row in official("HoC", "blurb", "test.tsv").read_text(encoding="utf-8").split("\n")[1:]:
        if row:
            _, sentence, index = row.split("\t")
            documents.setdefault(index.split("_")[0], []).append(sentence)
    return [" ".join(sentences) for sentences in documents.values()]


def ncbi_test_sentences() -> list[list[str]]:
    sentences, tokens = [], []
    for line in official("NCBI-disease", "blurb", "test.tsv").read_text(encoding="utf-8").split("\n"):
        if line.strip():
            tokens.append(line.split("\t")[0])
        elif tokens:
            sentences.append(tokens)
            tokens = []
    return sentences


def test_test_abstracts_copied_into_the_corpus_are_found_and_nothing_else_is(sets):
    leaked = hoc_test_abstracts()[:5]
    corpus = ["An unrelated document about the weather in Cambridge this week and nothing else.", *leaked]
    report = contamination(iter(corpus), sets)
    assert report["n"] == 13
    assert report["datasets"]["hoc"]["test_examples"] == 371 and report["datasets"]["hoc"]["contaminated"] == 5
    assert report["datasets"]["ncbi-disease"]["contaminated"] == 0


def test_a_test_sentence_is_found_however_the_corpus_tokenizes_it(sets):
    long = next(tokens for tokens in ncbi_test_sentences() if len(tokens) > 30 and "(" in tokens)
    detokenized = re.sub(r" ([.,;:)])", r"\1", " ".join(long)).replace("( ", "(")
    assert detokenized != " ".join(long)
    report = contamination(iter([f"Some preamble. {detokenized} Some more text."]), sets)
    assert report["datasets"]["ncbi-disease"]["contaminated"] >= 1


def test_texts_too_short_to_judge_are_counted_apart_not_matched():
    assert shingles(words("Methods :")) == set() and len(words("a b c d e f g h")) == MIN_WORDS
    assert len(shingles(words("a b c d e f g h"))) == 1


def test_datasets_whose_files_are_absent_are_listed_with_the_reason(tmp_path):
    found, skipped = collect_test_shingles({"hoc": DATASETS["hoc"]}, lambda spec: tmp_path / "nowhere")
    assert found == [] and skipped == {"hoc": f"files not found at {tmp_path / 'nowhere'}"}
    assert contamination(iter(["text"]), found, skipped)["skipped"] == skipped
