"""Fair share: the database is the queue and the broker gets only as many jobs as workers have free slots."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from jobs import dispatch, lifecycle
from jobs.models import Job
from registry.models import Dataset, LanguageModel
from submissions.models import Submission

pytestmark = pytest.mark.django_db


def queue_jobs(user, count: int, queue=Job.Queue.GPU, priority: int = 0) -> list[Job]:
    model = LanguageModel.objects.create(slug=f"{user.username}-{LanguageModel.objects.count()}", name="m", owner=user)
    submission = Submission.objects.create(submitter=user, language_model=model)
    dataset = Dataset.objects.get(slug="demo-ner")
    return Job.objects.bulk_create(
        Job(submission=submission, language_model=model, dataset=dataset, kind=Job.Kind.FINETUNE, queue=queue,
            priority=priority)
        for _ in range(count)
    )  # fmt: skip


def owner_of(job: Job) -> str:
    return job.submission.submitter.username


def test_one_users_200_jobs_do_not_starve_another_users_2(alice, bob):
    queue_jobs(alice, 200)
    queue_jobs(bob, 2)
    order = [owner_of(job) for job in dispatch.fair_order(Job.Queue.GPU)]
    assert len(order) == 202
    assert order[:4] == ["alice", "bob", "alice", "bob"]  # alice waited longer, then they take turns
    assert order[4:] == ["alice"] * 198


def test_an_owner_already_running_jobs_waits_behind_one_who_is_not(alice, bob):
    running = queue_jobs(alice, 3)
    for job in running:
        lifecycle.claim(job.pk, job.token, f"d{job.pk}", "w")
    queue_jobs(alice, 2)
    queue_jobs(bob, 2)
    assert [owner_of(job) for job in dispatch.fair_order(Job.Queue.GPU)] == ["bob", "bob", "alice", "alice"]


def test_priority_orders_an_owners_own_jobs(alice):
    low = queue_jobs(alice, 1)[0]
    high = queue_jobs(alice, 1, priority=5)[0]
    assert [job.pk for job in dispatch.fair_order(Job.Queue.GPU)] == [high.pk, low.pk]


def test_dispatch_sends_only_what_live_workers_can_take_and_never_the_same_job_twice(alice, bob):
    queue_jobs(alice, 5)
    queue_jobs(bob, 5)
    queue_jobs(alice, 2, queue=Job.Queue.CPU)
    sent: list[Job] = []
    assert dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300) == []  # no worker yet
    dispatch.record_worker("gpu0@host", ["gpu"], slots=1)
    dispatch.record_worker("gpu1@host", ["gpu"], slots=1)
    dispatch.record_worker("cpu@host", ["cpu"], slots=4)
    dispatch.record_worker("gone@host", ["gpu"], slots=8, now=timezone.now() - dt.timedelta(seconds=120))
    first = dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300)
    assert [(job.queue, owner_of(job)) for job in sent] == [("gpu", "alice"), ("gpu", "bob"), ("cpu", "alice"),
                                                            ("cpu", "alice")]  # fmt: skip
    assert dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300) == []  # all slots taken
    # A worker claims one and finishes it: one slot frees, and the next in fair order goes.
    job = Job.objects.get(pk=first[0])
    lifecycle.claim(job.pk, job.token, "d", "gpu0@host")
    lifecycle.succeed(job.pk, job.token, "d")
    assert len(dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300)) == 1
    assert len(sent) == len({job.pk for job in sent}) == 5


def test_a_message_lost_with_the_broker_is_sent_again_and_the_duplicate_is_harmless(alice):
    (job,) = queue_jobs(alice, 1)
    dispatch.record_worker("gpu0@host", ["gpu"])
    sent: list[Job] = []
    dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300)
    later = timezone.now() + dt.timedelta(seconds=301)
    dispatch.record_worker("gpu0@host", ["gpu"], now=later)
    dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300, now=later)
    assert [j.pk for j in sent] == [job.pk, job.pk]
    assert lifecycle.claim(job.pk, job.token, "first-message", "w") is not None
    assert lifecycle.claim(job.pk, job.token, "second-message", "w") is None


def test_each_waiting_job_knows_its_position_and_an_estimated_start(alice, bob):
    dispatch.record_worker("gpu0@host", ["gpu"], slots=2)
    done = queue_jobs(alice, 1)[0]
    lifecycle.claim(done.pk, done.token, "d", "w")
    Job.objects.filter(pk=done.pk).update(status=Job.Status.SUCCEEDED, started_at=timezone.now() - dt.timedelta(
        seconds=100), finished_at=timezone.now())  # fmt: skip
    alices, bobs = queue_jobs(alice, 3), queue_jobs(bob, 1)
    now = timezone.now()
    places = dispatch.places(Job.Queue.GPU, stale_after_s=60, now=now)
    assert [places[j.pk].position for j in (alices[0], bobs[0], alices[1], alices[2])] == [1, 2, 3, 4]
    starts = [(places[j.pk].estimated_start - now).total_seconds() for j in (alices[0], bobs[0], alices[1], alices[2])]
    assert starts == pytest.approx([0, 0, 100, 100], abs=1)  # two slots, then a wave after the typical 100 s
    dispatch.Worker.objects.all().delete()
    assert dispatch.places(Job.Queue.GPU, stale_after_s=60)[alices[0].pk].estimated_start is None


def test_a_known_workers_beat_is_one_read_and_one_write_and_still_says_when_it_offers_room(django_assert_num_queries):
    beat = {"queues": ["gpu"], "slots": 1, "gpus": 1, "gpus_free": 1}
    assert dispatch.heartbeat_offers_room("gpu0@host", 30, **beat)  # new: its row is made
    with django_assert_num_queries(2):
        assert not dispatch.heartbeat_offers_room("gpu0@host", 30, **beat)  # nothing new on offer
    with django_assert_num_queries(2):
        assert dispatch.heartbeat_offers_room("gpu0@host", 30, **{**beat, "slots": 2})  # more slots
    worker = dispatch.Worker.objects.get(name="gpu0@host")
    assert worker.slots == 2 and worker.last_heartbeat is not None
    old = timezone.now() - dt.timedelta(seconds=120)
    dispatch.Worker.objects.filter(pk=worker.pk).update(last_heartbeat=old)
    assert dispatch.heartbeat_offers_room("gpu0@host", 30, **beat)  # back from silence
    assert dispatch.Worker.objects.get(pk=worker.pk).last_heartbeat > old


def test_a_dispatch_reads_whole_only_the_jobs_it_may_send_however_long_the_queue(alice, bob):
    """The fair order needs only each waiting job's owner, priority and age; a dispatch then reads whole (spec
    included) only the first jobs in that order, until the free slots are taken. A job's end dispatches inside
    its worker's /complete request, and reading all of a long queue's jobs there was most of that request."""
    from django.db.models.signals import post_init

    dispatch.record_worker("gpu0@host", ["gpu"], slots=1)
    dispatch.record_worker("gpu1@host", ["gpu"], slots=1)
    queue_jobs(alice, 300)
    queue_jobs(bob, 1)
    built: list[Job] = []

    def count(sender, instance, **kwargs) -> None:
        built.append(instance)

    sent: list[Job] = []
    post_init.connect(count, sender=Job)
    try:
        dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300)
    finally:
        post_init.disconnect(count, sender=Job)
    assert [owner_of(job) for job in sent] == ["alice", "bob"]  # the same turns as before
    assert 2 <= len(built) <= 32  # one chunk of the order, not 301 jobs
