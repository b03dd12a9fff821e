"""The Slurm worker's side of placement and submit (issue 41), without a cluster: its seat, heartbeat and settings;
multi-node jobs reach only it and wait, saying why, without it; a pretraining run that fits no GPU it could get is
refused at submit in the memory plan's sentence; torchrun's report no longer hides the engine's refusal.

The real batch jobs, on a real two-node Slurm cluster, are tests/test_slurm_platform.py's.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from contract_documents import pretrain_spec
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from biolm.engine_exits import failure_cause, failure_summary
from biolm.placement import Need, Seat, seat_of_queue, unplaced
from workers.runner.executors import check_slurm, executor
from workers.runner.failures import engine_exit
from workers.runner.gpu_workers import slurm_worker_process
from workers.runner.slurm import SlurmReach, SlurmSettingsError, cause_of, parse_job_line

LARGE = '{"architecture": "megatron-bert:gatortron-large", "parallelism": "%s"}'
A100 = {"name": "NVIDIA A100-SXM4-80GB", "memory_bytes": 80 * 10**9}
H200 = {"name": "NVIDIA H200", "memory_bytes": 141 * 10**9}
# What torchrun (2.x) writes when rank 0 of two exits 1 after the engine's "error:" line (recorded on this host).
TORCHRUN_REFUSAL = """\
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being \
overloaded, please further tune the variable for optimal performance in your application as needed.
*****************************************
loading the corpus
error: --corpus /x/corpus.txt: no documents (after the recipe's preprocessors)
W1201 22:16:38.953000 23348 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 23354 closing \
signal SIGTERM
E1201 22:16:38.955000 23348 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: \
0 (pid: 23353) of binary: /venv/bin/python
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
workers.engine FAILED
------------------------------------------------------------
Failures:
[1]:
  rank      : 1 (local_rank: 1)
  exitcode  : -15 (pid: 23354)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  host      : n1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 23353)
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
srun: error: n1: task 0: Exited with exit code 1
"""


# -- the seat ------------------------------------------------------------------------------------------------


def test_only_a_slurm_seat_holds_a_job_on_several_nodes_and_only_up_to_its_reach():
    two_nodes_of_4, one_gpu = Need(4, shareable=False, nodes=2), Need(1, shareable=False)
    cluster = Seat(8, nodes=2, slurm=True)
    assert cluster.holds(two_nodes_of_4) and cluster.holds(one_gpu) and cluster.holds(Need())
    assert not Seat(64).holds(two_nodes_of_4)  # no host's worker, however large
    assert not Seat(8, nodes=1, slurm=True).holds(two_nodes_of_4) and not Seat(2, nodes=4, slurm=True).holds(
        two_nodes_of_4
    )
    assert Seat(0, nodes=2, slurm=True).holds(Need(1, shareable=False, nodes=2))  # CPU nodes: one rank each
    assert cluster.queue == "slurm-2x8" and Seat(0, nodes=2, slurm=True).queue == "slurm-2x1"
    assert seat_of_queue("slurm-2x8") == cluster
    assert Seat(8).size < cluster.size  # a job a host's worker holds goes there first


def test_a_multi_node_job_no_live_worker_holds_says_what_is_missing():
    need = Need(4, shareable=False, nodes=2)
    assert unplaced(need, [Seat(8), Seat(1)]) == "needs 2 nodes; no live Slurm worker"
    assert unplaced(need, [Seat(8, nodes=1, slurm=True)]) == (
        "needs 2 nodes of 4 GPUs; the largest live Slurm worker reaches 1 node of 8 GPUs"
    )
    assert unplaced(need, [Seat(4, nodes=2, slurm=True)]) == ""


def test_the_slurm_workers_heartbeat_says_its_reach_and_a_two_node_job_goes_only_to_it(settings, alice, client):
    from jobs import dispatch, waiting
    from jobs.models import Job, Worker
    from registry.models import LanguageModel

    model = LanguageModel.objects.create(slug="two-nodes", name="two nodes", owner=alice)
    job = Job.objects.create(language_model=model, kind=Job.Kind.PRETRAIN, spec=pretrain_spec(nodes=2).to_json())
    dispatch.record_worker("gpu0@box", ["gpu"], gpus=8, gpu_devices=[H200] * 8)
    assert dispatch.dispatch(lambda job: None, 60, 300) == []
    states = waiting.queue_states(60)
    assert waiting.reason(job, states, blocked=False) == "waiting: needs 2 nodes; no live Slurm worker"

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}")
    beat = {"name": "slurm0@login", "queues": ["gpu"], "gpus": 4, "gpu_devices": [A100] * 4, "executor": "slurm",
            "nodes": 2}  # fmt: skip
    assert api.post("/internal/workers/heartbeat", beat, format="json").status_code == 204
    worker = Worker.objects.get(name="slurm0@login")
    assert worker.seat == Seat(4, nodes=2, slurm=True)
    assert worker.device == "Slurm: up to 2 nodes of 4 GPUs (NVIDIA A100-SXM4-80GB, 75 GiB each)"
    sent = []
    assert dispatch.dispatch(sent.append, 60, 300) == [job.pk] and sent[0].sent_to == "slurm-2x4"
    assert "Slurm: up to 2 nodes of 4 GPUs" in client.get("/queue/").content.decode()
    refused = api.post("/internal/workers/heartbeat", {**beat, "executor": "kubernetes"}, format="json")
    assert refused.status_code == 400


# -- the worker's settings -----------------------------------------------------------------------------------


def test_the_executor_and_the_slurm_reach_are_read_from_the_environment_and_refused_in_one_line(tmp_path):
    assert executor(environ={}) == "local" and executor(environ={"BIOLM_EXECUTOR": "Slurm"}) == "slurm"
    with pytest.raises(ValueError, match=r"^--executor takes local or slurm, not 'k8s'$"):
        executor("k8s")
    reach = SlurmReach.from_environment({
        "BIOLM_SLURM_MAX_NODES": "4", "BIOLM_SLURM_GPUS_PER_NODE": "8", "BIOLM_SLURM_GPU_MODEL": "NVIDIA H200",
        "BIOLM_SLURM_GPU_MEMORY": "141GB",
    })  # fmt: skip
    assert reach == SlurmReach(4, 8, "NVIDIA H200", 141 * 10**9) and reach.devices() == [H200] * 8
    assert SlurmReach.from_environment({}) == SlurmReach(1, 0) and SlurmReach().devices() == []
    for variable, value in (("BIOLM_SLURM_MAX_NODES", "0"), ("BIOLM_SLURM_GPUS_PER_NODE", "eight"),
                            ("BIOLM_SLURM_GPU_MEMORY", "lots")):  # fmt: skip
        with pytest.raises(SlurmSettingsError) as raised:
            SlurmReach.from_environment({variable: value})
        assert str(raised.value).startswith(f"{variable}={value!r}: expected") and "\n" not in str(raised.value)
    with pytest.raises(ValueError, match=r"^BIOLM_EXECUTOR=slurm: sbatch, scontrol, scancel not found on PATH"):
        check_slurm({"PATH": str(tmp_path)})


def test_the_login_nodes_one_worker_consumes_its_reachs_queue_without_the_database():
    process = slurm_worker_process(environment={"DATABASE_URL": "postgres://x", "BIOLM_SLURM_MAX_NODES": "2"})
    assert process.command[process.command.index("-Q") + 1] == "slurm-2x1"
    assert process.environment["BIOLM_EXECUTOR"] == "slurm" and "DATABASE_URL" not in process.environment
    assert process.name.startswith("slurm0@")


def test_a_bad_executor_is_refused_by_both_launchers(capsys):
    from workers.runner.__main__ import main

    with pytest.raises(SystemExit):
        main(["--executor", "k8s"])
    assert "--executor takes local or slurm, not 'k8s'" in capsys.readouterr().err
    with pytest.raises(CommandError, match="--executor takes local or slurm"):
        call_command("worker", "--executor", "k8s", stdout=io.StringIO())


# -- the engine's exit under torchrun ------------------------------------------------------------------------


def test_an_engine_refusal_under_torchrun_is_still_the_submissions():
    assert failure_cause(1, TORCHRUN_REFUSAL) == "platform"  # torchrun's traceback, read as it is
    code, tail = engine_exit(1, TORCHRUN_REFUSAL)
    assert code == 1 and tail.splitlines()[-1].startswith("error: --corpus /x/corpus.txt: no documents")
    assert failure_cause(code, tail) == "submission"
    assert failure_summary(code, tail) == "--corpus /x/corpus.txt: no documents (after the recipe's preprocessors)"
    assert cause_of(parse_job_line("JobId=5 JobState=FAILED ExitCode=1:0 NodeList=n[1-2]"), TORCHRUN_REFUSAL) == (
        "submission"
    )
    crashed = TORCHRUN_REFUSAL.replace("error: --corpus", "Traceback (most recent call last):\n  File \"x\"\n"
                                       "RuntimeError: CUDA error\nerror: --corpus")  # fmt: skip
    assert failure_cause(*engine_exit(1, crashed)) == "platform"  # the engine's own traceback is kept
    assert engine_exit(-9, "killed\n") == (-9, "killed\n")  # not torchrun's: as it was


# -- submit --------------------------------------------------------------------------------------------------


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("The patient was given aspirin. She recovered.\nNo fever today. Discharged home.\n")
    return path


def submit(corpus: Path, *arguments: str) -> str:
    out = io.StringIO()
    call_command("submit", "--owner", "alice", "--recipe", "gatortron", "--corpus", str(corpus), "--benchmark",
                 "blurb-mini", "--datasets", "demo-ner", *arguments, stdout=out)  # fmt: skip
    return out.getvalue()


def test_a_large_model_replicated_on_80_gb_cards_is_refused_at_submit_naming_fsdp(alice, corpus, artefact_store):
    from jobs.models import Job

    with pytest.raises(CommandError) as refused:
        submit(corpus, "--gpus", "8", "--pretrain-settings", LARGE % "ddp")
    message = str(refused.value)
    assert message.startswith("recipe gatortron: megatron-bert:gatortron-large (8.84 billion parameters)")
    assert "an 80 GB GPU" in message and message.endswith(": needs fsdp") and "\n" not in message
    assert not Job.objects.exists()


def test_too_few_cards_for_fsdp_are_refused_with_the_plans_count_and_a_slurm_workers_memory_counts(
    alice, corpus, artefact_store
):
    from jobs import dispatch
    from jobs.models import Job

    with pytest.raises(CommandError, match=r"needs at least 3 GPUs of 80 GB with fsdp"):
        submit(corpus, "--gpus", "1", "--nodes", "2", "--pretrain-settings", LARGE % "fsdp")
    dispatch.record_worker("slurm0@login", ["gpu"], gpus=1, gpu_devices=[H200], executor="slurm", nodes=2)
    submit(corpus, "--gpus", "1", "--nodes", "2", "--pretrain-settings", LARGE % "fsdp")  # fits on two 141 GB cards
    (job,) = Job.objects.filter(kind=Job.Kind.PRETRAIN)
    assert (job.spec["version"], job.spec["gpus"], job.spec["nodes"]) == (2, 1, 2)
    with pytest.raises(CommandError, match=r"--nodes must be from 1 to 1024, not 0"):
        submit(corpus, "--nodes", "0")
