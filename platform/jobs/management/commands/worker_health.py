"""``manage.py worker_health [--worker NAME]``: is this host's CPU worker alive? (docker-compose's health check).

The CPU worker records itself alive in the database at every tick (``biolm.jobs.tick``, or its
watchdog's in-process tick when the beat is quiet), so it is healthy when its row's last heartbeat
is within ``BIOLM_HEARTBEAT_STALE_S``. Exits 0 when it is, 1 saying why not.
"""

from __future__ import annotations

import socket

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from jobs.models import Worker


class Command(BaseCommand):
    help = "Exit 0 if the named worker (default: this host's CPU worker) heartbeated lately, else 1."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--worker", default=f"cpu@{socket.gethostname()}", help="Celery's name of the worker.")

    def handle(self, *args, worker: str, **options) -> None:
        row = Worker.objects.filter(name=worker).first()
        stale = settings.BIOLM_HEARTBEAT_STALE_S
        if row is None or row.last_heartbeat is None:
            raise CommandError(f"{worker} has not heartbeated yet")
        if row.problem:
            raise CommandError(f"{worker} is failing: {row.problem}")
        age = (timezone.now() - row.last_heartbeat).total_seconds()
        if age > stale:
            raise CommandError(f"{worker} last heartbeated {age:.0f} s ago (more than {stale} s)")
        self.stdout.write(f"{worker} alive (last heartbeat {age:.0f} s ago)")
