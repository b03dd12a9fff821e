"""Following a submission's jobs in a terminal: one line per job, printed again when it changes.

``manage.py demo``, ``manage.py submit --wait`` and ``manage.py submission`` show jobs the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings

from jobs import lifecycle, waiting
from jobs.models import FINISHED, WAITING, Job


def describe(job: Job, states: dict[str, waiting.QueueState] | None = None) -> str:
    """One terminal line for ``job``; a waiting job whose queue has no live worker says so (``states``)."""
    target = job.dataset.slug if job.dataset_id else job.spec.get("recipe", "")
    name = job.language_model.address_name or job.language_model.slug  # the owner is the reader's own
    text = f"#{job.pk:<3} {name[:22]:<22} {job.kind:<9} {target:<24} {job.status:<9}"
    if job.status == Job.Status.RUNNING and job.progress_total:  # in tenths, so the terminal is not flooded
        tenth = 10 * job.progress_step // job.progress_total
        text += f" {10 * tenth:>3}% of a run ({job.progress_total} steps)"
    elif job.status == Job.Status.FAILED:
        text += f" ({job.get_failure_cause_display()}) {job.error.splitlines()[0][:80] if job.error else ''}"
    elif job.status == Job.Status.RETRYING and job.error:  # why the last attempt ended (a worker that died, say)
        text += f" after attempt {job.attempts}: {job.error.splitlines()[0][:100]}"
    elif states is not None and job.status in WAITING:
        state = states.get(job.queue)
        if state is not None and not state.served and not getattr(job, "blocked", False):
            text += f" {state.unserved_note()}"
    return text


def follow(ids: list[int], write: Callable[[str], None], interval_s: float = 2.0) -> list[Job]:
    """Print each job's state when it changes, until every one has ended; the jobs as they ended."""
    shown: dict[int, str] = {}
    while True:
        jobs = list(
            Job.objects.filter(pk__in=ids)
            .annotate(blocked=lifecycle.blocked_by_dependencies())
            .select_related("dataset", "language_model")
            .order_by("pk")
        )
        states = waiting.queue_states(settings.BIOLM_HEARTBEAT_STALE_S)
        for job in jobs:
            line = describe(job, states)
            if shown.get(job.pk) != line:
                shown[job.pk] = line
                write(line)
        if all(job.status in FINISHED for job in jobs):
            return jobs
        time.sleep(interval_s)
