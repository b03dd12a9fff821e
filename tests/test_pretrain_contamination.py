"""The contamination report: which test examples of the registered datasets a pretraining corpus contains.

The scan is vectorised (issue 31); :mod:`bench.reference_contamination` keeps the implementation it
replaced, verbatim apart from taking the test texts as word lists (the corpus-preparation benchmark
times against the same copy), and the new report must equal it on real text and on constructed
edge cases.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from official_data import official

from bench.reference_contamination import N, reference_contamination
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.pretrain import contamination as scan
from workers.engine.pretrain import scan_kernels
from workers.engine.pretrain.contamination import (
    MIN_WORDS,
    collect_test_shingles,
    contamination,
    dataset_shingles,
    shingles,
    words,
)

DATASETS = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets
FOLDERS = {"hoc": ("HoC", "blurb"), "ncbi-disease": ("NCBI-disease", "blurb")}  # under the official data folder


def both_reports(texts: dict[str, list[list[list[str]]]], documents: list[str], **options) -> tuple[dict, dict]:
    """The vectorised report and the reference's, for test sets given as word lists."""
    new = contamination(documents, [dataset_shingles(slug, rows) for slug, rows in texts.items()], **options)
    old = {"n": N, "datasets": reference_contamination(documents, texts), "skipped": {}}
    return new, old


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


# --- the vectorised scan against the reference --------------------------------------------------------------

LONG = words("the expression of tumour necrosis factor alpha was measured in the serum of treated mice")
SHORT = words("aspirin reduced fever in most of the treated patients")  # 9 words: matched whole


def test_short_texts_match_only_as_their_whole_word_sequence():
    texts = {"toy": [[SHORT], [SHORT[:8]], ["methods", "section"]]}
    documents = [
        "Yesterday, aspirin reduced fever in most of the treated patients!",  # the 9 words, so also the 8
        "aspirin reduced fever in most of the",  # 7 words of them: too few for either
    ]
    new, old = both_reports(texts, documents)
    assert new == old
    assert new["datasets"]["toy"] == {"test_examples": 3, "too_short_to_judge": 1, "contaminated": 2, "share": 1.0}
    new, old = both_reports(texts, documents[1:])
    assert new == old and new["datasets"]["toy"]["contaminated"] == 0


@pytest.mark.parametrize("length", range(MIN_WORDS, 14))
def test_a_text_of_each_short_length_and_of_thirteen_words_is_found_and_its_prefix_is_not(length):
    text = LONG[:length]
    texts = {"toy": [[text]]}
    found, _ = both_reports(texts, ["Prefix words. " + " ".join(text) + " and after."])
    missed, old = both_reports(texts, [" ".join(text[:-1])])
    assert found["datasets"]["toy"]["contaminated"] == 1
    assert missed == old and missed["datasets"]["toy"]["contaminated"] == 0


def test_a_window_never_spans_two_documents():
    texts = {"toy": [[LONG]]}
    split = [" ".join(LONG[:7]), " ".join(LONG[7:])]  # every 13-word window of LONG crosses the boundary
    new, old = both_reports(texts, split)
    assert new == old and new["datasets"]["toy"]["contaminated"] == 0
    new, _ = both_reports(texts, [" ".join(split)])
    assert new["datasets"]["toy"]["contaminated"] == 1


def test_unicode_words_are_split_and_lower_cased_as_words_does():
    greek = "ο ΟΔΟΣ. ΑΣ.Β τελος ΣΑΣ αλφα caffè İstanbul \u212aelvin x\u00a0y tnf-α interleukin-1β"  # noqa: RUF001
    text = [*greek.split(" "), "end", "end"]
    texts = {"toy": [[words(" ".join(text))]]}
    variants = [
        " ".join(text).upper(),  # the final sigma and the dotted capital I lower-case by context and to two letters
        " ".join(text).replace("\u00a0", " "),  # a no-break space is a separator like any other
        " ".join(text).replace("ΟΔΟΣ.", "ΟΔΟΣ"),
        " ".join(text),
    ]
    for document in variants:
        new, old = both_reports(texts, [document])
        assert new == old, document
    assert both_reports(texts, [" ".join(text)])[0]["datasets"]["toy"]["contaminated"] == 1


def test_duplicate_shingles_across_examples_and_documents_count_each_example_once():
    texts = {"toy": [[LONG], [[*LONG, "again"]], [SHORT]], "other": [[[*LONG[1:], "x"]]]}
    documents = [" ".join(LONG)] * 3 + [" ".join(LONG + LONG)]
    new, old = both_reports(texts, documents)
    assert new == old
    assert new["datasets"]["toy"]["contaminated"] == 2 and new["datasets"]["other"]["contaminated"] == 1


def test_words_longer_than_any_test_word_and_underscores_break_windows():
    texts = {"toy": [[["snake_case", *LONG[1:]]]]}
    documents = [
        "snake_case " + " ".join(LONG[1:]),
        "snake " + " ".join(LONG[1:]),
        "snake_case_" + "x" * 300 + " " + " ".join(LONG[1:]),
    ]
    for document in documents:
        new, old = both_reports(texts, [document])
        assert new == old, document[:40]
    assert both_reports(texts, documents[:1])[0]["datasets"]["toy"]["contaminated"] == 1


def test_the_word_splitter_gives_the_ids_of_words_on_any_text():
    text = "ΑΣ.Β naïve ﬁbre (5) x_1 \u212a ΣΑΣ'σ Straße 12.5% IL-2R\u03b1 \ud7ff end" * 3  # noqa: RUF001
    vocabulary = scan._Vocabulary({*words(text[:60]), "end", "straße", "5"})
    expected = [vocabulary.ids.get(word, 0) for word in words(text)]
    assert vocabulary.encode(text).tolist() == expected
    assert sum(expected) > 0


def test_the_scan_keys_of_test_texts_are_the_shingles_of_their_words():
    rows = [[LONG, SHORT], [LONG[:12]], [["too", "short"]]]
    built = dataset_shingles("toy", rows)
    assert built.examples == [shingles(LONG) | shingles(SHORT), shingles(LONG[:12]), set()]
    assert built.short_lengths == {9, 12}


def test_the_thread_pool_finds_what_one_thread_finds(monkeypatch):
    texts = {"toy": [[LONG], [SHORT], [[*LONG[2:], "more", "words"]]]}
    documents = [f"document {n} " + " ".join(LONG if n % 7 == 0 else SHORT[: n % 9]) for n in range(400)]
    monkeypatch.setattr(scan, "CHUNK_CHARS", 2000)  # many chunks, so the pool starts and reads ahead
    reported: list[int] = []
    pooled, old = both_reports(texts, documents, workers=2, progress=reported.append)
    alone, _ = both_reports(texts, documents, workers=1)
    assert pooled == alone == old and pooled["datasets"]["toy"]["contaminated"] == 2
    assert reported == sorted(reported) and reported[-1] == sum(len(d) + 1 for d in documents)


def test_the_compiled_window_loop_finds_exactly_the_windows_the_numpy_keys_give():
    """The scan's loop (scan_kernels) against the polynomial the test texts are keyed with (_window_keys)."""
    generator = np.random.default_rng(0)
    ids = generator.integers(0, 6, 20_000).astype(np.int32)  # 0 (a break) about one word in six
    hashes = np.array([0, *generator.integers(1, 2**63, 5, dtype=np.uint64)], dtype=np.uint64)
    lengths = [3, 5, 8]
    windows = {}
    for length, first, second in scan._window_keys(ids, hashes, lengths):
        whole = [p for p in range(len(first)) if ids[p : p + length].all()]
        windows[length] = {(int(first[p]), int(second[p])) for p in whole}
    every = set().union(*windows.values())
    wanted = sorted({first for first, _ in every})[::3]  # a third of the first keys are test keys
    wanted_lengths = np.zeros(9, dtype=bool)
    wanted_lengths[lengths] = True
    shift = np.uint64(64 - scan.FILTER_BITS)
    firsts = np.array(wanted, dtype=np.uint64)
    bit_filter = np.zeros(1 << scan.FILTER_BITS, dtype=bool)
    bit_filter[(firsts >> shift).astype(np.intp)] = True
    first, second = scan_kernels.window_candidates(
        ids, hashes, wanted_lengths, np.uint64(scan.BASE), np.uint64(scan.CHECK_BASE), bit_filter, shift, firsts
    )
    found = set(zip(first.tolist(), second.tolist(), strict=True))
    assert found == {pair for pair in every if pair[0] in set(wanted)} and len(found) > 100


def test_the_report_equals_the_reference_on_real_text(official_data):
    from bench.biomedical_corpus import hoc_abstracts, ner_sentences

    directories = {slug: official_data(*folder) for slug, folder in FOLDERS.items()}
    directories["biosses"] = official_data("BIOSSES", "blurb")
    texts = {slug: scan.test_texts_of(DATASETS[slug], lambda s: directories[s.slug])[0] for slug in directories}
    data = official_data()
    corpus = [d for d, _ in zip(hoc_abstracts(data), range(300), strict=False)]
    corpus += [d for d, _ in zip(ner_sentences(data), range(300), strict=False)]
    corpus += hoc_test_abstracts()[:20] + [" ".join(tokens) for tokens in ncbi_test_sentences()[:50]]
    new, old = both_reports(texts, corpus)
    assert new == old
    assert new["datasets"]["hoc"]["contaminated"] >= 20 and new["datasets"]["ncbi-disease"]["contaminated"] >= 40


def test_a_test_set_built_without_its_vocabulary_is_refused_instead_of_scanning_blind():
    """A set of keys without the words they came from matched nothing (0 of 50 planted test sentences), silently:
    the scan reads every corpus word outside the sets' vocabulary as a break. Built the old way it is now an
    error that names the fix; built by dataset_shingles it finds every planted sentence."""
    texts = [[words(f"planted sentence number {i} about the protein kinase pathway in mouse liver tissue today")]
             for i in range(50)]  # fmt: skip
    built = dataset_shingles("planted", texts)
    with pytest.raises(TypeError, match="vocabulary"):
        scan.DatasetTestShingles("planted", built.examples, built.short_lengths)  # the old three-field way
    with pytest.raises(ValueError, match=r"no vocabulary.*dataset_shingles"):
        scan.DatasetTestShingles("planted", built.examples, built.short_lengths, set())
    corpus = [" ".join(row[0]) + "." for row in texts]
    assert contamination(iter(corpus), [built])["datasets"]["planted"]["contaminated"] == 50
