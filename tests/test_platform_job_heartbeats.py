"""A platform (``cpu``) job heartbeats while its handler runs, so a long score job is not reaped as a dead worker's.

Before, a score job heartbeat only when claimed and when done: one longer than
``BIOLM_HEARTBEAT_STALE_S`` (30 s in production) was requeued as if its worker had died, retried
three times and failed. The beats come from a thread with its own database connection, so these
tests commit their rows (``transaction=True``) for that connection to see them, and load the
built-in plugins' rows themselves, since another transactional test may have flushed them.
"""

from __future__ import annotations

import threading
import time

import pytest
from contract_documents import finetune_spec, score_spec
from web_fixture import sync_builtin_plugins

from jobs import handlers, keepalive, lifecycle, tasks
from jobs.models import Job
from registry.models import Dataset, LanguageModel
from submissions.models import Submission

pytestmark = pytest.mark.django_db(transaction=True)
CPU = "cpu@host"
SILENCE_S = 0.6


@pytest.fixture
def score_job(alice) -> Job:
    sync_builtin_plugins()  # a transactional test before this one flushed the built-in rows
    model = LanguageModel.objects.create(slug="m", name="m", owner=alice)
    submission = Submission.objects.create(submitter=alice, language_model=model)
    spec = score_spec(finetune_spec("demo-ner"), 1).to_json()
    return Job.objects.create(submission=submission, language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
                              kind=Job.Kind.SCORE, queue=Job.Queue.CPU, spec=spec)  # fmt: skip


def test_a_handler_running_past_the_allowed_silence_is_not_reaped_and_succeeds(settings, monkeypatch, score_job):
    settings.BIOLM_HEARTBEAT_STALE_S = SILENCE_S
    reaped: list[list[int]] = []

    def slow_handler(job: Job) -> str:  # stands for a long scoring: the reaper runs meanwhile, as the tick does
        for _ in range(4):
            time.sleep(SILENCE_S)
            reaped.append(lifecycle.reap(stale_after_s=SILENCE_S, queue_limit_s=3600))
        return "scored"

    monkeypatch.setattr(handlers, "handler_for", lambda kind: slow_handler)
    assert tasks.execute_platform_job(score_job.pk, score_job.token, "d1", CPU) == Job.Status.SUCCEEDED
    assert reaped == [[], [], [], []]
    score_job.refresh_from_db()
    assert score_job.status == Job.Status.SUCCEEDED and score_job.attempts == 1 and "scored" in score_job.log


def test_without_the_beats_the_same_silence_is_reaped(settings, score_job):
    """The reaper's side of the first test: a held job silent for longer than allowed is requeued."""
    settings.BIOLM_HEARTBEAT_STALE_S = SILENCE_S
    lifecycle.claim(score_job.pk, score_job.token, "d1", CPU)
    time.sleep(SILENCE_S * 1.5)
    assert lifecycle.reap(stale_after_s=SILENCE_S, queue_limit_s=3600) == [score_job.pk]


def test_the_beats_stop_once_the_delivery_no_longer_holds_the_job(score_job):
    lifecycle.claim(score_job.pk, score_job.token, "d1", CPU)
    Job.objects.filter(pk=score_job.pk).update(status=Job.Status.CANCELLED)
    with keepalive.heartbeats(score_job.pk, score_job.token, "d1", every_s=0.05):
        time.sleep(0.3)
        running = {thread.name for thread in threading.enumerate()}
    assert f"heartbeat-job-{score_job.pk}" not in running  # it returned at its first STOP, before the block ended
