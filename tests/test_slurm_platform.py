"""Through the platform, on a real two-node Slurm cluster (tests/slurm_cluster.py): the Slurm worker end to end.

One platform (its database, Redis, gunicorn, the CPU worker with the tick: bench.harness) and one Slurm worker
(``BIOLM_EXECUTOR=slurm``, database-free, on this host as on a login node) serve the module. A ``nodes=2``
pretraining job of the ``tiny`` recipe runs as srun + torchrun on n1 and n2 (gloo on the CPU, one rank per
node; both "nodes" share this host's filesystem, as the engine's shared-output check requires), becomes a
checkpoint that is fine-tuned (a one-node batch job) and lands on the leaderboard, and the submission's page
says which node each rank ran on. A job cancelled through the platform is ``scancel``-ed and shows cancelled;
one ``scancel``-ed on the cluster by someone else is retried as the platform's. A node lost mid-job (its
slurmd killed after the first checkpoint was uploaded) fails the attempt as the platform's (NODE_FAIL), and
the retry resumes from the uploaded DCP checkpoint and finishes.

Marked ``faults`` (run alone, after the parallel tests) and run against PostgreSQL only (``against_postgres``):
it runs once in CI, not again in the SQLite pass.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest
from slurm_cluster import slurm_cluster_fixture  # noqa: F401 (the fixture slurm_cluster)

from bench.harness import Platform, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.backend]
DEMO_CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo" / "corpus.txt"
FINETUNE = '{"grid": "single", "seeds": 1, "epochs": 1, "max_length": 64}'
SLURM_JOB = re.compile(r"slurm job (\d+): running")


@pytest.fixture(scope="module")
def platform(tmp_path_factory, slurm_cluster):
    running = Platform(tmp_path_factory.mktemp("platform")).start(datasets=("demo-ner",))
    env = slurm_cluster.env
    running.start_gpu_worker(
        "slurm-login", BIOLM_EXECUTOR="slurm", BIOLM_SLURM_MAX_NODES="2", BIOLM_SLURM_POLL_S="1",
        BIOLM_TORCHRUN_MAX_RESTARTS="0", SLURM_CONF=env["SLURM_CONF"], PATH=env["PATH"],
    )  # fmt: skip
    yield running
    running.stop()


def pretrain(platform: Platform, steps: int, every: int, name: str, *datasets: str) -> dict:
    """A ``nodes=2`` pretraining job of the tiny recipe (and, with ``datasets``, their fine-tuning)."""
    settings = json.dumps({"checkpoint_every": every, "eval_every": 1000})
    return platform.submit("--recipe", "tiny", "--corpus", str(DEMO_CORPUS), "--steps", str(steps), "--nodes", "2",
                           "--pretrain-settings", settings, "--benchmark", "blurb-mini", "--datasets",
                           *(datasets or ("demo-ner",)), "--protocol", FINETUNE, "--name", name)  # fmt: skip


def jobs_of(submitted: dict, kind: str) -> list[int]:
    return [job["id"] for job in submitted["jobs"] if job["kind"] == kind]


def slurm_job_of(platform: Platform, job_id: int, timeout: float = 120) -> str:
    """The Slurm job id the platform's job runs as, once the job's log says that it runs."""
    found = wait_until(lambda: SLURM_JOB.findall(platform.job(job_id)["log"] or ""), timeout,
                       f"job #{job_id} to run on Slurm")  # fmt: skip
    return found[-1]


def slurm_state(cluster, slurm_job: str) -> str:
    listed = cluster.run("scontrol", "show", "job", "-o", slurm_job).stdout
    return re.search(r"JobState=(\S+)", listed).group(1)


def page(platform: Platform, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{platform.port}{path}", timeout=30) as response:
        return response.read().decode()


def test_a_two_node_pretraining_job_becomes_a_checkpoint_fine_tuned_onto_the_leaderboard(
    platform, against_postgres, slurm_cluster
):
    submitted = pretrain(platform, 30, 10, "Two-node tiny")
    (job,) = jobs_of(submitted, "pretrain")
    (score,) = jobs_of(submitted, "score")
    (finetune,) = jobs_of(submitted, "finetune")
    done = platform.wait_for_job(score, ("succeeded", "failed", "cancelled"), timeout=420)
    tuned = platform.job(finetune)
    assert done["status"] == "succeeded", f"{tuned['error']}\n{tuned['log'][-3000:]}\n{platform.diagnosis()}"
    pretrained = platform.job(job)
    assert pretrained["attempts"] == 1 and "on n[1-2]" in pretrained["log"], pretrained["log"][-3000:]
    (model,) = platform.query("SELECT checkpoint, pretraining FROM registry_languagemodel WHERE slug = ?",
                              submitted["model"])  # fmt: skip
    assert model["checkpoint"].startswith("artefacts:")
    report = model["pretraining"] if isinstance(model["pretraining"], dict) else json.loads(model["pretraining"])
    # torchrun's rendezvous numbers the nodes in the order their agents join: rank 0 may be on either node.
    ranks = sorted((r["rank"], r["host"], r["node_rank"], r["local_rank"]) for r in report["provenance"]["ranks"])
    hosts = {rank: host for rank, host, _, _ in ranks}
    assert sorted(hosts.values()) == ["n1", "n2"] and report["provenance"]["processes"] == 2
    assert ranks == [(0, hosts[0], 0, 0), (1, hosts[1], 1, 0)]
    (result,) = platform.results(submitted["model"])
    assert result["dataset"] == "demo-ner" and result["n_seeds"] == 1
    assert "slurm job" in tuned["log"]  # fine-tuned on the cluster too, as a one-node batch job
    html = page(platform, f"/submissions/{submitted['submission']}/")
    assert "Where the pretraining ran" in html
    for rank in (0, 1):
        cells = f'<td class="text">{hosts[rank]}</td><td>{rank}</td><td>0</td></tr>'
        row = f'<th scope="row" class="text">{rank}</th>{cells}'
        assert f'<tr data-rank="{rank}">{row}' in html
    assert "Two-node tiny" in page(platform, "/leaderboard/blurb-mini/")


def test_a_job_cancelled_through_the_platform_is_scancelled_and_one_scancelled_outside_is_retried(
    platform, against_postgres, slurm_cluster
):
    cancelled = pretrain(platform, 100_000, 100_000, "Cancelled on the platform")
    (job,) = jobs_of(cancelled, "pretrain")
    slurm_job = slurm_job_of(platform, job)
    platform.manage("shell", "-c", "from jobs import lifecycle; from jobs.models import Job; "
                                   f"lifecycle.cancel(Job.objects.filter(pk={job}))")  # fmt: skip
    wait_until(lambda: slurm_state(slurm_cluster, slurm_job) == "CANCELLED", 60, f"Slurm job {slurm_job} to end")
    assert platform.job(job)["status"] == "cancelled"

    outside = pretrain(platform, 100_000, 100_000, "Cancelled on the cluster")
    (job,) = jobs_of(outside, "pretrain")
    slurm_job = slurm_job_of(platform, job)
    slurm_cluster.run("scancel", slurm_job)
    retried = platform.wait_for_job(job, ("retrying", "failed"), timeout=60)
    assert retried["status"] == "retrying" and retried["failure_cause"] == "platform", retried["error"]
    assert retried["error"] == (f"Slurm job {slurm_job} was cancelled on the cluster on n1,n2, not by the platform "
                                "(scancel): retried, resuming from its last checkpoint")  # fmt: skip
    platform.manage("shell", "-c", "from jobs import lifecycle; from jobs.models import Job; "
                                   f"lifecycle.cancel(Job.objects.filter(pk={job}))")  # fmt: skip
    assert platform.job(job)["status"] == "cancelled"


def test_a_node_lost_mid_job_fails_the_attempt_as_the_platforms_and_the_retry_resumes_from_its_checkpoint(
    platform, against_postgres, slurm_cluster
):
    submitted = pretrain(platform, 600, 20, "Lost a node")
    (job,) = jobs_of(submitted, "pretrain")
    uploaded = platform.var / "media" / "jobs" / str(job) / "checkpoint.tar.json"
    wait_until(uploaded.exists, 240, "a checkpoint uploaded to the artefact store")
    try:
        slurm_cluster.kill_node("n2")
        failed = platform.wait_for_job(job, ("retrying", "failed", "succeeded"), timeout=120)
    finally:
        slurm_cluster.start_node("n2")  # ReturnToService=2: it comes back once it registers
    assert failed["status"] == "retrying" and failed["failure_cause"] == "platform", failed["error"]
    assert re.match(r"Slurm job \d+ ended NODE_FAIL \(NodeDown\) on n1,n2: the cluster's", failed["error"])
    slurm_cluster.wait_for_nodes("idle", timeout_s=60)
    platform.manage("shell", "-c", "from jobs.models import Job; "  # the 30 s back-off is not on trial here
                                   f"Job.objects.filter(pk={job}).update(not_before=None)")  # fmt: skip
    done = platform.wait_for_job(job, ("succeeded", "failed"), timeout=300)
    assert done["status"] == "succeeded" and done["attempts"] == 2, done["error"]
    resumed = [line for line in done["log"].splitlines() if "resuming from the checkpoint" in line]
    assert resumed and int(resumed[0].rsplit("step ", 1)[1].rstrip(")")) > 0, done["log"][-3000:]
