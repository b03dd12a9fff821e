"""Why a waiting job is still waiting, in words an operator or a submitter can act on.

A job can wait for five reasons: a job it depends on has not succeeded yet, it is retrying and
its back-off is not over, its queue has no live worker, no live worker can hold it ("needs 4 GPUs
on one host; the largest live worker has 2", :mod:`biolm.placement`), or every live worker that can
is busy. The third and the fourth are the ones nobody notices by themselves: a crashed worker that
nothing restarted leaves its queue's jobs "queued" for ever, and so does a pretraining job asking for
more GPUs than any worker owns. So a waiting job on a queue without a live worker says so,
"waiting: no training worker is running", naming the workers that served the queue lately and went
silent or were given up on, in the admin's job list and in ``manage.py demo``'s terminal.

Queues are named by what their workers do on this site (:func:`queue_name`), not by their ids: the
``gpu`` queue's worker runs on the CPU where there is no GPU (``make demo`` on a laptop), and
"waiting for a free gpu worker" there told a submitter of hardware that does not exist.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils import timezone
from django.utils.timesince import timesince

from biolm.placement import held_queue, holder_of, on_gpu_workers, unplaced
from jobs.lifecycle import blocked_by_dependencies
from jobs.models import WAITING, Job, Worker

RECENT = dt.timedelta(days=1)  # silent workers older than this are history, not news
QUEUE_WORK = {Job.Queue.GPU: "training", Job.Queue.CPU: "scoring"}  # what each queue's jobs do


def queue_name(queue: str, gpu: bool = False) -> str:
    """The name people read for ``queue``: what its workers do ("training": pretraining and fine-tuning;
    "scoring": scoring predictions and recording results), "GPU training" only when ``gpu``.

    The rule: "GPU" is named only while a live worker serving the queue reported a GPU in its heartbeat
    (``Worker.gpus``, :attr:`QueueState.gpu`); the queue's id, ``gpu``, says where such jobs run best, not
    where they run on this site. The platform's ``cpu`` queue never has one.
    """
    if holder := holder_of(queue):
        return f"{holder}'s {'GPU ' if gpu else ''}training"
    work = QUEUE_WORK.get(queue, queue)
    return f"GPU {work}" if gpu else work


@dataclass
class QueueState:
    """The workers of one queue: alive, gone silent lately, or given up on by their supervisor."""

    queue: str
    live: list[Worker] = field(default_factory=list)
    silent: list[Worker] = field(default_factory=list)
    failing: list[Worker] = field(default_factory=list)

    @property
    def served(self) -> bool:
        return bool(self.live)

    @property
    def gpu(self) -> bool:
        """Whether a live worker of this queue runs its jobs on a GPU."""
        return any(worker.gpus for worker in self.live)

    @property
    def name(self) -> str:
        """The queue's name as people read it (:func:`queue_name`): "training", "GPU training" or "scoring"."""
        return queue_name(self.queue, self.gpu)

    def unplaced_note(self, job: Job) -> str:
        """Why no live worker of this queue can hold ``job`` (too few GPUs on any one), or "" when one can."""
        if not on_gpu_workers(self.queue):
            return ""
        return unplaced(job.need, (worker.seat for worker in self.live))

    def unserved_note(self, now: dt.datetime | None = None) -> str:
        """``waiting: no training worker is running``, with what became of the queue's workers when known."""
        now = now or timezone.now()
        details = [f"{w.name} failing: {w.problem}" for w in self.failing]
        details += [f"{w.name} silent for {timesince(w.last_heartbeat, now)}" for w in self.silent]
        if holder := holder_of(self.queue):
            note = f"waiting: no worker of {holder}'s is running (its data stays on their hosts)"
        else:
            note = f"waiting: no {self.name} worker is running"
        return f"{note} ({'; '.join(details)})" if details else note


def worker_state(worker: Worker, stale_after_s: float, now: dt.datetime | None = None) -> str:
    """``live``, ``failing`` (its supervisor gave up on it) or ``silent`` (no heartbeat lately)."""
    now = now or timezone.now()
    if worker.problem:
        return "failing"
    if worker.last_heartbeat is not None and worker.last_heartbeat >= now - dt.timedelta(seconds=stale_after_s):
        return "live"
    return "silent"


def recent_workers(now: dt.datetime | None = None) -> list[Worker]:
    """Workers that heartbeated within a day, or that failed within a day."""
    now = now or timezone.now()
    since = now - RECENT
    return list(Worker.objects.filter(last_heartbeat__gte=since) | Worker.objects.filter(problem_at__gte=since))


def queue_states(stale_after_s: float, now: dt.datetime | None = None) -> dict[str, QueueState]:
    """Every queue's :class:`QueueState`, from the workers seen within a day."""
    now = now or timezone.now()
    states = {queue: QueueState(queue) for queue in Job.Queue.values}
    for worker in sorted(recent_workers(now), key=lambda w: w.name):
        state = worker_state(worker, stale_after_s, now)
        served = [held_queue(worker.holder)] if worker.holder else worker.queues.split(",")
        for queue in served:
            if queue in states or holder_of(queue):
                getattr(states.setdefault(queue, QueueState(queue)), state).append(worker)
    return states


def reason(job: Job, states: dict[str, QueueState], now: dt.datetime | None = None, blocked: bool | None = None) -> str:
    """Why ``job`` waits, or "" when it does not. ``blocked``: whether a dependency has not succeeded, if known."""
    if job.status not in WAITING:
        return ""
    now = now or timezone.now()
    if blocked is None:
        blocked = Job.objects.filter(pk=job.pk).filter(blocked_by_dependencies()).exists()
    if blocked:
        return "waiting for the jobs it depends on"
    state = states.get(job.queue) or (QueueState(job.queue) if holder_of(job.queue) else None)
    if state is not None and not state.served:
        return state.unserved_note(now)
    if state is not None and (note := state.unplaced_note(job)):
        return f"waiting: {note}"
    if job.not_before is not None and job.not_before > now:
        return f"retrying in {max(1, int((job.not_before - now).total_seconds()))} s (back-off)"
    if job.dispatched_at is not None:
        return "sent to a worker"
    return f"waiting for a free {state.name if state is not None else queue_name(job.queue)} worker"
