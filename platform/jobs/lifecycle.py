"""Every change of a job's state, each one a conditional UPDATE on the job's row.

A message can be delivered twice (``acks_late`` redelivers a task whose worker died; the
reaper re-sends a job whose worker stopped heartbeating), so no step trusts that it is the only
one running. A worker *claims* a job by moving it from waiting to running under a delivery id;
every later write (heartbeat, progress, success, failure) is filtered on that claim, so a
delivery that lost its claim changes nothing and is told to stop. Cancelling is the same
mechanism seen from the other side: the job leaves ``running`` and the next heartbeat answers
"stop".

Failures are told apart by cause. The platform's own (a lost worker, a broker restart, a time
limit hit while the job waited) are retried with exponential back-off up to ``max_attempts``
and, if final, refunded to the submitter's quota; the submission's (a malformed checkpoint) fails
at once, keeps its error and is charged; a plugin's (contributed code that raised, or a plugin
whose installed code is not the code the job pins: it would fail again) fails at once, is
refunded, and is counted against the plugin (``blamed_plugin``). Every change is announced
(:mod:`jobs.signals`), so the submissions app keeps each submission's status and refund in line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from jobs import attempts, signals
from jobs.models import FINISHED, WAITING, Job, Worker

LOG_TAIL_CHARS = 20_000
# When a running job's step last moved: in the cache (shared by the site's processes where BIOLM_CACHE_URL is set).
ADVANCED_TTL_S = 7 * 24 * 3600
BACKOFF_BASE_S = 30.0
BACKOFF_MAX_S = 15 * 60.0
# The claim of a job whose worker delivered its outputs and handed it to the platform's CPU worker to check.
INTAKE_PREFIX = "intake:"
INTAKE_WORKER = "the platform (checking the outputs)"


class Verdict:
    """What a heartbeat tells the worker."""

    CONTINUE = "continue"
    STOP = "stop"


class DeliveryLost(Exception):
    """The delivery no longer held its job when it came to record success: what it wrote is rolled back."""


@dataclass(frozen=True)
class Progress:
    step: int
    total: int
    loss: float | None = None
    eta_s: float | None = None


def follow_submissions(job_ids: Iterable[int]) -> None:
    """Announce that ``job_ids`` changed state, so the submissions they belong to follow (:mod:`jobs.signals`).

    Every change of state passes here, so here the attempts whose delivery no longer holds its job end.
    """
    ids = list(job_ids)
    attempts.end_released(ids)
    signals.jobs_changed.send(sender=Job, job_ids=ids)


def backoff_s(attempts: int) -> float:
    """Seconds to wait before attempt ``attempts + 1``: 30 s, 60 s, 120 s, ... at most 15 min."""
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** max(0, attempts - 1))


def blocked_by_dependencies() -> Exists:
    """True for a job with a dependency that has not succeeded (an expression for filters)."""
    through = Job.depends_on.through
    return Exists(through.objects.filter(from_job=OuterRef("pk")).exclude(to_job__status=Job.Status.SUCCEEDED))


def ready(now: dt.datetime | None = None) -> QuerySet[Job]:
    """Waiting jobs whose dependencies all succeeded and whose back-off is over."""
    now = now or timezone.now()
    return (
        Job.objects.filter(status__in=WAITING)
        .filter(Q(not_before__isnull=True) | Q(not_before__lte=now))
        .exclude(blocked_by_dependencies())
    )


def claim(job_id: int, token: str, delivery: str, worker: str | Worker, seen: Job | None = None) -> Job | None:
    """Take the job for this delivery, or None if it is not ready, not ours to take or already taken.

    ``worker`` is the claiming worker's row when the caller has read it, else its name. ``seen`` is the job as
    the caller read it just before: the claim then holds only if no other attempt began in between, and that
    object, updated, is returned instead of a second read (a claim per job, from every GPU host, costs the web).
    """
    now = timezone.now()
    name = worker.name if isinstance(worker, Worker) else worker
    changes = {"status": Job.Status.RUNNING, "claim": delivery, "worker": name, "started_at": now,
               "last_heartbeat": now, "finished_at": None, "eta_s": None, "first_sent_at": None}  # fmt: skip
    same_attempt = {} if seen is None else {"attempts": seen.attempts}
    taken = ready(now).filter(pk=job_id, token=token, **same_attempt).update(attempts=F("attempts") + 1, **changes)
    if not taken:
        return None
    if seen is None:
        job = Job.objects.get(pk=job_id)
    else:
        job = seen
        for field, value in changes.items():
            setattr(job, field, value)
        job.attempts += 1
    attempts.start(job, delivery, worker, now)
    follow_submissions([job_id])
    return job


def hand_back(job_id: int, token: str) -> bool:
    """A worker that cannot hold the waiting job gives its message back: no attempt is charged, and the job is
    sent again at the next dispatch, to a seat that holds it (:mod:`jobs.dispatch`). False if it was not waiting."""
    return bool(Job.objects.filter(pk=job_id, token=token, status__in=WAITING).update(dispatched_at=None, sent_to=""))


def hand_over(job_id: int, token: str, delivery: str, delivery_id: str) -> str | None:
    """The worker's delivery gives the running job to the platform, which checks its outputs off the web request.

    The job keeps running under a new claim (``intake:<delivery_id>``) that only the platform's check
    holds: the GPU worker is free at once, and a late write from its old delivery changes nothing.
    Returns the new claim, or None if the delivery no longer held the job.
    """
    claim = f"{INTAKE_PREFIX}{delivery_id}"[:64]
    moved = _held(job_id, token, delivery).update(claim=claim, worker=INTAKE_WORKER, last_heartbeat=timezone.now())
    if not moved:
        return None
    follow_submissions([job_id])  # the worker's attempt ends here: checking the outputs holds no GPU
    return claim


def in_intake() -> Q:
    """Running jobs the platform is checking: they hold no worker's slot."""
    return Q(status=Job.Status.RUNNING, claim__startswith=INTAKE_PREFIX)


def _held(job_id: int, token: str, delivery: str) -> QuerySet[Job]:
    return Job.objects.filter(pk=job_id, token=token, claim=delivery, status=Job.Status.RUNNING)


def holds(job_id: int, token: str, delivery: str, seen: Job | None = None) -> bool:
    """Whether the delivery still holds the running job (uploads from any other are refused); from ``seen``, the
    job as the caller just read it, when given (what changes state after that is caught by the change's own
    filter, as :func:`succeed`'s)."""
    if seen is not None:
        return bool(delivery) and seen.claim == delivery and seen.status == Job.Status.RUNNING
    return bool(delivery) and _held(job_id, token, delivery).exists()


def heartbeat(
    job_id: int, token: str, delivery: str, progress: Progress | None = None, log: str = "", seen: Job | None = None
) -> str:
    """Record that the delivery is alive (and how far it is); STOP if it no longer holds the job.

    ``seen`` is the job as the caller just read it, its progress fields included (a beat every 5 s of every
    running job: the progress is then not read a second time).
    """
    now = timezone.now()
    values: dict = {"last_heartbeat": now}
    if progress is not None:
        values.update(
            progress_step=progress.step,
            progress_total=progress.total,
            progress_loss=progress.loss,
            eta_s=_steady_eta(job_id, token, progress, now, seen),
        )
    if not log:
        return Verdict.CONTINUE if _held(job_id, token, delivery).update(**values) else Verdict.STOP
    with transaction.atomic():
        job = _held(job_id, token, delivery).select_for_update().only("log").first()
        if job is None:
            return Verdict.STOP
        values["log"] = (job.log + log)[-LOG_TAIL_CHARS:]
        _held(job_id, token, delivery).update(**values)
    return Verdict.CONTINUE


def _steady_eta(job_id: int, token: str, progress: Progress, now: dt.datetime, seen: Job | None) -> float | None:
    """The ETA to record: never more than the last one while the job advances through the same steps.

    A worker's estimate follows its pace, which wobbles; a waiting person reads a number that grows
    while the bar moves as a broken promise. So while the step moves forward within the same total, the
    estimate is the smaller of the new and the last one. It also notes when the step last moved
    (:func:`advanced_at`), which the submission page shows as "stalled since" when that is long ago.
    """
    fields = ("progress_step", "progress_total", "eta_s")
    if seen is not None:
        before = {field: getattr(seen, field) for field in fields}
    else:
        before = Job.objects.filter(pk=job_id).values(*fields).first()
    same_run = before is not None and before["progress_total"] == progress.total
    if not same_run or progress.step != before["progress_step"]:
        cache.set(advanced_key(job_id, token), now.timestamp(), ADVANCED_TTL_S)
    if same_run and progress.step >= before["progress_step"] and None not in (before["eta_s"], progress.eta_s):
        return min(progress.eta_s, before["eta_s"])
    return progress.eta_s


def advanced_key(job_id: int, token: str) -> str:
    """The cache key of when the job's step last moved: its id and its token, so no other job's note is read."""
    return f"jobs:advanced:{job_id}:{token}"


def advanced_at(job: Job) -> dt.datetime | None:
    """When the running job's step last moved, as its heartbeats told; None when not known (no heartbeat yet
    with progress, or the cache was emptied: the claim is then not made)."""
    stamp = cache.get(advanced_key(job.pk, job.token))
    return dt.datetime.fromtimestamp(stamp, tz=dt.UTC) if stamp is not None else None


def succeed(job_id: int, token: str, delivery: str) -> bool:
    """Mark the job done; False if the delivery had lost it (its results must then be discarded)."""
    now = timezone.now()
    done = _held(job_id, token, delivery).update(
        status=Job.Status.SUCCEEDED, finished_at=now, last_heartbeat=now, error="", failure_cause=Job.Cause.NONE
    )
    if done:
        follow_submissions([job_id])
    return bool(done)


@contextlib.contextmanager
def succeeding(job_id: int, token: str, delivery: str) -> Iterator[None]:
    """The block's writes and the job's success commit together, or neither does.

    A platform job that wrote its results and then lost its database connection (or its claim)
    before it was marked done used to leave those results standing under a job that was retried
    and could end failed: a failed score job beside the result it was said not to have recorded.
    In one transaction, a delivery that was reaped or cancelled meanwhile raises
    :class:`DeliveryLost` at the end and its writes are rolled back; one whose connection dropped
    rolls back with it. The job row is only locked by the final UPDATE, so heartbeats from
    another connection wait milliseconds, not the block's length.
    """
    with transaction.atomic():
        yield
        if not succeed(job_id, token, delivery):
            raise DeliveryLost(f"job #{job_id}: delivery {delivery} no longer holds the job; its writes are undone")


def fail(job_id: int, token: str, delivery: str, error: str, cause: str, plugin: str = "") -> str | None:
    """End the delivery's attempt: retried later if the platform caused it and attempts remain.

    ``plugin`` names the plugin a ``plugin`` failure is counted against. Returns the job's new
    status, or None if the delivery no longer held the job.
    """
    with transaction.atomic():
        job = _held(job_id, token, delivery).select_for_update().first()
        if job is None:
            return None
        status = _after_failure(job, error, cause, timezone.now(), plugin=plugin)
    if status == Job.Status.FAILED:
        fail_dependents([job.pk], f"job #{job.pk} failed", cause)
    follow_submissions([job.pk])
    return status


def _after_failure(job: Job, error: str, cause: str, now: dt.datetime, retry: bool = True, wait: bool = True,
                   plugin: str = "") -> str:  # fmt: skip
    """``wait``: back off before the retry (False when the worker was lost, not the attempt: another may start now)."""
    if retry and cause == Job.Cause.PLATFORM and job.attempts < job.max_attempts:
        Job.objects.filter(pk=job.pk).update(
            status=Job.Status.RETRYING,
            claim="",
            worker="",
            error=error,
            failure_cause=cause,
            queued_at=now,
            dispatched_at=None,
            first_sent_at=None,
            not_before=now + dt.timedelta(seconds=backoff_s(job.attempts)) if wait else None,
        )
        return Job.Status.RETRYING
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED, claim="", error=error, failure_cause=cause, finished_at=now,
        blamed_plugin=plugin if cause == Job.Cause.PLUGIN else "",
    )  # fmt: skip
    signals.job_failed_for_good.send(
        sender=Job, job=job, cause=cause, plugin=plugin if cause == Job.Cause.PLUGIN else ""
    )
    return Job.Status.FAILED


def fail_dependents(job_ids: Iterable[int], reason: str, cause: str) -> int:
    """Jobs downstream of a final failure can never run: fail them too, with the same cause."""
    failed, frontier = 0, list(job_ids)
    while frontier:
        downstream = Job.objects.filter(depends_on__in=frontier, status__in=WAITING).distinct()
        ids = list(downstream.values_list("pk", flat=True))
        failed += Job.objects.filter(pk__in=ids, status__in=WAITING).update(
            status=Job.Status.FAILED,
            error=f"not run: {reason}",
            failure_cause=cause,
            finished_at=timezone.now(),
        )
        frontier = ids
    return failed


def cancel(jobs: QuerySet[Job]) -> int:
    """Cancel waiting and running jobs (a running loop stops at its next heartbeat) and what waits on them."""
    ids = list(jobs.exclude(status__in=FINISHED).values_list("pk", flat=True))
    cancelled = 0
    frontier = ids
    while frontier:
        cancelled += (
            Job.objects.filter(pk__in=frontier)
            .exclude(status__in=FINISHED)
            .update(status=Job.Status.CANCELLED, claim="", finished_at=timezone.now())
        )
        frontier = list(
            Job.objects.filter(depends_on__in=frontier).exclude(status__in=FINISHED).values_list("pk", flat=True)
        )
    follow_submissions(ids)
    return cancelled


def requeue(jobs: QuerySet[Job], reset_attempts: bool = True) -> int:
    """Put finished or stuck jobs back in their queue (an operator's retry), with their dependents."""
    now = timezone.now()
    ids = list(jobs.values_list("pk", flat=True))
    values: dict = {
        "status": Job.Status.QUEUED,
        "claim": "",
        "worker": "",
        "error": "",
        "failure_cause": Job.Cause.NONE,
        "queued_at": now,
        "dispatched_at": None,
        "first_sent_at": None,
        "not_before": None,
        "finished_at": None,
    }
    if reset_attempts:
        values["attempts"] = 0
    count = Job.objects.filter(pk__in=ids).update(**values)
    downstream = Job.objects.filter(depends_on__in=ids, status__in=(Job.Status.FAILED, Job.Status.CANCELLED))
    if downstream.exists():
        count += requeue(downstream.distinct(), reset_attempts)
    follow_submissions(ids)
    return count


def reap(
    stale_after_s: float, queue_limit_s: float | None = None, now: dt.datetime | None = None,
    intake_wait_s: float | None = None,
) -> list[int]:  # fmt: skip
    """Jobs whose worker went silent, that ran past their time limit or waited too long leave their state.

    * A silent worker is the platform's failure: the job is retried at once (the attempt did not
      fail, its worker vanished, so another worker may take it now) or, out of attempts, failed
      and refunded.
    * A job past its time limit is failed at once and charged: its spec asked for more work
      than one attempt may do, and running it again would end the same way.
    * A job still waiting after ``queue_limit_s`` is failed and refunded: the platform never
      found it a worker.
    * A job handed to the platform's check (:func:`hand_over`) is silent while its check waits
      behind other CPU work: it counts as lost only after ``intake_wait_s`` (default: the
      ordinary silence), and is then retried like any lost worker's job.

    Returns the ids of the jobs it moved.
    """
    now = now or timezone.now()
    checking = Q(claim__startswith=INTAKE_PREFIX)
    waited = max(stale_after_s, intake_wait_s or 0)
    silent = (
        (~checking & Q(last_heartbeat__lt=now - dt.timedelta(seconds=stale_after_s)))
        | (checking & Q(last_heartbeat__lt=now - dt.timedelta(seconds=waited)))
        | Q(last_heartbeat__isnull=True)
    )
    moved = []
    for job in Job.objects.filter(status=Job.Status.RUNNING).filter(silent):
        reason = f"worker {job.worker or '?'} stopped heartbeating (silent for more than {stale_after_s:g} s)"
        if job.claim.startswith(INTAKE_PREFIX):
            reason = f"the platform did not finish checking its outputs (silent for more than {waited:g} s)"
        if _release(job, reason, Job.Cause.PLATFORM, now, retry=True, wait=False):
            moved.append(job.pk)
    for job in Job.objects.filter(status=Job.Status.RUNNING, started_at__isnull=False):
        if job.started_at + dt.timedelta(seconds=job.time_limit_s) < now:
            reason = f"ran past its time limit of {job.time_limit_s} s"
            if _release(job, reason, Job.Cause.SUBMISSION, now, retry=False):
                moved.append(job.pk)
    if queue_limit_s is not None:
        expired = Job.objects.filter(status__in=WAITING, queued_at__lt=now - dt.timedelta(seconds=queue_limit_s))
        for job in expired:
            reason = f"waited more than {queue_limit_s:g} s for a worker"
            with transaction.atomic():
                held = Job.objects.select_for_update().filter(pk=job.pk, status__in=WAITING).first()
                if held is None:
                    continue
                _after_failure(held, reason, Job.Cause.PLATFORM, now, retry=False)
            fail_dependents([job.pk], f"job #{job.pk} failed", Job.Cause.PLATFORM)
            moved.append(job.pk)
    follow_submissions(moved)
    return moved


def _release(job: Job, reason: str, cause: str, now: dt.datetime, retry: bool, wait: bool = True) -> bool:
    with transaction.atomic():
        held = Job.objects.select_for_update().filter(pk=job.pk, claim=job.claim, status=Job.Status.RUNNING).first()
        if held is None:
            return False
        status = _after_failure(held, reason, cause, now, retry, wait)
    if status == Job.Status.FAILED:
        fail_dependents([job.pk], f"job #{job.pk} failed", cause)
    return True
