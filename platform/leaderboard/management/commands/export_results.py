"""``manage.py export_results [--date YYYY-MM-DD]``: every public result, as one dated JSON Lines file.

Writes ``exports/results-<date>.jsonl`` to the artefact store (:mod:`leaderboard.results_dump`), which the site
serves at ``/exports/results-<date>.jsonl``; the beat writes one every day. ``--date`` names the file (today, UTC,
by default); what it holds is always the results as they are now.
"""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from leaderboard.results_dump import write_dump


class Command(BaseCommand):
    help = "Write every public result to one dated JSON Lines file in the artefact store."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--date", help="The file's date, YYYY-MM-DD (default: today, UTC).")

    def handle(self, *args, **options) -> None:
        try:
            date = dt.date.fromisoformat(options["date"]) if options["date"] else None
        except ValueError:
            raise CommandError(f"--date {options['date']!r}: expected YYYY-MM-DD") from None
        dump = write_dump(date)
        self.stdout.write(f"wrote {dump.lines} result line(s) to {dump.name} (served at /{dump.name})")
