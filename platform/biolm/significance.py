"""Honest ranks: which models a benchmark can tell apart, by a paired bootstrap over test examples.

A leaderboard that orders models by a point score claims differences the test sets cannot
support: a 0.1-point gap on a 500-example dataset is noise. Chiang et al. 2024 (LMArena) rank a
model 1 + the number of models that are significantly better than it, so models the data cannot
separate share a rank. Here "significantly better" comes from a *paired* bootstrap: every model
is scored on the same resamples of each dataset's test examples (:func:`resample_indices`), so
the per-resample difference between two models removes the variance both share (an easy resample
is easy for both), and far smaller gaps are detectable than with independent intervals.

Everything is plain numpy and works on vectors, one value per resample: a dataset's metric on
each resample (computed by the engine, ``workers.engine.bootstrap``), a benchmark's primary score
on each resample (:func:`benchmark_vector`, linear in the entries). A model without a vector
(a number reported in a paper, a score typed in without predictions) is compared by its point
score, which the ranking records so pages can say so.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from biolm.aggregation import aggregate
from biolm.specs import BenchmarkSpec

# Fixed, not configurable: every model on a dataset must be scored on the same resamples for the
# differences to be paired, and a recompute (a new model, a changed aggregation) must give the same
# numbers as the stored ones. Changing any of these invalidates every stored vector.
RESAMPLES = 1000
CONFIDENCE = 0.95
BASE_SEED = 20211

# Scratch memory one thread may use for the pairwise comparisons (a boolean block of rows x rows x
# resamples): 32 rows judged against 500 candidates at a time at 1,000 resamples.
_BLOCK_BYTES = 16 * 2**20
_LINEARITY_TOLERANCE = 1e-9


def resample_indices(dataset_key: str, n_examples: int, resamples: int = RESAMPLES) -> np.ndarray:
    """The shared bootstrap resamples of one dataset's test examples: ``(resamples, n_examples)`` int64.

    Row ``r`` lists the example indices (drawn uniformly with replacement) that resample ``r``
    scores. The rule, so that an independent implementation reproduces it exactly::

        digest = hashlib.sha256(f"{dataset_key}\\n{n_examples}".encode("utf-8")).digest()
        seed = np.random.SeedSequence([BASE_SEED, int.from_bytes(digest, "big")])
        np.random.default_rng(seed).integers(0, n_examples, size=(resamples, n_examples), dtype=np.int64)

    ``n_examples`` is part of the seed so that a dataset re-imported with other test examples
    gets other resamples instead of silently reusing indices meant for a different split.
    """
    if isinstance(n_examples, bool) or not isinstance(n_examples, int | np.integer) or n_examples < 1:
        raise ValueError(f"dataset {dataset_key!r}: cannot resample {n_examples!r} test examples")
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer) or resamples < 1:
        raise ValueError(f"the number of resamples must be a positive whole number, not {resamples!r}")
    digest = hashlib.sha256(f"{dataset_key}\n{int(n_examples)}".encode()).digest()
    seed = np.random.SeedSequence([BASE_SEED, int.from_bytes(digest, "big")])
    return np.random.default_rng(seed).integers(0, n_examples, size=(resamples, n_examples), dtype=np.int64)


def aggregation_weights(spec: BenchmarkSpec) -> dict[str, float]:
    """``{entry key: weight}`` such that the benchmark's primary score is ``sum(weight * entry value)``.

    Every aggregation a benchmark can declare (means, means of group means, weighted means of
    groups) is linear in the entries, so a benchmark's score on each resample is the weighted sum
    of its entries' resampled values, and the engine never needs to know the aggregation. The
    weights are read off :func:`biolm.aggregation.aggregate` itself (basis vectors), so they can
    never drift from what the leaderboard shows; a random check raises ValueError, naming the
    benchmark, if the aggregation is not linear after all. Entries outside the primary weigh 0.
    """
    keys = spec.entry_keys()
    weights: dict[str, float] = {}
    for key in keys:
        score = aggregate(spec, {k: 1.0 if k == key else 0.0 for k in keys}).score
        if score is None:
            raise ValueError(f"benchmark {spec.slug!r}: its primary score is undefined with every entry present")
        weights[key] = float(score)
    rng = np.random.default_rng(BASE_SEED)
    checks = [np.zeros(len(keys)), *rng.uniform(0.0, 100.0, size=(3, len(keys)))]
    for values in checks:
        expected = aggregate(spec, dict(zip(keys, map(float, values), strict=True))).score
        linear = sum(weights[k] * float(v) for k, v in zip(keys, values, strict=True))
        if expected is None or abs(expected - linear) > _LINEARITY_TOLERANCE:
            raise ValueError(
                f"benchmark {spec.slug!r}: its primary score is not a weighted sum of its entries "
                f"({expected!r} where the weights give {linear!r}), so it cannot be bootstrapped entry by entry"
            )
    return weights


def benchmark_vector(weights: Mapping[str, float], entry_vectors: Mapping[str, np.ndarray]) -> np.ndarray:
    """A model's primary score on each resample: the weighted sum of its entries' resampled values.

    Entries of weight 0 need no vector. A resample where an entry is undefined (NaN) leaves the
    benchmark undefined on it too; :func:`rank` counts such a resample as evidence for no one.
    """
    needed = [key for key, weight in weights.items() if weight]
    missing = [key for key in needed if key not in entry_vectors]
    if missing:
        raise ValueError(f"no resampled values for {', '.join(sorted(missing))}")
    if not needed:
        raise ValueError("every weight is zero: the benchmark's score depends on no entry")
    vectors = [np.asarray(entry_vectors[key], dtype=np.float64) for key in needed]
    if len({v.shape for v in vectors}) != 1 or vectors[0].ndim != 1:
        raise ValueError(f"the entries' vectors differ in shape: {sorted({v.shape for v in vectors})}")
    total = np.zeros_like(vectors[0])
    for key, vector in zip(needed, vectors, strict=True):
        total += float(weights[key]) * vector
    return total


@dataclass(frozen=True)
class Ranking:
    """Ranks of rows given best point score first, and what a page needs to explain each one.

    ``ranks[i]`` is 1 + ``better_counts[i]``, the number of rows significantly better than row
    ``i``; ``worse_counts[i]`` the number it is significantly better than. ``tied[i]``: row ``i``
    has the same rank as the row directly above it. ``intervals[i]`` is the central
    ``confidence`` interval (2.5th and 97.5th percentiles at 95%) of the paired difference
    "row above minus row ``i``", and ``above_shares[i]`` the share of resamples in which the row
    above scored higher; both None for the first row and where either row has no vector.
    Ranks need not increase down the rows: pairs are judged one by one, not along the order.
    """

    ranks: list[int]
    tied: list[bool]
    intervals: list[tuple[float, float] | None]
    better_counts: list[int]
    worse_counts: list[int]
    above_shares: list[float | None]
    confidence: float = CONFIDENCE


class Placement(NamedTuple):
    """Where a model outside the ranked set would stand (:func:`rank_among`)."""

    rank: int
    interval: tuple[float, float] | None  # difference "row above minus the model", as in Ranking


def rank(points: Sequence[float], vectors: Sequence[np.ndarray | None], confidence: float = CONFIDENCE) -> Ranking:
    """Rank rows given in order of descending point score.

    Row ``j`` is significantly better than row ``i`` when both have vectors and ``vectors[j] -
    vectors[i] > 0`` on at least ``confidence`` of the resamples (a resample where either is NaN
    counts against), or, when either has no vector, when ``points[j] > points[i]``. Vectorised
    and memory-bounded; pairs whose order bounds settle are never counted resample by resample
    (:func:`_significantly_better`), so 5,000 models x 1,000 resamples take seconds, not minutes.
    """
    if len(points) != len(vectors):
        raise ValueError(f"{len(points)} point scores but {len(vectors)} vectors")
    n = len(points)
    if n == 0:
        return Ranking([], [], [], [], [], [], confidence)
    _check_confidence(confidence)
    score = np.asarray(points, dtype=np.float64)
    has = np.array([v is not None for v in vectors], dtype=bool)
    better = score[:, None] > score[None, :]  # better[j, i]: row j beats row i on points
    tested = np.flatnonzero(has)
    if tested.size:
        matrix = _stack([vectors[i] for i in tested])
        better[np.ix_(tested, tested)] = _significantly_better(matrix, _needed(confidence, matrix.shape[1]))
    np.fill_diagonal(better, False)
    better_counts = better.sum(axis=0)
    worse_counts = better.sum(axis=1)
    ranks = [int(c) + 1 for c in better_counts]
    intervals, shares = _neighbour_intervals(vectors, confidence)
    return Ranking(
        ranks=ranks,
        tied=[False, *(ranks[i] == ranks[i - 1] for i in range(1, n))],
        intervals=intervals,
        better_counts=[int(c) for c in better_counts],
        worse_counts=[int(c) for c in worse_counts],
        above_shares=shares,
        confidence=confidence,
    )


def rank_among(
    points: Sequence[float],
    vectors: Sequence[np.ndarray | None],
    candidate_point: float,
    candidate_vector: np.ndarray | None,
    confidence: float = CONFIDENCE,
) -> Placement:
    """The rank a model outside the ranked rows would have among them, and its interval to the row above.

    For a private model seen by its owner: it is judged against every ranked row by the rule of
    :func:`rank`, but the ranked rows are not judged against it, so their ranks stay what
    :func:`rank` gave them. The row above is the last one whose point score is at least
    ``candidate_point`` (a tie places the candidate below the ranked rows).
    """
    if len(points) != len(vectors):
        raise ValueError(f"{len(points)} point scores but {len(vectors)} vectors")
    _check_confidence(confidence)
    own = None if candidate_vector is None else np.asarray(candidate_vector, dtype=np.float64)
    better = 0
    for point, vector in zip(points, vectors, strict=True):
        if own is None or vector is None:
            better += float(point) > float(candidate_point)
    tested = [i for i, v in enumerate(vectors) if v is not None]
    if own is not None and tested:
        matrix = _stack([vectors[i] for i in tested])
        if matrix.shape[1:] != own.shape:
            raise ValueError(f"the candidate's vector has shape {own.shape}, the ranked rows' {matrix.shape[1:]}")
        wins = np.count_nonzero(matrix > own[None, :], axis=1)
        better += int(np.count_nonzero(wins >= _needed(confidence, own.size)))
    above = [i for i, point in enumerate(points) if float(point) >= float(candidate_point)]
    interval = None
    if above and own is not None and vectors[above[-1]] is not None:
        interval = _interval(np.asarray(vectors[above[-1]], dtype=np.float64) - own, confidence)
    return Placement(better + 1, interval)


def difference(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> dict:
    """The paired difference ``a - b`` on one dataset (or benchmark), for the compare page.

    ``mean``, ``low`` and ``high`` (the central ``confidence`` interval) are over the resamples
    where both are defined, None if there are none; ``share_positive`` (``share_negative``) is the
    share of all resamples where ``a`` scores higher (lower), undefined resamples counting for
    neither. ``significant`` says either share reaches ``confidence``: the sign of ``mean`` then
    says which model is better, by the same rule :func:`rank` uses.
    """
    _check_confidence(confidence)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"paired vectors must have the same length: {a.shape} and {b.shape}")
    diff = a - b
    defined = diff[np.isfinite(diff)]
    needed = _needed(confidence, diff.size)
    positive, negative = int(np.count_nonzero(diff > 0)), int(np.count_nonzero(diff < 0))
    interval = _interval(diff, confidence)
    return {
        "mean": float(defined.mean()) if defined.size else None,
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
        "share_positive": positive / diff.size,
        "share_negative": negative / diff.size,
        "significant": positive >= needed or negative >= needed,
    }


def _check_confidence(confidence: float) -> None:
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must lie between 0.5 and 1, not {confidence!r}")


def _needed(confidence: float, resamples: int) -> int:
    """Resamples one model must win for ``share >= confidence`` (0.95 x 1000 is 949.999... in floats)."""
    return math.ceil(confidence * resamples - 1e-9)


def _stack(vectors: Sequence[np.ndarray | None]) -> np.ndarray:
    arrays = [np.asarray(v, dtype=np.float64) for v in vectors]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1 or arrays[0].ndim != 1 or arrays[0].size == 0:
        raise ValueError(f"every vector must have the same number of resamples, got shapes {sorted(shapes)}")
    return np.stack(arrays)


def _significantly_better(matrix: np.ndarray, needed: int) -> np.ndarray:
    """``better[j, i]``: row ``j`` of ``matrix`` is strictly above row ``i`` on at least ``needed`` resamples.

    Exactly what counting every pair's resamples gives (NaN wins nothing), without counting most
    pairs: at 5,000 models the full count is 25 billion comparisons. Shifting every row by the same
    per-resample centre (the mean row) keeps each pair's per-resample order (subtraction rounds
    monotonically), and removes what a paired bootstrap shares, an easy resample being easy for all,
    so each row's own spread is small. Then order statistics of single rows settle most pairs
    (:func:`_order_bounds`); only the pairs they leave open, a band of neighbours around each model,
    are counted, in blocks of rows sorted by their centred mean so that each block's band is one slice.
    """
    models = matrix.shape[0]
    better, open_pairs, level = _order_bounds(matrix, needed)
    order = np.argsort(level, kind="stable")
    ordered = np.ascontiguousarray(matrix[order])
    open_ordered = open_pairs[np.ix_(order, order)]  # open_ordered[a, b]: the pair (order[a], order[b]) is open
    block = 32  # columns (rows judged) per task: their bands overlap, so one slice of candidates serves them all

    def count(start: int) -> None:
        stop = min(models, start + block)
        candidates = np.flatnonzero(open_ordered[:, start:stop].any(axis=1))
        if not candidates.size:
            return
        low, high = int(candidates[0]), int(candidates[-1]) + 1
        wins = _wins(ordered[low:high], ordered[start:stop])
        rows, columns = order[low:high], order[start:stop]
        better[np.ix_(rows, columns)] |= open_ordered[low:high, start:stop] & (wins >= needed)

    starts = range(0, models, block)
    workers = min(len(starts), os.cpu_count() or 1, 8)
    if workers <= 1:
        for start in starts:
            count(start)
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(count, starts))
    return better


def _wins(above: np.ndarray, below: np.ndarray) -> np.ndarray:
    """``wins[a, b]``: resamples where ``above[a]`` is strictly above ``below[b]``, in slices near ``_BLOCK_BYTES``."""
    wins = np.empty((above.shape[0], below.shape[0]), dtype=np.int32)
    step = max(1, _BLOCK_BYTES // max(1, below.size))
    for start in range(0, above.shape[0], step):
        compared = above[start : start + step, None, :] > below[None, :, :]
        wins[start : start + step] = compared.view(np.uint8).sum(axis=2, dtype=np.int32)
    return wins


def _order_bounds(matrix: np.ndarray, needed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs settled by single rows' order statistics: ``(better, open, level)``, the first two ``[j, i]``,
    ``level`` each row's centred mean (0 for a row with a NaN or an infinity) to sort rows into bands.

    With ``d`` the centred rows, ``top`` the ``needed``-th largest value of a row and ``bottom`` its
    ``needed``-th smallest: row ``j`` wins at least ``needed`` resamples over row ``i`` when
    ``top[j] > max(d[i])`` (those resamples alone) or ``bottom[i] < min(d[j])``; it cannot when
    ``top[j] < min(d[i])`` or ``max(d[j]) < bottom[i]`` (its wins would need ``needed`` values of its
    own at or above row ``i``'s least). Equal values after centring prove nothing, so the
    comparisons are strict; a row with a NaN or an infinity leaves all its pairs open.
    """
    resamples = matrix.shape[1]
    finite = np.isfinite(matrix).all(axis=1)
    centre = matrix[finite].mean(axis=0) if finite.any() else np.zeros(resamples)
    centred = matrix - centre
    low, high = centred.min(axis=1), centred.max(axis=1)
    parts = np.partition(centred, [needed - 1, resamples - needed], axis=1)
    bottom, top = parts[:, needed - 1], parts[:, resamples - needed]
    better = (top[:, None] > high[None, :]) | (bottom[None, :] < low[:, None])
    worse = (top[:, None] < low[None, :]) | (high[:, None] < bottom[None, :])
    both_finite = finite[:, None] & finite[None, :]
    better &= both_finite
    open_pairs = ~(better | (worse & both_finite))
    np.fill_diagonal(better, False)
    np.fill_diagonal(open_pairs, False)
    level = np.where(finite, centred.mean(axis=1), 0.0)
    return better, open_pairs, level


def _neighbour_intervals(
    vectors: Sequence[np.ndarray | None], confidence: float
) -> tuple[list[tuple[float, float] | None], list[float | None]]:
    """Each row's interval and share of wins of "the row above minus this row" (None where either has no vector).

    All rows at once: one percentile call over the stacked differences gives each row exactly what
    :func:`_interval` gives it alone (a row with an undefined resample still goes through it), and a
    call per row was most of a 5,000-model ranking's time.
    """
    n = len(vectors)
    intervals: list[tuple[float, float] | None] = [None] * n
    shares: list[float | None] = [None] * n
    rows = [i for i in range(1, n) if vectors[i - 1] is not None and vectors[i] is not None]
    if not rows:
        return intervals, shares
    diffs = _stack([vectors[i - 1] for i in rows]) - _stack([vectors[i] for i in rows])
    wins = np.count_nonzero(diffs > 0, axis=1)
    finite = np.isfinite(diffs).all(axis=1)
    tail = 100 * (1 - confidence) / 2
    bounds = np.percentile(diffs[finite], [tail, 100 - tail], axis=1) if finite.any() else np.empty((2, 0))
    at = 0
    for k, i in enumerate(rows):
        shares[i] = float(wins[k]) / diffs.shape[1]
        if finite[k]:
            intervals[i] = (float(bounds[0, at]), float(bounds[1, at]))
            at += 1
        else:
            intervals[i] = _interval(diffs[k], confidence)
    return intervals, shares


def _interval(diff: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """The central ``confidence`` percentile interval of the defined differences (numpy's linear percentiles)."""
    defined = diff[np.isfinite(diff)]
    if not defined.size:
        return None
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(defined, [tail, 100 - tail])
    return float(low), float(high)
