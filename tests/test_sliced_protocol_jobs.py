"""A protocol cut into slice jobs (jobs/graph.py): grid points, the selection, the further seeds and the gather,
each a job of its own after the jobs whose documents it reads, spread over every free GPU worker, and recorded
exactly as the same protocol run as one job.

The graph's shape is checked in the database (with slicing on, as production queues it); the whole loop runs in
real processes (:mod:`bench.harness`: its own database and Redis, the web app, the CPU worker that scores and
two database-free GPU workers running the real engine), once sliced and once as one job.
"""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert

from bench.harness import Platform

PROTOCOL = '{"seeds": 2, "epochs": 1, "max_length": 64, "max_train_examples": 8, "max_eval_examples": 8}'


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoints") / "tiny-bert", demo_texts(), 600, hidden=32)


@pytest.mark.django_db
def test_a_protocol_of_several_trainings_is_queued_as_slices_each_after_what_it_reads(alice, checkpoint, settings):
    from biolm.contract import FinetuneJob
    from jobs.models import Job
    from submissions.submitting import SubmissionRequest, submit

    settings.BIOLM_SLICE_PROTOCOLS = True
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint,
                                          datasets=("demo-ner",), overrides={"seeds": 3}))  # fmt: skip
    jobs = list(submission.jobs.order_by("pk"))
    slices = [job for job in jobs if job.kind == Job.Kind.SLICE]
    parts = [FinetuneJob.from_json(job.spec).slice for job in slices]
    assert parts == [*(f"point:{k}" for k in range(6)), "select", "seed:1", "seed:2"]
    (gather,) = [job for job in jobs if job.kind == Job.Kind.FINETUNE]
    (score,) = [job for job in jobs if job.kind == Job.Kind.SCORE]
    points, select, seeds = slices[:6], slices[6], slices[7:]
    assert all(not point.depends_on.exists() for point in points)
    assert set(select.depends_on.all()) == set(points)
    assert all(set(seed.depends_on.all()) == {select} for seed in seeds)
    assert set(gather.depends_on.all()) == set(slices) and list(score.depends_on.all()) == [gather]
    spec = gather.contract
    assert spec.slice == "gather" and dict(spec.reads) == {
        FinetuneJob.from_json(j.spec).part.name: j.pk for j in slices
    }
    assert score.contract.finetune_job == gather.pk
    assert {job.queue for job in [*slices, gather]} == {Job.Queue.GPU}


@pytest.mark.django_db
def test_a_protocol_of_one_training_stays_one_job(alice, checkpoint, settings):
    from jobs.models import Job
    from submissions.submitting import SubmissionRequest, submit

    settings.BIOLM_SLICE_PROTOCOLS = True
    overrides = {"grid": "single", "seeds": 1}
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint,
                                          datasets=("demo-ner",), overrides=overrides))  # fmt: skip
    assert sorted(submission.jobs.values_list("kind", flat=True)) == [Job.Kind.FINETUNE, Job.Kind.SCORE]


def copy_checkpoint(source: Path, target: Path) -> Path:
    """The same weights under another model (a note of its own), so the second submission is not a reuse."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    (target / "README.md").write_text(f"{target.name}\n")
    return target


def runs_of(platform: Platform, job_id: int) -> list[tuple]:
    rows = platform.query("SELECT seed, fold, split, hyperparameters_key, metrics FROM jobs_run WHERE job_id = ?"
                          " ORDER BY seed, split", job_id)  # fmt: skip
    return [(r["seed"], r["fold"], r["split"], r["hyperparameters_key"], str(r["metrics"])) for r in rows]


def moment(value) -> dt.datetime:
    """A timestamp column as read back: a datetime from PostgreSQL, text from SQLite."""
    return value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))


def overlapped(jobs: list[dict]) -> bool:
    """Whether any two of ``jobs`` ran at the same time."""
    spans = sorted((moment(job["started_at"]), moment(job["finished_at"])) for job in jobs)
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))


@pytest.mark.slow
@pytest.mark.once  # one run against the real servers is enough; the SQLite pass adds nothing to it
def test_sliced_jobs_run_on_two_workers_at_once_and_record_what_one_job_records(checkpoint, tmp_path):
    platform = Platform(tmp_path / "platform", timings={"BIOLM_SLICE_PROTOCOLS": "1"})
    try:
        platform.start(datasets=("demo-ner",))
        platform.start_gpu_worker("gpu-a")
        platform.start_gpu_worker("gpu-b")
        options = ["--benchmark", "blurb-mini", "--protocol", PROTOCOL, "--datasets", "demo-ner"]
        sliced = platform.submit("--model", str(checkpoint), "--name", "sliced", *options)
        platform.environment["BIOLM_SLICE_PROTOCOLS"] = "0"  # read by manage.py submit's own process
        whole = platform.submit("--model", str(copy_checkpoint(checkpoint, tmp_path / "whole")), "--name", "whole",
                                *options)  # fmt: skip
        for submitted in (sliced, whole):
            (score,) = [job["id"] for job in submitted["jobs"] if job["kind"] == "score"]
            assert platform.wait_for_job(score, ("succeeded", "failed"), timeout=600)["status"] == "succeeded", (
                platform.diagnosis()
            )
        kinds = [job["kind"] for job in sliced["jobs"]]
        assert kinds.count("slice") == 8 and kinds.count("finetune") == 1  # 6 points, the selection, seed 2
        slices = [platform.job(job["id"]) for job in sliced["jobs"] if job["kind"] == "slice"]
        assert {job["worker"] for job in slices} == {"gpu-a@harness", "gpu-b@harness"}
        assert overlapped(slices[:6])  # the grid's points trained at once on the two workers
        (gather,) = [job["id"] for job in sliced["jobs"] if job["kind"] == "finetune"]
        (one_job,) = [job["id"] for job in whole["jobs"] if job["kind"] == "finetune"]
        assert runs_of(platform, gather) == runs_of(platform, one_job) and len(runs_of(platform, gather)) == 2
        (a,), (b,) = platform.results(sliced["model"]), platform.results(whole["model"])
        assert (a["value"], a["std"], a["n_seeds"]) == (b["value"], b["std"], b["n_seeds"]) and a["n_seeds"] == 2
        # The result's wall time spans its slices too, from the first point's start to the gather's end.
        (row,) = platform.query("SELECT wall_s FROM leaderboard_result WHERE job_id = ?", gather)
        first = min(moment(job["started_at"]) for job in slices)
        assert row["wall_s"] >= (moment(platform.job(gather)["finished_at"]) - first).total_seconds() - 1
    finally:
        platform.stop()


def test_overlapped_tells_apart_jobs_that_ran_at_once():
    at = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)
    second = dt.timedelta(seconds=1)
    apart = [
        {"started_at": at, "finished_at": at + second},
        {"started_at": at + 2 * second, "finished_at": at + 3 * second},
    ]
    together = [
        {"started_at": at, "finished_at": at + 2 * second},
        {"started_at": at + second, "finished_at": at + 3 * second},
    ]
    assert not overlapped(apart) and overlapped(together)
