"""``manage.py leaderboard --benchmark NAME [--json]``: the stored leaderboard as text or JSON."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from leaderboard.tables import leaderboard_for
from registry.models import Benchmark


class Command(BaseCommand):
    help = "Print a benchmark's leaderboard (public models), best first."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--benchmark", required=True, help="Benchmark slug, e.g. blurb.")
        parser.add_argument("--json", action="store_true", help="Print JSON instead of text.")

    def handle(self, *args, **options) -> None:
        benchmark = Benchmark.objects.filter(slug=options["benchmark"], active=True).first()
        if benchmark is None:
            known = ", ".join(Benchmark.objects.filter(active=True).values_list("slug", flat=True)) or "none"
            raise CommandError(
                f"unknown benchmark {options['benchmark']!r}; known: {known} "
                "(run `python manage.py sync_plugins` if the list is empty)"
            )
        board = leaderboard_for(benchmark)
        if options["json"]:
            self.stdout.write(json.dumps(board.as_json(), indent=2))
            return
        precision = benchmark.precision
        name_width = max([len(r.model.name) for r in board.rows] + [5])
        self.stdout.write(self.style.MIGRATE_HEADING(f"{benchmark.name}: {board.primary_label}"))
        for row in board.rows:
            rank = str(row.rank) if row.rank else "-"
            value = "-" if row.score is None else f"{row.score:.{precision}f}"
            note = f"  (missing {len(row.missing)})" if row.missing else ""
            note += "  (quick preview: one grid point, one seed; not ranked)" if row.preview else ""
            self.stdout.write(f"{rank:>3}  {row.model.name:<{name_width}}  {value:>7}  {row.model.origin}{note}")
        if not board.rows:
            self.stdout.write("no model has results on this benchmark yet")
