"""``/queue/``: public counts per benchmark and queue, the workers and their heartbeats, the day's median wait,
and private submissions only as numbers."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import dispatch
from jobs.models import Job
from registry.models import Benchmark, Dataset, LanguageModel
from submissions.queue import queue_summary

pytestmark = pytest.mark.django_db
URL = "/queue/"


def model(owner, slug: str, name: str, public: bool) -> LanguageModel:
    return LanguageModel.objects.create(
        slug=slug, name=name, owner=owner, origin=LanguageModel.Origin.REPRODUCED,
        visibility=LanguageModel.Visibility.PUBLIC if public else LanguageModel.Visibility.PRIVATE,
    )  # fmt: skip


def job(language_model, status: str, queue: str = Job.Queue.GPU, benchmark: str | None = "blurb-mini",
        dataset: str = "demo-ner", **fields) -> Job:  # fmt: skip
    return Job.objects.create(
        language_model=language_model, status=status, queue=queue,
        kind=Job.Kind.FINETUNE if queue == Job.Queue.GPU else Job.Kind.SCORE,
        benchmark=Benchmark.objects.get(slug=benchmark) if benchmark else None,
        dataset=Dataset.objects.get(slug=dataset), **fields,
    )  # fmt: skip


def row(html: str, benchmark: str, queue: str) -> list[str]:
    """The numbers of one benchmark's row for one queue."""
    for found in re.finditer(r"<tr>\s*<th scope=\"row\" class=\"text\">(.*?)</th>(.*?)</tr>", html, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", found.group(2))
        if benchmark in found.group(1) and cells[0] == queue:
            return cells[1:]
    raise AssertionError(f"no row for {benchmark} on {queue}")


def test_the_queue_counts_jobs_per_benchmark_and_queue_and_never_names_a_private_model(client, alice, bob):
    now = timezone.now()
    secret = model(alice, "secret-model", "Secret Clinical BERT", public=False)
    shown = model(bob, "open-model", "Open PubMedBERT", public=True)
    for _ in range(3):
        job(secret, Job.Status.QUEUED)
    job(secret, Job.Status.RETRYING)
    job(secret, Job.Status.RUNNING, started_at=now)
    job(shown, Job.Status.RUNNING, started_at=now, progress_step=1, progress_total=4)
    job(shown, Job.Status.SUCCEEDED, queue=Job.Queue.CPU, finished_at=now - dt.timedelta(hours=2))
    job(shown, Job.Status.SUCCEEDED, queue=Job.Queue.CPU, finished_at=now - dt.timedelta(days=3))  # too old
    job(shown, Job.Status.QUEUED, benchmark=None)  # a pretraining job: no benchmark yet
    response = client.get(URL)
    html = response.content.decode()
    assert response.status_code == 200
    assert row(html, "BLURB-mini", "training") == ["4", "2", "0"]
    assert row(html, "BLURB-mini", "scoring") == ["0", "0", "1"]
    assert row(html, "pretraining (before any benchmark)", "training") == ["1", "0", "0"]
    assert "Secret Clinical BERT" not in html and "secret-model" not in html
    assert '<a href="/models/bob/open-model/">Open PubMedBERT</a>' in html and "25%" in html


def test_a_queue_without_a_live_worker_says_no_worker_is_running_and_names_failing_and_silent_ones(client):
    now = timezone.now()
    dispatch.record_worker("cpu@host", ["cpu"], now=now)
    dispatch.record_worker("gpu0@old", ["gpu"], now=now - dt.timedelta(minutes=10))  # silent since
    dispatch.record_problem("gpu1@host", ["gpu"], "CUDA driver version is insufficient")
    html = client.get(URL).content.decode()
    unserved = (
        "no training worker is running (gpu1@host failing: CUDA driver version is insufficient; gpu0@old silent for 10"
    )
    assert f"<strong>Training queue</strong>:\n    {unserved}" in html
    assert "<strong>Scoring queue</strong>:\n    1 live worker, 1 slot;" in html
    assert re.search(r"<th scope=\"row\" class=\"text\">cpu@host</th>.*?live</td>\s*<td>\d s ago</td>", html, re.S)
    assert "failing: CUDA driver version is insufficient" in html and "10 min ago" in html


def test_on_a_cpu_only_site_the_queue_page_names_queues_by_what_they_do_and_never_says_gpu(client, alice):
    dispatch.record_worker("trainer0@laptop", ["gpu"], gpus=0)  # manage.py worker with no GPU: the training one
    dispatch.record_worker("scorer@laptop", ["cpu"])
    job(model(alice, "m", "M", public=True), Job.Status.QUEUED)
    html = client.get(URL).content.decode()
    assert "<strong>Training queue</strong>:\n    1 live worker, 1 slot;" in html
    assert row(html, "BLURB-mini", "training") == ["1", "0", "0"]
    assert re.search(r">trainer0@laptop</th>\s*<td class=\"text\">training</td>\s*<td class=\"text\">CPU</td>", html)
    assert "gpu" not in html.lower()


def test_a_queue_served_by_a_worker_with_a_gpu_is_named_the_gpu_training_queue(client):
    dispatch.record_worker("gpu0@box", ["gpu"], gpus=1)
    html = client.get(URL).content.decode()
    assert "<strong>GPU training queue</strong>:\n    1 live worker, 1 slot;" in html
    assert re.search(r">gpu0@box</th>\s*<td class=\"text\">GPU training</td>\s*<td class=\"text\">1 GPU</td>", html)


def test_the_median_wait_counts_from_when_a_job_could_start(alice):
    now = timezone.now()
    owner = model(alice, "m", "M", public=True)
    for minutes in (1, 3, 20):
        job(owner, Job.Status.SUCCEEDED, queued_at=now - dt.timedelta(minutes=30),
            started_at=now - dt.timedelta(minutes=30 - minutes), finished_at=now)  # fmt: skip
    first = job(owner, Job.Status.SUCCEEDED, queued_at=now - dt.timedelta(hours=3),
                started_at=now - dt.timedelta(minutes=175), finished_at=now - dt.timedelta(hours=1))  # fmt: skip
    after = job(owner, Job.Status.RUNNING, queue=Job.Queue.CPU, queued_at=now - dt.timedelta(hours=3),
                started_at=now - dt.timedelta(minutes=58))  # fmt: skip
    after.depends_on.add(first)  # it could start an hour ago, not three hours ago: it waited 2 minutes
    job(owner, Job.Status.SUCCEEDED, queued_at=now - dt.timedelta(days=3), started_at=now - dt.timedelta(days=2),
        finished_at=now - dt.timedelta(days=2))  # started before the day: not counted  # fmt: skip
    queues = {queue.queue: queue for queue in queue_summary(now).queues}
    assert queues["gpu"].median_wait_s == pytest.approx(240) and queues["gpu"].started_today == 4  # 1, 3, 5, 20 min
    assert queues["cpu"].median_wait_s == pytest.approx(120) and queues["cpu"].started_today == 1


def test_the_queue_page_takes_a_few_queries_however_many_jobs_wait(client, alice):
    owner = model(alice, "m", "M", public=True)
    for status in (Job.Status.QUEUED, Job.Status.RUNNING, Job.Status.SUCCEEDED) * 20:
        job(owner, status, started_at=timezone.now(), finished_at=timezone.now())
    dispatch.record_worker("gpu0@host", ["gpu"])
    with CaptureQueriesContext(connection) as queries:
        assert client.get(URL).status_code == 200
    assert len(queries) <= 6, [q["sql"] for q in queries]


def test_the_queue_page_is_public_and_says_when_nothing_runs(client):
    html = client.get(URL).content.decode()
    assert "No job is waiting or running, and none finished in the last day." in html
    assert "No worker has been seen in the last day." in html and "no training worker is running" in html
