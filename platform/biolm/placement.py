"""Which worker may hold which job: the GPUs a job asks for, the GPUs a worker owns, and the broker queue between.

A broker queue hands a message to whichever of its consumers asks first, so a message on one queue
shared by every GPU worker would reach a one-GPU worker as readily as a four-GPU one, and a
``gpus=4`` pretraining job's ranks 1-3 would ask for devices their worker cannot see. So the GPU
workers are split by what they can hold, one broker queue per kind of worker (its *seat*):

* ``gpu``: a worker with one GPU of its own, or the one worker of a host without a GPU (it runs a
  one-GPU job on the CPU, as ``make demo`` does);
* ``gpu-N`` (N from 2): a worker owning N GPUs of one host (``BIOLM_GPUS_PER_WORKER=N``);
* ``gpu-shared``: a worker sharing its GPU with others on purpose (``BIOLM_WORKERS_PER_GPU`` > 1). It
  takes fine-tuning jobs only: a pretraining job wants a GPU of its own, and never fits beside others;
* ``slurm-MxN``: a Slurm worker on a cluster's login node (``BIOLM_EXECUTOR=slurm``), which runs each job
  as a batch job on up to M nodes of N GPUs (``BIOLM_SLURM_MAX_NODES``, ``BIOLM_SLURM_GPUS_PER_NODE``; N
  is 1 on a cluster of CPU nodes). It alone takes a job on several nodes, and it takes any job one of its
  nodes holds. It is the largest seat, so a job that fits a host's own worker goes there first.

A data holder's workers (:class:`registry.models.DataHolder`: gated data kept on its own hosts) have seats of
their own, named for it: ``held-mayo.gpu``, ``held-mayo.gpu-4``. Its datasets' jobs wait in its queue
(``Job.queue`` ``held-mayo``, :func:`held_queue`) and a holder's seat holds only its own jobs, as an ordinary
seat holds none of them, so the rule below keeps the two apart as it keeps GPU counts apart.

A worker consumes its seat's queue only (:mod:`workers.runner.app`) and says in its heartbeat what it
owns. The dispatcher (:mod:`jobs.dispatch`) counts, per seat, the live workers and the jobs running
on or sent to it, and sends each job, in fair order, to the smallest free seat that :meth:`Seat.holds`
it: the message can only reach a worker that has the GPUs. The claim checks the same rule again and
hands back a job its worker cannot hold (a worker started by hand on the wrong queue), without
charging an attempt. This module is the rule both sides import, so they cannot disagree on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

GPU_QUEUE = "gpu"
SHARED_QUEUE = "gpu-shared"
SLURM_QUEUE_PREFIX = "slurm-"
SLURM_QUEUE = re.compile(r"^slurm-(\d+)x(\d+)$")
HELD_PREFIX = "held-"
HOLDER_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


def held_queue(holder: str) -> str:
    """The job queue of ``holder``'s datasets, and so of its workers: ``held-<holder>``."""
    return f"{HELD_PREFIX}{holder}"


HOLDER_CREDENTIAL_PREFIX = "biolm-holder-"


def holder_named_by(credential: str) -> str:
    """The holder a worker credential says it is ``biolm-holder-<name>.<random>``; "" for the platform's secret.

    Only the platform can check that the credential is that holder's (``registry.holders``): a worker reads
    its name here to consume its holder's seats' queues, and the platform refuses it anything else.
    """
    if not credential.startswith(HOLDER_CREDENTIAL_PREFIX):
        return ""
    name, dot, _ = credential.removeprefix(HOLDER_CREDENTIAL_PREFIX).partition(".")
    return name if dot and HOLDER_NAME.match(name) else ""


def on_gpu_workers(queue: str) -> bool:
    """Whether jobs of ``queue`` run on GPU workers (``gpu``, or a holder's ``held-<name>``), by seat."""
    return queue == GPU_QUEUE or queue.startswith(HELD_PREFIX)


def holder_of(queue: str) -> str:
    """The holder whose queue ``queue`` is (``held-mayo`` or one of its seats' ``held-mayo.gpu``), "" for none."""
    if not queue.startswith(HELD_PREFIX):
        return ""
    return queue.removeprefix(HELD_PREFIX).split(".", 1)[0]


def plural(count: int, word: str = "GPU") -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Need:
    """What a job asks of its worker: ``gpus`` devices on each of ``nodes`` hosts, and whether it may share a GPU."""

    gpus: int = 1
    shareable: bool = True
    nodes: int = 1
    holder: str = ""

    @classmethod
    def of(cls, kind: str, spec: Mapping, holder: str = "") -> Need:
        """A pretraining job runs torchrun on its spec's ``gpus`` per node of its ``nodes`` (never on a shared
        GPU); a fine-tuning job on one GPU; a gated dataset's job (``holder``) on that holder's workers only."""
        if kind == "pretrain":
            return cls(gpus=int(spec.get("gpus") or 1), shareable=False, nodes=int(spec.get("nodes") or 1))
        return cls(holder=holder)

    def describe(self) -> str:
        """ "needs 2 nodes of 4 GPUs", "needs 4 GPUs on one host", "needs 1 GPU of its own" (a one-GPU
        pretraining job), "needs 1 GPU"."""
        if self.holder:
            return f"needs a worker of {self.holder}'s (its data stays on their hosts)"
        if self.nodes > 1:
            return f"needs {plural(self.nodes, 'node')} of {plural(self.gpus)}"
        if self.gpus > 1:
            return f"needs {plural(self.gpus)} on one host"
        return "needs 1 GPU" if self.shareable else "needs 1 GPU of its own"


@dataclass(frozen=True)
class Seat:
    """What one worker offers: ``gpus`` GPUs of its own (0: it runs on the CPU), or one it ``shared`` with others;
    or, for a Slurm worker (``slurm``), up to ``nodes`` nodes of ``gpus`` GPUs each (0: CPU nodes)."""

    gpus: int
    shared: bool = False
    nodes: int = 1
    slurm: bool = False
    holder: str = ""

    @property
    def queue(self) -> str:
        """The broker queue workers of this seat consume, and dispatch sends its jobs to (a holder's named for it)."""
        if self.holder:
            return f"{held_queue(self.holder)}.{Seat(self.gpus, self.shared, self.nodes, self.slurm).queue}"
        if self.slurm:
            return f"{SLURM_QUEUE_PREFIX}{max(1, self.nodes)}x{max(1, self.gpus)}"
        if self.shared:
            return SHARED_QUEUE
        return GPU_QUEUE if self.gpus <= 1 else f"gpu-{self.gpus}"

    @property
    def size(self) -> tuple[int, int]:
        """Smaller first: a job goes to the smallest seat that holds it, so big workers stay free for big jobs
        (and a cluster's worker, whose jobs wait in Slurm's queue too, takes what no host's worker can)."""
        if self.slurm:
            return (2, max(1, self.nodes) * max(1, self.gpus))
        return (0, 1) if self.shared else (1, max(1, self.gpus))

    def holds(self, need: Need) -> bool:
        """Whether a job of ``need`` may run here: N GPUs need a worker owning at least N; a shared GPU takes
        only a one-GPU job that may share (fine-tuning); a CPU worker takes what one GPU would; only a Slurm
        worker reaching M nodes takes a job on several, up to M, of at most its GPUs per node; a holder's seat
        only its holder's jobs, and no other seat those."""
        if self.holder != need.holder:
            return False
        if self.slurm:
            return need.nodes <= max(1, self.nodes) and need.gpus <= max(1, self.gpus)
        if need.nodes > 1:
            return False
        if self.shared:
            return need.shareable and need.gpus == 1
        return need.gpus <= max(1, self.gpus)

    def reach(self) -> str:
        """A Slurm seat's reach in words: "2 nodes of 8 GPUs", "1 node of 1 GPU"."""
        return f"{plural(max(1, self.nodes), 'node')} of {plural(max(1, self.gpus))}"


def seat_of_queue(queue: str) -> Seat | None:
    """The seat whose workers consume broker queue ``queue`` (None: not a GPU seat's queue, e.g. ``cpu``)."""
    if holder := holder_of(queue):
        seat = seat_of_queue(queue.partition(".")[2])
        return None if seat is None else Seat(seat.gpus, seat.shared, seat.nodes, seat.slurm, holder=holder)
    if queue == SHARED_QUEUE:
        return Seat(1, shared=True)
    if queue == GPU_QUEUE:
        return Seat(1)
    if match := SLURM_QUEUE.match(queue):
        return Seat(int(match.group(2)), nodes=int(match.group(1)), slurm=True)
    count = queue.removeprefix("gpu-")
    return Seat(int(count)) if queue.startswith("gpu-") and count.isdigit() and int(count) > 1 else None


def unplaced(need: Need, seats: Iterable[Seat]) -> str:
    """Why no live worker can ever hold a job of ``need`` (``seats``: the live workers'), or "" when one can.

    "needs 4 GPUs on one host; the largest live worker has 2": the operator reads what to start, the
    submitter why the job has not moved. With no live worker at all, the queue's own note says so instead.
    A job on several nodes only a Slurm worker holds: "needs 2 nodes; no live Slurm worker", or "needs 2
    nodes of 4 GPUs; the largest live Slurm worker reaches 1 node of 8".
    """
    seats = [seat for seat in seats if seat.holder == need.holder]  # a holder's seats are another pool
    if need.holder:
        return "" if seats else f"{need.describe()}; none is live"
    if not seats or any(seat.holds(need) for seat in seats):
        return ""
    clusters = [seat for seat in seats if seat.slurm]
    if need.nodes > 1 and not clusters:
        return f"needs {plural(need.nodes, 'node')}; no live Slurm worker"
    if need.nodes > 1:
        largest_cluster = max(clusters, key=lambda seat: seat.size)
        return f"{need.describe()}; the largest live Slurm worker reaches {largest_cluster.reach()}"
    largest = max(seat.gpus for seat in seats)
    if need.gpus > largest:
        return f"{need.describe()}; the largest live worker has {largest}"
    return f"{need.describe()}; every live worker shares its GPU (BIOLM_WORKERS_PER_GPU)"
