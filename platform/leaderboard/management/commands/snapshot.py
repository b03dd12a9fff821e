"""``manage.py snapshot --benchmark SLUG``: freeze today's public leaderboard under a dated permalink."""

from __future__ import annotations

import datetime

from django.core.management.base import BaseCommand, CommandError

from leaderboard.snapshots import SnapshotExists, permalink, take_snapshot
from registry.models import Benchmark


class Command(BaseCommand):
    help = "Freeze a benchmark's public leaderboard into a dated, immutable snapshot with a permalink and BibTeX."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--benchmark", required=True, help="Benchmark slug, e.g. blurb.")
        parser.add_argument("--date", help="The snapshot's date, YYYY-MM-DD (default: today).")

    def handle(self, *args, **options) -> None:
        benchmark = Benchmark.objects.filter(slug=options["benchmark"], active=True).first()
        if benchmark is None:
            known = ", ".join(Benchmark.objects.filter(active=True).values_list("slug", flat=True)) or "none"
            raise CommandError(f"unknown benchmark {options['benchmark']!r}; known: {known}")
        date = None
        if options["date"]:
            try:
                date = datetime.date.fromisoformat(options["date"])
            except ValueError:
                raise CommandError(f"--date {options['date']!r} is not a date like 2026-11-25") from None
        try:
            snapshot = take_snapshot(benchmark, date, by="manage.py snapshot")
        except SnapshotExists as exc:
            raise CommandError(str(exc)) from None
        rows = len(snapshot.board["rows"])
        self.stdout.write(
            f"{benchmark.slug} snapshot {snapshot.date.isoformat()}: {rows} models, {permalink(snapshot)}"
        )
