"""Ranks that claim no more precision than the data has, stored when results change.

A model's rank is 1 + the number of models significantly better than it (Chiang et al. 2024's
LMArena rule, made paired): two reproduced models are compared on the same bootstrap resamples
of each dataset's test examples (:mod:`biolm.significance`), a reported row (no predictions) by
its point score. Ranks are computed over public models only, so a private model can neither
push a public one down nor be inferred from a gap; its owner sees where it would stand among
the public ones. A quick preview's score (one grid point, one seed) is never ranked and never
compared: the full-protocol ranks are exactly what they would be without it. Pages only read
what this stores.
"""

from __future__ import annotations

import time

from django.db import transaction
from django.db.models import Exists, OuterRef

from biolm.significance import CONFIDENCE, RESAMPLES, rank, rank_among
from leaderboard.models import Ranking, Score, ScoreResamples
from leaderboard.resamples import decode
from registry.models import Benchmark, LanguageModel

RANK_FIELDS = ["rank", "rank_tied", "rank_basis", "rank_interval"]


@transaction.atomic
def rank_benchmark(benchmark: Benchmark) -> Ranking:
    """Recompute and store every rank on ``benchmark`` from the stored scores and bootstrap vectors."""
    started = time.perf_counter()
    # Public: what the privacy rule shows an anonymous visitor (visible_to(None)), asked in the same query.
    public_model = LanguageModel.objects.visible_to(None).filter(pk=OuterRef("language_model_id"))
    scores = list(
        Score.objects.filter(benchmark=benchmark)
        .select_related("language_model")
        # visibility too: a model loaded without it fetches it alone (the post_init signal that remembers it
        # for leaderboard.signals reads it), one query per model, most of a 5,000-model re-rank's time
        .only(
            "pk",
            "score",
            "missing",
            "preview",
            "language_model__slug",
            "language_model__name",
            "language_model__visibility",
            *RANK_FIELDS,
        )
        .annotate(is_public=Exists(public_model))
        .ranked()
    )
    vectors = {
        row["score_id"]: decode(row["values"])
        for row in ScoreResamples.objects.filter(score__benchmark=benchmark).values("score_id", "values")
    }
    before = {s.pk: tuple(getattr(s, name) for name in RANK_FIELDS) for s in scores}
    # A preview skipped the search and the seeds its rivals ran: it is neither ranked nor a rival.
    complete = [s for s in scores if s.score is not None and not s.missing and not s.preview]
    public = [s for s in complete if s.is_public]
    points = [s.score for s in public]
    public_vectors = [vectors.get(s.pk) for s in public]
    ranking = rank(points, public_vectors)
    for index, score in enumerate(public):
        score.rank = ranking.ranks[index]
        score.rank_tied = ranking.tied[index]
        score.rank_basis = "bootstrap" if public_vectors[index] is not None else "point"
        interval = ranking.intervals[index]
        above = public[index - 1].language_model if index else None
        score.rank_interval = (
            {"model": above.slug, "name": above.name, "low": interval[0], "high": interval[1]}
            if interval is not None and above is not None
            else None
        )
    for score in complete:
        if score.is_public:
            continue
        own = vectors.get(score.pk)
        score.rank, interval = rank_among(points, public_vectors, score.score, own)
        score.rank_tied = False
        score.rank_basis = "bootstrap" if own is not None else "point"
        score.rank_interval = None if interval is None else {"low": interval[0], "high": interval[1]}
    complete_pks = {s.pk for s in complete}
    for score in scores:
        if score.pk not in complete_pks:
            score.rank, score.rank_tied, score.rank_basis, score.rank_interval = None, False, "", None
    # Only the rows whose rank changed: one new result moves few ranks, and bulk_update's CASE per
    # row and field is most of a 1,000-model re-rank's time.
    changed = [s for s in scores if tuple(getattr(s, name) for name in RANK_FIELDS) != before[s.pk]]
    Score.objects.bulk_update(changed, RANK_FIELDS, batch_size=500)
    stored, _ = Ranking.objects.update_or_create(
        benchmark=benchmark,
        defaults={
            "aggregation_version": benchmark.aggregation_version,
            "resamples": RESAMPLES,
            "confidence": CONFIDENCE,
            "models_ranked": len(public),
            "models_tested": sum(v is not None for v in public_vectors),
            "seconds": time.perf_counter() - started,
        },
    )
    return stored
