"""Pretraining vocabularies and the report that says how well one covers the domain.

Gu et al. 2021 (section 3.2, Table 1) argue for an in-domain vocabulary by showing which common
biomedical terms a vocabulary keeps whole: BERT's splits ``lymphoma`` into four pieces and
``acetyltransferase`` into seven. :func:`coverage` measures exactly that for any tokenizer (the
share of a term list that stays one token, and the mean pieces per term) and the mean pieces
per word of a corpus; :func:`compare` sets a new vocabulary beside the one a continual run
starts from.

Two kinds are learned, both deterministically (the ``tokenizers`` trainers as shipped break ties
between equally frequent merges by hash-map order, so the same corpus gave different vocabularies
from process to process), by learner 1 (words counted at ``str.split`` speed with the library's
own normaliser and pre-tokenizer, :mod:`workers.engine.word_counts`; greedy merges, ties by text,
compiled in :mod:`workers.engine.merge_kernels` and byte-identical to the Python loop of
:func:`workers.engine.tokenization.greedy_merges` they replace, which took hours at PubMed's word
counts) or learner 2 (the Rust trainers made deterministic, :mod:`workers.engine.vocabulary_trainer`):

* ``wordpiece``: BERT, Bioformer and PubMedBERT style, cased or uncased, ``##`` continuations
  (:func:`workers.engine.tokenization.train_wordpiece`);
* ``byte-bpe``: RoBERTa and Clinical-Longformer style byte-level BPE (Lewis et al. 2020 learn one over
  PubMed), no unknown token, with the library's byte-level pre-tokenizer and decoder.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tokenizers import normalizers, pre_tokenizers
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from workers.engine import merge_kernels
from workers.engine.tokenization import (
    BPE_SPECIAL_TOKENS,
    CONTINUATION,
    SPECIAL_TOKENS,
    byte_level_bpe_tokenizer,
    wordpiece_tokenizer,
)
from workers.engine.vocabulary_trainer import (
    LEARNER_VERSION,
    train_byte_level_bpe_from_files,
    train_from_texts,
    train_wordpiece_from_files,
)
from workers.engine.word_counts import count_words

KINDS = ("wordpiece", "byte-bpe")
# 1: counts by str.split + the library's normaliser and pre-tokenizer per distinct token, greedy merges,
# ties by text (every vocabulary biolm has learned; compiled since issue 41, the same bytes); 2: the Rust
# trainers, made deterministic
LEARNERS = (1, LEARNER_VERSION)
DEFAULT_LEARNER = 1

# Gu et al. 2021, Table 1: common biomedical terms, and the categories the paper gives them.
PUBMEDBERT_TABLE_1_TERMS: tuple[tuple[str, str], ...] = (
    ("diabetes", "disease"),
    ("leukemia", "disease"),
    ("lithium", "drug"),
    ("insulin", "drug"),
    ("DNA", "gene"),
    ("promoter", "gene"),
    ("hypertension", "disease"),
    ("nephropathy", "disease"),
    ("lymphoma", "disease"),
    ("lidocaine", "drug"),
    ("oropharyngeal", "organ"),
    ("cardiomyocyte", "cell"),
    ("chloramphenicol", "drug"),
    ("RecA", "gene"),
    ("acetyltransferase", "gene"),
    ("clonidine", "drug"),
    ("naloxone", "drug"),
)
DEFAULT_TERMS: tuple[str, ...] = tuple(term for term, _ in PUBMEDBERT_TABLE_1_TERMS)


def train_vocabulary(
    texts: Iterable[str], kind: str, size: int, *, lowercase: bool | None = None, learner: int = DEFAULT_LEARNER
) -> PreTrainedTokenizerFast:
    """A ``kind`` vocabulary of ``size`` entries learned on ``texts``; the same texts give the same ids anywhere.

    ``lowercase`` defaults to each kind's original: uncased WordPiece (BERT-uncased, PubMedBERT),
    cased byte-level BPE (RoBERTa). ``learner`` picks the vocabulary learner: 1 (the default)
    merges (:mod:`workers.engine.merge_kernels`) after a fast exact count (:mod:`workers.engine.word_counts`), 2 the
    ``tokenizers`` Rust trainers made deterministic (:mod:`workers.engine.vocabulary_trainer`),
    whose count is slower and whose ties fall differently.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown vocabulary kind {kind!r}; expected one of {', '.join(KINDS)}")
    if learner not in LEARNERS:
        raise ValueError(f"unknown vocabulary learner {learner!r}; expected one of {', '.join(map(str, LEARNERS))}")
    lower = True if lowercase is None and kind == "wordpiece" else bool(lowercase)
    if learner == 2:
        return train_from_texts(texts, kind, size, lowercase=lower)
    if kind == "wordpiece":
        return train_wordpiece(texts, size, lowercase=lower)
    return train_byte_level_bpe(texts, size, lowercase=lower)


def train_wordpiece(texts: Iterable[str], vocab_size: int, lowercase: bool = True) -> PreTrainedTokenizerFast:
    """A BERT-style WordPiece tokenizer (learner 1), the same file as :func:`tokenization.train_wordpiece` gives.

    Special tokens, every character (word-initial and ``##`` forms) sorted, then merged pieces in
    merge order, as that function learns them, by the compiled merges, so a PubMed-sized word table
    takes minutes, not hours.
    """
    normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    words = count_words(texts, normalizer, pre_tokenizers.BertPreTokenizer(), byte_level=False)
    alphabet = sorted({word[0] for word in words if word} | {CONTINUATION + ch for word in words for ch in word[1:]})
    vocab = [*SPECIAL_TOKENS, *(piece for piece in alphabet if piece not in SPECIAL_TOKENS)]
    known = set(vocab)
    if len(vocab) < vocab_size:
        for _pair, merged in merges(words, vocab, vocab_size - len(vocab), continuation=CONTINUATION):
            if merged not in known:
                known.add(merged)
                vocab.append(merged)
    return wordpiece_tokenizer(vocab, lowercase=lowercase)


def merges(words, known: Sequence[str], need: int, *, continuation: str = "") -> list[tuple[tuple[str, str], str]]:
    """Learner 1's greedy merges until ``need`` new pieces (:func:`workers.engine.merge_kernels.greedy_merges`)."""
    return merge_kernels.greedy_merges(words, known, need, continuation=continuation)


def train_vocabulary_from_files(
    paths: Sequence[Path], kind: str, size: int, *, lowercase: bool | None = None, learner: int = DEFAULT_LEARNER
) -> PreTrainedTokenizerFast:
    """A ``kind`` vocabulary of ``size`` entries over the text files ``paths`` (one text per line), streamed."""
    if kind not in KINDS:
        raise ValueError(f"unknown vocabulary kind {kind!r}; expected one of {', '.join(KINDS)}")
    lower = True if lowercase is None and kind == "wordpiece" else bool(lowercase)
    if learner == LEARNER_VERSION:
        learn = train_wordpiece_from_files if kind == "wordpiece" else train_byte_level_bpe_from_files
        return learn(paths, size, lowercase=lower)
    return train_vocabulary(_lines(paths), kind, size, lowercase=lower, learner=learner)


def _lines(paths: Sequence[Path]) -> Iterator[str]:
    for path in paths:
        with Path(path).open(encoding="utf-8") as handle:
            yield from (line.rstrip("\n") for line in handle)


def train_byte_level_bpe(texts: Iterable[str], vocab_size: int, *, lowercase: bool = False) -> PreTrainedTokenizerFast:
    """A RoBERTa-style byte-level BPE tokenizer: 256 byte symbols, then greedy merges, ties by text (learner 1)."""
    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    normalizer = normalizers.Lowercase() if lowercase else None
    words = count_words(texts, normalizer, pre_tokenizer, byte_level=True)
    vocab = [*BPE_SPECIAL_TOKENS, *sorted(pre_tokenizers.ByteLevel.alphabet())]
    if vocab_size < len(vocab):
        raise ValueError(f"a byte-level BPE vocabulary needs at least {len(vocab)} entries, not {vocab_size}")
    known, pairs = set(vocab), []
    if len(vocab) < vocab_size:
        for pair, merged in merges(words, vocab, vocab_size - len(vocab)):
            pairs.append(pair)
            if merged not in known:
                known.add(merged)
                vocab.append(merged)
    return byte_level_bpe_tokenizer(vocab, pairs, lowercase=lowercase)


def pieces(tokenizer: PreTrainedTokenizerBase, word: str) -> list[str]:
    """The pieces of ``word`` as it appears inside a sentence (after a space, for byte-level BPE)."""
    return tokenizer.tokenize(word if tokenizer.tokenize("a b")[-1] == "b" else f" {word}")


@dataclass
class CoverageReport:
    """How a vocabulary splits a domain term list (Gu et al. 2021, Table 1) and a corpus's words."""

    vocabulary_size: int
    terms: dict[str, list[str]]
    whole_share: float  # share of the terms that stay one token
    pieces_per_term: float
    pieces_per_word: float | None = None  # over the corpus words given, each occurrence counted
    words: int = 0
    whole_terms: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def coverage(
    tokenizer: PreTrainedTokenizerBase, terms: Sequence[str] = DEFAULT_TERMS, texts: Iterable[str] = ()
) -> CoverageReport:
    """Gu et al. 2021's vocabulary comparison for ``tokenizer``: which ``terms`` stay whole, pieces per word."""
    if not terms:
        raise ValueError("the term list is empty")
    split = {term: pieces(tokenizer, term) for term in terms}
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(text.split())
    total_words = sum(counts.values())
    per_word = None
    if total_words:
        per_word = sum(len(pieces(tokenizer, word)) * n for word, n in counts.items()) / total_words
    return CoverageReport(
        vocabulary_size=len(tokenizer),
        terms=split,
        whole_share=sum(len(p) == 1 for p in split.values()) / len(split),
        pieces_per_term=statistics.fmean(len(p) for p in split.values()),
        pieces_per_word=per_word,
        words=total_words,
        whole_terms=[term for term, p in split.items() if len(p) == 1],
    )


def compare(
    new: PreTrainedTokenizerBase,
    base: PreTrainedTokenizerBase,
    terms: Sequence[str] = DEFAULT_TERMS,
    texts: Sequence[str] = (),
) -> dict:
    """The new vocabulary beside the one a continual run starts from: both reports and what changed."""
    ours, theirs = coverage(new, terms, texts), coverage(base, terms, texts)
    return {
        "new": ours.to_dict(),
        "base": theirs.to_dict(),
        "kept_whole_only_by_new": sorted(set(ours.whole_terms) - set(theirs.whole_terms)),
        "kept_whole_only_by_base": sorted(set(theirs.whole_terms) - set(ours.whole_terms)),
    }
