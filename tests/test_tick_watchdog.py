"""The tick's watchdog (``jobs.watchdog``): a CPU worker ticks in-process once its beat has gone quiet."""

from __future__ import annotations

import datetime as dt

import pytest
from contract_documents import finetune_spec, score_spec
from django.utils import timezone

from jobs import dispatch, tasks, watchdog
from jobs.models import Job, Worker
from registry.models import Dataset, LanguageModel
from submissions.models import Submission

pytestmark = pytest.mark.django_db
CPU = "cpu@host"


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """What the tick hands to the broker (the broker itself is exercised by the fault tests)."""
    sent: list[int] = []
    monkeypatch.setattr(tasks, "send", lambda job: sent.append(job.pk))
    return sent


@pytest.fixture
def aggregate(alice) -> Job:
    model = LanguageModel.objects.create(slug="m", name="m", owner=alice)
    submission = Submission.objects.create(submitter=alice, language_model=model)
    dataset = Dataset.objects.get(slug="demo-ner")
    spec = score_spec(finetune_spec("demo-ner"), 1).to_json()  # its fine-tuning job is set by the test using it
    return Job.objects.create(submission=submission, language_model=model, dataset=dataset,
                              kind=Job.Kind.SCORE, queue=Job.Queue.CPU, spec=spec)  # fmt: skip


def test_a_worker_whose_last_tick_is_recent_is_left_to_its_beat(settings, sent, aggregate):
    settings.BIOLM_TICK_WATCHDOG_S = 15
    now = timezone.now()
    dispatch.record_worker(CPU, ["cpu"], now=now - dt.timedelta(seconds=5))
    assert watchdog.tick_if_overdue(CPU, tasks.tick_once, now) is None
    assert sent == []
    assert Worker.objects.get(name=CPU).last_heartbeat == now - dt.timedelta(seconds=5)


def test_a_silent_beat_is_replaced_by_an_in_process_tick_that_keeps_the_worker_alive_and_dispatches(
    settings, sent, aggregate, caplog
):
    settings.BIOLM_TICK_WATCHDOG_S = 15
    now = timezone.now()  # one instant for the record and the check, so the silence reads 40 s however slow the test
    dispatch.record_worker(CPU, ["cpu"], now=now - dt.timedelta(seconds=40))
    assert dispatch.capacity("cpu", settings.BIOLM_HEARTBEAT_STALE_S) == 0  # the worker looks dead
    with caplog.at_level("WARNING", logger="biolm.jobs"):
        done = watchdog.tick_if_overdue(CPU, tasks.tick_once, now)
    assert done is not None and done["sent"] == [aggregate.pk] and sent == [aggregate.pk]
    assert dispatch.capacity("cpu", settings.BIOLM_HEARTBEAT_STALE_S) == 1
    assert "no tick from the beat for 40 s" in caplog.text


def test_a_worker_whose_beat_never_ticked_ticks_at_once(settings, sent, aggregate):
    assert not Worker.objects.filter(name=CPU).exists()
    assert watchdog.tick_if_overdue(CPU, tasks.tick_once) is not None
    assert Worker.objects.filter(name=CPU, queues="cpu").exists()


def test_a_platform_error_names_the_code_that_raised_it():
    def record():
        return {}["language_model"]

    try:
        record()
    except KeyError as exc:
        message = tasks.platform_error(exc)
    assert message.startswith("KeyError: 'language_model' (in record, test_tick_watchdog.py:")


def test_a_cpu_job_whose_messages_no_consumer_took_is_run_in_process_and_only_once(
    settings, sent, aggregate, artefact_store, caplog
):
    settings.BIOLM_REDISPATCH_AFTER_S = 10
    spec = finetune_spec("demo-ner")
    finetune = Job.objects.create(
        submission=aggregate.submission, language_model=aggregate.language_model, dataset=aggregate.dataset,
        kind=Job.Kind.FINETUNE, status=Job.Status.SUCCEEDED, spec=spec.to_json(),
    )  # fmt: skip
    Job.objects.filter(pk=aggregate.pk).update(spec=score_spec(spec, finetune.pk).to_json())
    aggregate.depends_on.add(finetune)
    dispatch.record_worker(CPU, ["cpu"])
    assert tasks.kick() == [aggregate.pk] and sent == [aggregate.pk]  # sent, and never consumed
    aggregate.refresh_from_db()
    first = aggregate.first_sent_at
    assert first is not None
    assert (
        watchdog.run_stranded(CPU, tasks.execute_platform_job, now=first + dt.timedelta(seconds=29)) == []
    )  # not yet three re-sends
    Job.objects.filter(pk=aggregate.pk).update(dispatched_at=None)
    tasks.kick()  # re-sent: the first send is remembered
    aggregate.refresh_from_db()
    assert aggregate.first_sent_at == first
    with caplog.at_level("WARNING", logger="biolm.jobs"):
        assert watchdog.run_stranded(CPU, tasks.execute_platform_job, now=first + dt.timedelta(seconds=31)) == [
            aggregate.pk
        ]
    aggregate.refresh_from_db()
    assert aggregate.worker == CPU and aggregate.attempts == 1
    assert aggregate.status == Job.Status.FAILED and "uploaded no results" in aggregate.error  # it really ran
    assert "no consumer took its messages for 31 s: running it in-process" in caplog.text
    assert tasks.execute_platform_job(aggregate.pk, aggregate.token, "late-message", CPU) is None  # taken: no-op
    assert watchdog.run_stranded(CPU, tasks.execute_platform_job, now=first + dt.timedelta(seconds=60)) == []
