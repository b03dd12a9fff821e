"""A job that waits says why: above all when no live worker serves its queue (admin, demo terminal, workers panel).

Workers are described by their own rows, as heartbeats and supervisors leave them: live (a recent
heartbeat), silent (none lately) or failing (its supervisor gave up on it, and said why).
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from jobs import dispatch, lifecycle, waiting
from jobs.management.commands.worker import report_give_up
from jobs.models import Job, Worker
from registry.models import Dataset, LanguageModel
from submissions.models import Submission
from submissions.terminal import describe
from workers.runner.processes import ManagedProcess

pytestmark = pytest.mark.django_db
STALE_S = 30


@pytest.fixture
def model(alice):
    return LanguageModel.objects.create(slug="m", name="M", owner=alice)


def new_job(model, kind=Job.Kind.FINETUNE, queue=Job.Queue.GPU, after=()) -> Job:
    submission = Submission.objects.create(submitter=model.owner, language_model=model)
    job = Job.objects.create(submission=submission, language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
                             kind=kind, queue=queue)  # fmt: skip
    job.depends_on.add(*after)
    return job


def silent(name: str, queues: str = "gpu", minutes: int = 5) -> Worker:
    return Worker.objects.create(
        name=name, queues=queues, last_heartbeat=timezone.now() - dt.timedelta(minutes=minutes)
    )


def test_a_job_on_a_queue_without_a_live_worker_says_no_training_worker_is_running(model):
    job = new_job(model)
    assert waiting.reason(job, waiting.queue_states(STALE_S)) == "waiting: no training worker is running"
    silent("gpu0@host")
    dispatch.record_problem("gpu1@host", ["gpu"], "exited with status 2 within 30 s of starting, 5 times in a row")
    note = waiting.reason(job, waiting.queue_states(STALE_S))
    assert note.startswith("waiting: no training worker is running (")
    assert "gpu1@host failing: exited with status 2" in note and "gpu0@host silent for 5" in note


def test_with_a_live_worker_a_job_waits_for_a_slot_its_dependencies_or_its_backoff(model):
    dispatch.record_worker("gpu0@host", ["gpu"])
    dispatch.record_worker("cpu@host", ["cpu"])
    first = new_job(model)
    after = new_job(model, kind=Job.Kind.SCORE, queue=Job.Queue.CPU, after=[first])
    states = waiting.queue_states(STALE_S)
    assert waiting.reason(first, states) == "waiting for a free training worker"
    assert waiting.reason(after, states) == "waiting for the jobs it depends on"
    Job.objects.filter(pk=first.pk).update(
        status=Job.Status.RETRYING, not_before=timezone.now() + dt.timedelta(seconds=40)
    )
    first.refresh_from_db()
    assert waiting.reason(first, states).startswith("retrying in ")
    lifecycle.claim(after.pk, after.token, "d", "w")  # not claimable: its dependency has not succeeded
    assert waiting.reason(Job.objects.get(pk=after.pk), states) == "waiting for the jobs it depends on"


def test_the_admin_job_list_says_which_jobs_no_worker_serves_and_shows_silent_and_failing_workers(admin_client, model):
    new_job(model)
    silent("gpu0@host")
    dispatch.record_problem("gpu1@host", ["gpu"], "exited with status 2 within 30 s of starting, 5 times in a row")
    dispatch.record_worker("cpu@host", ["cpu"])
    page = admin_client.get(reverse("admin:jobs_job_changelist")).content.decode()
    assert page.count("waiting: no training worker is running") >= 2  # the queue's note and the job's row
    assert "<strong>failing</strong>: exited with status 2" in page and "<strong>silent</strong>" in page
    assert ">never<" in page  # the failing worker never heartbeated
    workers = admin_client.get(reverse("admin:jobs_worker_changelist")).content.decode()
    assert "failing" in workers and "silent" in workers and "live" in workers


def test_the_demo_terminal_says_when_no_worker_serves_a_waiting_job(model):
    job = new_job(model)
    job = Job.objects.annotate(blocked=lifecycle.blocked_by_dependencies()).get(pk=job.pk)
    assert describe(job, waiting.queue_states(STALE_S)).endswith("queued    waiting: no training worker is running")
    dispatch.record_worker("gpu0@host", ["gpu"])
    assert "waiting:" not in describe(job, waiting.queue_states(STALE_S))


def test_a_supervisor_reports_a_failing_worker_with_the_worker_secret_only(settings):
    client = APIClient()
    payload = {"name": "gpu3@host", "queues": ["gpu"], "problem": "was killed by SIGSEGV within 30 s, 5 times"}
    client.credentials(HTTP_AUTHORIZATION="Bearer not-the-secret")
    assert client.post("/internal/workers/problem", payload, format="json").status_code == 403
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}")
    assert client.post("/internal/workers/problem", payload, format="json").status_code == 204
    worker = Worker.objects.get(name="gpu3@host")
    assert worker.problem.startswith("was killed by SIGSEGV") and worker.last_heartbeat is None
    assert waiting.worker_state(worker, STALE_S) == "failing"
    dispatch.record_worker("gpu3@host", ["gpu"])  # it came back: a heartbeat clears the problem
    worker.refresh_from_db()
    assert worker.problem == "" and waiting.worker_state(worker, STALE_S) == "live"


def test_manage_py_worker_records_a_process_it_gave_up_on():
    report_give_up(ManagedProcess("cpu@host", ["celery"]), "exited with status 1 within 30 s of starting, 5 times")
    report_give_up(ManagedProcess("gpu0@host", ["celery"]), "exited with status 2 within 30 s of starting, 5 times")
    assert Worker.objects.get(name="cpu@host").queues == "cpu"
    assert Worker.objects.get(name="gpu0@host").problem.startswith("exited with status 2")


def test_the_demo_terminal_says_why_a_job_is_retrying(model):
    job = new_job(model)
    lifecycle.claim(job.pk, job.token, "d1", "gpu0@host")
    Job.objects.filter(pk=job.pk).update(last_heartbeat=timezone.now() - dt.timedelta(seconds=120))
    lifecycle.reap(stale_after_s=STALE_S)
    job = Job.objects.annotate(blocked=lifecycle.blocked_by_dependencies()).get(pk=job.pk)
    line = describe(job, waiting.queue_states(STALE_S))
    assert line.endswith("retrying  after attempt 1: worker gpu0@host stopped heartbeating (silent for more than 30 s)")
