"""What the public queue page shows: jobs per benchmark and queue, the workers, and how long jobs waited.

Anyone may read it, so a private submission shows only in the counts: the one list of jobs by
name holds public models' running jobs. A handful of queries whatever the queue's length: the
counts are one aggregate over the jobs that are waiting, running or finished within the day, the
waits one query of the day's started jobs.

A job's wait runs from when it could start (it entered its queue, or its last dependency
finished, whichever is later) to when it started: an aggregate job that waited an hour for its
fine-tuning did not wait an hour for a worker.

Queues are named by what they do here ("training", "scoring"; :func:`jobs.waiting.queue_name`), and a
worker says what it runs its jobs on (the CPU, or how many GPUs of which model and memory) and how many
of its GPUs no running job holds, as its heartbeat reported.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Max, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from jobs import waiting
from jobs.models import FINISHED, WAITING, Job, Worker
from registry.models import LanguageModel

DAY = dt.timedelta(days=1)
RUNNING_SHOWN = 50


@dataclass(frozen=True)
class QueueCount:
    """Jobs of one benchmark on one queue: waiting, running, and finished within the day."""

    benchmark: str  # the name; "" for jobs of no benchmark (pretraining)
    benchmark_slug: str
    queue: str
    queue_name: str  # what the queue does here: "training", "GPU training" or "scoring"
    pending: int
    running: int
    finished: int


@dataclass(frozen=True)
class WorkerRow:
    name: str
    queues: tuple[str, ...]  # by what they do here ("training", "scoring")
    slots: int
    device: str  # "CPU", "1 GPU", "4 GPUs (NVIDIA H200, 140 GiB each)", "1 GPU, shared" (Worker.device)
    gpus_free: str  # "3 of 4" (none held by a running job), "-" on the CPU
    state: str  # live, silent or failing (jobs.waiting.worker_state)
    heartbeat_age_s: float | None
    problem: str


@dataclass(frozen=True)
class QueueHealth:
    """One queue: its live workers' slots, what it says when none serves it, and the day's median wait."""

    queue: str
    name: str  # what it does here (jobs.waiting.queue_name)
    live_workers: int
    slots: int
    note: str  # "" while a live worker serves it, else "no training worker is running (...)"
    median_wait_s: float | None
    started_today: int


@dataclass(frozen=True)
class RunningJob:
    model: str
    model_url: str
    benchmark: str
    dataset: str
    kind: str
    progress: float | None


@dataclass
class QueueSummary:
    counts: list[QueueCount] = field(default_factory=list)
    queues: list[QueueHealth] = field(default_factory=list)
    workers: list[WorkerRow] = field(default_factory=list)
    running: list[RunningJob] = field(default_factory=list)

    @property
    def gpus(self) -> bool:
        """Whether any worker shown runs on GPUs: only then has the table a "GPUs free" column (a CPU-only site's
        pages never mention a GPU, :func:`jobs.waiting.queue_name`)."""
        return any(worker.gpus_free != "-" for worker in self.workers)


def queue_summary(now: dt.datetime | None = None) -> QueueSummary:
    now = now or timezone.now()
    stale = settings.BIOLM_HEARTBEAT_STALE_S
    states = waiting.queue_states(stale, now)
    waits = _waits(now)
    queues = [
        QueueHealth(
            queue=queue,
            name=state.name,
            live_workers=len(state.live),
            slots=sum(w.slots for w in state.live),
            note="" if state.served else state.unserved_note(now).removeprefix("waiting: "),
            median_wait_s=statistics.median(waits[queue]) if waits.get(queue) else None,
            started_today=len(waits.get(queue, ())),
        )
        for queue, state in states.items()
    ]
    names = {state.queue: state.name for state in states.values()}
    return QueueSummary(counts=_counts(now, names), queues=queues, workers=_workers(states, now), running=_running())


def _counts(now: dt.datetime, names: dict[str, str]) -> list[QueueCount]:
    recent = Q(status__in=WAITING) | Q(status=Job.Status.RUNNING) | Q(status__in=FINISHED, finished_at__gte=now - DAY)
    rows = (
        Job.objects.filter(recent)
        .values("benchmark__name", "benchmark__slug", "queue")
        .annotate(
            pending=Count("pk", filter=Q(status__in=WAITING)),
            running=Count("pk", filter=Q(status=Job.Status.RUNNING)),
            finished=Count("pk", filter=Q(status__in=FINISHED, finished_at__gte=now - DAY)),
        )
        .order_by("benchmark__name", "queue")
    )
    return [
        QueueCount(
            benchmark=row["benchmark__name"] or "",
            benchmark_slug=row["benchmark__slug"] or "",
            queue=row["queue"],
            queue_name=names.get(row["queue"]) or waiting.queue_name(row["queue"]),
            pending=row["pending"],
            running=row["running"],
            finished=row["finished"],
        )
        for row in rows
    ]


def _waits(now: dt.datetime) -> dict[str, list[float]]:
    """Per queue, the seconds each job started within the day waited once it could start."""
    started = (
        Job.objects.filter(started_at__gte=now - DAY)
        .annotate(ready_at=Greatest("queued_at", Coalesce(Max("depends_on__finished_at"), "queued_at")))
        .values_list("queue", "started_at", "ready_at")
    )
    waits: dict[str, list[float]] = {}
    for queue, started_at, ready_at in started:
        waits.setdefault(queue, []).append(max(0.0, (started_at - ready_at).total_seconds()))
    return waits


def _workers(states: dict[str, waiting.QueueState], now: dt.datetime) -> list[WorkerRow]:
    """The workers seen within the day, each once, live ones first."""
    seen: dict[str, tuple[Worker, str]] = {}
    for state in states.values():
        for kind in ("live", "failing", "silent"):
            for worker in getattr(state, kind):
                seen.setdefault(worker.name, (worker, kind))
    order = {"live": 0, "failing": 1, "silent": 2}
    return [
        WorkerRow(
            name=worker.name,
            queues=tuple(waiting.queue_name(queue, bool(worker.gpus)) for queue in worker.queues.split(",")),
            slots=worker.slots,
            device=worker.device,
            gpus_free=worker.free,
            state=kind,
            heartbeat_age_s=(now - worker.last_heartbeat).total_seconds() if worker.last_heartbeat else None,
            problem=worker.problem,
        )
        for worker, kind in sorted(seen.values(), key=lambda item: (order[item[1]], item[0].name))
    ]


def _running() -> list[RunningJob]:
    """Public models' running jobs (a private model's are counted above, never named). The page is the same for
    everyone, its owner included, so it names what the privacy rule shows an anonymous visitor."""
    jobs = (
        Job.objects.filter(status=Job.Status.RUNNING, language_model__in=LanguageModel.objects.visible_to(None))
        .select_related("language_model", "benchmark", "dataset")
        .order_by("started_at", "pk")[:RUNNING_SHOWN]
    )
    return [
        RunningJob(
            model=job.language_model.name,
            model_url=job.language_model.get_absolute_url(),
            benchmark=job.benchmark.name if job.benchmark_id else "",
            dataset=job.dataset.slug if job.dataset_id else "",
            kind=job.kind,
            progress=job.progress,
        )
        for job in jobs
    ]
