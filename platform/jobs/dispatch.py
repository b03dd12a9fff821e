"""Which waiting job starts next, when each will start, and sending them to the broker.

The database is the queue; the broker carries only as many messages as live workers have free
slots. That is what makes fair share possible (a broker queue is first in, first out, so one
user's 200 queued messages would run before another user's 2): each time a slot frees, the
next job is chosen here, by

1. the owner with the fewest jobs running or already chosen (so owners take turns),
2. then, between owners equally loaded, the one whose oldest job has waited longest,
3. then, within an owner, higher ``priority`` first, then the oldest.

A GPU job goes only where it fits (:mod:`biolm.placement`). The GPU workers are grouped by *seat*,
what each can hold (one GPU, N GPUs of one host, a GPU shared with other workers), and each seat has a
broker queue of its own (``gpu``, ``gpu-4``, ``gpu-shared``) that only its workers consume. The free
slots are counted per seat: its live workers' slots less the jobs running on it or sent to it
(``Job.sent_to``, written by the same conditional UPDATE that marks a job sent). Walking the fair
order, each job goes to the smallest seat with a free slot that holds it, so a four-GPU worker is
left for a four-GPU job while smaller ones are free; a job no free seat holds stays in the database
and does not hold up those behind it. So a ``gpus=4`` job is sent only when a worker owning four
GPUs of one host is idle, and that worker holds them for it alone (it runs one job at a time). The
claim checks the same rule once more (:func:`jobs.api.ClaimView`).

A data holder's datasets (gated data kept on its own hosts) wait in a queue of their own,
``held-<name>``, served only by the workers that beat with its credential; they are ordered and placed
as the ``gpu`` queue's are, on its workers' seats (``held-<name>.gpu``), and no other worker's seat holds them.

A message that never reaches a worker (a broker restarted without persistence) is sent again
after ``redispatch_after_s``; duplicates are harmless because a job runs only under a claim
(:mod:`jobs.lifecycle`).
"""

from __future__ import annotations

import copy
import datetime as dt
import heapq
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from biolm.placement import HELD_PREFIX, Need, Seat, holder_of, on_gpu_workers
from jobs import lifecycle
from jobs.models import WAITING, Job, Worker

DEFAULT_DURATION_S = {Job.Kind.PRETRAIN: 3600.0, Job.Kind.FINETUNE: 600.0, Job.Kind.SLICE: 120.0, Job.Kind.SCORE: 10.0}


# What placing and sending a waiting job read of it (its need is in its spec).
ORDERED_FIELDS = ("token", "queue", "kind", "spec", "priority", "queued_at", "status", "sent_to")


@dataclass(frozen=True)
class Place:
    """A waiting job's place in its queue: 1 is next; the start is an estimate."""

    position: int
    estimated_start: dt.datetime | None


def record_worker(
    name: str,
    queues: list[str],
    slots: int = 1,
    now: dt.datetime | None = None,
    gpus: int = 0,
    gpus_free: int | None = None,
    shares_gpu: bool = False,
    gpu_devices: list[dict] | None = None,
    executor: str = "local",
    nodes: int = 1,
    workers_per_gpu: int = 1,
    holder: str = "",
    known: Worker | None = None,
) -> Worker:
    """A worker's heartbeat: it is alive, consumes ``queues``, runs ``slots`` jobs at once on ``gpus`` GPUs (0: CPU),
    ``gpus_free`` of them held by no job (all when it does not say), shared with other workers or not, and
    ``gpu_devices``: each GPU's model and memory; ``workers_per_gpu`` share it when it is shared. A Slurm worker
    (``executor="slurm"``) reaches up to ``nodes`` nodes, and ``gpus`` and ``gpu_devices`` are each node's. A data
    holder's worker (``holder``, which its credential proved) serves that holder's queue and no other.

    ``known``: the worker's row as the caller just read it. The beat is then one UPDATE of it: 200 workers
    beating every 5 s are most of the internal API's calls, and update_or_create's transaction, locking
    re-read and commit were most of each one's queries (``bench many_workers``).
    """
    now = now or timezone.now()
    values = {
        "queues": ",".join(sorted(queues)),
        "holder": holder,
        "slots": slots,
        "gpus": gpus,
        "gpus_free": gpus if gpus_free is None else min(gpus_free, gpus),
        "shares_gpu": shares_gpu and gpus > 0,
        "workers_per_gpu": max(1, workers_per_gpu) if shares_gpu and gpus > 0 else 1,
        "gpu_devices": list(gpu_devices or []),
        "executor": executor,
        "nodes": nodes if executor == "slurm" else 1,
        "last_heartbeat": now,
        "problem": "",
        "problem_at": None,
    }
    if known is not None and Worker.objects.filter(pk=known.pk).update(**values):
        beaten = copy.copy(known)
        for field, value in values.items():
            setattr(beaten, field, value)
        return beaten
    worker, created = Worker.objects.update_or_create(name=name, defaults=values)
    if created:
        Worker.objects.filter(pk=worker.pk).update(started_at=now)
    return worker


def heartbeat_offers_room(name: str, stale_after_s: float, **heartbeat) -> bool:
    """Record a worker's heartbeat (:func:`record_worker`); True when it offers room it did not offer a moment ago.

    That is a new worker, one back from silence or from a problem, one with other queues, slots or
    GPUs, or more of its GPUs free: only then can dispatching now place a job the last dispatch could
    not. Any other beat changes nothing dispatch reads. Dispatching on every beat instead had 200
    workers, each beating every 5 s, run 40 dispatches a second, each reading every waiting job,
    until gunicorn's workers did nothing else (``bench many_workers``); a job that ends dispatches
    by itself (``complete``, ``fail``), and the tick dispatches every ``BIOLM_TICK_S`` whatever happens.
    """
    before = Worker.objects.filter(name=name).first()
    after = record_worker(name, known=before, **heartbeat)
    if before is None or before.last_heartbeat is None or before.problem:
        return True
    if before.last_heartbeat < after.last_heartbeat - dt.timedelta(seconds=stale_after_s):
        return True
    offered = ("queues", "holder", "slots", "gpus", "shares_gpu", "executor", "nodes")
    if any(getattr(before, field) != getattr(after, field) for field in offered):
        return True
    return after.gpus_free > before.gpus_free


def record_problem(name: str, queues: list[str], problem: str, now: dt.datetime | None = None) -> Worker:
    """A worker's supervisor gave up on it: kept, with why, but not counted as alive (no heartbeat is recorded)."""
    now = now or timezone.now()
    worker, _ = Worker.objects.get_or_create(
        name=name,
        defaults={"queues": ",".join(sorted(queues)), "last_heartbeat": None, "started_at": now},
    )
    Worker.objects.filter(pk=worker.pk).update(problem=problem[:2000], problem_at=now)
    worker.refresh_from_db()
    return worker


def live_workers(stale_after_s: float, now: dt.datetime | None = None) -> QuerySet[Worker]:
    now = now or timezone.now()
    return Worker.objects.filter(last_heartbeat__gte=now - dt.timedelta(seconds=stale_after_s))


def largest_gpu_memory(need: Need, stale_after_s: float, now: dt.datetime | None = None) -> int | None:
    """The largest GPU memory, in bytes, of a live worker that could hold a job of ``need`` (a Slurm worker's per
    its settings); None when none reports one (no such worker, or none knows its cards)."""
    memories = [
        int(device.get("memory_bytes") or 0)
        for worker in live_workers(stale_after_s, now)
        if serves(worker, Job.Queue.GPU) and worker.seat.holds(need)
        for device in worker.gpu_devices or []
    ]
    return max(memories, default=0) or None


def capacity(queue: str, stale_after_s: float, now: dt.datetime | None = None) -> int:
    """Slots of the live workers consuming ``queue``."""
    workers = live_workers(stale_after_s, now)
    return sum(w.slots for w in workers if serves(w, queue))


def serves(worker: Worker, queue: str) -> bool:
    """Whether ``worker`` takes jobs of ``queue``: a holder's queue its holder's workers only, and those no other."""
    if worker.holder or holder_of(queue):
        return worker.holder == holder_of(queue)
    return queue in worker.queues.split(",")


def route(worker: Worker, queue: str) -> str:
    """The broker queue ``worker`` consumes for jobs of ``queue``: its seat's for GPU jobs, else the queue's own."""
    return worker.seat.queue if on_gpu_workers(queue) else queue


def seats(queue: str, stale_after_s: float, now: dt.datetime | None = None,
          workers: list[Worker] | None = None) -> dict[str, Seat | None]:  # fmt: skip
    """The broker queues of ``queue``'s live workers, smallest seat first, each with its seat (None: not a GPU one).

    ``workers``: the live workers as the caller already read them (a dispatch reads them once for every queue).
    """
    live = live_workers(stale_after_s, now) if workers is None else workers
    found = {route(w, queue): w.seat if on_gpu_workers(queue) else None for w in live if serves(w, queue)}
    return dict(sorted(found.items(), key=lambda item: item[1].size if item[1] else (0, 0)))


def queues_in_use() -> list[str]:
    """The platform's two queues, then each holder's queue that has a waiting job."""
    held = Job.objects.filter(status__in=WAITING, queue__startswith=HELD_PREFIX).values_list("queue", flat=True)
    return [*Job.Queue.values, *sorted(set(held))]


def free_slots(queue: str, stale_after_s: float, now: dt.datetime | None = None,
               workers: list[Worker] | None = None) -> dict[str, int]:  # fmt: skip
    """Per broker queue of ``queue`` (its seats'): live workers' slots less the jobs running on it or sent to it."""
    live = list(live_workers(stale_after_s, now)) if workers is None else workers
    slots: dict[str, int] = dict.fromkeys(seats(queue, stale_after_s, now, live), 0)
    for worker in live:
        if serves(worker, queue):
            slots[route(worker, queue)] += worker.slots
    in_flight = (
        Job.objects.filter(queue=queue)
        .filter(Q(status=Job.Status.RUNNING) | Q(status__in=WAITING, dispatched_at__isnull=False))
        .exclude(lifecycle.in_intake())  # delivered: the platform checks its outputs, its worker is free
        .values_list("sent_to")
        .annotate(n=Count("pk"))
    )
    for sent_to, count in in_flight:
        target = sent_to or queue  # a job sent before seats had names went to the queue's own
        if target in slots:
            slots[target] -= count
    return slots


def placeable(job: Job, seats_: dict[str, Seat | None]) -> bool:
    """Whether some live worker of these seats could ever hold ``job`` (busy or not)."""
    return any(seat is None or seat.holds(job.need) for seat in seats_.values())


def _owners() -> Coalesce:
    """Whose a job is, for taking turns: its submission's submitter, else its model's owner (0: nobody's)."""
    return Coalesce(F("submission__submitter_id"), F("language_model__owner_id"), Value(0))


def fair_order(queue: str, now: dt.datetime | None = None) -> list[Job]:
    """The ready jobs of ``queue`` not yet sent, in the order they will be sent (see the module docstring)."""
    ids = fair_order_ids(queue, now)
    jobs = Job.objects.only(*ORDERED_FIELDS).in_bulk(ids)
    return [jobs[pk] for pk in ids if pk in jobs]


def fair_order_ids(queue: str, now: dt.datetime | None = None) -> list[int]:
    """:func:`fair_order`'s ids: the order needs only each job's owner, priority and age, so no job is read whole."""
    now = now or timezone.now()
    waiting = (
        lifecycle.ready(now)
        .filter(queue=queue, dispatched_at__isnull=True)
        .annotate(turn_of=_owners())
        .order_by("-priority", "queued_at", "pk")
        .values_list("pk", "turn_of", "queued_at")
    )
    by_owner: dict[int, list[tuple[int, dt.datetime]]] = {}
    for pk, owner, queued_at in waiting:
        by_owner.setdefault(owner, []).append((pk, queued_at))
    if not by_owner:
        return []
    load: dict[int, int] = {owner: 0 for owner in by_owner}
    active = Job.objects.filter(queue=queue).filter(
        Q(status=Job.Status.RUNNING) | Q(status__in=WAITING, dispatched_at__isnull=False)
    )
    # Only each active job's owner is read: building every running job as a model was most of a dispatch.
    for owner in active.annotate(turn_of=_owners()).values_list("turn_of", flat=True):
        if owner in load:
            load[owner] += 1
    heap = [(load[owner], jobs[0][1], owner) for owner, jobs in by_owner.items()]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        taken, _, owner = heapq.heappop(heap)
        jobs = by_owner[owner]
        order.append(jobs.pop(0)[0])
        if jobs:
            heapq.heappush(heap, (taken + 1, jobs[0][1], owner))
    return order


def _read_in_turn(ids: list[int], chunk: int = 32) -> Iterator[Job]:
    """The jobs of ``ids``, in that order, read ``chunk`` at a time: a dispatch stops at the first few, once the free
    slots are taken, and reading all of a long queue's jobs (their specs) was most of each dispatch's time."""
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        jobs = Job.objects.only(*ORDERED_FIELDS).in_bulk(part)
        yield from (jobs[pk] for pk in part if pk in jobs)


def typical_duration_s(kind: str, queue: str, sample: int = 50) -> float:
    """The median run time of the last ``sample`` successful jobs of this kind and queue, or a default."""
    finished = (
        Job.objects.filter(kind=kind, queue=queue, status=Job.Status.SUCCEEDED, started_at__isnull=False)
        .exclude(finished_at__isnull=True)
        .order_by("-finished_at")
        .values_list("started_at", "finished_at")[:sample]
    )
    durations = [(end - start).total_seconds() for start, end in finished]
    return statistics.median(durations) if durations else DEFAULT_DURATION_S.get(kind, 600.0)


def places(queue: str, stale_after_s: float, now: dt.datetime | None = None) -> dict[int, Place]:
    """Every waiting job of ``queue``: its position (sent ones first) and an estimated start.

    The first jobs take the free slots and start now; the rest start in waves of the queue's
    capacity, the first when the running jobs are expected to end (the median of their
    workers' ETAs) and each later one a typical duration after the one before. No live worker
    on the queue means no estimate.
    """
    now = now or timezone.now()
    sent = list(
        Job.objects.filter(queue=queue, status__in=WAITING, dispatched_at__isnull=False).order_by("dispatched_at", "pk")
    )
    order = sent + fair_order(queue, now)
    live_seats = seats(queue, stale_after_s, now)
    slots = capacity(queue, stale_after_s, now)
    running = Job.objects.filter(queue=queue, status=Job.Status.RUNNING).exclude(lifecycle.in_intake())
    free_now = max(0, slots - running.count())
    etas = [eta for eta in running.values_list("eta_s", flat=True) if eta is not None]
    durations: dict[str, float] = {}
    result: dict[int, Place] = {}
    for index, job in enumerate(order):
        if not slots or not placeable(job, live_seats):  # no live worker can hold it: no start to promise
            result[job.pk] = Place(index + 1, None)
            continue
        duration = durations.setdefault(job.kind, typical_duration_s(job.kind, queue))
        if index < free_now:
            start = 0.0
        else:
            wave = (index - free_now) // slots
            start = (statistics.median(etas) if etas else duration) + wave * duration
        result[job.pk] = Place(index + 1, now + dt.timedelta(seconds=start))
    return result


def dispatch(send: Callable[[Job], None], stale_after_s: float, redispatch_after_s: float, now=None) -> list[int]:
    """Send each queue's next jobs to the free slots of the live workers that can hold them; the ids sent.

    ``send`` puts one job's message on the broker queue ``job.sent_to`` (the seat chosen for it, see the
    module docstring). A job is marked sent by a conditional UPDATE first, so two dispatchers running at
    once never send the same job twice.
    """
    now = now or timezone.now()
    Job.objects.filter(status__in=WAITING, dispatched_at__lt=now - dt.timedelta(seconds=redispatch_after_s)).update(
        dispatched_at=None
    )
    sent: list[int] = []
    live = list(live_workers(stale_after_s, now))  # once for every queue: each reads the same rows
    for queue in queues_in_use():
        live_seats = seats(queue, stale_after_s, now, live)
        free = free_slots(queue, stale_after_s, now, live)
        if not any(count > 0 for count in free.values()):  # every slot taken: nothing to order, nothing to send
            continue
        for job in _read_in_turn(fair_order_ids(queue, now)):
            if not any(count > 0 for count in free.values()):
                break
            fits = (q for q, seat in live_seats.items() if free[q] > 0 and (seat is None or seat.holds(job.need)))
            target = next(fits, None)  # the smallest free seat that holds it
            if target is None:  # no free worker can hold it: the jobs behind it may still fit
                continue
            first = Coalesce(F("first_sent_at"), Value(now))
            if Job.objects.filter(pk=job.pk, dispatched_at__isnull=True, status__in=WAITING).update(
                dispatched_at=now, first_sent_at=first, sent_to=target
            ):
                job.sent_to = target
                free[target] -= 1
                send(job)
                sent.append(job.pk)
    return sent
