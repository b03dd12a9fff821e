"""``manage.py sync_plugins``: mirror plugin contributions and published results into the database."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from registry.sync import sync_contributions


class Command(BaseCommand):
    help = "Load plugin contributions and published results into the database (safe to run any number of times)."

    def handle(self, *args, **options) -> None:
        report = sync_contributions()
        for label, bucket in (
            ("created", report.created),
            ("updated", report.updated),
            ("marked inactive (no longer contributed; kept with their results)", report.deactivated),
        ):
            if bucket:
                parts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in sorted(bucket.items()))
                self.stdout.write(f"{label}: {parts}")
        if report.rescored:
            self.stdout.write(f"recomputed {report.rescored} score(s)")
        if not report.changed:
            self.stdout.write("already up to date")
        for problem in report.problems:
            self.stderr.write(self.style.WARNING(f"plugin problem: {problem}"))
