"""Which worker may hold which job: the GPUs a job asks for, the GPUs a worker owns, and the broker queue between.

A broker queue hands a message to whichever of its consumers asks first, so a message on one queue
shared by every GPU worker would reach a one-GPU worker as readily as a four-GPU one, and a
``gpus=4`` pretraining job's ranks 1-3 would ask for devices their worker cannot see. So the GPU
workers are split by what they can hold, one broker queue per kind of worker (its *seat*):

* ``gpu``: a worker with one GPU of its own, or the one worker of a host without a GPU (it runs a
  one-GPU job on the CPU, as ``make demo`` does);
* ``gpu-N`` (N from 2): a worker owning N GPUs of one host (``BIOLM_GPUS_PER_WORKER=N``);
* ``gpu-shared``: a worker sharing its GPU with others on purpose (``BIOLM_WORKERS_PER_GPU`` > 1). It
  takes fine-tuning jobs only: a pretraining job wants a GPU of its own, and never fits beside others.

A worker consumes its seat's queue only (:mod:`workers.runner.app`) and says in its heartbeat what it
owns. The dispatcher (:mod:`jobs.dispatch`) counts, per seat, the live workers and the jobs running
on or sent to it, and sends each job, in fair order, to the smallest free seat that :meth:`Seat.holds`
it: the message can only reach a worker that has the GPUs. The claim checks the same rule again and
hands back a job its worker cannot hold (a worker started by hand on the wrong queue), without
charging an attempt. This module is the rule both sides import, so they cannot disagree on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

GPU_QUEUE = "gpu"
SHARED_QUEUE = "gpu-shared"
GPUS_MAX = 64


def plural(count: int, word: str = "GPU") -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Need:
    """What a job asks of its worker: ``gpus`` devices of one host, and whether it may share a GPU."""

    gpus: int = 1
    shareable: bool = True

    @classmethod
    def of(cls, kind: str, spec: Mapping) -> Need:
        """A pretraining job runs torchrun on its spec's ``gpus`` (never on a shared GPU); a fine-tuning job on one."""
        if kind == "pretrain":
            return cls(gpus=int(spec.get("gpus") or 1), shareable=False)
        return cls()

    def describe(self) -> str:
        """ "needs 4 GPUs on one host", "needs 1 GPU of its own" (a one-GPU pretraining job), "needs 1 GPU"."""
        if self.gpus > 1:
            return f"needs {plural(self.gpus)} on one host"
        return "needs 1 GPU" if self.shareable else "needs 1 GPU of its own"


@dataclass(frozen=True)
class Seat:
    """What one worker offers: ``gpus`` GPUs of its own (0: it runs on the CPU), or one it ``shared`` with others."""

    gpus: int
    shared: bool = False

    @property
    def queue(self) -> str:
        """The broker queue workers of this seat consume, and dispatch sends its jobs to."""
        if self.shared:
            return SHARED_QUEUE
        return GPU_QUEUE if self.gpus <= 1 else f"gpu-{self.gpus}"

    @property
    def size(self) -> tuple[int, int]:
        """Smaller first: a job goes to the smallest seat that holds it, so big workers stay free for big jobs."""
        return (0, 1) if self.shared else (1, max(1, self.gpus))

    def holds(self, need: Need) -> bool:
        """Whether a job of ``need`` may run here: N GPUs need a worker owning at least N; a shared GPU takes
        only a one-GPU job that may share (fine-tuning); a CPU worker takes what one GPU would."""
        if self.shared:
            return need.shareable and need.gpus == 1
        return need.gpus <= max(1, self.gpus)


def seat_of_queue(queue: str) -> Seat | None:
    """The seat whose workers consume broker queue ``queue`` (None: not a GPU seat's queue, e.g. ``cpu``)."""
    if queue == SHARED_QUEUE:
        return Seat(1, shared=True)
    if queue == GPU_QUEUE:
        return Seat(1)
    count = queue.removeprefix("gpu-")
    return Seat(int(count)) if queue.startswith("gpu-") and count.isdigit() and int(count) > 1 else None


def unplaced(need: Need, seats: Iterable[Seat]) -> str:
    """Why no live worker can ever hold a job of ``need`` (``seats``: the live workers'), or "" when one can.

    "needs 4 GPUs on one host; the largest live worker has 2": the operator reads what to start, the
    submitter why the job has not moved. With no live worker at all, the queue's own note says so instead.
    """
    seats = list(seats)
    if not seats or any(seat.holds(need) for seat in seats):
        return ""
    largest = max(seat.gpus for seat in seats)
    if need.gpus > largest:
        return f"{need.describe()}; the largest live worker has {largest}"
    return f"{need.describe()}; every live worker shares its GPU (BIOLM_WORKERS_PER_GPU)"
