"""Bootstrap vectors in the database: a result's per-resample values, a score's per-resample benchmark scores.

Vectors are stored as raw little-endian float64 (8 KB for 1,000 resamples): a JSON list would be
three times the size and slower to parse, and only the ranking job and the compare page read them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from biolm.significance import aggregation_weights, benchmark_vector
from biolm.specs import BenchmarkSpec
from leaderboard.models import Result, ResultResamples, Score, ScoreResamples

_DTYPE = np.dtype("<f8")


def encode(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=_DTYPE).tobytes()


def decode(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype=_DTYPE)


def store_result_resamples(result: Result, dataset_key: str, vector: np.ndarray) -> None:
    ResultResamples.objects.update_or_create(
        result=result, defaults={"dataset_key": dataset_key, "values": encode(vector)}
    )


def store_score_resamples(spec: BenchmarkSpec, score: Score, results: Mapping[str, Result]) -> bool:
    """Store the score's bootstrap vector when every entry it needs has one; otherwise drop any old one.

    A model with one entry lacking predictions (a number typed into the admin, a reported row) has
    no vector: the ranking then compares it by its point score, and says so.
    """
    weights = aggregation_weights(spec)
    needed = [key for key, weight in weights.items() if weight]
    stored = {
        row.result_id: row.values for row in ResultResamples.objects.filter(result__in=[r.pk for r in results.values()])
    }
    vectors = {}
    for key in needed:
        result = results.get(key)
        if result is None or result.pk not in stored:
            ScoreResamples.objects.filter(score=score).delete()
            return False
        vectors[key] = decode(stored[result.pk])
    lengths = {len(v) for v in vectors.values()}
    if len(lengths) != 1:  # resampled with different counts (a changed RESAMPLES): not comparable
        ScoreResamples.objects.filter(score=score).delete()
        return False
    vector = benchmark_vector({key: weights[key] for key in needed}, vectors)
    ScoreResamples.objects.update_or_create(score=score, defaults={"values": encode(vector)})
    return True
