"""Rendered boards kept until something they show changes, so a leaderboard under load is a cache read.

A board with a thousand models takes far longer to build and render than a reader should wait,
and readers ask for the same few views far more often than results change. Each cached copy is
keyed by a version that every change a board shows moves: the ranking row (rewritten by every
rescore, :mod:`leaderboard.ranking`), the newest change to a model on the benchmark (a renamed
or newly private model) and to its snapshots, and the benchmark itself. Reading the version is
one small query; nothing is ever invalidated by hand, so nothing can be forgotten.
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.db.models import Max, OuterRef, Subquery
from django.http import HttpRequest

from leaderboard.models import Ranking, Score, Snapshot
from registry.models import Benchmark, visibility_audience

TIMEOUT_S = 600


def _newest(queryset, field: str) -> Subquery:
    return Subquery(queryset.order_by().values("benchmark").annotate(newest=Max(field)).values("newest")[:1])


def version(benchmark: Benchmark) -> str:
    """A digest of everything that can change what a board of ``benchmark`` shows."""
    here = OuterRef("pk")
    stamps = (
        Benchmark.objects.filter(pk=benchmark.pk)
        .annotate(
            ranked=Subquery(Ranking.objects.filter(benchmark=here).values("computed_at")[:1]),
            scored=_newest(Score.objects.filter(benchmark=here), "computed_at"),
            models=_newest(Score.objects.filter(benchmark=here), "language_model__updated_at"),
            frozen=_newest(Snapshot.objects.filter(benchmark=here), "created_at"),
        )
        .values_list("updated_at", "ranked", "scored", "models", "frozen")
        .first()
    )
    return hashlib.sha256(repr(stamps).encode()).hexdigest()[:24]


def audience(request: HttpRequest) -> str:
    """Who may see which rows (the privacy rule's audience): anonymous readers share one copy, staff another,
    and each signed-in user has their own."""
    return visibility_audience(getattr(request, "user", None))


def key(kind: str, benchmark: Benchmark, request: HttpRequest, query: str) -> str:
    digest = hashlib.sha256(query.encode()).hexdigest()[:24]
    return f"biolm:board:{kind}:{benchmark.slug}:{version(benchmark)}:{audience(request)}:{digest}"


def cached(kind: str, benchmark: Benchmark, request: HttpRequest, query: str, build):
    """``build()``'s value for this board, view and audience, from the cache while nothing changed."""
    name = key(kind, benchmark, request, query)
    value = cache.get(name)
    if value is None:
        value = build()
        cache.set(name, value, TIMEOUT_S)
    return value
