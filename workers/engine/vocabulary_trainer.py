"""Vocabulary learner 2: the ``tokenizers`` library's Rust trainers, made deterministic.

Learner 1 (:func:`workers.engine.vocabulary.train_wordpiece`, the default) runs compiled greedy
merges (:mod:`workers.engine.merge_kernels`) after a fast exact count. This one hands the
counting and the merging to ``tokenizers.trainers``
(``WordPieceTrainer``, ``BpeTrainer``), reading the text from files in Rust across threads, and
closes the door through which hash-map order reached the result (read in ``tokenizers`` 0.23,
``models/bpe/trainer.rs``):

* the trainer counts words in an ``AHashMap`` whose seed is random per process, then gives ids
  to the single characters sorted by code point (deterministic), but to the ``##``
  continuation forms of WordPiece in the order it meets them while walking that map: the ids
  of ``##a``, ``##b``... changed from process to process (``tests/test_engine_vocabulary_trainer.py``
  shows it with the trainer as shipped);
* the merge queue breaks ties between equally frequent pairs by the pair's ids, so those ids
  decided which of two equally frequent merges came first, and so the vocabulary.

Every character of the normalised text, in its word-initial form and (where the pre-tokenizer
can leave it inside a word) its ``##`` form, is therefore registered first, as a trainer special
token, in code-point order: the trainer gives special tokens their ids before anything else and
skips characters it already holds, so every id, every tie and every merge depends on the text
only. The characters are found by a cheap pass over the file's bytes (ASCII by a byte
histogram, the rest decoded); a ``##`` form a character never takes stays in the vocabulary
unused, a handful of entries out of thousands. The final tokenizer is rebuilt from the trained
vocabulary (and merges) with learner 1's normaliser, pre-tokenizer and post-processor, so none
of those characters is an added special token. Byte-level BPE needs nothing pinned: its 256
byte symbols are the initial alphabet, sorted.

Ties fall by the pieces' ids (special tokens, characters by code point, then merged pieces in
the order they were made) where learner 1 breaks them by the pieces' text, so the two learners'
vocabularies differ among equally frequent merges: a recipe picks one by number. Its count (the
library's normaliser with its alignments, a hash map per line) is several times slower than
learner 1's split-and-count, which decides a gigabyte's time on two cores; since issue 41 learner
1's merges are compiled too, so learner 2 is not the faster one there either
(``python -m bench vocabulary``), and it stays the second learner, not the default. Texts that
are not files yet are spooled once to a temporary file (memory stays flat) and read from there.
"""

from __future__ import annotations

import codecs
import json
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from workers.engine.tokenization import BPE_SPECIAL_TOKENS, byte_level_bpe_tokenizer

LEARNER_VERSION = 2
CHUNK_BYTES = 1 << 24
_ASCII = bytes(range(128))


def train_wordpiece_from_files(
    paths: Sequence[Path], vocab_size: int, *, lowercase: bool = True
) -> PreTrainedTokenizerFast:
    """A BERT-style WordPiece vocabulary of ``vocab_size`` entries over the text of ``paths``, the same anywhere."""
    from workers.engine.tokenization import CONTINUATION, SPECIAL_TOKENS, wordpiece_tokenizer

    normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    alphabet = normalised_alphabet(raw_characters(paths), normalizer)
    inner = {ch for ch in alphabet if _can_continue(ch, normalizer, pre_tokenizer)}
    pinned = sorted(set(alphabet) | {CONTINUATION + ch for ch in inner})
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=0,
        special_tokens=[*SPECIAL_TOKENS, *(piece for piece in pinned if piece not in SPECIAL_TOKENS)],
        continuing_subword_prefix=CONTINUATION,
        show_progress=False,
    )
    backend = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix=CONTINUATION))
    backend.normalizer, backend.pre_tokenizer = normalizer, pre_tokenizer
    backend.train([str(path) for path in paths], trainer)
    return wordpiece_tokenizer(_ordered_vocabulary(backend), lowercase=lowercase)


def train_byte_level_bpe_from_files(
    paths: Sequence[Path], vocab_size: int, *, lowercase: bool = False
) -> PreTrainedTokenizerFast:
    """A RoBERTa-style byte-level BPE of ``vocab_size`` entries over the text of ``paths``, the same anywhere."""
    minimum = len(BPE_SPECIAL_TOKENS) + len(pre_tokenizers.ByteLevel.alphabet())
    if vocab_size < minimum:
        raise ValueError(f"a byte-level BPE vocabulary needs at least {minimum} entries, not {vocab_size}")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=0,
        special_tokens=list(BPE_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend = Tokenizer(models.BPE())
    if lowercase:
        backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.train([str(path) for path in paths], trainer)
    model = json.loads(backend.to_str())["model"]
    merges = [tuple(merge.split(" ", 1)) if isinstance(merge, str) else tuple(merge) for merge in model["merges"]]
    return byte_level_bpe_tokenizer(_ordered_vocabulary(backend), merges, lowercase=lowercase)


def train_from_texts(texts: Iterable[str], kind: str, vocab_size: int, *, lowercase: bool) -> PreTrainedTokenizerFast:
    """Spool ``texts`` (one per line) to a temporary file once, then learn from it as from any file."""
    with tempfile.TemporaryDirectory(prefix="biolm-vocabulary-") as directory:
        path = Path(directory) / "texts.txt"
        with path.open("w", encoding="utf-8", newline="\n") as handle:
            for text in texts:
                handle.write(text.replace("\n", " "))
                handle.write("\n")
        learn = train_wordpiece_from_files if kind == "wordpiece" else train_byte_level_bpe_from_files
        return learn([path], vocab_size, lowercase=lowercase)


def raw_characters(paths: Sequence[Path]) -> set[str]:
    """Every character in the files, read in chunks: ASCII by a byte histogram, the rest decoded."""
    found: set[str] = set()
    for path in paths:
        decoder = codecs.getincrementaldecoder("utf-8")()
        with Path(path).open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                histogram = np.bincount(np.frombuffer(chunk, dtype=np.uint8), minlength=256)
                found.update(chr(byte) for byte in np.flatnonzero(histogram[:128]))
                # deleting ASCII bytes keeps each multi-byte character whole, across chunks too
                found.update(decoder.decode(chunk.translate(None, _ASCII)))
        found.update(decoder.decode(b"", final=True))
    return found


def normalised_alphabet(raw: Iterable[str], normalizer) -> list[str]:
    """The characters the normaliser makes of ``raw`` (it works character by character), whitespace dropped."""
    out = {ch for c in raw for ch in normalizer.normalize_str(c)}
    return sorted(ch for ch in out if not ch.isspace())


def _can_continue(ch: str, normalizer, pre_tokenizer) -> bool:
    """Whether the pre-tokenizer can leave ``ch`` inside a word (not punctuation, not a CJK character)."""
    text = normalizer.normalize_str("x" + ch)
    return [word for word, _ in pre_tokenizer.pre_tokenize_str(text)] == ["x" + ch]


def _ordered_vocabulary(backend: Tokenizer) -> list[str]:
    vocab = backend.get_vocab(with_added_tokens=False)
    ordered = sorted(vocab, key=vocab.__getitem__)
    if [vocab[token] for token in ordered] != list(range(len(ordered))):
        raise RuntimeError("the trainer's vocabulary ids are not contiguous")
    return ordered
