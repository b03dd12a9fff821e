"""Test-set contamination: the share of each dataset's test examples whose 13-grams occur in the corpus.

A model pretrained on text that contains a benchmark's test examples is scored on text it has
seen. GPT-3's authors (Brown et al. 2020) measured this with 13-gram overlap; no encoder
leaderboard reports it, so biolm does, for every registered dataset whose files are present, and
stores the report with the model.

Words are lower-cased runs of letters and digits (``\\w+``), so tokenization differences
between a CoNLL file (``( 5 )``) and raw text (``(5)``) do not hide an overlap. An example is
contaminated when any of its 13-word shingles occurs in one document of the corpus; a text of 8
to 12 words counts when its whole word sequence occurs, and shorter ones are too short to judge
(counted apart). Memory is bounded by the test sets, not the corpus.

The scan runs at disk speed (issue 31): PubMed's 21 GB must not take hours before training.

* Only the test sets' vocabulary matters. A word outside it breaks every window that contains
  it, so the corpus's words become integer ids through one dict of the test words (0 for any
  other word, and for the break word put between documents, so no window spans two documents).
* Each word id carries a 64-bit hash of the word (BLAKE2b), and a window's key is the
  polynomial of its words' hashes modulo 2**64, grown word by word from each start, so one pass
  gives every length from 8 to 13 (compiled loops, :mod:`scan_kernels`; the test texts' own
  keys come from the same polynomial in numpy, :func:`_window_keys`).
* A window whose key passes a bit filter and is found among the sorted test keys is confirmed
  by a second polynomial key over another base: the pair (128 bits) is what a test example
  records. A false match needs two different word sequences of one length to agree on both
  keys; with hashes modelled as random, the chance is about 2**-128 per pair of sequences, so
  over 10**11 corpus windows and 10**7 test keys the expected count of false matches is below
  10**-20. Word-to-id lookup is an exact dict lookup, so no word is ever confused with another.
* Chunks of about :data:`CHUNK_CHARS` characters are scanned by a pool of threads, one per
  core, while the calling thread reads the corpus.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from biolm.dataset_io import load_dataset_files
from biolm.errors import DataFormatError
from biolm.schemas import get_schema
from biolm.specs import DatasetSpec
from workers.engine.pretrain import scan_kernels

N = 13
MIN_WORDS = 8  # shorter texts ("Methods :", "( a )") would match almost any corpus: not judged
_WORD = re.compile(r"\w+")
_MASK = (1 << 64) - 1
BASE = 0x9E3779B97F4A7C15  # odd: the window key's polynomial base (modulo 2**64)
CHECK_BASE = 0xC2B2AE3D27D4EB4F  # another odd base, for the confirming key
FILTER_BITS = 24  # the bit filter has 2**24 entries: a few per cent of windows reach the sorted keys
CHUNK_CHARS = 4_000_000  # characters of documents scanned at once
Progress = Callable[[int], None]  # called with the number of characters (of documents) scanned so far


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def word_hash(word: str) -> int:
    """A word's 64-bit hash, the same in every process (not Python's salted ``hash``); never 0."""
    value = int.from_bytes(hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")
    return value or 1


def sequence_key(tokens: list[str]) -> int:
    """The 128-bit key of a word sequence: its two polynomial hashes (see the module docstring)."""
    first = second = 0
    for token in tokens:
        value = word_hash(token)
        first = (first * BASE + value) & _MASK
        second = (second * CHECK_BASE + value) & _MASK
    return first << 64 | second


def shingles(tokens: list[str], n: int = N) -> set[int]:
    """Keys of the ``n``-word windows of ``tokens`` (the whole sequence when it is shorter)."""
    if len(tokens) < MIN_WORDS:
        return set()
    if len(tokens) <= n:
        return {sequence_key(tokens)}
    return {sequence_key(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


@dataclass
class DatasetTestShingles:
    """One test set's shingles, as :func:`dataset_shingles` makes them.

    ``vocabulary`` is required and must hold the words of the texts the keys came from: the scan reads
    a corpus word outside every set's vocabulary as a break, so a set built with keys and no words
    matched nothing, silently (0 of 50 planted test sentences found). It cannot be rebuilt from the
    keys, which are hashes; a set with keys and no words is refused (:meth:`__post_init__`).
    """

    dataset: str
    examples: list[set[int]]  # each example's shingle keys
    short_lengths: set[int]  # word counts of its texts shorter than N (matched as whole sequences)
    vocabulary: set[str]  # the words of its judged texts

    def __post_init__(self) -> None:
        if not self.vocabulary and any(self.examples):
            raise ValueError(
                f"test shingles of {self.dataset!r} have keys but no vocabulary: the scan would match none of "
                "them; build them with dataset_shingles(dataset, texts)"
            )


def collect_test_shingles(
    datasets: Mapping[str, DatasetSpec], directory_of
) -> tuple[list[DatasetTestShingles], dict[str, str]]:
    """The test examples' shingles of every dataset whose files load; the others with the reason."""
    found, skipped = [], {}
    for slug, spec in sorted(datasets.items()):
        texts, reason = test_texts_of(spec, directory_of)
        if texts is None:
            skipped[slug] = reason
            continue
        found.append(dataset_shingles(slug, texts))
    return found, skipped


def test_texts_of(spec: DatasetSpec, directory_of) -> tuple[list[list[list[str]]] | None, str]:
    """Each test example's texts as word lists, or None and why they cannot be read."""
    if spec.adapter is None:
        return None, "no adapter"
    directory = directory_of(spec)
    if not Path(directory).is_dir():
        return None, f"files not found at {directory}"
    try:
        rows = load_dataset_files(spec, directory).splits.get("test", [])
    except (DataFormatError, OSError) as exc:
        return None, f"not loaded: {exc}"
    if not rows:
        return None, "no test split"
    schema = get_schema(spec.adapter.schema)
    return [[words(text) for text in schema.texts([row])] for row in rows], ""


def dataset_shingles(dataset: str, texts: list[list[list[str]]]) -> DatasetTestShingles:
    """One dataset's shingles from its examples' texts (word lists), keyed by the scan's own kernel."""
    judged = [tokens for row in texts for tokens in row if len(tokens) >= MIN_WORDS]
    owners = np.array([index for index, row in enumerate(texts) for tokens in row if len(tokens) >= MIN_WORDS])
    vocabulary = {word for tokens in judged for word in tokens}
    examples: list[set[int]] = [set() for _ in texts]
    for text_indices, keys in _text_keys(judged, _Vocabulary(vocabulary)):
        for example, key in zip(owners[text_indices].tolist(), keys, strict=True):
            examples[example].add(key)
    short = {len(tokens) for tokens in judged if len(tokens) < N}
    return DatasetTestShingles(dataset, examples, short, vocabulary)


def _text_keys(texts: list[list[str]], table: _Vocabulary) -> Iterator[tuple[np.ndarray, list[int]]]:
    """Per window length, the keys of the texts' windows and the text each is from.

    A text of at least 13 words gives its 13-word windows, a shorter one its whole sequence.
    """
    if not texts:
        return
    ids, starts = table.encode_documents(" ".join(tokens) for tokens in texts)
    sizes = np.diff(np.append(starts, len(ids))) - 1  # each text is followed by one break
    for length, first, second in _window_keys(ids, table.hashes, range(MIN_WORDS, N + 1)):
        positions = np.arange(len(first))
        text = np.searchsorted(starts, positions, side="right") - 1
        size = sizes[text]
        inside = (positions + length <= starts[text] + size) & ((size == length) | ((length == N) & (size > N)))
        keys = [a << 64 | b for a, b in zip(first[inside].tolist(), second[inside].tolist(), strict=True)]
        yield text[inside], keys


_WORD_BYTE = np.zeros(256, dtype=bool)
_WORD_BYTE[list(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")] = True  # \w in ASCII
_SPACE_BYTE = np.zeros(256, dtype=bool)
_SPACE_BYTE[list(b" \t\n\r\x0b\x0c")] = True
_LOWER_BYTE = np.arange(256, dtype=np.uint8)
_LOWER_BYTE[65:91] += 32
BYTE_BASES = (0x100000001B3, 0x5BD1E9955BD1E995, 0x9E3779B97F4A7C15)  # odd; the first without a clash is used


class _Vocabulary:
    """The test words as ids from 1 (0: any other word), each id's 64-bit word hash, and the word splitter.

    :meth:`encode` gives exactly the ids of ``words(text)``, without making a Python string
    per word. Text is cut at ASCII whitespace into fields. A field of ASCII bytes only is split
    and lower-cased byte by byte (there ``\\w`` is ``[A-Za-z0-9_]`` and ``str.lower`` maps A-Z
    only), and each word is looked up by a 64-bit polynomial hash of its bytes plus its length
    among the ASCII test words (a clash among those is avoided by choosing the base; a corpus
    word taken for a test word needs a 64-bit clash of two words of one length, about one in
    10**14 per word, and then still the 12 words around it to form a test shingle). A field
    with a non-ASCII byte goes through ``words`` and the dict: rare, and exact. Lower-casing
    field by field equals lower-casing the whole text: the only context rule ``str.lower``
    applies, the final sigma, looks past case-ignorable characters and letters only, and
    whitespace is neither.
    """

    def __init__(self, vocabulary: Iterable[str]) -> None:
        ordered = sorted(vocabulary)
        self.ids = {word: index for index, word in enumerate(ordered, start=1)}
        self.hashes = np.array([0, *(word_hash(word) for word in ordered)], dtype=np.uint64)
        self.separator = "_" * (max(map(len, ordered), default=0) + 1)  # a word no test text contains
        ascii_words = [(word, index) for word, index in self.ids.items() if word.isascii()]
        self.longest = max((len(word) for word, _ in ascii_words), default=0)
        for base in BYTE_BASES:
            raw = [_bytes_hash(word.encode("ascii"), base) for word, _ in ascii_words]
            keys = _mix(np.array(raw, dtype=np.uint64))
            if len(_sorted_unique(keys.copy())) == len(keys):
                break
        else:  # pragma: no cover - three 64-bit clashes among the test words
            raise RuntimeError("the test words' byte hashes clash under every base")
        self.base = np.uint64(base)
        order = np.argsort(keys, kind="stable")
        self.ascii_keys = keys[order]
        self.ascii_lengths = np.array([len(word) for word, _ in ascii_words], dtype=np.int64)[order]
        self.ascii_ids = np.array([index for _, index in ascii_words], dtype=np.int32)[order]
        bits = max(8, int(np.ceil(np.log2(max(len(keys), 1) * 4))))  # about four buckets per word
        self.bucket_shift = np.uint64(64 - bits)
        self.buckets = np.searchsorted(self.ascii_keys >> self.bucket_shift, np.arange(2**bits + 1, dtype=np.uint64))

    def encode(self, text: str) -> np.ndarray:
        """The word ids of ``words(text)``: 0 for a word no test text contains."""
        data = text.encode("utf-8", "surrogatepass")
        codes = np.frombuffer(data, dtype=np.uint8)
        word = _WORD_BYTE[codes]
        fields = _non_ascii_fields(codes)
        starts, ends = _runs(word)
        if len(fields[0]):  # the words of the non-ASCII fields are found below
            field = np.searchsorted(fields[0], starts, side="right") - 1
            outside = (field < 0) | (starts >= fields[1][np.maximum(field, 0)])
            starts, ends = starts[outside], ends[outside]
        ids = self._ascii_ids(codes, starts, ends)
        if not len(fields[0]):
            return ids
        positions, found = [], []
        for start, end in zip(fields[0].tolist(), fields[1].tolist(), strict=True):
            tokens = _WORD.findall(data[start:end].decode("utf-8", "surrogatepass").lower())
            found.extend(self.ids.get(token, 0) for token in tokens)
            positions.extend([start] * len(tokens))
        return np.insert(ids, np.searchsorted(starts, positions), np.array(found, dtype=np.int32))

    def _ascii_ids(self, codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The ids of the ASCII words ``codes[starts[i]:ends[i]]`` (:func:`scan_kernels.ascii_word_ids`)."""
        if not len(self.ascii_keys):
            return np.zeros(len(starts), dtype=np.int32)
        return scan_kernels.ascii_word_ids(codes, starts, ends, _LOWER_BYTE, self.base, self.longest,
                                           self.bucket_shift, self.buckets, self.ascii_keys, self.ascii_lengths,
                                           self.ascii_ids)  # fmt: skip

    def encode_documents(self, documents: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """The documents' word ids, each document followed by a break (id 0); where each starts."""
        ids = self.encode(f" {self.separator} ".join(documents) + f" {self.separator}")
        starts = np.flatnonzero(np.concatenate(([True], ids[:-1] == 0)) & (ids != 0))
        return ids, starts


def _bytes_hash(data: bytes, base: int) -> int:
    value = 0
    for byte in data:
        value = (value * base + byte) & _MASK
    return value


def _mix(keys: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place: a bijection that spreads short words' hashes over the top bits."""
    with np.errstate(over="ignore"):
        keys ^= keys >> np.uint64(33)
        keys *= np.uint64(0xFF51AFD7ED558CCD)
        keys ^= keys >> np.uint64(33)
        keys *= np.uint64(0xC4CEB9FE1A85EC53)
        keys ^= keys >> np.uint64(33)
    return keys


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting in place: numpy 2's default hashes 64-bit keys, four times slower here
    (0.49 of the table's 0.86 s for the 22 registered test sets)."""
    values.sort()
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of True in ``mask`` starts and ends (exclusive)."""
    padded = np.concatenate(([False], mask, [False]))
    changes = np.flatnonzero(padded[1:] != padded[:-1])
    return changes[0::2], changes[1::2]


def _non_ascii_fields(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whitespace-delimited fields of ``codes`` that hold a non-ASCII byte: their starts and ends."""
    high = np.flatnonzero(codes >= 0x80)
    if not len(high):
        return high, high
    spaces = np.flatnonzero(_SPACE_BYTE[codes])
    at = np.unique(np.searchsorted(spaces, high))  # the first space after each such byte: one per field
    starts = np.where(at > 0, spaces[np.maximum(at - 1, 0)] + 1, 0)
    ends = np.where(at < len(spaces), spaces[np.minimum(at, len(spaces) - 1)], len(codes))
    return starts, ends


def _window_keys(ids: np.ndarray, hashes: np.ndarray, lengths: Iterable[int]) -> Iterator[tuple[int, ...]]:
    """For each length, the two keys of the window starting at every position (garbage where a 0 id is inside).

    Horner's rule over shifted views: after step ``L`` the running arrays hold the keys of all
    windows of ``L`` words, so one pass serves every length up to the longest.
    """
    wanted = set(lengths)
    values = hashes[ids]
    first, second = values.copy(), values.copy()
    base, check_base = np.uint64(BASE), np.uint64(CHECK_BASE)
    with np.errstate(over="ignore"):
        for length in range(2, max(wanted) + 1):
            size = len(values) - length + 1
            if size <= 0:
                return
            first, second = first[:size], second[:size]
            np.multiply(first, base, out=first)
            np.add(first, values[length - 1 :], out=first)
            np.multiply(second, check_base, out=second)
            np.add(second, values[length - 1 :], out=second)
            if length in wanted:
                yield length, first, second


class ScanTable:
    """What the scan needs: the test vocabulary, the window lengths, the test keys' first halves.

    It finds candidate keys; :func:`scan_documents` confirms each against the full keys
    (:attr:`wanted`).
    """

    def __init__(self, sets: list[DatasetTestShingles]) -> None:
        self.vocabulary = _Vocabulary(set().union(*(test.vocabulary for test in sets)))
        self.wanted: set[int] = set().union(*(key for test in sets for key in test.examples))
        self.lengths = sorted({N, *set().union(*(test.short_lengths for test in sets))})
        self.firsts = _sorted_unique(np.array([key >> 64 for key in self.wanted], dtype=np.uint64))
        self.filter = np.zeros(1 << FILTER_BITS, dtype=bool)
        self.filter[(self.firsts >> np.uint64(64 - FILTER_BITS)).astype(np.intp)] = True
        self.wanted_lengths = np.zeros(max(self.lengths) + 1, dtype=bool)
        self.wanted_lengths[self.lengths] = True

    def candidates(self, text: str) -> set[int]:
        """Keys of the windows of ``text`` (documents joined by :meth:`join`) whose first half is a test key's."""
        ids = self.vocabulary.encode(text)
        if len(self.firsts) == 0 or len(ids) == 0:
            return set()
        first, second = scan_kernels.window_candidates(ids, self.vocabulary.hashes, self.wanted_lengths,
                                                       np.uint64(BASE), np.uint64(CHECK_BASE), self.filter,
                                                       np.uint64(64 - FILTER_BITS), self.firsts)  # fmt: skip
        return {a << 64 | b for a, b in zip(first.tolist(), second.tolist(), strict=True)}

    def join(self, documents: list[str]) -> str:
        return f" {self.vocabulary.separator} ".join(documents)


def _chunks(documents: Iterable[str], chars: int) -> Iterator[tuple[list[str], int]]:
    """Documents in batches of about ``chars`` characters, each with its size (characters and newlines)."""
    batch: list[str] = []
    size = 0
    for document in documents:
        batch.append(document)
        size += len(document) + 1
        if size >= chars:
            yield batch, size
            batch, size = [], 0
    if batch:
        yield batch, size


def default_workers() -> int:
    """One scanning thread per core this process may run on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores)


def scan_documents(
    documents: Iterable[str], table: ScanTable, *, workers: int | None = None, progress: Progress | None = None
) -> set[int]:
    """The test keys that occur in ``documents``: in this thread for one chunk, else in a pool of threads.

    Threads, not processes: the compiled loops (:mod:`scan_kernels`) release the GIL, so the
    threads share one copy of the table and never copy a chunk into another process. A spawned
    process pool, the earlier design, spent the parent's core on pickling the chunks and gained
    nothing on two cores.
    """
    workers = default_workers() if workers is None else workers
    chunks = _chunks(documents, CHUNK_CHARS)
    head = list(islice(chunks, 2))
    texts = _joined(itertools.chain(head, chunks), table, progress)
    if len(head) < 2 or workers <= 1:
        found = set().union(*map(table.candidates, texts))
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="contamination-scan") as pool:
            found = set().union(*_bounded_map(pool, table.candidates, texts, ahead=2 * workers))
    return found & table.wanted


def _bounded_map(pool: ThreadPoolExecutor, function: Callable[[str], set[int]], texts: Iterable[str], ahead: int):
    """``pool.map`` that reads at most ``ahead`` chunks beyond those scanned, so memory stays a few chunks'."""
    pending: deque[Future] = deque()
    for text in texts:
        pending.append(pool.submit(function, text))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _joined(chunks: Iterable[tuple[list[str], int]], table: ScanTable, progress: Progress | None) -> Iterator[str]:
    """Each chunk's documents joined for the scan, reporting the characters handed on so far.

    The pool reads a few chunks ahead of the ones it has scanned, so the figure runs slightly ahead.
    """
    done = 0
    for batch, size in chunks:
        yield table.join(batch)
        done += size
        if progress is not None:
            progress(done)


def contamination(
    documents: Iterable[str],
    sets: list[DatasetTestShingles],
    skipped: Mapping[str, str] | None = None,
    *,
    workers: int | None = None,
    progress: Progress | None = None,
) -> dict:
    """Stream ``documents`` once; per dataset, how many test examples share a shingle with them.

    With no test example to look for, the corpus is not read.
    """
    table = ScanTable(sets)
    seen = scan_documents(documents, table, workers=workers, progress=progress) if table.wanted else set()
    report = {}
    for test in sets:
        hit = sum(1 for example in test.examples if not example.isdisjoint(seen))
        judged = sum(1 for example in test.examples if example)
        report[test.dataset] = {
            "test_examples": len(test.examples),
            "too_short_to_judge": len(test.examples) - judged,
            "contaminated": hit,
            "share": hit / judged if judged else None,
        }
    return {"n": N, "datasets": report, "skipped": dict(skipped or {})}
