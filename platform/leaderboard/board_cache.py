"""Rendered boards kept until something they show changes, so a leaderboard under load is a cache read.

A board with a thousand models takes far longer to build and render than a reader should wait,
and readers ask for the same few views far more often than results change. Each cached copy is
keyed by a version that every change a board shows moves: the ranking row (rewritten by every
rescore, :mod:`leaderboard.ranking`), the newest change to any model (a renamed or newly
private one), the benchmark's newest score and snapshot, and the benchmark itself. Reading the
version is one small query, each stamp from the top of an index; nothing is ever invalidated by
hand, so nothing can be forgotten.
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest

from leaderboard.models import Ranking, Score, Snapshot
from registry.models import Benchmark, LanguageModel, visibility_audience

TIMEOUT_S = 600


def _newest(queryset, field: str) -> Subquery:
    """The newest ``field`` (a column that is never NULL) of ``queryset``, read from the end of an index on it.

    A plain descending order, so PostgreSQL scans the ascending index backwards: asking for NULLs
    last would not match the index's order and sort every row instead.
    """
    return Subquery(queryset.order_by(f"-{field}").values(field)[:1])


def version(benchmark: Benchmark) -> str:
    """A digest of everything that can change what a board of ``benchmark`` shows.

    It is read on every request, so each stamp comes from an index: at 5,000 models the join that
    took the newest change to the benchmark's own models doubled a cached answer's time (13 ms for
    a page, 19 for the API, against 6 and 7 at 1,000). The newest change to *any* model is read
    instead: a board is then rebuilt after a change to a model it does not show, which is rare,
    and costs a rebuild, never a stale board.
    """
    here = OuterRef("pk")
    stamps = (
        Benchmark.objects.filter(pk=benchmark.pk)
        .annotate(
            ranked=Subquery(Ranking.objects.filter(benchmark=here).values("computed_at")[:1]),
            scored=_newest(Score.objects.filter(benchmark=here), "computed_at"),
            models=_newest(LanguageModel.objects.all(), "updated_at"),
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
