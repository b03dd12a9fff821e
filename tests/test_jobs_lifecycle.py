"""Job states change only through conditional UPDATEs: a redelivered, reaped or cancelled delivery changes nothing."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from jobs import lifecycle
from jobs.lifecycle import Progress, Verdict
from jobs.models import Job
from registry.models import Dataset, LanguageModel
from submissions.models import Submission
from submissions.signals import submission_status

pytestmark = pytest.mark.django_db


@pytest.fixture
def model(alice):
    return LanguageModel.objects.create(slug="m", name="M", owner=alice)


@pytest.fixture
def submission(alice, model):
    return Submission.objects.create(submitter=alice, language_model=model)


def new_job(submission, kind=Job.Kind.FINETUNE, after=(), **values) -> Job:
    job = Job.objects.create(
        submission=submission, language_model=submission.language_model, kind=kind,
        dataset=Dataset.objects.get(slug="demo-ner"), **values,
    )  # fmt: skip
    job.depends_on.add(*after)
    return job


def test_only_one_of_two_deliveries_claims_a_job_and_a_wrong_token_claims_nothing(submission):
    job = new_job(submission)
    assert lifecycle.claim(job.pk, "not-the-token", "d0", "w0") is None
    first = lifecycle.claim(job.pk, job.token, "d1", "w1")
    assert first is not None and first.status == Job.Status.RUNNING and first.attempts == 1 and first.worker == "w1"
    assert lifecycle.claim(job.pk, job.token, "d2", "w2") is None  # a redelivery of the same message
    assert Job.objects.get(pk=job.pk).claim == "d1"


def test_a_job_is_claimable_only_once_every_dependency_has_succeeded(submission):
    pretrain = new_job(submission, kind=Job.Kind.PRETRAIN)
    finetune = new_job(submission, after=[pretrain])
    assert list(lifecycle.ready()) == [pretrain]
    assert lifecycle.claim(finetune.pk, finetune.token, "d", "w") is None
    assert lifecycle.claim(pretrain.pk, pretrain.token, "p", "w") is not None
    assert lifecycle.succeed(pretrain.pk, pretrain.token, "p")
    assert lifecycle.claim(finetune.pk, finetune.token, "d", "w") is not None


def test_heartbeats_record_progress_and_tell_a_delivery_that_lost_its_job_to_stop(submission):
    job = new_job(submission)
    lifecycle.claim(job.pk, job.token, "d1", "w1")
    assert lifecycle.heartbeat(job.pk, job.token, "d1", Progress(3, 10, 0.5, 42.0), "step 3\n") == Verdict.CONTINUE
    job.refresh_from_db()
    assert (job.progress_step, job.progress_total, job.progress_loss, job.eta_s) == (3, 10, 0.5, 42.0)
    assert job.log == "step 3\n" and job.progress == 0.3
    assert lifecycle.heartbeat(job.pk, job.token, "someone-else", Progress(9, 10)) == Verdict.STOP
    assert lifecycle.cancel(Job.objects.filter(pk=job.pk)) == 1
    assert lifecycle.heartbeat(job.pk, job.token, "d1", Progress(4, 10)) == Verdict.STOP
    assert not lifecycle.succeed(job.pk, job.token, "d1")  # results of a cancelled job are not accepted
    assert Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED


def test_the_log_keeps_only_its_tail(submission):
    job = new_job(submission)
    lifecycle.claim(job.pk, job.token, "d", "w")
    lifecycle.heartbeat(job.pk, job.token, "d", log="the first line\n")
    lifecycle.heartbeat(job.pk, job.token, "d", log="x" * lifecycle.LOG_TAIL_CHARS + "END")
    log = Job.objects.get(pk=job.pk).log
    assert len(log) == lifecycle.LOG_TAIL_CHARS and log.endswith("END") and "first line" not in log


def test_a_platform_failure_is_retried_with_backoff_then_failed_refunded_and_its_dependents_failed(submission):
    job = new_job(submission, max_attempts=2)
    record = new_job(submission, kind=Job.Kind.SCORE, after=[job])
    lifecycle.claim(job.pk, job.token, "d1", "w")
    assert lifecycle.fail(job.pk, job.token, "d1", "broker went away", Job.Cause.PLATFORM) == Job.Status.RETRYING
    job.refresh_from_db()
    assert job.status == Job.Status.RETRYING and job.claim == "" and job.error == "broker went away"
    assert job.not_before > timezone.now() + dt.timedelta(seconds=lifecycle.backoff_s(1) - 5)
    assert lifecycle.claim(job.pk, job.token, "d2", "w") is None  # still backing off
    Job.objects.filter(pk=job.pk).update(not_before=timezone.now())
    assert lifecycle.claim(job.pk, job.token, "d2", "w").attempts == 2
    assert lifecycle.fail(job.pk, job.token, "d2", "broker went away again", Job.Cause.PLATFORM) == Job.Status.FAILED
    record.refresh_from_db()
    submission.refresh_from_db()
    assert record.status == Job.Status.FAILED and f"job #{job.pk} failed" in record.error
    assert submission.refunded
    assert [lifecycle.backoff_s(n) for n in (1, 2, 3, 10)] == [30.0, 60.0, 120.0, lifecycle.BACKOFF_MAX_S]


def test_a_failure_of_the_submission_is_final_at_once_and_charged(submission):
    job = new_job(submission)
    lifecycle.claim(job.pk, job.token, "d1", "w")
    assert lifecycle.fail(job.pk, job.token, "d1", "no weights in the checkpoint", "submission") == Job.Status.FAILED
    job.refresh_from_db()
    submission.refresh_from_db()
    assert job.failure_cause == Job.Cause.SUBMISSION and job.error == "no weights in the checkpoint"
    assert not submission.refunded
    assert lifecycle.fail(job.pk, job.token, "d1", "again", Job.Cause.SUBMISSION) is None


def test_the_reaper_requeues_the_jobs_of_silent_workers_and_leaves_live_ones_alone(submission):
    silent, live = new_job(submission), new_job(submission)
    for job, delivery in ((silent, "d-silent"), (live, "d-live")):
        lifecycle.claim(job.pk, job.token, delivery, "w")
    Job.objects.filter(pk=silent.pk).update(last_heartbeat=timezone.now() - dt.timedelta(seconds=61))
    assert lifecycle.reap(stale_after_s=60) == [silent.pk]
    silent.refresh_from_db()
    assert silent.status == Job.Status.RETRYING and "stopped heartbeating" in silent.error
    assert silent.not_before is None  # its worker vanished, the attempt did not fail: another may start it now
    assert silent.pk in [job.pk for job in lifecycle.ready()]
    assert Job.objects.get(pk=live.pk).status == Job.Status.RUNNING
    # The silent worker comes back: it no longer holds the job.
    assert lifecycle.heartbeat(silent.pk, silent.token, "d-silent") == Verdict.STOP


def test_a_job_past_its_time_limit_fails_charged_and_one_that_never_found_a_worker_fails_refunded(submission):
    slow = new_job(submission, time_limit_s=10)
    lifecycle.claim(slow.pk, slow.token, "d", "w")
    Job.objects.filter(pk=slow.pk).update(started_at=timezone.now() - dt.timedelta(seconds=11))
    waiting = new_job(submission)
    Job.objects.filter(pk=waiting.pk).update(queued_at=timezone.now() - dt.timedelta(days=8))
    assert sorted(lifecycle.reap(stale_after_s=60, queue_limit_s=7 * 24 * 3600)) == sorted([slow.pk, waiting.pk])
    slow.refresh_from_db()
    waiting.refresh_from_db()
    assert slow.status == Job.Status.FAILED and slow.failure_cause == Job.Cause.SUBMISSION
    assert "time limit of 10 s" in slow.error
    assert waiting.status == Job.Status.FAILED and waiting.failure_cause == Job.Cause.PLATFORM
    assert Submission.objects.get(pk=submission.pk).refunded


def test_cancelling_a_job_cancels_what_waits_on_it_and_requeueing_brings_both_back(submission):
    pretrain = new_job(submission, kind=Job.Kind.PRETRAIN)
    finetune = new_job(submission, after=[pretrain])
    record = new_job(submission, kind=Job.Kind.SCORE, after=[finetune])
    assert lifecycle.cancel(Job.objects.filter(pk=pretrain.pk)) == 3
    assert set(Job.objects.values_list("status", flat=True)) == {Job.Status.CANCELLED}
    assert lifecycle.requeue(Job.objects.filter(pk=pretrain.pk)) == 3
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert statuses == {pretrain.pk: "queued", finetune.pk: "queued", record.pk: "queued"}
    assert list(lifecycle.ready()) == [pretrain]


def status_of(submission: Submission) -> str:
    submission.refresh_from_db()
    return submission.status


def test_a_plugins_failure_ends_the_job_at_its_first_attempt_is_refunded_and_counted_against_the_plugin(submission):
    job = new_job(submission)
    record = new_job(submission, kind=Job.Kind.SCORE, after=[job])
    lifecycle.claim(job.pk, job.token, "d1", "w")
    error = "plugin acme: metric 'acme-zero' raised ZeroDivisionError: division by zero at acme/metrics.py:7"
    assert lifecycle.fail(job.pk, job.token, "d1", error, Job.Cause.PLUGIN, plugin="acme") == Job.Status.FAILED
    job.refresh_from_db()
    assert (job.status, job.attempts, job.failure_cause, job.error) == (Job.Status.FAILED, 1, "plugin", error)
    assert job.blamed_plugin == "acme"
    record.refresh_from_db()
    assert record.status == Job.Status.FAILED and record.failure_cause == Job.Cause.PLUGIN
    submission.refresh_from_db()
    # Not the submitter's fault: refunded, like the platform's.
    assert submission.status == Submission.Status.FAILED and submission.refunded


def test_a_submission_is_pending_until_a_job_starts_then_running_until_all_end_then_finished(submission):
    first = new_job(submission)
    second = new_job(submission)
    record = new_job(submission, kind=Job.Kind.SCORE, after=[first, second])
    assert status_of(submission) == Submission.Status.PENDING
    lifecycle.claim(first.pk, first.token, "d1", "w")
    assert status_of(submission) == Submission.Status.RUNNING
    lifecycle.succeed(first.pk, first.token, "d1")
    assert status_of(submission) == Submission.Status.RUNNING  # second and record still wait
    for job in (second, record):
        lifecycle.claim(job.pk, job.token, f"d{job.pk}", "w")
        lifecycle.succeed(job.pk, job.token, f"d{job.pk}")
    assert status_of(submission) == Submission.Status.FINISHED and submission.status_text == "Finished"


def test_a_submission_whose_job_fails_through_the_platform_says_it_was_refunded(submission):
    job = new_job(submission, max_attempts=1)
    lifecycle.claim(job.pk, job.token, "d1", "w")
    lifecycle.fail(job.pk, job.token, "d1", "the worker vanished", Job.Cause.PLATFORM)
    assert status_of(submission) == Submission.Status.FAILED
    assert submission.refunded and submission.status_text == "failed (refunded: the platform's fault)"


def test_a_retrying_job_keeps_its_submission_running_and_a_reaped_one_too(submission):
    job = new_job(submission)
    lifecycle.claim(job.pk, job.token, "d1", "w")
    Job.objects.filter(pk=job.pk).update(last_heartbeat=timezone.now() - dt.timedelta(seconds=120))
    assert lifecycle.reap(stale_after_s=30) == [job.pk]
    assert Job.objects.get(pk=job.pk).status == Job.Status.RETRYING
    assert status_of(submission) == Submission.Status.RUNNING


def test_a_cancelled_submission_says_so_and_a_requeued_one_waits_again(submission):
    job = new_job(submission)
    record = new_job(submission, kind=Job.Kind.SCORE, after=[job])
    lifecycle.claim(job.pk, job.token, "d1", "w")
    lifecycle.cancel(Job.objects.filter(pk=job.pk))
    assert Job.objects.get(pk=record.pk).status == Job.Status.CANCELLED
    assert status_of(submission) == Submission.Status.CANCELLED
    lifecycle.requeue(Job.objects.filter(pk=job.pk))
    assert status_of(submission) == Submission.Status.PENDING  # both queued again, none started


def test_a_submission_with_a_failed_and_a_cancelled_job_failed():
    counts = {Job.Status.FAILED: 1, Job.Status.CANCELLED: 2, Job.Status.SUCCEEDED: 3}
    assert submission_status(counts) == Submission.Status.FAILED
    assert submission_status({Job.Status.RETRYING: 1}) == Submission.Status.RUNNING
    assert submission_status({Job.Status.QUEUED: 4}) == Submission.Status.PENDING
    assert submission_status({}) == Submission.Status.PENDING
