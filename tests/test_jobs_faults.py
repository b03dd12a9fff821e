"""The whole loop in real processes, and what happens when its parts die (``-m faults``).

One platform (its own database, its own Redis, the web app, the CPU worker with the tick) serves
the module; each test starts database-free GPU workers and breaks something: a worker SIGKILLed
in the middle of a fine-tune or a pretraining run, Redis stopped and restarted, the platform's
database connections terminated, a checkpoint whose weights cannot be read.
"""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import time
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert

from bench.harness import Platform, process_tree, processes_with, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.backend]
DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    running = Platform(tmp_path_factory.mktemp("platform")).start(datasets=("demo-ner", "demo-doc-classification"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoints") / "tiny-bert", demo_texts(), 600, hidden=32)


@pytest.fixture
def workers(platform):
    started: list[str] = []

    def start(name: str):
        started.append(name)
        return platform.start_gpu_worker(name)

    yield start
    for name in started:
        if name in platform.processes:
            platform.kill(name)


def submit(platform: Platform, model: Path, *datasets: str, epochs: int = 1, seeds: int = 2, name: str) -> dict:
    protocol = f'{{"grid": "single", "seeds": {seeds}, "epochs": {epochs}, "max_length": 64}}'
    arguments = ["--model", str(model), "--benchmark", "blurb-mini", "--protocol", protocol, "--name", name]
    return platform.submit(*arguments, "--datasets", *datasets)


def jobs_of(submitted: dict, kind: str) -> list[int]:
    return [job["id"] for job in submitted["jobs"] if job["kind"] == kind]


def wait_for_progress(platform: Platform, job_id: int) -> None:
    wait_until(lambda: (job := platform.job(job_id))["status"] == "running" and job["progress_step"] > 0, 120,
               "the fine-tune to make progress")  # fmt: skip


def copy_checkpoint(source: Path, target: Path) -> Path:
    """A copy with a note of its own: different content, so the same owner's submissions are different models
    (the same files again would reuse the first model, as a resubmission should)."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    (target / "README.md").write_text(f"{target.name}\n")
    return target


def test_a_submission_reaches_the_leaderboard_through_database_free_workers(platform, workers, checkpoint, tmp_path):
    model = copy_checkpoint(checkpoint, tmp_path / "happy-path")
    worker = workers("gpu-happy")
    environment = Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0")
    assert not any(entry.startswith(b"DATABASE_URL=") for entry in environment)
    submitted = submit(platform, model, "demo-ner", "demo-doc-classification", name="happy path")
    for job in jobs_of(submitted, "score"):
        assert platform.wait_for_job(job, ("succeeded", "failed"))["status"] == "succeeded", platform.job(job)
    # The CPU worker scored the withheld predictions through the engine's own processes, forked from the warm
    # server (biolm.warm_process) under its pool: torch entered that server, never Celery's processes.
    cpu_worker = platform.processes["cpu"].pid
    with_torch = processes_with("libtorch", cpu_worker)
    assert len(process_tree(cpu_worker)) - len(with_torch) >= 3  # Celery's main process and its pool's two
    assert with_torch and all(b"biolm.warm_process" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in with_torch)
    results = {row["dataset"]: row for row in platform.results(submitted["model"])}
    assert set(results) == {"demo-ner", "demo-doc-classification"}
    assert all(row["n_seeds"] == 2 for row in results.values())
    # The host's cache read the checkpoint once: the second job linked every file the first downloaded.
    logs = [platform.job(job)["log"] for job in jobs_of(submitted, "finetune")]
    cache_lines = sorted(line for log in logs for line in log.splitlines() if "from this host's cache" in line)
    files = len(list(model.glob("*")))
    assert [line.split(": ", 1)[1] for line in cache_lines] == [
        f"0 from this host's cache, {files} downloaded",
        f"{files} from this host's cache, 0 downloaded",
    ], cache_lines
    for job in jobs_of(submitted, "finetune"):
        record = platform.job(job)
        assert record["worker"] == "gpu-happy@harness" and record["attempts"] == 1
        assert record["progress_step"] == record["progress_total"] > 0 and "test predictions written" in record["log"]
        assert len(platform.query("SELECT id FROM jobs_run WHERE job_id = ?", job)) == 2
    scores = platform.query(
        "SELECT s.score, s.groups FROM leaderboard_score s JOIN registry_languagemodel m ON m.id = s.language_model_id "
        "WHERE m.slug = ?",
        submitted["model"],
    )
    assert len(scores) == 1 and scores[0]["score"] is None  # four of six datasets missing: unranked, never zero


def test_a_worker_killed_mid_finetune_is_replaced_and_the_job_counts_once(
    platform, against_postgres, workers, checkpoint, tmp_path
):
    model = copy_checkpoint(checkpoint, tmp_path / "killed-finetune")
    workers("gpu-doomed")
    submitted = submit(platform, model, "demo-ner", epochs=15, name="killed mid fine-tune")
    (finetune,) = jobs_of(submitted, "finetune")
    wait_for_progress(platform, finetune)
    platform.kill("gpu-doomed", signal.SIGKILL)
    killed_at = time.time()
    workers("gpu-survivor")
    job = wait_until(lambda: (j := platform.job(finetune))["status"] == "running" and j["attempts"] == 2 and j, 90,
                     "the job to run again on another worker")  # fmt: skip
    recovery = _timestamp(job["started_at"]) - killed_at
    assert recovery < 60, recovery
    assert job["worker"] == "gpu-survivor@harness"
    (aggregate,) = jobs_of(submitted, "score")
    assert platform.wait_for_job(aggregate, ("succeeded", "failed"), timeout=400)["status"] == "succeeded"
    (result,) = platform.results(submitted["model"])
    assert result["n_seeds"] == 2 and result["job_id"] == finetune
    assert len(platform.query("SELECT id FROM jobs_run WHERE job_id = ?", finetune)) == 2
    assert "stopped heartbeating" in platform.job(finetune)["error"] or platform.job(finetune)["error"] == ""


def test_a_pretraining_worker_killed_mid_run_resumes_from_its_last_checkpoint(
    platform, against_postgres, workers, tmp_path
):
    workers("gpu-pretrain-1")
    corpus = DEMO / "corpus.txt"
    settings = '{"checkpoint_every": 20, "eval_every": 1000}'
    submitted = platform.submit("--recipe", "tiny", "--corpus", str(corpus), "--steps", "160", "--pretrain-settings",
                                settings, "--benchmark", "blurb-mini", "--datasets", "demo-ner", "--protocol",
                                '{"grid": "single", "seeds": 1, "epochs": 1, "max_length": 64}')  # fmt: skip
    (pretrain,) = jobs_of(submitted, "pretrain")
    uploaded = platform.var / "media" / "jobs" / str(pretrain) / "checkpoint.tar.json"
    wait_until(uploaded.exists, 240, "a checkpoint uploaded to the artefact store")
    wait_until(lambda: platform.job(pretrain)["progress_step"] >= 40, 120, "a few more steps")
    platform.kill("gpu-pretrain-1", signal.SIGKILL)
    workers("gpu-pretrain-2")
    done = platform.wait_for_job(pretrain, ("succeeded", "failed"), timeout=400)
    assert done["status"] == "succeeded", done["error"]
    assert done["attempts"] == 2, done["log"][-6000:]
    resumed = [line for line in done["log"].splitlines() if "resuming from the checkpoint" in line]
    assert resumed and int(resumed[0].rsplit("step ", 1)[1].rstrip(")")) >= 20, done["log"][-2000:]
    (aggregate,) = jobs_of(submitted, "score")
    assert platform.wait_for_job(aggregate, ("succeeded", "failed"), timeout=300)["status"] == "succeeded"
    (model,) = platform.query("SELECT checkpoint FROM registry_languagemodel WHERE slug = ?", submitted["model"])
    assert model["checkpoint"].startswith("artefacts:")


def test_redis_stopped_and_restarted_during_a_run_loses_no_job(
    platform, against_postgres, workers, checkpoint, tmp_path
):
    model = copy_checkpoint(checkpoint, tmp_path / "redis-restart")
    workers("gpu-redis")
    submitted = submit(platform, model, "demo-ner", "demo-doc-classification", epochs=10, name="redis restart")
    first = jobs_of(submitted, "finetune")[0]
    wait_until(lambda: platform.job(first)["status"] == "running", 120, "the first fine-tune to start")
    platform.redis.stop()
    time.sleep(3)
    platform.redis.start()
    for job in jobs_of(submitted, "score"):
        assert platform.wait_for_job(job, ("succeeded", "failed"), timeout=400)["status"] == "succeeded"
    assert {row["dataset"] for row in platform.results(submitted["model"])} == {"demo-ner", "demo-doc-classification"}


def test_a_cpu_worker_whose_beat_stays_silent_ticks_by_itself_and_the_graph_finishes(
    platform, against_postgres, workers, checkpoint, tmp_path
):
    """The beat once went quiet after a broker restart; the watchdog ticks without it (jobs.watchdog)."""
    platform.kill("cpu")
    platform.start_cpu_worker(beat=False)
    try:
        model = copy_checkpoint(checkpoint, tmp_path / "silent-beat")
        workers("gpu-silent-beat")
        submitted = submit(platform, model, "demo-doc-classification", seeds=1, name="silent beat")
        (aggregate,) = jobs_of(submitted, "score")
        ended = platform.wait_for_job(aggregate, ("succeeded", "failed"))
        assert ended["status"] == "succeeded", ended
        assert "ticking in-process as cpu@harness" in platform.log("cpu")
    finally:
        platform.kill("cpu")
        platform.start_cpu_worker()


def test_terminated_database_connections_never_end_in_success_without_results(
    platform, against_postgres, workers, checkpoint, tmp_path
):
    model = copy_checkpoint(checkpoint, tmp_path / "dropped-connections")
    workers("gpu-pg")
    submitted = submit(platform, model, "demo-ner", epochs=4, name="dropped connections")
    (finetune,) = jobs_of(submitted, "finetune")
    (aggregate,) = jobs_of(submitted, "score")
    wait_until(lambda: platform.job(finetune)["status"] == "running", 120, "the fine-tune to start")
    terminated = 0
    while platform.job(aggregate)["status"] not in ("succeeded", "failed", "cancelled"):
        terminated += len(
            platform.query(
                "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
        time.sleep(2)
    assert terminated > 0
    status = {job: platform.job(job)["status"] for job in (finetune, aggregate)}
    results = platform.results(submitted["model"])
    if status[aggregate] == "succeeded":
        assert len(results) == 1 and results[0]["n_seeds"] == 2
    else:
        assert not results and platform.job(aggregate)["error"]


def test_cancelling_a_running_job_stops_its_training_within_seconds(platform, against_postgres, workers, checkpoint,
                                                                    tmp_path):  # fmt: skip
    model = copy_checkpoint(checkpoint, tmp_path / "cancelled")
    workers("gpu-cancel")
    submitted = submit(platform, model, "demo-ner", epochs=200, name="cancelled")
    (finetune,) = jobs_of(submitted, "finetune")
    wait_for_progress(platform, finetune)
    engine = f"job-{finetune}-"
    assert subprocess.run(["pgrep", "-f", engine], capture_output=True).returncode == 0  # its engine runs
    platform.manage("shell", "-c", f"from jobs import lifecycle; from jobs.models import Job; "
                                   f"lifecycle.cancel(Job.objects.filter(pk={finetune}))")  # fmt: skip
    cancelled = time.monotonic()
    wait_until(lambda: subprocess.run(["pgrep", "-f", engine], capture_output=True).returncode != 0, 30,
               "the engine to stop")  # fmt: skip
    assert time.monotonic() - cancelled < 15
    (aggregate,) = jobs_of(submitted, "score")
    assert platform.job(finetune)["status"] == "cancelled" and platform.job(aggregate)["status"] == "cancelled"
    assert not platform.results(submitted["model"])
    # The worker is free again: the next job starts on it.
    after = submit(platform, copy_checkpoint(checkpoint, tmp_path / "next"), "demo-ner", name="after cancel")
    (next_job,) = jobs_of(after, "finetune")
    assert platform.wait_for_job(next_job, ("running", "succeeded"), timeout=60)["worker"] == "gpu-cancel@harness"


def test_a_malformed_checkpoint_is_refused_before_any_job_exists_and_the_queue_keeps_going(
    platform, against_postgres, workers, checkpoint, tmp_path
):
    """Weights that do not match their header, and a tokenizer that transformers cannot load, are both the
    submission's to fix: ``submit`` refuses them (the security issue's checks, and the tokenizer check the web
    form added), so no worker ever spends an attempt on them. (A job the engine refuses is charged to the
    submission and not retried: tests/test_worker_runner.py and tests/test_jobs_api.py.)"""
    truncated = copy_checkpoint(checkpoint, tmp_path / "truncated")
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])  # the header promises tensors that are not there
    with pytest.raises(AssertionError, match=r"model\.safetensors: truncated"):
        submit(platform, truncated, "demo-ner", name="truncated")
    broken = copy_checkpoint(checkpoint, tmp_path / "malformed")
    (broken / "vocab.txt").unlink(missing_ok=True)
    (broken / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "Nonsense"}}')
    with pytest.raises(AssertionError, match=r"its tokenizer does not load"):
        submit(platform, broken, "demo-ner", "demo-doc-classification", name="malformed")
    refused = platform.query("SELECT COUNT(*) AS n FROM jobs_job j JOIN registry_languagemodel m "
                             "ON m.id = j.language_model_id WHERE m.name IN ('truncated', 'malformed')")  # fmt: skip
    assert refused == [{"n": 0}]
    # The queue keeps going: the next submission runs on the worker.
    workers("gpu-malformed")
    healthy = submit(platform, copy_checkpoint(checkpoint, tmp_path / "after"), "demo-ner", name="after malformed")
    (aggregate,) = jobs_of(healthy, "score")
    assert platform.wait_for_job(aggregate, ("succeeded", "failed"))["status"] == "succeeded"


def _timestamp(value) -> float:
    if isinstance(value, dt.datetime):
        return value.timestamp()
    return dt.datetime.fromisoformat(str(value)).replace(tzinfo=dt.UTC).timestamp()
