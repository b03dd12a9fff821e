"""Word counts for vocabulary learning, at the speed of ``str.split``: the same counts as the library's pre-tokenizer.

A vocabulary learner starts from how often each word occurs, a word being what the tokenizer's
normaliser and pre-tokenizer make of the text. Calling them on every text from Python (the way
learner 1 first counted) costs a Python call and a list of tuples per text; the ``tokenizers``
trainers' own count (normaliser alignments, a hash map per line) costs about seven times a plain
split, which at a gigabyte is most of the five minutes. Both normalisers used here work
character by character, and both pre-tokenizers never join across a space, so the count is
split in two:

1. whitespace-separated tokens are counted with ``str.split`` and :class:`collections.Counter`
   (C loops), block by block, the text never held whole;
2. each *distinct* token goes once through the library's own normaliser and pre-tokenizer, and
   its count goes to every word it yields.

For BERT's pre-tokenizer a token is what lies between whitespace. For the byte-level one the
space before a word belongs to it (``Ġword``), so each line's first token is counted apart from
the rest, which are counted with their space. A text holding whitespace for which the shortcut
is not exact (for byte-level BPE, anything but single spaces between words; for BERT, the control characters
that Python splits on but BERT's normaliser deletes) goes through the library whole, as before.
:func:`count_words_reference` is that original per-text count; the tests hold the two equal.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator

BLOCK_CHARACTERS = 1 << 23
# characters str.split() splits on that BERT's clean-up deletes instead (C0/C1 controls)
_BERT_UNSAFE = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
# whitespace but a plain space, two spaces, a trailing space: the byte-level regex keeps runs of them together
_SPACE_ONLY_UNSAFE = re.compile(r"[^\S ]|  | $")


def count_words_reference(texts: Iterable[str], normalizer, pre_tokenizer) -> Counter[str]:
    """The words of ``texts`` as the library makes them, counted one text at a time (learner 1's original count)."""
    words: Counter[str] = Counter()
    for text in texts:
        text = normalizer.normalize_str(text) if normalizer is not None else text
        words.update(word for word, _ in pre_tokenizer.pre_tokenize_str(text))
    return words


def count_words(texts: Iterable[str], normalizer, pre_tokenizer, *, byte_level: bool) -> Counter[str]:
    """The same counts as :func:`count_words_reference`, by ``str.split`` and one library call per distinct token."""
    tokens: Counter[str] = Counter()  # whitespace tokens (byte-level: with their leading space, if any)
    words: Counter[str] = Counter()  # texts the shortcut cannot take, counted by the library directly
    unsafe = _SPACE_ONLY_UNSAFE if byte_level else _BERT_UNSAFE
    for block in _blocks(texts):
        safe = [text for text in block if not unsafe.search(text)]
        if len(safe) < len(block):
            words.update(count_words_reference((t for t in block if unsafe.search(t)), normalizer, pre_tokenizer))
        if byte_level:
            _count_spaced(safe, tokens)
        else:
            tokens.update(" ".join(safe).split())
    for token, count in tokens.items():
        text = normalizer.normalize_str(token) if normalizer is not None else token
        for word, _ in pre_tokenizer.pre_tokenize_str(text):
            words[word] += count
    return words


def _count_spaced(texts: list[str], tokens: Counter[str]) -> None:
    """Byte-level tokens: every space-separated part with its space, but each text's first part without."""
    parts = Counter(" ".join(texts).split(" ")) if texts else Counter()
    first = Counter(text.split(" ", 1)[0] for text in texts)
    for part, count in parts.items():
        spaced = count - first.get(part, 0)
        if spaced:
            tokens[" " + part] += spaced
    for part, count in first.items():
        tokens[part] += count


def _blocks(texts: Iterable[str]) -> Iterator[list[str]]:
    block: list[str] = []
    size = 0
    for text in texts:
        block.append(text)
        size += len(text)
        if size >= BLOCK_CHARACTERS:
            yield block
            block, size = [], 0
    if block:
        yield block
