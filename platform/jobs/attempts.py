"""Each delivery's hold on a job, kept as an :class:`~jobs.models.Attempt`: what the platform's time and GPUs went to.

An attempt starts when a delivery claims its job (:func:`jobs.lifecycle.claim`) and ends when that
delivery no longer holds it, whatever the reason: every change of state passes through
:func:`jobs.lifecycle.follow_submissions`, which ends the attempts it released. The GPUs an attempt
held come from its worker's own heartbeat (:func:`jobs.dispatch.record_worker`): the share of a GPU
it shares with other workers, its job's GPUs on each node it spans, none on a CPU.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import F, Q
from django.utils import timezone

from jobs.models import Attempt, Job, Worker


def held_gpus(job: Job, worker: Worker | None) -> float:
    """The GPUs a job holds on ``worker``: its need's GPUs on each node, a fraction of one on a shared GPU."""
    if worker is None or worker.gpus == 0:
        return 0.0
    if worker.shares_gpu:
        return 1.0 / max(1, worker.workers_per_gpu)
    need = job.need
    return float(min(need.gpus, worker.gpus) * need.nodes)


def gpu_model(worker: Worker | None) -> str:
    """The worker's GPU as nvidia-smi names it; several kinds on one host are named together."""
    if worker is None or worker.gpus == 0:
        return ""
    names = sorted({str(device.get("name", "")) for device in worker.gpu_devices if device.get("name")})
    return " + ".join(names)[:200]


def start(job: Job, delivery: str, worker: str | Worker, now: dt.datetime) -> Attempt:
    """The attempt of ``job``'s delivery, on ``worker`` (its row, or its name when the caller has not read it)."""
    if isinstance(worker, Worker):
        name = worker.name
    else:
        name, worker = worker, Worker.objects.filter(name=worker).first()
    return Attempt.objects.create(
        job=job, number=job.attempts, delivery=delivery, worker=name[:200],
        gpus=held_gpus(job, worker), gpu_model=gpu_model(worker), started_at=now,
    )  # fmt: skip


def end_released(job_ids: list[int], now: dt.datetime | None = None) -> int:
    """End the open attempts of ``job_ids`` whose delivery no longer holds its job, at the moment of the change,
    with the GPU-seconds they held. Usually one row: a change of state releases one delivery."""
    now = now or timezone.now()
    held = Q(job__status=Job.Status.RUNNING, job__claim=F("delivery"))
    released = Attempt.objects.filter(job_id__in=job_ids, ended_at__isnull=True).exclude(held)
    ended = 0
    for pk, gpus, started_at in released.values_list("pk", "gpus", "started_at"):
        seconds = max(0.0, (now - started_at).total_seconds())
        ended += Attempt.objects.filter(pk=pk, ended_at__isnull=True).update(ended_at=now, gpu_seconds=gpus * seconds)
    return ended
