"""Citable snapshots: a leaderboard frozen on a date, with a permalink and BibTeX.

A paper that cites "the BLURB leaderboard" needs the numbers it saw to stay where the citation
points, whatever results arrive later (HELM versions its releases for the same reason). A
snapshot stores the public board's JSON as the API gave it, so a private model never enters one,
and :class:`~leaderboard.models.Snapshot` refuses to be rewritten. Quick previews (one grid point,
one seed, never ranked) are left out too: a citation points at the numbers of the full protocol,
and a preview's are replaced as soon as its full run is recorded.
"""

from __future__ import annotations

import datetime

from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.urls import reverse

from leaderboard.models import Score, Snapshot
from leaderboard.tables import leaderboard_for
from registry.models import Benchmark, LanguageModel


class SnapshotExists(ValueError):
    """A benchmark has one snapshot per day; the earlier one stands."""


def take_snapshot(benchmark: Benchmark, date: datetime.date | None = None, by: str = "") -> Snapshot:
    """Freeze the public leaderboard of ``benchmark`` as of ``date`` (today by default)."""
    date = date or datetime.date.today()
    previews = Score.objects.filter(benchmark=benchmark, preview=True).values("language_model")
    board = leaderboard_for(benchmark, LanguageModel.objects.public().exclude(pk__in=previews)).as_json()
    try:
        with transaction.atomic():
            return Snapshot.objects.create(
                benchmark=benchmark,
                date=date,
                aggregation_version=benchmark.aggregation_version,
                board=board,
                created_by=by,
            )
    except IntegrityError:
        raise SnapshotExists(
            f"{benchmark.slug} already has a snapshot dated {date.isoformat()}; snapshots are immutable"
        ) from None


def permalink(snapshot: Snapshot, request: HttpRequest | None = None) -> str:
    path = reverse("leaderboard:snapshot", args=[snapshot.benchmark.slug, snapshot.date.isoformat()])
    return request.build_absolute_uri(path) if request is not None else path


def _escape(text: str) -> str:
    """BibTeX's special characters in a field value."""
    for char in "\\{}":
        text = text.replace(char, "\\" + char)
    for char in "&%$#_":
        text = text.replace(char, "\\" + char)
    return text


def bibtex(snapshot: Snapshot, request: HttpRequest | None = None) -> str:
    """A @misc entry for the snapshot; the benchmark's own paper is to be cited beside it."""
    benchmark = snapshot.benchmark
    date = snapshot.date
    key = f"biolm-{benchmark.slug}-{date.isoformat()}"
    fields = {
        "title": f"{{biolm}} leaderboard: {benchmark.name} (snapshot of {date.isoformat()})",
        "author": "{biolm contributors}",
        "year": str(date.year),
        "month": date.strftime("%b").lower(),
        "howpublished": f"\\url{{{permalink(snapshot, request)}}}",
        "note": (
            f"Aggregation version {snapshot.aggregation_version}; "
            f"{len(snapshot.board.get('rows', []))} models; ranks by a paired bootstrap over test examples"
        ),
    }
    lines = [f"@misc{{{key},"]
    for name, value in fields.items():
        text = value if name in ("title", "author", "howpublished") else _escape(value)
        lines.append(f"  {name} = {{{text}}},")
    lines.append("}")
    return "\n".join(lines) + "\n"
