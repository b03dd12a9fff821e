"""The tick's safety net: a CPU worker ticks in-process when its beat has gone quiet.

The beat sends ``biolm.jobs.tick`` through the broker. Once, after a Redis restart on a
machine busy with other tests, the embedded beat sent no tick for minutes: nothing was reaped
or dispatched, and the CPU worker itself looked dead, since its liveness is its tick. The
watchdog needs no broker to notice. A thread of the CPU worker's main process reads the
worker's own heartbeat row; when it is older than ``BIOLM_TICK_WATCHDOG_S`` (three ticks by
default), it does the tick's work directly. Ticks are idempotent (every change is a conditional
UPDATE, and a second message for a job loses its claim), so one that overlaps a beat tick costs
nothing. The same thread runs in-process the cpu jobs whose messages no consumer took
(:func:`run_stranded`): after a Redis restart, aggregate jobs have been seen to stay queued for
minutes while the ticks kept re-sending them.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from jobs import lifecycle
from jobs.models import Job, Worker

logger = logging.getLogger("biolm.jobs")


Tick = Callable[[str | None], dict]
Execute = Callable[[int, str, str, str], str | None]


def tick_if_overdue(hostname: str, tick: Tick, now: dt.datetime | None = None) -> dict | None:
    """Run ``tick`` as ``hostname`` if its last one is older than the watchdog's limit; what it did, or None."""
    now = now or timezone.now()
    limit = dt.timedelta(seconds=settings.BIOLM_TICK_WATCHDOG_S)
    last = Worker.objects.filter(name=hostname).values_list("last_heartbeat", flat=True).first()
    if last is not None and now - last < limit:
        return None
    silent = f"{(now - last).total_seconds():.0f} s" if last is not None else "ever"
    logger.warning("no tick from the beat for %s: ticking in-process as %s", silent, hostname)
    return tick(hostname)


def run_stranded(hostname: str, execute: Execute, now: dt.datetime | None = None) -> list[int]:
    """Run here, without the broker, the cpu jobs whose messages no consumer took for three re-sends.

    After a Redis restart, aggregate jobs have been seen to stay queued for minutes while the
    ticks kept re-sending them: a consumer or a publisher that had not recovered. The broker is
    then not to be trusted, so the watchdog claims them itself; a message that arrives later finds
    them taken and does nothing. ``execute`` runs one (:func:`jobs.tasks.execute_platform_job`).
    """
    now = now or timezone.now()
    limit = dt.timedelta(seconds=3 * settings.BIOLM_REDISPATCH_AFTER_S)
    stranded = list(
        lifecycle.ready(now)
        .filter(queue=Job.Queue.CPU, first_sent_at__lt=now - limit)
        .order_by("first_sent_at")
        .values_list("pk", "token", "first_sent_at")
    )
    ran = []
    for job_id, token, first_sent in stranded:
        waited = (now - first_sent).total_seconds()
        logger.warning("job #%s: no consumer took its messages for %.0f s: running it in-process", job_id, waited)
        if execute(job_id, token, f"watchdog-{uuid.uuid4().hex}", hostname) is not None:
            ran.append(job_id)
    return ran


def start(hostname: str, tick: Tick, execute: Execute) -> threading.Thread:
    """The watchdog thread of a CPU worker, doing ``tick`` and ``execute``'s work; a daemon, it ends with the worker.

    They are given by the worker (:mod:`jobs.tasks`), so the watchdog never imports the tasks that start it.
    """

    def watch() -> None:
        interval = max(1.0, settings.BIOLM_TICK_WATCHDOG_S / 3)
        while True:
            time.sleep(interval)
            try:
                close_old_connections()
                tick_if_overdue(hostname, tick)
                run_stranded(hostname, execute)
            except Exception:  # the database is away: the next round tries again
                logger.exception("the tick watchdog could not run")
            finally:
                connection.close()

    thread = threading.Thread(target=watch, name="biolm-tick-watchdog", daemon=True)
    thread.start()
    return thread
