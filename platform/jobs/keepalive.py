"""Heartbeats for a platform job while its handler runs, so a long score job is not taken for a dead worker's.

A GPU worker heartbeats from its own loop while the engine runs; a ``cpu`` job (scoring a
fine-tuning job's results, its bootstrap resamples included) runs its handler in the Celery
worker's thread and used to heartbeat only when claimed and when done. A handler longer than
``BIOLM_HEARTBEAT_STALE_S`` was then reaped as if its worker had died, retried three times and
failed. :func:`heartbeats` beats from a thread of its own every third of that silence.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError, connection

from jobs import lifecycle

logger = logging.getLogger("biolm.jobs")


def beat_interval_s() -> float:
    """A third of the silence the reaper allows, so two beats can be lost before it acts."""
    return max(settings.BIOLM_HEARTBEAT_STALE_S / 3, 0.05)


@contextlib.contextmanager
def heartbeats(job_id: int, token: str, delivery: str, every_s: float | None = None) -> Iterator[None]:
    """Record the delivery alive every ``every_s`` seconds (default :func:`beat_interval_s`) while the block runs.

    The beats stop when the block ends or the delivery no longer holds the job (reaped or
    cancelled: the handler's own last write is then refused by the lifecycle as before). A
    database error skips one beat rather than ending the job.
    """
    stopped = threading.Event()
    interval = beat_interval_s() if every_s is None else every_s

    def beat() -> None:
        try:
            while not stopped.wait(interval):
                try:
                    if lifecycle.heartbeat(job_id, token, delivery) == lifecycle.Verdict.STOP:
                        return
                except DatabaseError:
                    logger.warning("job #%s: a heartbeat failed; the next one follows in %.0f s", job_id, interval)
                    # A dropped connection stays broken for this thread until closed: the next beat reconnects.
                    with contextlib.suppress(DatabaseError):
                        connection.close()
        finally:
            connection.close()  # the thread's own connection, never the handler's

    thread = threading.Thread(target=beat, name=f"heartbeat-job-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopped.set()
        thread.join()
