"""Supervised GPU workers in real processes (``-m faults``): a crashed worker comes back by itself.

``python -m workers.runner`` is started as operators start it. Its Celery process is SIGKILLed in
the middle of a fine-tune, as the kernel's OOM killer or a CUDA fault would kill it: the
supervisor restarts it, and the restarted process takes the job, which succeeds with exactly one
set of results. A worker that crashes at start-up is given up on after a few tries and shown as
failing, and the jobs that wait for its queue say that no worker serves it.
"""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest
from checkpoints import demo_texts, tiny_bert

from bench.harness import Platform, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.backend]
RECOVERY_LIMIT_S = 90  # from the kill to the job's success, on the 2-core CI machine


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    running = Platform(tmp_path_factory.mktemp("platform"), timings={"BIOLM_WORKER_RESTART_BACKOFF_S": "1"})
    running.start(datasets=("demo-ner",))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("checkpoints") / "tiny-bert", demo_texts(), 600, hidden=32)


def training(job: dict) -> bool:
    """Whether the fine-tune is under way; one that ended before it could be killed fails the test, saying so."""
    assert job["status"] not in ("succeeded", "failed"), f"the fine-tune ended ({job['status']}) before the kill"
    return job["status"] == "running" and job["progress_step"] > 0


def test_a_gpu_worker_killed_mid_finetune_is_restarted_and_its_job_succeeds_once(
    platform, against_postgres, checkpoint
):
    platform.start_supervised_gpu_workers("gpu-sup")
    try:
        # 20 epochs: several seconds of training in which to kill it, yet a rerun well within the limit.
        protocol = '{"grid": "single", "seeds": 1, "epochs": 20, "max_length": 64}'
        submitted = platform.submit("--model", str(checkpoint), "--benchmark", "blurb-mini", "--datasets", "demo-ner",
                                    "--protocol", protocol, "--name", "killed under its supervisor")  # fmt: skip
        finetune = next(job["id"] for job in submitted["jobs"] if job["kind"] == "finetune")
        aggregate = next(job["id"] for job in submitted["jobs"] if job["kind"] == "score")
        wait_until(lambda: training(platform.job(finetune)), 180, "the fine-tune to make progress")
        (celery,) = platform.children("gpu-sup")  # the supervisor's only worker process
        os.kill(celery, signal.SIGKILL)
        killed_at = time.monotonic()

        done = platform.wait_for_job(aggregate, ("succeeded", "failed"), timeout=RECOVERY_LIMIT_S + 30)
        recovered_s = time.monotonic() - killed_at
        assert done["status"] == "succeeded", (done, platform.job(finetune))
        print(f"recovered {recovered_s:.1f} s after the kill")
        assert recovered_s < RECOVERY_LIMIT_S, recovered_s

        job = platform.job(finetune)
        assert job["status"] == "succeeded" and job["attempts"] == 2
        assert job["worker"] == f"gpu-sup0@{socket.gethostname()}"  # the same worker, restarted
        (result,) = platform.results(submitted["model"])
        assert result["n_seeds"] == 1 and result["job_id"] == finetune
        assert len(platform.query("SELECT id FROM jobs_run WHERE job_id = ?", finetune)) == 1
        log = platform.log("gpu-sup")
        assert "was killed by SIGKILL" in log and "restarting it in 1.0 s" in log and "restarted (start 2" in log
        (submission,) = platform.query(
            "SELECT status FROM submissions_submission WHERE id = ?", submitted["submission"]
        )
        assert submission["status"] == "finished"
    finally:
        platform.kill("gpu-sup", signal.SIGTERM)


def test_a_gpu_worker_that_crashes_at_start_up_is_reported_as_failing_not_restarted_forever(platform):
    broken = platform.start_supervised_gpu_workers(
        "gpu-broken",
        BIOLM_HEARTBEAT_S="soon",  # the worker's module refuses it at import: every start fails
        BIOLM_WORKER_GIVE_UP_AFTER="3",
        BIOLM_WORKER_RESTART_BACKOFF_S="0.2",
    )
    assert broken.wait(timeout=180) == 1  # it gave up and, with nothing left to run, stopped
    log = platform.log("gpu-broken")
    assert log.count("restarted (start") == 2  # three starts in all
    assert "3 times in a row; not restarted" in log
    name = f"gpu-broken0@{socket.gethostname()}"
    (worker,) = platform.query("SELECT problem, last_heartbeat FROM jobs_worker WHERE name = ?", name)
    assert "exited with status 2" in worker["problem"] and worker["last_heartbeat"] is None

    def note() -> str:
        script = (
            "from jobs import waiting; s = waiting.queue_states(8)['gpu']; print('' if s.served else s.unserved_note())"
        )
        return platform.manage("shell", "-v", "0", "-c", script).strip()

    shown = wait_until(note, 30, "the gpu queue to have no live worker")  # an earlier test's worker goes silent
    assert (
        shown.startswith("waiting: no training worker is running (")
        and f"{name} failing: exited with status 2" in shown
    )
    platform.processes.pop("gpu-broken")
