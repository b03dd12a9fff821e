"""A submission page that ends with the answer (issue 30, deliverable 6).

Progress moves by step across a job's runs, and its ETA never grows while the job advances; a job whose
step stops moving says "stalled since"; one estimate covers the whole submission; the finished page shows
the benchmark score with the rank it has (or would have) and each dataset's score with its spread; the
"Submitted: N jobs are queued" flash is marked to go once a job leaves the queue.
"""

from __future__ import annotations

import datetime as dt
import json
import tarfile
import time
from pathlib import Path

import pytest
from checkpoints import tiny_bert
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs import dispatch, lifecycle
from jobs.models import Job
from leaderboard.models import Result
from leaderboard.score_aggregation import recompute_scores
from registry.models import Benchmark, LanguageModel
from submissions import services
from submissions.models import Submission
from submissions.signals import follow
from submissions.submitting import SubmissionRequest, submit
from workers.runner.execution import JobRun, job_steps

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoints") / "tiny-bert", ["aspirin inhibits cyclooxygenase"] * 5, 120)


@pytest.fixture(autouse=True)
def store(artefact_store) -> Path:
    cache.clear()
    return artefact_store


@pytest.fixture
def submission(alice, checkpoint) -> Submission:
    return submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, private=True,
                                    datasets=("demo-ner", "demo-qa"), name="Alice's BERT"))  # fmt: skip


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def status(submission: Submission, user) -> dict:
    return signed_in(user).get(reverse("submissions:status", args=[submission.pk])).json()


def run(job: Job) -> tuple[str, str]:
    """Claim ``job`` as a worker would; its token and delivery."""
    Job.objects.filter(pk=job.pk).update(status=Job.Status.QUEUED)
    assert lifecycle.claim(job.pk, job.token, "delivery-1", "trainer0@host") is not None
    return job.token, "delivery-1"


def test_the_worker_counts_steps_across_a_jobs_runs_so_the_bar_never_starts_over():
    # Run 2 of 3 at step 5 of 10: 15 of 30 steps; the bar's fraction is continuous from run to run.
    assert job_steps({"label": "seed 2", "step": 5, "total": 10, "run": 2, "runs": 3}) == ("runs", 15, 30)
    end_of_first = job_steps({"label": "dev a", "step": 10, "total": 10, "run": 1, "runs": 3})
    start_of_second = job_steps({"label": "seed 2", "step": 0, "total": 40, "run": 2, "runs": 3})
    assert end_of_first[1] / end_of_first[2] == start_of_second[1] / start_of_second[2] == pytest.approx(1 / 3)
    assert job_steps({"label": "pretrain", "step": 7, "total": 100}) == ("pretrain", 7, 100)  # no runs: as written


def test_the_workers_estimate_counts_down_while_no_step_moves(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    beat = JobRun(1, "t", api_url="http://x", worker="w", work_dir=tmp_path)
    assert beat._eta("runs", 0, 100) is None  # the clock starts
    clock[0] += 10
    first = beat._eta("runs", 10, 100)  # 10 steps in 10 s: 90 s left
    assert first == pytest.approx(90.0)
    estimates = []
    for _ in range(5):  # stalled: an evaluation, a slow batch
        clock[0] += 10
        estimates.append(beat._eta("runs", 10, 100))
    assert estimates == sorted(estimates, reverse=True) and estimates[-1] == pytest.approx(40.0)


def test_the_recorded_eta_never_grows_while_the_job_advances(submission):
    job = submission.jobs.filter(kind=Job.Kind.FINETUNE).first()
    token, delivery = run(job)
    recorded = []
    for step, eta in [(10, 100.0), (20, 130.0), (30, 70.0), (40, 90.0)]:
        lifecycle.heartbeat(job.pk, token, delivery, lifecycle.Progress(step, 120, None, eta))
        recorded.append(Job.objects.get(pk=job.pk).eta_s)
    assert recorded == [100.0, 100.0, 70.0, 70.0]
    lifecycle.heartbeat(job.pk, token, delivery, lifecycle.Progress(5, 400, None, 300.0))  # a new total: anew
    assert Job.objects.get(pk=job.pk).eta_s == 300.0


def test_a_job_whose_step_has_not_moved_for_a_minute_says_stalled_since_instead_of_an_eta(submission, alice):
    job = submission.jobs.filter(kind=Job.Kind.FINETUNE).first()
    token, delivery = run(job)
    lifecycle.heartbeat(job.pk, token, delivery, lifecycle.Progress(30, 120, None, 60.0))
    shown = next(j for j in status(submission, alice)["jobs"] if j["id"] == job.pk)
    assert shown["stalled_since"] is None and shown["eta_text"] == "1 min" and shown["steps_text"] == "step 30 of 120"
    moved = timezone.now() - dt.timedelta(minutes=5)
    cache.set(lifecycle.advanced_key(job.pk, token), moved.timestamp())
    lifecycle.heartbeat(job.pk, token, delivery, lifecycle.Progress(30, 120, None, 60.0))  # alive, the same step
    shown = next(j for j in status(submission, alice)["jobs"] if j["id"] == job.pk)
    assert shown["eta_text"] == f"stalled since {moved.astimezone(dt.UTC):%H:%M} UTC"
    page = signed_in(alice).get(reverse("submissions:detail", args=[submission.pk])).content.decode()
    assert "stalled since" in page and "step 30 of 120" in page


def test_one_estimate_covers_every_job_from_the_running_ones_etas_and_the_typical_durations(submission, alice):
    dispatch.record_worker("trainer0@host", ["gpu"], gpus=0)
    dispatch.record_worker("scorer0@host", ["cpu"], gpus=0)
    assert status(submission, alice)["overall"]["seconds"] is None  # nothing of its kind has finished here yet
    now = timezone.now()
    # Jobs of another submission finished lately: fine-tuning took 100 s, scoring 10 s.
    other = Submission.objects.create(submitter=alice, language_model=submission.language_model)
    for kind, took in ((Job.Kind.FINETUNE, 100), (Job.Kind.SCORE, 10)):
        template = submission.jobs.filter(kind=kind).first()
        Job.objects.create(
            submission=other, kind=kind, queue=template.queue, spec=template.spec, dataset=template.dataset,
            language_model=template.language_model, status=Job.Status.SUCCEEDED,
            started_at=now - dt.timedelta(seconds=took + 50), finished_at=now - dt.timedelta(seconds=50),
        )  # fmt: skip
    running = submission.jobs.get(kind=Job.Kind.FINETUNE, dataset__slug="demo-ner")
    token, delivery = run(running)
    lifecycle.heartbeat(running.pk, token, delivery, lifecycle.Progress(60, 120, None, 40.0))
    overall = status(submission, alice)["overall"]
    # 40 s left of demo-ner's fine-tuning, 100 s for demo-qa's (either dataset's typical), 2 x 10 s of scoring.
    assert (overall["left"], overall["unknown"]) == (4, 0) and overall["seconds"] == pytest.approx(160.0)
    assert overall["text"] == "about 2 min for the 4 jobs left"
    page = signed_in(alice).get(reverse("submissions:detail", args=[submission.pk])).content.decode()
    assert 'id="overall-eta">about 2 min for the 4 jobs left<' in page


def finish_with_results(submission: Submission) -> None:
    """Every job succeeded, each dataset's result recorded (3 seeds), the benchmark scored beside public models."""
    benchmark = Benchmark.objects.get(slug="blurb-mini")
    model = submission.language_model
    Job.objects.filter(submission=submission).update(status=Job.Status.SUCCEEDED, finished_at=timezone.now())
    follow(list(submission.jobs.values_list("pk", flat=True)))
    for index, entry in enumerate(benchmark.entries.select_related("dataset", "metric")):
        job = submission.jobs.filter(kind=Job.Kind.FINETUNE, dataset=entry.dataset).first()
        for owner, value in ((model, 70.0 + index), *((m, 60.0 + 10 * i) for i, m in enumerate(public_models()))):
            Result.objects.create(language_model=owner, dataset=entry.dataset, metric=entry.metric,
                                  variant=entry.variant, value=value, std=1.25 if owner == model else 0.0,
                                  n_seeds=3, job=job if owner == model else None)  # fmt: skip
    recompute_scores(benchmark)


def public_models() -> list[LanguageModel]:
    if not LanguageModel.objects.filter(slug="public-a").exists():
        for slug in ("public-a", "public-b"):
            LanguageModel.objects.create(slug=slug, name=slug.title())
    return list(LanguageModel.objects.filter(slug__in=("public-a", "public-b")).order_by("slug"))


def test_the_finished_page_shows_the_benchmark_score_its_rank_and_each_datasets_score_with_its_spread(
    alice, checkpoint
):
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, private=True,
                                          name="Alice's BERT"))  # fmt: skip
    finish_with_results(submission)
    submission.refresh_from_db()
    assert submission.is_finished
    page = signed_in(alice).get(reverse("submissions:detail", args=[submission.pk])).content.decode()
    assert f'<span class="score-label">{Benchmark.objects.get(slug="blurb-mini").name} score</span>' in page
    assert "would rank 1 among the 2 public models ranked, once published" in page  # private: where it would stand
    assert 'id="dataset-scores"' in page and "70.00 ± 1.25" in page and "3 seeds" in page
    assert 'href="/datasets/demo-ner/"' in page
    data = status(submission, alice)
    assert data["finished"] and "70.00 ± 1.25" in data["results_html"] and data["overall"]["left"] == 0
    datasets, benchmarks = services.results_of(submission)
    assert len(datasets) == 6 and benchmarks[0].rank == 1 and benchmarks[0].ranked == 2


def test_the_queued_flash_is_marked_to_go_once_a_job_leaves_the_queue(alice, checkpoint, tmp_path, settings):
    settings.FILE_UPLOAD_TEMP_DIR = tmp_path
    archive = tmp_path / "tiny.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(checkpoint, arcname=".")
    client = signed_in(alice)
    with archive.open("rb") as upload:
        response = client.post("/submit/", {
            "source": "checkpoint", "benchmark": "blurb-mini", "datasets": ["blurb-mini:demo-ner"], "preview": "true",
            "name": "Tiny", "licence": "mit", "checkpoint": upload,
        })  # fmt: skip
    page = client.get(response["Location"]).content.decode()
    assert '<p class="message while-queued success">Submitted: 2 jobs are queued.' in page
    script = (Path(__file__).parents[1] / "platform/submissions/static/submissions/submission.js").read_text()
    assert ".message.while-queued" in script and 'job.status !== "queued"' in script


def test_the_engine_says_which_run_of_how_many_it_is_at(tmp_path, monkeypatch):
    """A single grid point and 2 seeds are 2 runs; the progress file's last state is the second's last step."""
    from workers.engine.__main__ import main

    progress = tmp_path / "progress.json"
    monkeypatch.setenv("BIOLM_PROGRESS_FILE", str(progress))
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-similarity", "--grid", "single"]
    assert main([*args, "--seeds", "2", "--epochs", "1", "--out", str(tmp_path / "out")]) == 0
    last = json.loads(progress.read_text())
    assert (last["run"], last["runs"]) == (2, 2) and last["step"] == last["total"]
    assert job_steps(last)[1:] == (2 * last["total"], 2 * last["total"])  # the bar ends at 100%, once


def test_a_submission_on_some_datasets_says_its_benchmark_score_is_incomplete_and_what_it_lacks(submission, alice):
    benchmark = Benchmark.objects.get(slug="blurb-mini")
    Job.objects.filter(submission=submission).update(status=Job.Status.SUCCEEDED, finished_at=timezone.now())
    follow(list(submission.jobs.values_list("pk", flat=True)))
    ran = benchmark.entries.filter(dataset__slug__in=("demo-ner", "demo-qa")).select_related("dataset", "metric")
    for entry in ran:
        job = submission.jobs.get(kind=Job.Kind.FINETUNE, dataset=entry.dataset)
        Result.objects.create(language_model=submission.language_model, dataset=entry.dataset, metric=entry.metric,
                              variant=entry.variant, value=55.5, std=None, n_seeds=1, job=job)  # fmt: skip
    recompute_scores(benchmark)
    page = signed_in(alice).get(reverse("submissions:detail", args=[submission.pk])).content.decode()
    assert '<strong class="score-value">incomplete</strong>' in page and "a benchmark score needs every one" in page
    assert "55.50" in page and "1 seed<" in page and "±" not in scores_body(page)


def scores_body(page: str) -> str:
    """The rows of the finished page's dataset-scores table."""
    return page.split('id="dataset-scores"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
