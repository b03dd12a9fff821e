"""A platform job's writes and its success commit together, or neither does.

The fault test that drops every database connection while a submission runs found a score job
that recorded its result, lost its connection before it was marked done, was retried and ended
failed: a failed job beside the result it was said not to have recorded. The handler and the
job's success now share one transaction (:func:`jobs.lifecycle.succeeding`). These tests commit
their rows (``transaction=True``) so that a second connection, standing for the reaper in
another process, sees them.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from jobs import handlers, tasks
from jobs.models import Job
from registry.models import LanguageModel

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("session_rows_restored")]
CPU = "cpu@host"


def elsewhere(write) -> None:
    """Run ``write`` on a connection of its own, as another process would, and commit it."""

    def run() -> None:
        try:
            write()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def recorded(slug: str) -> bool:
    return LanguageModel.objects.filter(slug=slug).exists()


def test_what_a_delivery_wrote_is_undone_when_it_lost_the_job_before_succeeding(monkeypatch, alice, score_job):
    def handler(job: Job) -> handlers.Writer:
        # While it scored, the reaper took the job from this delivery and handed it to another.
        elsewhere(lambda: Job.objects.filter(pk=job.pk).update(claim="d2"))
        return lambda: LanguageModel.objects.create(slug="written-by-the-handler", name="w", owner=alice).slug

    monkeypatch.setattr(handlers, "handler_for", lambda kind: handler)
    assert tasks.execute_platform_job(score_job.pk, score_job.token, "d1", CPU) is None
    assert not recorded("written-by-the-handler")
    score_job.refresh_from_db()
    assert score_job.status == Job.Status.RUNNING and score_job.claim == "d2"


def test_what_a_writer_wrote_before_it_raised_is_undone_and_the_job_is_retried(monkeypatch, alice, score_job):
    def write() -> str:
        LanguageModel.objects.create(slug="written-by-the-handler", name="w", owner=alice)
        raise ConnectionError("the database went away")

    monkeypatch.setattr(handlers, "handler_for", lambda kind: lambda job: write)
    assert tasks.execute_platform_job(score_job.pk, score_job.token, "d1", CPU) == Job.Status.FAILED
    assert not recorded("written-by-the-handler")
    score_job.refresh_from_db()
    assert score_job.status == Job.Status.RETRYING and score_job.failure_cause == Job.Cause.PLATFORM


def test_the_work_runs_outside_a_transaction_and_its_writes_commit_with_the_jobs_success(monkeypatch, alice, score_job):
    in_transaction: dict[str, bool] = {}

    def handler(job: Job) -> handlers.Writer:
        in_transaction["work"] = connection.in_atomic_block  # a long scoring must not hold SQLite's write lock

        def write() -> str:
            in_transaction["write"] = connection.in_atomic_block
            return LanguageModel.objects.create(slug="written-by-the-handler", name="w", owner=alice).slug

        return write

    monkeypatch.setattr(handlers, "handler_for", lambda kind: handler)
    assert tasks.execute_platform_job(score_job.pk, score_job.token, "d1", CPU) == Job.Status.SUCCEEDED
    assert in_transaction == {"work": False, "write": True}
    assert recorded("written-by-the-handler")
    score_job.refresh_from_db()
    assert score_job.status == Job.Status.SUCCEEDED and "written-by-the-handler" in score_job.log
