"""A pretraining corpus as fixed-length token blocks on disk: streamed in, memory-mapped out.

Documents are streamed from the corpus file (through the recipe's preprocessors), each sent to
the training or the held-out part by a hash of its text (deterministic, no second pass, the
same split whatever the file order), tokenized in batches and packed RoBERTa-style: documents
follow each other separated by the separator token, cut into blocks of ``block_size - 2``
pieces, each framed by the classifier and separator tokens. Blocks are appended to ``int32``
files as they fill, so a corpus larger than RAM becomes blocks without being held, and training
reads them through ``numpy.memmap``.

Each piece's word (the tokenizer's pre-tokenization word, from offsets) is kept beside it for
whole-word masking, numbered uniquely within the block; special tokens have word -1.

The corpus fingerprint is a SHA-256 over the documents after preprocessing, in file order, so
the same text prepared the same way has the same fingerprint, recorded with the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from transformers import PreTrainedTokenizerBase

TOKENIZE_BATCH = 256


@dataclass
class CorpusStats:
    fingerprint: str
    documents: int
    heldout_documents: int
    characters: int
    train_blocks: int
    heldout_blocks: int
    block_size: int
    train_tokens: int
    heldout_tokens: int

    def to_dict(self) -> dict:
        return asdict(self)


def is_heldout(text: str, share: float) -> bool:
    """A document's part, from its text alone: about ``share`` of the documents are held out."""
    if share <= 0:
        return False
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < share


class BlockWriter:
    """Packs tokenized documents into blocks and appends them to ``<prefix>.ids`` / ``<prefix>.words``."""

    def __init__(self, prefix: Path, block_size: int, cls_id: int, sep_id: int) -> None:
        self.prefix, self.block_size, self.cls_id, self.sep_id = prefix, block_size, cls_id, sep_id
        self.body = block_size - 2
        self.ids: list[int] = []
        self.words: list[int] = []
        self.next_word = 0
        self.blocks = 0
        self.tokens = 0
        self._ids_file = open(f"{prefix}.ids", "wb")  # noqa: SIM115 - closed in close()
        self._words_file = open(f"{prefix}.words", "wb")  # noqa: SIM115

    def add(self, ids: list[int], word_ids: list[int | None]) -> None:
        base = self.next_word
        self.ids.extend(ids)
        self.words.extend(base + w if w is not None else -1 for w in word_ids)
        self.next_word = base + (max((w for w in word_ids if w is not None), default=-1) + 1)
        self.ids.append(self.sep_id)  # documents are separated, as RoBERTa's FULL-SENTENCES packing does
        self.words.append(-1)
        self.tokens += len(ids)
        while len(self.ids) >= self.body:
            self._emit(self.ids[: self.body], self.words[: self.body])
            del self.ids[: self.body], self.words[: self.body]

    def _emit(self, ids: list[int], words: list[int]) -> None:
        first = min((w for w in words if w >= 0), default=0)
        local = [w - first if w >= 0 else -1 for w in words]  # word numbers from 0 within the block
        np.asarray([self.cls_id, *ids, self.sep_id], dtype=np.int32).tofile(self._ids_file)
        np.asarray([-1, *local, -1], dtype=np.int32).tofile(self._words_file)
        self.blocks += 1

    def close(self) -> None:
        # the tail shorter than a block is dropped, as run_mlm.py's group_texts does
        self._ids_file.close()
        self._words_file.close()


def write_blocks(
    documents: Iterable[str],
    tokenizer: PreTrainedTokenizerBase,
    directory: Path,
    *,
    block_size: int,
    heldout_share: float,
) -> CorpusStats:
    """Stream ``documents`` into ``directory``/{train,heldout}.{ids,words}; their statistics."""
    directory.mkdir(parents=True, exist_ok=True)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    writers = {part: BlockWriter(directory / part, block_size, cls_id, sep_id) for part in ("train", "heldout")}
    digest = hashlib.sha256()
    counts = {"documents": 0, "heldout": 0, "characters": 0}
    try:
        for batch in _batches(documents, TOKENIZE_BATCH):
            for text in batch:
                digest.update(text.encode("utf-8") + b"\n")
            encoded = tokenizer(batch, add_special_tokens=False, return_attention_mask=False)
            for index, text in enumerate(batch):
                part = "heldout" if is_heldout(text, heldout_share) else "train"
                writers[part].add(encoded["input_ids"][index], encoded.word_ids(index))
                counts["documents"] += 1
                counts["heldout"] += part == "heldout"
                counts["characters"] += len(text)
    finally:
        for writer in writers.values():
            writer.close()
    stats = CorpusStats(
        fingerprint=digest.hexdigest()[:16],
        documents=counts["documents"],
        heldout_documents=counts["heldout"],
        characters=counts["characters"],
        train_blocks=writers["train"].blocks,
        heldout_blocks=writers["heldout"].blocks,
        block_size=block_size,
        train_tokens=writers["train"].tokens,
        heldout_tokens=writers["heldout"].tokens,
    )
    (directory / "corpus.json").write_text(json.dumps(stats.to_dict(), indent=2), encoding="utf-8")
    return stats


def open_blocks(directory: Path, part: str, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``part``'s blocks as memory-mapped ``(ids, words)`` arrays of shape (blocks, block_size)."""
    arrays = []
    for suffix in ("ids", "words"):
        path = directory / f"{part}.{suffix}"
        size = path.stat().st_size // 4
        if size == 0:
            arrays.append(np.zeros((0, block_size), dtype=np.int32))
            continue
        arrays.append(np.memmap(path, dtype=np.int32, mode="r", shape=(size // block_size, block_size)))
    return arrays[0], arrays[1]


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
