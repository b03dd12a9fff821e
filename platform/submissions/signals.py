"""A submission follows its jobs: its status, its refund and the e-mail when it ends.

The jobs app announces what happened to jobs (:mod:`jobs.signals`); these receivers, connected
when the app is ready, bring the submissions in line. A failure that is not the submitter's (the
platform's, or a plugin's code) is refunded: it does not count against their daily quota (the rule is
:mod:`submissions.refunds`').
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from django.db import transaction
from django.db.models import Count
from django.dispatch import receiver
from django.utils import timezone

from jobs.models import Job
from jobs.signals import job_failed_for_good, jobs_changed
from submissions import notifications
from submissions.models import Submission
from submissions.refunds import refund_for


def submission_status(counts: dict[str, int]) -> str:
    """A submission's status from how many of its jobs are in each state.

    ``pending`` until a job starts, ``running`` while any job is unfinished, then ``failed`` if a
    job failed (the submission's ``refunded`` says whether it was refunded), ``cancelled`` if one
    was cancelled, else ``finished``.
    """
    unfinished = sum(counts.get(state, 0) for state in (Job.Status.QUEUED, Job.Status.RETRYING, Job.Status.RUNNING))
    if unfinished:
        started = sum(counts.values()) - counts.get(Job.Status.QUEUED, 0)
        return Submission.Status.RUNNING if started else Submission.Status.PENDING
    if counts.get(Job.Status.FAILED):
        return Submission.Status.FAILED
    if counts.get(Job.Status.CANCELLED):
        return Submission.Status.CANCELLED
    return Submission.Status.FINISHED if counts else Submission.Status.PENDING


def follow(job_ids: Iterable[int]) -> None:
    """Bring the status of the submissions of ``job_ids`` in line with their jobs; e-mail those that ended."""
    submission_ids = set(
        Job.objects.filter(pk__in=list(job_ids), submission__isnull=False).values_list("submission_id", flat=True)
    )
    for submission_id in submission_ids:
        counts = dict(
            Job.objects.filter(submission_id=submission_id)
            .values_list("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
        status = submission_status(counts)
        changed = (
            Submission.objects.filter(pk=submission_id)
            .exclude(status=status)
            .update(status=status, updated_at=timezone.now())
        )
        if changed and status in notifications.ENDED:
            transaction.on_commit(partial(notifications.notify_ended, [submission_id]))


@receiver(jobs_changed, dispatch_uid="submissions.follow_jobs")
def _jobs_changed(sender, job_ids: list[int], **_: object) -> None:
    follow(job_ids)


@receiver(job_failed_for_good, dispatch_uid="submissions.refund")
def _job_failed(sender, job: Job, cause: str, plugin: str = "", **_: object) -> None:
    """The platform's and a plugin's failures are not the submitter's: the submission is refunded, with its cause."""
    refund = refund_for(cause, plugin)
    if refund.refunded and job.submission_id:
        Submission.objects.filter(pk=job.submission_id).update(refunded=True, refund_cause=refund.cause)
