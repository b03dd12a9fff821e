"""A pretraining-sized corpus of any size, sampled deterministically from the official datasets' real text.

The official datasets hold about 64 MB of training and dev text (:mod:`bench.biomedical_corpus`);
a gigabyte-scale benchmark (vocabulary learning, corpus preparation, the contamination scan) needs
more. Repeating the real text would distort the word counts that a vocabulary learner sees (every
word's count multiplied, no word rarer than its repetition count, ties everywhere), so the
corpus is *sampled* instead:

* the real documents are split on whitespace into words (a word keeps its punctuation, as in
  ``cells.``); each distinct word gets its real count;
* each synthetic document takes the length, in words, of a real document drawn uniformly
  (``numpy.random.Generator(PCG64(seed))``);
* each of its words is drawn independently from the real unigram distribution (a word with
  count ``c`` out of ``N`` is drawn with probability ``c / N``);
* words are joined by one space, documents end with a newline, and the file stops at the first
  whole document that brings it to ``size_bytes`` or more.

So word frequencies keep the real, Zipf-shaped distribution (the same most frequent words, the
same long tail of rare ones in proportion) rather than a repetition, and document lengths keep
theirs. What it does not keep: word order within sentences (n-grams above 1 are random, so a
13-gram contamination scan finds no overlap with the test sets by construction), and the growth
of the vocabulary with corpus size (Heaps' law): a sampled gigabyte has no word type the real
64 MB lacks. For vocabulary learning that is the point: the learner sees realistic counts at
realistic scale.

The same seed and data give a byte-identical file (the generator, the sorted word table and the
chunking are all fixed). ``python -m bench.synthetic_corpus OUT --bytes N [--seed S] [--data DIR]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

DOCUMENTS_PER_CHUNK = 20_000


class WordTable:
    """The real words, their counts and bytes, and the real documents' lengths in words."""

    def __init__(self, documents) -> None:
        counts: Counter[str] = Counter()
        lengths = []
        source_bytes = 0
        for document in documents:
            words = document.split()
            if words:
                counts.update(words)
                lengths.append(len(words))
                source_bytes += len(document.encode("utf-8")) + 1
        if not counts:
            raise ValueError("the source documents hold no words")
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        encoded = [word.encode("utf-8") for word, _ in ordered]
        self.words = len(ordered)
        counts_array = np.fromiter((n for _, n in ordered), dtype=np.int64, count=len(ordered))
        # one entry per real occurrence: a uniform draw from it is a draw by real frequency
        self.occurrences = np.repeat(np.arange(len(ordered), dtype=np.int64), counts_array)
        # entries 0..V-1 end with a space, V..2V-1 (a document's last word) with a newline
        self.pieces = np.array([b + b" " for b in encoded] + [b + b"\n" for b in encoded], dtype=object)
        self.width = np.fromiter((len(b) for b in self.pieces), dtype=np.int64, count=len(self.pieces))
        self.document_lengths = np.asarray(lengths, dtype=np.int64)
        self.source_bytes = source_bytes

    def documents_for(self, size_bytes: int) -> int:
        """How many documents to sample next for about ``size_bytes`` more (a tenth more, at most a chunk)."""
        mean = self.source_bytes / len(self.document_lengths)
        return min(DOCUMENTS_PER_CHUNK, int(size_bytes / mean * 1.1) + 16)

    def sample_chunk(self, rng: np.random.Generator, documents: int) -> tuple[bytes, np.ndarray]:
        """``documents`` sampled documents as bytes, and the cumulative byte count at each document's end."""
        lengths = self.document_lengths[rng.integers(0, len(self.document_lengths), size=documents)]
        ids = self.occurrences[rng.integers(0, len(self.occurrences), size=int(lengths.sum()), dtype=np.int64)]
        last = np.cumsum(lengths) - 1
        ids[last] += self.words
        ends = np.cumsum(self.width[ids])[last]
        return b"".join(self.pieces[ids].tolist()), ends


@functools.lru_cache(maxsize=2)
def _word_table(data: Path) -> WordTable:
    from bench.biomedical_corpus import documents

    return WordTable(documents(data))


def _default_data() -> Path:
    from bench.common import data_dir

    return data_dir()


def write_synthetic_corpus(out: Path, size_bytes: int, *, seed: int = 0, data: Path | None = None) -> dict:
    """Write a sampled corpus of at least ``size_bytes`` bytes (whole documents) to ``out``; say what it holds.

    Returns the path, bytes, documents, words, seed, the real source's size and distinct words,
    and the seconds it took. The same ``seed`` and data give the same bytes.
    """
    if size_bytes <= 0:
        raise ValueError(f"size_bytes must be positive, not {size_bytes}")
    started = time.perf_counter()
    table = _word_table(Path(data) if data is not None else _default_data())
    rng = np.random.Generator(np.random.PCG64(seed))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = count = words = 0
    with out.open("wb") as handle:
        while written < size_bytes:
            chunk, ends = table.sample_chunk(rng, table.documents_for(size_bytes - written))
            keep = min(int(np.searchsorted(ends, size_bytes - written, side="left")) + 1, len(ends))
            handle.write(chunk[: int(ends[keep - 1])])
            written += int(ends[keep - 1])
            count += keep
            words += chunk[: int(ends[keep - 1])].count(b" ") + keep
    return {
        "path": str(out),
        "bytes": written,
        "documents": count,
        "words": words,
        "seed": seed,
        "source_bytes": table.source_bytes,
        "source_distinct_words": table.words,
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.synthetic_corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--bytes", type=int, default=1 << 30, help="the size to reach (default: 1 GiB)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=None, help="the official datasets (default: BIOLM_DATA_DIR)")
    args = parser.parse_args(argv)
    print(json.dumps(write_synthetic_corpus(args.out, args.bytes, seed=args.seed, data=args.data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
