"""A corpus of any size whose distinct words keep growing as real PubMed text's do (Heaps' law).

:mod:`bench.synthetic_corpus` samples words from the official text's unigram table, so a sampled
gigabyte has no word type the real text lacks: its distinct-word count stops growing at the real
text's size, and a vocabulary learner's word table stays that small. Real biomedical text keeps
growing (Heaps' law, V(n) = K n^beta for n running words), so at PubMed's scale (21 GB, Gu et al.
2021) the word table, and with it the cost of counting and merging, is far larger. This corpus
reproduces that growth:

* **the fit**: the official datasets' real text (:func:`real_documents`: the training and dev text
  of :mod:`bench.biomedical_corpus` plus ChemProt's training and development abstracts, exact
  duplicate documents dropped, since BC5-chem and BC5-disease share their sentences) is put in a
  fixed random order and V(n) is measured on its whitespace words; K and beta come from least
  squares on log V against log n (:func:`fit_heaps`), over n from ``MIN_FIT_WORDS`` up;
* **how many words are new**: the n-th running word of the corpus is a word never seen before
  exactly when ``min(n, floor(K n^beta))`` goes up at n, so V(n) follows the fitted curve by
  construction, far past the real text's size;
* **which old word repeats**: otherwise a rank below the current V(n) is drawn from a
  Zipf-Mandelbrot law, P(r) proportional to (r + q)^-s, truncated at V(n) (inverse CDF of its
  continuous form), with s and q fitted by least squares on the real rank-frequency curve;
* **what the words look like**: rank r below the real distinct-word count is the real word of
  that frequency rank (so the frequent words, their punctuation and case are real); above it, a
  new form is a real word's first ``PREFIX_CHARACTERS`` letters followed by another real word's
  tail (``acet`` + ``ylcholinesterase``), the pairs visited in a fixed pseudo-random order
  (i * stride mod M) and any form equal to a real word skipped; a fixed-length prefix makes every
  pair a different string, so each new form really is new, and WordPiece or BPE merges see real
  character sequences;
* **documents**: each takes the length, in words, of a real document drawn uniformly; words are
  joined by one space, documents end with a newline, and the file stops at the first whole
  document that brings it to ``size_bytes`` or more.

Generation is seeded (``numpy.random.Generator(PCG64(seed))``); the same seed, data and numpy give
a byte-identical file (floating-point powers decide the new-word positions and the Zipf draws,
so another libm could move a boundary). What it does not keep: word order (every n-gram above 1
is random) and the frequency of a word by its spelling beyond the real ranks.
``python -m bench.heaps_corpus OUT --bytes N [--seed S] [--data DIR]``; ``--fit`` prints the fit only.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

MIN_FIT_WORDS = 10_000
FIT_POINTS = 40
ORDER_SEED = 20211  # the fixed order in which V(n) is measured on the real text (not the corpus seed)
PREFIX_CHARACTERS = 4
DOCUMENTS_PER_CHUNK = 10_000
FORMS_PER_BATCH = 1 << 18


@dataclass(frozen=True)
class HeapsFit:
    """Heaps' law fitted on real text, and the Zipf-Mandelbrot law of its word frequencies."""

    K: float
    beta: float
    s: float
    q: float
    words: int  # running words of the real text
    distinct_words: int
    source_bytes: int
    documents: int
    r2: float  # of the log-log fit
    max_relative_error: float  # of the fit against the measured V(n), over the fitted range

    def expected(self, n: np.ndarray | int) -> np.ndarray:
        """The fitted distinct-word count after ``n`` running words (never more than ``n``)."""
        n = np.asarray(n, dtype=np.float64)
        return np.minimum(n, np.floor(self.K * n**self.beta))

    def to_dict(self) -> dict:
        return asdict(self)


def chemprot_abstracts(data: Path) -> Iterator[str]:
    """ChemProt's training and development abstracts, title then text (real PubMed abstracts; no test split)."""
    for split in ("training", "development"):
        path = data / "ChemProt" / "original" / f"chemprot_{split}" / f"chemprot_{split}_abstracts.tsv"
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 3:
                yield f"{parts[1]} {parts[2]}"


def real_documents(data: Path | None = None) -> list[str]:
    """The largest real biomedical text of the official files' training and dev splits, duplicates dropped."""
    from bench.biomedical_corpus import data_folder, documents

    data = data_folder(data)
    seen: set[str] = set()
    out = []
    for document in (*documents(data), *(" ".join(a.split()) for a in chemprot_abstracts(data))):
        if document and document not in seen:
            seen.add(document)
            out.append(document)
    return out


def vocabulary_growth(documents: Sequence[str], *, seed: int = ORDER_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The running words n and distinct words V(n) at every word of ``documents`` in a seeded random order."""
    order = np.random.Generator(np.random.PCG64(seed)).permutation(len(documents))
    seen: set[str] = set()
    new = []
    for index in order.tolist():
        for word in documents[index].split():
            if word in seen:
                new.append(False)
            else:
                seen.add(word)
                new.append(True)
    distinct = np.cumsum(np.asarray(new, dtype=np.int64))
    return np.arange(1, len(distinct) + 1, dtype=np.int64), distinct


def fit_heaps(documents: Sequence[str], *, seed: int = ORDER_SEED) -> HeapsFit:
    """K and beta by least squares on log V(n) against log n; s and q on the real rank-frequency curve."""
    n, distinct = vocabulary_growth(documents, seed=seed)
    if len(n) < 2 * MIN_FIT_WORDS:
        raise ValueError(f"Heaps' fit needs at least {2 * MIN_FIT_WORDS} running words, not {len(n)}")
    at = np.unique(np.geomspace(MIN_FIT_WORDS, len(n), FIT_POINTS).astype(np.int64)) - 1
    x, y = np.log(n[at].astype(np.float64)), np.log(distinct[at].astype(np.float64))
    beta, log_k = np.polyfit(x, y, 1)
    predicted = log_k + beta * x
    r2 = 1 - float(np.sum((y - predicted) ** 2) / np.sum((y - y.mean()) ** 2))
    relative = np.abs(np.exp(predicted) / distinct[at] - 1)
    counts = Counter(word for document in documents for word in document.split())
    s, q = fit_zipf_mandelbrot(np.sort(np.fromiter(counts.values(), dtype=np.float64))[::-1])
    return HeapsFit(
        K=float(math.exp(log_k)),
        beta=float(beta),
        s=s,
        q=q,
        words=len(n),
        distinct_words=int(distinct[-1]),
        source_bytes=sum(len(d.encode("utf-8")) + 1 for d in documents),
        documents=len(documents),
        r2=round(r2, 6),
        max_relative_error=round(float(relative.max()), 4),
    )


def fit_zipf_mandelbrot(frequencies: np.ndarray) -> tuple[float, float]:
    """s and q of f(r) ~ (r + 0.5 + q)^-s (r from 0) by least squares at log-spaced ranks, q from a grid."""
    ranks = np.unique(np.geomspace(1, len(frequencies), 200).astype(np.int64)) - 1
    y = np.log(frequencies[ranks])
    best = None
    for q in (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0):
        x = np.log(ranks + 0.5 + q)
        slope, intercept = np.polyfit(x, y, 1)
        error = float(np.sum((y - intercept - slope * x) ** 2))
        if best is None or error < best[0]:
            best = (error, -float(slope), q)
    return round(best[1], 6), best[2]


class FormTable:
    """Word forms by rank: the real words by frequency, then new forms made of real prefixes and tails."""

    def __init__(self, documents: Iterable[str], seed: int) -> None:
        counts = Counter(word for document in documents for word in document.split())
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        self.real = {word for word, _ in ordered}
        words = [word for word, _ in ordered]
        long = [w for w in words if len(w) >= PREFIX_CHARACTERS + 3]
        self.prefixes = sorted({w[:PREFIX_CHARACTERS] for w in long if w[:PREFIX_CHARACTERS].isalpha()})
        self.tails = sorted({w[PREFIX_CHARACTERS:] for w in long})
        self.space = len(self.prefixes) * len(self.tails)
        stride = int(self.space * 0.6180339887) | 1
        while math.gcd(stride, self.space) != 1:
            stride += 2
        self.stride = stride
        self.offset = int(np.random.Generator(np.random.PCG64(seed)).integers(0, self.space))
        self.visited = 0  # pairs tried so far
        self.pending: list[bytes] = []  # forms made but not yet given a rank
        self.forms: list[bytes] = [w.encode("utf-8") for w in words]
        self.widths = np.fromiter((len(b) for b in self.forms), dtype=np.int64, count=len(self.forms))
        self.real_count = len(words)

    def extend_to(self, count: int) -> None:
        """Make new forms until ``count`` ranks have one."""
        if count > self.real_count + self.space:
            raise ValueError(f"{count} distinct words exceed this table's {self.real_count + self.space}")
        need = count - len(self.forms)
        made, prefixes, tails = self.pending, self.prefixes, self.tails
        while len(made) < need:
            j = np.arange(self.visited, self.visited + FORMS_PER_BATCH, dtype=np.int64)
            self.visited += FORMS_PER_BATCH
            a, b = np.divmod((j * self.stride + self.offset) % self.space, len(tails))
            for pa, tb in zip(a.tolist(), b.tolist(), strict=True):
                form = prefixes[pa] + tails[tb]
                if form not in self.real:
                    made.append(form.encode("utf-8"))
        if need > 0:
            self.forms.extend(made[:need])
            widths = np.fromiter((len(f) for f in made[:need]), dtype=np.int64, count=need)
            self.widths = np.concatenate([self.widths, widths])
            self.pending = made[need:]


def zipf_ranks(u: np.ndarray, below: np.ndarray, s: float, q: float) -> np.ndarray:
    """Ranks in [0, below) by the inverse CDF of the density (x + q)^-s truncated at ``below`` (u uniform in [0, 1))."""
    q = max(q, 0.5)
    below = below.astype(np.float64)
    if abs(s - 1) < 1e-9:
        x = q * np.exp(u * np.log((below + q) / q)) - q
    else:
        top = q ** (1 - s) - (below + q) ** (1 - s)
        x = (q ** (1 - s) - u * top) ** (1 / (1 - s)) - q
    return np.minimum(np.floor(x).astype(np.int64), below.astype(np.int64) - 1)


class HeapsCorpus:
    """The generator: feed it chunks of documents; it keeps the running word count and the forms."""

    def __init__(self, documents: Sequence[str], fit: HeapsFit, seed: int = 0) -> None:
        self.fit = fit
        self.table = FormTable(documents, seed)
        self.lengths = np.asarray([len(d.split()) for d in documents if d.split()], dtype=np.int64)
        self.rng = np.random.Generator(np.random.PCG64(seed))
        self.words = 0  # running words so far
        self.distinct = 0

    def chunk(self, documents: int) -> tuple[bytes, np.ndarray]:
        """``documents`` more documents as bytes, and the cumulative byte count at each document's end."""
        lengths = self.lengths[self.rng.integers(0, len(self.lengths), size=documents)]
        total = int(lengths.sum())
        n = np.arange(self.words + 1, self.words + total + 1, dtype=np.float64)
        target = self.fit.expected(n).astype(np.int64)
        target = np.maximum(target, 1)
        target = np.maximum.accumulate(np.maximum(target, self.distinct))
        previous = np.concatenate([[self.distinct], target[:-1]])
        new = target > previous
        if np.any(target - previous > 1):
            raise AssertionError("the Heaps' schedule added two words at once")
        ids = zipf_ranks(self.rng.random(total), np.maximum(previous, 1), self.fit.s, self.fit.q)
        ids[new] = target[new] - 1
        self.table.extend_to(int(target[-1]))
        self.words += total
        self.distinct = int(target[-1])
        self.last_lengths = lengths
        forms = self.table.forms
        text = bytearray(b" ".join([forms[i] for i in ids.tolist()]))
        last = np.cumsum(lengths) - 1
        ends = np.cumsum(self.table.widths[ids] + 1)[last]  # one past each document's last byte, its separator
        np.frombuffer(text, dtype=np.uint8)[ends[:-1] - 1] = 10  # the space after a document's last word
        text.extend(b"\n")
        return bytes(text), ends


@functools.lru_cache(maxsize=2)
def _real(data: Path) -> tuple[tuple[str, ...], HeapsFit]:
    documents = tuple(real_documents(data))
    return documents, fit_heaps(documents)


def _default_data() -> Path:
    from bench.common import data_dir

    return data_dir()


def heaps_fit(data: Path | None = None) -> HeapsFit:
    """The fit on the official real text (cached per data folder)."""
    return _real(Path(data) if data is not None else _default_data())[1]


def write_heaps_corpus(
    out: Path,
    size_bytes: int,
    *,
    seed: int = 0,
    data: Path | None = None,
    documents: Sequence[str] | None = None,
    fit: HeapsFit | None = None,
) -> dict:
    """Write at least ``size_bytes`` bytes (whole documents) of Heaps'-law text to ``out``; say what it holds.

    ``documents`` and ``fit`` default to the official real text and its fit. Returns the path,
    bytes, documents, running and distinct (whitespace) words, the fit, the seed and the seconds it took.
    """
    if size_bytes <= 0:
        raise ValueError(f"size_bytes must be positive, not {size_bytes}")
    started = time.perf_counter()
    if documents is None:
        documents, real_fit = _real(Path(data) if data is not None else _default_data())
        fit = fit or real_fit
    elif fit is None:
        fit = fit_heaps(documents)
    corpus = HeapsCorpus(documents, fit, seed)
    mean = sum(len(d.encode("utf-8")) + 1 for d in documents) / len(corpus.lengths)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = count = words = 0
    with out.open("wb") as handle:
        while written < size_bytes:
            chunk, ends = corpus.chunk(min(DOCUMENTS_PER_CHUNK, int((size_bytes - written) / mean * 1.05) + 4))
            keep = min(int(np.searchsorted(ends, size_bytes - written, side="left")) + 1, len(ends))
            handle.write(chunk[: int(ends[keep - 1])])
            written += int(ends[keep - 1])
            count += keep
            words += int(corpus.last_lengths[:keep].sum())
            if keep < len(ends):
                break
    return {
        "path": str(out),
        "bytes": written,
        "documents": count,
        "words": words,
        "distinct_words": int(fit.expected(words)),  # by construction (the tests count them)
        "seed": seed,
        "fit": fit.to_dict(),
        "seconds": round(time.perf_counter() - started, 2),
    }


def distinct_words_at(path: Path, sizes: Sequence[int]) -> dict[int, int]:
    """V(n) of a corpus file at each running-word count in ``sizes`` (whitespace words, in file order)."""
    wanted = sorted(set(sizes))
    seen: set[bytes] = set()
    out: dict[int, int] = {}
    n = 0
    with Path(path).open("rb") as handle:
        for line in handle:
            for word in line.split():
                n += 1
                seen.add(word)
                while wanted and n == wanted[0]:
                    out[wanted.pop(0)] = len(seen)
            if not wanted:
                break
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.heaps_corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--bytes", type=int, default=1 << 30, help="the size to reach (default: 1 GiB)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=None, help="the official datasets (default: BIOLM_DATA_DIR)")
    parser.add_argument("--fit", action="store_true", help="print the Heaps' fit on the real text and stop")
    args = parser.parse_args(argv)
    if args.fit or args.out is None:
        print(json.dumps(heaps_fit(args.data).to_dict()))
        return 0
    print(json.dumps(write_heaps_corpus(args.out, args.bytes, seed=args.seed, data=args.data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
