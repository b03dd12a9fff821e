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
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from itertools import chain, islice
from pathlib import Path

import numpy as np
from transformers import PreTrainedTokenizerBase

logger = logging.getLogger("biolm.pretrain")
TOKENIZE_BATCH = 2048  # documents per call at most: many, so the tokenizers library's Rust threads share the work
TOKENIZE_CHARS = 1 << 18  # characters per call at most: the pieces of a batch stay a few MB (a corpus streams)
Progress = Callable[[int], None]  # called with the characters (documents and newlines) prepared so far


class CorpusProgress:
    """A pass over a corpus file, reported as it goes: throughput and ETA in the log, and in the progress file.

    Called with the characters read so far (documents and their newlines, after the recipe's
    preprocessors); the ETA reads them against the file's size in bytes, which is exact for
    ASCII text and close for biomedical text, and absent for a gzipped corpus. A line is
    logged at most every ``interval_s`` seconds; ``BIOLM_PROGRESS_FILE``, when set, gets the
    same state (``label``, ``step`` = characters, ``total`` = bytes, ``mb_per_second``,
    ``eta_seconds``) for the job runner's heartbeats.
    """

    def __init__(self, label: str, path: Path, interval_s: float = 10.0) -> None:
        from workers.engine.progress_file import ProgressFile

        self.label, self.interval_s = label, interval_s
        self.total = None if Path(path).suffix == ".gz" else Path(path).stat().st_size
        self.file = ProgressFile.from_environment()
        self.started = self.logged = time.perf_counter()
        self.done = 0

    def __call__(self, done: int) -> None:
        self.done = done
        now = time.perf_counter()
        if now - self.logged >= self.interval_s:
            self.logged = now
            self.report()

    def report(self) -> dict:
        """Log the state now and write it to the progress file; the figures."""
        seconds = max(time.perf_counter() - self.started, 1e-9)
        rate = self.done / seconds
        eta = max(self.total - self.done, 0) / rate if self.total and rate else None
        of = f" of {self.total / 1e6:,.1f}" if self.total else ""
        logger.info(
            "%s: %.1f%s MB, %.1f MB/s%s", self.label, self.done / 1e6, of, rate / 1e6,
            f", ETA {eta:.0f} s" if eta is not None else "",
        )  # fmt: skip
        if self.file is not None:
            total = self.total or self.done
            self.file.write(self.label, min(self.done, total), total, None, mb_per_second=rate / 1e6, eta_seconds=eta)
        return {"characters": self.done, "seconds": seconds, "mb_per_second": rate / 1e6}


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


def batch_encoder(tokenizer: PreTrainedTokenizerBase) -> Callable[[list[str]], list[tuple[list[int], list]]]:
    """Texts to (piece ids, word ids) without special tokens, as ``tokenizer(texts)`` gives them.

    A fast tokenizer is called through its Rust ``encode_batch`` on a copy of its backend with
    truncation and padding off (what ``tokenizer(texts, add_special_tokens=False)`` sets): the
    same pieces and words, without the wrapper's per-text Python work, and spread over the cores
    unless ``TOKENIZERS_PARALLELISM`` is false. A slow (Python) tokenizer is called as it is.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:

        def slow(texts: list[str]) -> list[tuple[list[int], list]]:
            encoded = tokenizer(texts, add_special_tokens=False, return_attention_mask=False)
            return [(encoded["input_ids"][i], encoded.word_ids(i)) for i in range(len(texts))]

        return slow
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(backend.to_str())
    copy.no_truncation()
    copy.no_padding()

    def fast(texts: list[str]) -> list[tuple[list[int], list]]:
        return [(encoding.ids, encoding.word_ids) for encoding in copy.encode_batch(texts, add_special_tokens=False)]

    return fast


class BlockWriter:
    """Packs tokenized documents into blocks and appends them to ``<prefix>.ids`` / ``<prefix>.words``.

    Packing is done on numpy arrays a batch of documents at a time: the pieces of the batch in
    one array, a separator after each document, word numbers continued across documents, then
    every full block cut, renumbered and written at once.
    """

    def __init__(self, prefix: Path, block_size: int, cls_id: int, sep_id: int) -> None:
        self.prefix, self.block_size, self.cls_id, self.sep_id = prefix, block_size, cls_id, sep_id
        self.body = block_size - 2
        self.ids = np.zeros(0, dtype=np.int32)  # the pieces not yet in a block
        self.words = np.zeros(0, dtype=np.int64)
        self.next_word = 0
        self.blocks = 0
        self.tokens = 0
        self._ids_file = open(f"{prefix}.ids", "wb")  # noqa: SIM115 - closed in close()
        self._words_file = open(f"{prefix}.words", "wb")  # noqa: SIM115

    def add(self, documents: list[tuple[list[int], list]]) -> None:
        """Documents' (piece ids, word ids) in order; each is followed by the separator, as RoBERTa's
        FULL-SENTENCES packing does, and its words are numbered after the previous document's."""
        if not documents:
            return
        lengths = np.fromiter((len(ids) for ids, _ in documents), dtype=np.int64, count=len(documents))
        pieces = int(lengths.sum())
        ids = np.fromiter(chain.from_iterable(ids for ids, _ in documents), dtype=np.int32, count=pieces)
        words = np.array([w for _, word_ids in documents for w in word_ids], dtype=np.float64).reshape(-1)
        words = np.where(np.isnan(words), -1, words).astype(np.int64)  # None (a special token): -1
        document = np.repeat(np.arange(len(documents)), lengths)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        maxima = np.full(len(documents), -1, dtype=np.int64)
        filled = lengths > 0
        maxima[filled] = np.maximum.reduceat(words, starts[filled]) if pieces else maxima[filled]
        bases = self.next_word + np.concatenate(([0], np.cumsum(maxima + 1)[:-1]))
        self.next_word = int(bases[-1] + maxima[-1] + 1)
        stream_ids = np.full(pieces + len(documents), self.sep_id, dtype=np.int32)
        stream_words = np.full(pieces + len(documents), -1, dtype=np.int64)
        at = np.arange(pieces) + document  # each document's pieces shifted past the separators before it
        stream_ids[at] = ids
        stream_words[at] = np.where(words >= 0, words + bases[document], -1)
        self.tokens += pieces
        self.ids = np.concatenate((self.ids, stream_ids))
        self.words = np.concatenate((self.words, stream_words))
        self._emit()

    def _emit(self) -> None:
        count = len(self.ids) // self.body
        if not count:
            return
        ids = self.ids[: count * self.body].reshape(count, self.body)
        words = self.words[: count * self.body].reshape(count, self.body)
        numbered = words >= 0
        first = np.where(numbered, words, np.iinfo(np.int64).max).min(axis=1)
        local = np.where(numbered, words - np.where(first == np.iinfo(np.int64).max, 0, first)[:, None], -1)
        framed = np.empty((count, self.block_size), dtype=np.int32)
        framed[:, 0], framed[:, -1], framed[:, 1:-1] = self.cls_id, self.sep_id, ids
        framed.tofile(self._ids_file)
        framed[:, 0], framed[:, -1], framed[:, 1:-1] = -1, -1, local  # word numbers from 0 within the block
        framed.tofile(self._words_file)
        self.blocks += count
        self.ids, self.words = self.ids[count * self.body :].copy(), self.words[count * self.body :].copy()

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
    progress: Progress | None = None,
) -> CorpusStats:
    """Stream ``documents`` into ``directory``/{train,heldout}.{ids,words}; their statistics."""
    directory.mkdir(parents=True, exist_ok=True)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    writers = {part: BlockWriter(directory / part, block_size, cls_id, sep_id) for part in ("train", "heldout")}
    encode = batch_encoder(tokenizer)
    digest = hashlib.sha256()
    counts = {"documents": 0, "heldout": 0, "characters": 0}
    try:
        for batch in _batches(documents, TOKENIZE_BATCH):
            digest.update(("\n".join(batch) + "\n").encode("utf-8"))
            encoded = encode(batch)
            heldout = [is_heldout(text, heldout_share) for text in batch]
            writers["train"].add([pair for pair, held in zip(encoded, heldout, strict=True) if not held])
            writers["heldout"].add([pair for pair, held in zip(encoded, heldout, strict=True) if held])
            counts["documents"] += len(batch)
            counts["heldout"] += sum(heldout)
            characters = sum(map(len, batch))
            counts["characters"] += characters
            if progress is not None:
                progress(counts["characters"] + counts["documents"])
    finally:
        for writer in writers.values():
            writer.close()
    return _record(directory, digest, counts, writers, block_size)


def _record(directory: Path, digest, counts: dict, writers: dict, block_size: int, **extra) -> CorpusStats:
    """The corpus statistics, also written to ``corpus.json`` (read back by a resumed run)."""
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
    (directory / "corpus.json").write_text(json.dumps({**stats.to_dict(), **extra}, indent=2), encoding="utf-8")
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


def _batches(items: Iterable[str], size: int, chars: int = TOKENIZE_CHARS) -> Iterator[list[str]]:
    """``items`` in lists of ``size``, or fewer once they hold ``chars`` characters."""
    batch: list[str] = []
    held = 0
    for item in items:
        batch.append(item)
        held += len(item)
        if len(batch) == size or held >= chars:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


# --- sentence pairs: NSP (BERT, PubMedBERT, Bioformer) and SOP (GatorTron) ---------------------------

PAIR_TASKS = ("nsp", "sop")
RANDOM_POOL = 1000  # documents kept for NSP's random next segments


class PairWriter:
    """BERT's ``create_instances_from_document`` as a stream, writing fixed-size padded instances.

    Sentences of a document (one per line, from the ``sentences`` preprocessor) are gathered into
    a chunk up to the block's length; segment A is its first 1..n-1 sentences (a random cut) and
    B the rest. NSP: half the time B is replaced by sentences of another document (label 1,
    "random"); documents are drawn from the last :data:`RANDOM_POOL` ones, since a stream cannot
    draw from the whole corpus. SOP: half the time A and B are swapped (label 1, "swapped").
    The pair is trimmed from its longer side to fit, as BERT does. A document's last chunk of a
    single sentence makes no pair and is skipped.
    """

    def __init__(self, prefix: Path, block_size: int, tokenizer, task: str, seed: int) -> None:
        self.prefix, self.block_size, self.task = prefix, block_size, task
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
        self.rng = np.random.default_rng(seed)
        self.pool: list[list[tuple[list[int], list[int]]]] = []
        self.blocks = self.tokens = 0
        self.files = {name: open(f"{prefix}.{name}", "wb") for name in ("ids", "words", "types", "labels")}  # noqa: SIM115

    def add(self, sentences: list[tuple[list[int], list[int]]]) -> None:
        """One document's sentences, each as (piece ids, word ids numbered within the document)."""
        sentences = [s for s in sentences if s[0]]
        self.tokens += sum(len(ids) for ids, _ in sentences)
        budget = self.block_size - 3
        chunk: list[tuple[list[int], list[int]]] = []
        length = 0
        for index, sentence in enumerate(sentences):
            chunk.append(sentence)
            length += len(sentence[0])
            if (index == len(sentences) - 1 or length >= budget) and len(chunk) >= 2:
                self._instance(chunk, budget)
                chunk, length = [], 0
        if sentences:
            self.pool.append(sentences)
            if len(self.pool) > RANDOM_POOL:
                self.pool.pop(0)

    def _instance(self, chunk, budget: int) -> None:
        cut = int(self.rng.integers(1, len(chunk)))
        a, b = chunk[:cut], chunk[cut:]
        label = 0
        if self.task == "nsp" and self.pool and self.rng.random() < 0.5:
            other = self.pool[int(self.rng.integers(0, len(self.pool)))]  # an earlier document
            start = int(self.rng.integers(0, len(other)))
            b, label = other[start:], 1
        elif self.task == "sop" and self.rng.random() < 0.5:
            a, b, label = b, a, 1
        a_ids, a_words = _flatten(a)
        b_ids, b_words = _flatten(b)
        while len(a_ids) + len(b_ids) > budget:  # trim the longer side, from the front or back at random
            longer = (a_ids, a_words) if len(a_ids) > len(b_ids) else (b_ids, b_words)
            if self.rng.random() < 0.5:
                del longer[0][0], longer[1][0]
            else:
                longer[0].pop(), longer[1].pop()
        ids = [self.cls, *a_ids, self.sep, *b_ids, self.sep]
        offset = max(a_words, default=-1) + 1
        words = [-1, *a_words, -1, *(w + offset for w in b_words), -1]
        types = [0] * (len(a_ids) + 2) + [1] * (len(b_ids) + 1)
        padding = self.block_size - len(ids)
        np.asarray(ids + [self.pad] * padding, dtype=np.int32).tofile(self.files["ids"])
        np.asarray(_renumber(words) + [-1] * padding, dtype=np.int32).tofile(self.files["words"])
        np.asarray(types + [0] * padding, dtype=np.int8).tofile(self.files["types"])
        np.asarray([label], dtype=np.int8).tofile(self.files["labels"])
        self.blocks += 1

    def close(self) -> None:
        for handle in self.files.values():
            handle.close()


def _flatten(sentences) -> tuple[list[int], list[int]]:
    ids = [token for sentence_ids, _ in sentences for token in sentence_ids]
    words = [word for _, sentence_words in sentences for word in sentence_words]
    return ids, words


def _renumber(words: list[int]) -> list[int]:
    """Word numbers from 0 in order of appearance (special positions stay -1)."""
    numbers: dict[int, int] = {}
    return [numbers.setdefault(w, len(numbers)) if w >= 0 else -1 for w in words]


def write_pair_blocks(
    documents: Iterable[str],
    tokenizer: PreTrainedTokenizerBase,
    directory: Path,
    *,
    block_size: int,
    heldout_share: float,
    task: str,
    seed: int = 42,
    progress: Progress | None = None,
) -> CorpusStats:
    """Sentence-pair instances of ``task`` (``nsp`` or ``sop``) for the training and held-out parts."""
    if task not in PAIR_TASKS:
        raise ValueError(f"unknown sentence-pair task {task!r}; expected one of {PAIR_TASKS}")
    directory.mkdir(parents=True, exist_ok=True)
    writers = {
        part: PairWriter(directory / part, block_size, tokenizer, task, seed + n)
        for n, part in enumerate(("train", "heldout"))
    }
    digest = hashlib.sha256()
    counts = {"documents": 0, "heldout": 0, "characters": 0, "sentences": 0}
    encode = batch_encoder(tokenizer)
    try:
        for batch in _batches(documents, TOKENIZE_BATCH):
            sentences = [text.split("\n") for text in batch]
            encoded = iter(encode([sentence for document in sentences for sentence in document]))
            for text, document in zip(batch, sentences, strict=True):
                digest.update(text.encode("utf-8") + b"\n")
                pieces, first_word = [], 0
                for ids, word_ids in islice(encoded, len(document)):
                    words = [first_word + w if w is not None else -1 for w in word_ids]
                    first_word = max(words, default=first_word - 1) + 1
                    pieces.append((ids, words))
                part = "heldout" if is_heldout(text, heldout_share) else "train"
                writers[part].add(pieces)
                counts["documents"] += 1
                counts["heldout"] += part == "heldout"
                counts["characters"] += len(text)
                counts["sentences"] += len(document)
            if progress is not None:
                progress(counts["characters"] + counts["documents"])
    finally:
        for writer in writers.values():
            writer.close()
    if counts["documents"] and counts["sentences"] == counts["documents"]:
        raise ValueError(
            f"{task.upper()} pairs sentences, and every document is one sentence here: add the 'sentences' "
            "preprocessor to the recipe"
        )
    return _record(directory, digest, counts, writers, block_size, pairs=task)


def open_pairs(directory: Path, part: str, block_size: int) -> dict[str, np.ndarray]:
    """A pair corpus's arrays: ids, words (blocks x block_size), types, and one label per block."""
    ids, words = open_blocks(directory, part, block_size)
    types_path, labels_path = directory / f"{part}.types", directory / f"{part}.labels"
    types = (
        np.memmap(types_path, dtype=np.int8, mode="r", shape=ids.shape) if len(ids) else np.zeros(ids.shape, np.int8)
    )
    labels = np.fromfile(labels_path, dtype=np.int8) if len(ids) else np.zeros(0, np.int8)
    return {"ids": ids, "words": words, "types": types, "labels": labels}
