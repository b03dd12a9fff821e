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
from django.db import connection

from jobs import handlers, keepalive, lifecycle, tasks
from jobs.models import Job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("session_rows_restored")]
CPU = "cpu@host"
SILENCE_S = 1.5  # beats every 0.5 s: a beat must lag a whole second on a busy machine to be missed


def test_a_handler_running_past_the_allowed_silence_is_not_reaped_and_succeeds(settings, monkeypatch, score_job):
    settings.BIOLM_HEARTBEAT_STALE_S = SILENCE_S
    reaped: list[list[int]] = []

    def slow_handler(job: Job) -> handlers.Writer:  # a long scoring: the reaper runs meanwhile, as the tick does
        for _ in range(4):
            time.sleep(SILENCE_S)
            reaped.append(lifecycle.reap(stale_after_s=SILENCE_S, queue_limit_s=3600))
        return lambda: "scored"

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


def test_the_beats_go_on_after_their_database_connection_is_dropped(score_job):
    """A terminated connection stays broken for its thread until closed: the next beat must reconnect.

    On PostgreSQL only, where a server can end a connection under a client (``pg_terminate_backend``),
    as the fault test that drops every connection while a submission runs does.
    """
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL, which can end another client's connection")
    lifecycle.claim(score_job.pk, score_job.token, "d1", CPU)

    def last_beat():
        return Job.objects.values_list("last_heartbeat", flat=True).get(pk=score_job.pk)

    with keepalive.heartbeats(score_job.pk, score_job.token, "d1", every_s=0.1):
        time.sleep(0.3)
        with connection.cursor() as cursor:  # every connection to this database but the test's own
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            assert cursor.fetchall(), "the heartbeat thread's connection was not there to drop"
        dropped_at = last_beat()
        time.sleep(1.0)
        assert last_beat() > dropped_at
