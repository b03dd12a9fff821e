"""What each result cost and how long a submission took to reach the leaderboard, from the jobs' attempts.

Every claim starts an attempt that keeps its worker, the GPUs it held (a shared GPU at its share) and
its GPU's model; the attempt ends whenever its delivery lets go of the job (succeeded, failed, reaped,
cancelled, handed to the platform). A result carries its fine-tuning's GPU-hours, wall time and GPU; a
benchmark's page and the API carry the median and 90th percentile of submission-to-published time
over public models' full-protocol submissions, and their GPU-hours, with quick previews apart.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from contract_documents import finetune_spec, pretrain_spec, results_document, score_spec
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from biolm.durations import gpu_hours_in_words, in_words
from jobs import artefacts, costs, dispatch, lifecycle
from jobs.models import Attempt, Job
from jobs.results import results_name
from leaderboard import recording
from registry.models import Benchmark, LanguageModel
from submissions.models import Submission

pytestmark = pytest.mark.django_db
H200 = [{"name": "NVIDIA H200", "memory_bytes": 141 << 30}]
H100 = [{"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 80 << 30}]


@pytest.fixture(autouse=True)
def store(artefact_store):
    return artefact_store


@pytest.fixture
def blurb_mini() -> Benchmark:
    return Benchmark.objects.get(slug="blurb-mini")


def finetune_job(model: LanguageModel, blurb_mini: Benchmark, **fields) -> Job:
    entry = blurb_mini.entries.select_related("dataset").order_by("position").first()
    spec = finetune_spec(entry.dataset.slug, blurb_mini.slug)
    return Job.objects.create(language_model=model, dataset=entry.dataset, benchmark=blurb_mini,
                              kind=Job.Kind.FINETUNE, spec=spec.to_json(), **fields)  # fmt: skip


def attempt(job: Job, number: int, gpus: float, gpu_model: str, start: dt.datetime, minutes: float) -> Attempt:
    end = start + dt.timedelta(minutes=minutes)
    return Attempt.objects.create(job=job, number=number, delivery=f"d{number}", worker=f"gpu{number}@host",
                                  gpus=gpus, gpu_model=gpu_model, started_at=start, ended_at=end,
                                  gpu_seconds=gpus * minutes * 60)  # fmt: skip


def test_each_attempt_keeps_the_share_of_the_gpu_its_worker_held_and_ends_when_its_delivery_lets_go(alice, blurb_mini):
    dispatch.record_worker("gpu0@big", ["gpu"], gpus=1, gpu_devices=H200)
    dispatch.record_worker("gpu1@shared", ["gpu"], gpus=1, shares_gpu=True, workers_per_gpu=4, gpu_devices=H100)
    model = LanguageModel.objects.create(slug="attempts", name="Attempts", owner=alice)
    job = finetune_job(model, blurb_mini)
    lifecycle.claim(job.pk, job.token, "d1", "gpu0@big")
    (first,) = Attempt.objects.filter(job=job)
    assert (first.gpus, first.gpu_model, first.ended_at) == (1.0, "NVIDIA H200", None)
    lifecycle.reap(stale_after_s=60, now=timezone.now() + dt.timedelta(minutes=5))  # its worker went silent
    first.refresh_from_db()
    assert first.ended_at is not None
    assert first.gpu_seconds == pytest.approx((first.ended_at - first.started_at).total_seconds())
    lifecycle.claim(job.pk, job.token, "d2", "gpu1@shared")
    lifecycle.succeed(job.pk, job.token, "d2")
    second = Attempt.objects.get(job=job, number=2)
    assert (second.worker, second.gpus, second.gpu_model) == ("gpu1@shared", 0.25, "NVIDIA H100 80GB HBM3")
    assert second.ended_at is not None and second.gpu_seconds == pytest.approx(
        0.25 * (second.ended_at - second.started_at).total_seconds()
    )


def test_a_pretraining_attempt_holds_all_its_gpus_until_it_hands_the_model_to_the_platform(alice):
    dispatch.record_worker("gpu-8@node", ["gpu"], gpus=8, gpu_devices=H200 * 8)
    model = LanguageModel.objects.create(slug="pretrained-8", name="Pretrained on 8", owner=alice)
    job = Job.objects.create(language_model=model, kind=Job.Kind.PRETRAIN, spec=pretrain_spec(gpus=4).to_json())
    lifecycle.claim(job.pk, job.token, "d1", "gpu-8@node")
    assert Attempt.objects.get(job=job).gpus == 4.0  # the job's four, not the worker's eight
    lifecycle.hand_over(job.pk, job.token, "d1", "check")
    assert Attempt.objects.get(job=job).ended_at is not None  # the platform's check holds no GPU


def test_a_result_carries_its_fine_tunings_gpu_hours_wall_time_and_gpu(alice, blurb_mini, client):
    model = LanguageModel.objects.create(slug="costly", name="Costly", owner=alice)
    job = finetune_job(model, blurb_mini, status=Job.Status.SUCCEEDED, attempts=2)
    start = timezone.now() - dt.timedelta(hours=2)
    attempt(job, 1, 1.0, "NVIDIA H200", start, 30)  # lost after half an hour on a whole GPU
    attempt(job, 2, 0.25, "NVIDIA H200", start + dt.timedelta(minutes=40), 60)  # then an hour on a quarter of one
    results = results_document(job.contract, [70.0, 72.0], withheld=False)
    artefacts.store_bytes(json.dumps(results).encode(), results_name(job.pk))
    entry = blurb_mini.entries.select_related("dataset", "metric").order_by("position").first()
    spec = score_spec(job.contract, job.pk, entry.metric.slug, entry.variant)
    score = Job.objects.create(language_model=model, dataset=entry.dataset, benchmark=blurb_mini, kind=Job.Kind.SCORE,
                               spec=spec.to_json())  # fmt: skip
    with transaction.atomic():
        result = recording.record(score)
    assert result.gpu_hours == pytest.approx(0.5 + 0.25) and result.gpu_model == "NVIDIA H200"
    assert result.wall_s == pytest.approx(100 * 60)
    page = client.get(model.get_absolute_url()).content.decode()
    assert "1 h 40 min of fine-tuning, 0.75 GPU-hours on NVIDIA H200" in page
    card = APIClient().get(f"/api/v1/models/{model.address}").json()
    (shown,) = [r for r in card["results"] if r["dataset"] == entry.dataset.slug]
    assert (shown["gpu_hours"], shown["wall_s"], shown["gpu_model"]) == (pytest.approx(0.75), 6000.0, "NVIDIA H200")


def published_submission(owner, blurb_mini, hours: float, gpu_hours: float, *, preview: bool = False,
                         private: bool = False, failed: bool = False) -> Submission:  # fmt: skip
    """A submission whose one job for the benchmark ended ``hours`` after it was submitted."""
    slug = f"m{Submission.objects.count()}"
    visibility = LanguageModel.Visibility.PRIVATE if private else LanguageModel.Visibility.PUBLIC
    model = LanguageModel.objects.create(slug=slug, name=slug, owner=owner, visibility=visibility)
    submission = Submission.objects.create(submitter=owner, language_model=model, preview=preview)
    submitted = timezone.now() - dt.timedelta(days=3)
    Submission.objects.filter(pk=submission.pk).update(created_at=submitted)
    status = Job.Status.FAILED if failed else Job.Status.SUCCEEDED
    job = finetune_job(model, blurb_mini, submission=submission, status=status,
                       finished_at=submitted + dt.timedelta(hours=hours))  # fmt: skip
    attempt(job, 1, 1.0, "NVIDIA H200", submitted, gpu_hours * 60)
    return submission


def test_a_benchmark_shows_its_time_to_the_leaderboard_over_public_full_protocol_submissions(alice, blurb_mini, client):
    for hours, gpu_hours in [(1, 2.0), (2, 3.0), (3, 4.0), (4, 5.0), (10, 6.0)]:
        published_submission(alice, blurb_mini, hours, gpu_hours)
    published_submission(alice, blurb_mini, 50, 50.0, private=True)  # says nothing of a private model
    published_submission(alice, blurb_mini, 60, 60.0, failed=True)  # never published
    published_submission(alice, blurb_mini, 0.5, 0.25, preview=True)
    full = costs.time_to_leaderboard(blurb_mini.pk, preview=False)
    assert full == costs.Turnaround(5, 3 * 3600.0, 10 * 3600.0, 4.0)
    assert costs.time_to_leaderboard(blurb_mini.pk, preview=True) == costs.Turnaround(1, 1800.0, 1800.0, 0.25)
    page = client.get(blurb_mini.get_absolute_url()).content.decode()
    assert "over the 5 full-protocol submissions of public models" in page
    assert "median <strong>3 h 0 min</strong>, 90th percentile <strong>10 h 0 min</strong>" in page
    assert "median of <strong>4.00 GPU-hours</strong>" in page and "Quick previews, counted apart (1)" in page
    (listed,) = [b for b in APIClient().get("/api/v1/benchmarks/").json() if b["slug"] == blurb_mini.slug]
    assert listed["time_to_leaderboard"] == {
        "full": {"submissions": 5, "median_s": 10800.0, "p90_s": 36000.0, "gpu_hours_median": 4.0},
        "previews": {"submissions": 1, "median_s": 1800.0, "p90_s": 1800.0, "gpu_hours_median": 0.25},
    }


def test_durations_and_gpu_hours_read_the_same_on_every_page():
    assert [in_words(s) for s in (None, 42, 180, 7500, 3 * 86400 + 4 * 3600)] == [
        "\u2014", "42 s", "3 min", "2 h 5 min", "3 d 4 h",
    ]  # fmt: skip
    assert [gpu_hours_in_words(h) for h in (None, 0, 0.004, 0.4213, 12.54)] == [
        "\u2014", "no GPU", "< 0.01 GPU-hours", "0.42 GPU-hours", "12.5 GPU-hours",
    ]  # fmt: skip
