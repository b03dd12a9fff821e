"""The WordPiece vocabulary learned for models built from scratch: greedy merges, ties broken by text."""

from __future__ import annotations

from collections import Counter

from workers.engine.tokenization import SPECIAL_TOKENS, learn_wordpiece_vocabulary, train_wordpiece


def test_merges_follow_pair_frequency_and_break_ties_alphabetically():
    words = Counter({"ab": 3, "cd": 3, "abc": 1})
    vocab = learn_wordpiece_vocabulary(words, vocab_size=100)
    alphabet = ["##b", "##c", "##d", "a", "c"]
    assert vocab[: len(SPECIAL_TOKENS) + len(alphabet)] == [*SPECIAL_TOKENS, *alphabet]
    # (a, ##b) occurs 4 times; then (ab, ##c) once and (c, ##d) three times: (c, ##d) before (ab, ##c).
    assert vocab[len(SPECIAL_TOKENS) + len(alphabet) :] == ["ab", "cd", "abc"]


def test_the_vocabulary_size_is_respected_and_words_tokenize_into_learned_pieces():
    texts = ["aspirin inhibits cyclooxygenase", "aspirin reduces fever", "ibuprofen inhibits cyclooxygenase"] * 3
    tokenizer = train_wordpiece(texts, vocab_size=40)
    assert len(tokenizer) == 40
    pieces = tokenizer.tokenize("aspirin inhibits")
    assert "".join(p.removeprefix("##") for p in pieces) == "aspirininhibits"
    assert "[UNK]" not in pieces


def test_equally_frequent_pairs_merge_in_alphabetical_order_whatever_the_input_order():
    first = learn_wordpiece_vocabulary(Counter({"cd": 2, "ab": 2}), vocab_size=100)
    second = learn_wordpiece_vocabulary(Counter({"ab": 2, "cd": 2}), vocab_size=100)
    assert first == second
    assert first[-2:] == ["ab", "cd"]
