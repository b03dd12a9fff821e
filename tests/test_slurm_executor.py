"""The Slurm executor (workers/runner/slurm.py): its settings, batch scripts and state parsing, then real batch jobs
on a real two-node Slurm cluster on this host (tests/slurm_cluster.py; skipped without Slurm installed, failed
then under BIOLM_REQUIRE_SLURM=1).

On the cluster: a two-node srun + torchrun job whose ranks meet over gloo and all-reduce; a job the platform
stops (scancel); a job whose node is lost; a job the engine refuses. A time limit is not waited for: Slurm
counts limits in whole minutes and checks them every 30 s, so a TIMEOUT takes over 60 s; its test reads the
``scontrol show job -o`` line this cluster (Slurm 22.05.8) wrote for a job with ``--time=0:01`` instead.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster, slurm_cluster_fixture  # noqa: F401 (the fixture slurm_cluster)

from workers.runner.slurm import (
    PLATFORM_ENDINGS,
    BatchJob,
    JobState,
    LogFollower,
    Slurm,
    SlurmError,
    SlurmRun,
    SlurmSettings,
    SlurmSettingsError,
    batch_script,
    cause_of,
    job_environment,
    parse_job_line,
    scontrol_fields,
)

# Recorded from the test cluster (Slurm 22.05.8): ``sbatch --time=0:01`` with a longer sleep, 78 s after it started.
TIMEOUT_LINE = (
    "JobId=2 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 Nice=0 Account=(null) "
    "QOS=(null) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:15 RunTime=00:01:18 TimeLimit=00:01:00 TimeMin=N/A SubmitTime=2026-12-01T21:51:57 "
    "EligibleTime=2026-12-01T21:51:57 AccrueTime=2026-12-01T21:51:57 StartTime=2026-12-01T21:51:59 "
    "EndTime=2026-12-01T21:53:17 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-01T21:51:59 "
    "Scheduler=Main Partition=test AllocNode:Sid=localhost:5466 ReqNodeList=n1 ExcNodeList=(null) NodeList=n1 "
    "BatchHost=n1 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 "
    "Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) "
    "Command=/tmp/sl/t.sh WorkDir=/tmp/sl StdErr=/tmp/sl/t-2.out StdIn=/dev/null StdOut=/tmp/sl/t-2.out Power= "
)
TIMEOUT_LOG = "start\nslurmstepd-n1: error: *** JOB 2 ON n1 CANCELLED AT 2026-12-01T21:53:17 DUE TO TIME LIMIT ***\n"
FAST = SlurmSettings(poll_s=0.3)
RANKS_SCRIPT = """\
import json, os, socket, sys
from pathlib import Path

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
report = {"rank": rank, "world": dist.get_world_size(), "node": os.environ["SLURMD_NODENAME"],
          "host": socket.gethostname(), "sum": total.item()}
Path(sys.argv[1], f"rank-{rank}.json").write_text(json.dumps(report))
print(f"rank {rank} on {report['node']}: all_reduce gave {total.item()}")
dist.destroy_process_group()
"""


# -- settings ------------------------------------------------------------------------------------------------


def test_settings_are_read_from_the_environment():
    settings = SlurmSettings.from_environment({
        "BIOLM_SLURM_PARTITION": "gpu", "BIOLM_SLURM_ACCOUNT": "bio-lab", "BIOLM_SLURM_TIME_LIMIT": "2-00:00:00",
        "BIOLM_SLURM_EXTRA_ARGS": "--qos=high --constraint 'a100|h100'", "BIOLM_SLURM_POLL_S": "2.5",
    })  # fmt: skip
    assert settings == SlurmSettings("gpu", "bio-lab", "2-00:00:00", ("--qos=high", "--constraint", "a100|h100"), 2.5)
    assert SlurmSettings.from_environment({}) == SlurmSettings()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("BIOLM_SLURM_POLL_S", "soon", "expected a positive number of seconds"),
        ("BIOLM_SLURM_POLL_S", "0", "expected a positive number of seconds"),
        ("BIOLM_SLURM_TIME_LIMIT", "1 hour", "expected a Slurm time limit"),
        ("BIOLM_SLURM_EXTRA_ARGS", "--comment 'unclosed", "expected shell words"),
        ("BIOLM_SLURM_EXTRA_ARGS", "qos=high", "expected sbatch options"),
        ("BIOLM_SLURM_PARTITION", "gpu; rm -rf /", "expected a Slurm name"),
        ("BIOLM_SLURM_ACCOUNT", "a b", "expected a Slurm name"),
    ],
)
def test_a_bad_setting_is_a_one_line_error_naming_the_variable(variable, value, expected):
    with pytest.raises(SlurmSettingsError) as raised:
        SlurmSettings.from_environment({variable: value})
    message = str(raised.value)
    assert message.startswith(f"{variable}=") and expected in message and "\n" not in message


# -- the batch script ----------------------------------------------------------------------------------------


def test_a_multi_node_script_runs_one_torchrun_per_node_meeting_on_the_first_node(tmp_path):
    command = ("-m", "workers.engine", "pretrain", "--spec", "spec.json")
    job = BatchJob(42, tmp_path, command, nodes=2, gpus_per_node=4, nproc_per_node=4, max_restarts=2,
                   environment={"BIOLM_PROGRESS": "p.json"})  # fmt: skip
    script = batch_script(job, SlurmSettings("gpu", "bio", "24:00:00"))
    for line in ("#SBATCH --job-name=biolm-job-42", "#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1",
                 "#SBATCH --gpus-per-node=4", "#SBATCH --partition=gpu", "#SBATCH --account=bio",
                 "#SBATCH --time=24:00:00", f"#SBATCH --output={tmp_path}/slurm.log", "#SBATCH --no-requeue",
                 "export BIOLM_PROGRESS=p.json", "unset BIOLM_WORKER_SECRET DATABASE_URL CELERY_BROKER_URL",
                 'first_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)'):  # fmt: skip
        assert line in script.splitlines()
    launch = script.splitlines()[-1]
    assert launch.startswith("exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 ")
    assert ('--nnodes "$SLURM_NNODES" --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint '
            '"$rdzv_host:$rdzv_port" --rdzv-id "biolm-42-$SLURM_JOB_ID" --max-restarts 2 '
            "-m workers.engine pretrain --spec spec.json") in launch  # fmt: skip


def test_a_cpu_job_asks_for_no_gpus_and_a_plain_job_runs_its_command_without_srun(tmp_path):
    script = batch_script(BatchJob(7, tmp_path, ("python", "-m", "workers.engine", "finetune"), torchrun=False),
                          SlurmSettings())  # fmt: skip
    assert "--gpus-per-node" not in script and "--partition" not in script and "--time" not in script
    assert script.splitlines()[-1] == "exec python -m workers.engine finetune"
    with pytest.raises(ValueError, match="runs on one node"):
        BatchJob(7, tmp_path, ("true",), nodes=2, torchrun=False)


def test_the_batch_job_gets_the_workers_environment_without_its_secret_the_database_or_the_broker():
    env = job_environment({"PATH": "/bin", "BIOLM_WORKER_SECRET": "s3cret", "DATABASE_URL": "postgres://x",
                           "CELERY_BROKER_URL": "redis://:pw@broker"})  # fmt: skip
    assert env == {"PATH": "/bin"}


# -- states and causes ---------------------------------------------------------------------------------------


def test_a_scontrol_line_gives_the_state_exit_code_reason_and_nodes():
    state = parse_job_line(TIMEOUT_LINE)
    assert state == JobState("2", "TIMEOUT", exit_code=0, signal=15, reason="TimeLimit", nodes="n1")
    assert state.terminal and state.status == -15


def test_a_value_with_spaces_runs_to_the_next_key():
    line = "JobId=9 JobName=x JobState=PENDING Reason=launch failed requeued held Dependency=(null) NodeList=(null)"
    assert scontrol_fields(line)["Reason"] == "launch failed requeued held"
    state = parse_job_line(line)
    assert (state.state, state.nodes, state.terminal) == ("PENDING", "", False)
    assert not parse_job_line("JobId=9 JobState=COMPLETING ExitCode=0:0").terminal


def test_a_time_limit_overrun_is_the_platforms_and_so_are_the_clusters_other_endings():
    assert cause_of(parse_job_line(TIMEOUT_LINE), TIMEOUT_LOG) == "platform"
    for ending in PLATFORM_ENDINGS:
        assert cause_of(JobState("1", ending, exit_code=1), "error: bad input\n") == "platform", ending


def test_failed_keeps_the_engines_exit_code_meaning_and_slurms_own_lines_are_skipped():
    refused = "loading\nerror: bad input\nsrun: error: n1: task 0: Exited with exit code 1\n"
    assert cause_of(JobState("1", "FAILED", exit_code=1), refused) == "submission"
    assert cause_of(JobState("1", "FAILED", exit_code=3), "error: plugin acme: metric f1 raised\n") == "plugin"
    assert cause_of(JobState("1", "FAILED", exit_code=0, signal=9), "error: bad input\n") == "platform"
    assert cause_of(JobState("1", "FAILED", exit_code=1), "Traceback (most recent call last):\nerror: x\n") == (
        "platform"
    )
    assert cause_of(JobState("1", "CANCELLED", signal=15), "") == "cancelled"
    assert cause_of(JobState("1", "COMPLETED"), "") == ""


def test_the_log_follower_reads_only_new_text_and_never_splits_a_character(tmp_path):
    log = tmp_path / "slurm.log"
    follower = LogFollower(log)
    assert follower.read() == ""  # pending: no file yet
    log.write_bytes("naïve ".encode()[:3])  # "na" and half of "ï"
    assert follower.read() == "na"
    with log.open("ab") as handle:
        handle.write("naïve ".encode()[3:] + b"done\n")
    assert follower.read() == "ïve done\n"
    assert follower.read() == ""
    assert follower.tail(5) == "done\n"
    assert list(LogFollower(log).follow(lambda: True, poll_s=0)) == ["naïve done\n"]


# -- on the cluster ------------------------------------------------------------------------------------------


def run_on(cluster: SlurmCluster, job: BatchJob, stop_when=None, settings: SlurmSettings = FAST, limit_s=60.0):
    """``job`` through SlurmRun on ``cluster``; the heartbeats' texts are kept, and ``stop_when(text so far)``
    answering True asks for a stop. Past ``limit_s`` the heartbeat raises, which cancels the job."""
    seen: list[str] = []
    deadline = time.monotonic() + limit_s

    def heartbeat(text: str) -> str:
        seen.append(text)
        if time.monotonic() > deadline:
            raise TimeoutError(f"job #{job.job_id} ran over {limit_s} s; its log so far:\n{''.join(seen)}")
        return "stop" if stop_when is not None and stop_when("".join(seen)) else "continue"

    outcome = SlurmRun(job, settings, heartbeat, slurm=Slurm(cluster.env)).run()
    return outcome, "".join(seen)


def plain(job_id: int, folder: Path, shell: str) -> BatchJob:
    return BatchJob(job_id, folder, ("bash", "-c", shell), torchrun=False)


@pytest.mark.slow
def test_a_two_node_torchrun_job_runs_a_rank_on_each_node_and_all_reduces(slurm_cluster, tmp_path):
    (tmp_path / "ranks.py").write_text(RANKS_SCRIPT, encoding="utf-8")
    job = BatchJob(1, tmp_path, (str(tmp_path / "ranks.py"), str(tmp_path)), nodes=2, nproc_per_node=1,
                   python=sys.executable, environment={"OMP_NUM_THREADS": "1"})  # fmt: skip
    outcome, log = run_on(slurm_cluster, job, limit_s=80)
    assert (outcome.state, outcome.cause, outcome.nodes) == ("COMPLETED", "", ("n1", "n2")), log
    ranks = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert {report["node"] for report in ranks} == {"n1", "n2"}
    assert [(report["world"], report["sum"]) for report in ranks] == [(2, 3.0), (2, 3.0)]
    assert "rendezvous at 127.0.0.1:" in log  # the first node's NodeAddr, not its name (n1 does not resolve)


@pytest.mark.slow
def test_a_job_the_platform_stops_is_cancelled(slurm_cluster, tmp_path):
    outcome, log = run_on(slurm_cluster, plain(2, tmp_path, "echo running; sleep 120"),
                          stop_when=lambda text: "running" in text)  # fmt: skip
    assert (outcome.state, outcome.cause, outcome.stopped) == ("CANCELLED", "cancelled", True), log
    assert f"slurm job {outcome.slurm_job_id}: running" in log


@pytest.mark.slow
def test_a_job_the_engine_refuses_is_the_submissions(slurm_cluster, tmp_path):
    outcome, log = run_on(slurm_cluster, plain(3, tmp_path, "echo loading; echo 'error: bad input' >&2; exit 1"))
    assert (outcome.state, outcome.exit_code, outcome.cause) == ("FAILED", 1, "submission"), log
    assert outcome.log_tail.endswith("error: bad input\n") and len(outcome.nodes) == 1


@pytest.mark.slow
def test_a_job_whose_node_is_lost_ends_node_fail_and_is_the_platforms(slurm_cluster, tmp_path):
    """slurmd on n2 is killed mid-run. Slurm 22.05 retries a refused ping for ~12 s and downs the node after
    two failed pings (SlurmdTimeout=5), so the job ends NODE_FAIL some 25 s later."""
    lost = []

    def lose_n2_once_running(text: str) -> bool:
        if "running" in text and not lost:
            slurm_cluster.kill_node("n2")
            lost.append(time.monotonic())
        return False

    settings = SlurmSettings(extra_args=("--nodelist=n2",), poll_s=0.5)
    try:
        outcome, log = run_on(slurm_cluster, plain(4, tmp_path, "echo running; sleep 120"), lose_n2_once_running,
                              settings, limit_s=75)  # fmt: skip
    finally:
        slurm_cluster.start_node("n2")  # ReturnToService=2: it comes back once it registers
        slurm_cluster.wait_for_nodes("idle")
    assert (outcome.state, outcome.reason, outcome.cause, outcome.nodes) == ("NODE_FAIL", "NodeDown", "platform",
                                                                             ("n2",)), log  # fmt: skip


@pytest.mark.slow
def test_a_partition_the_cluster_lacks_is_refused_in_one_line(slurm_cluster, tmp_path):
    with pytest.raises(SlurmError) as raised:
        run_on(slurm_cluster, plain(5, tmp_path, "true"), settings=SlurmSettings(partition="nosuch"))
    assert "invalid partition" in str(raised.value).lower() and "\n" not in str(raised.value)


def test_the_harness_leaves_the_systems_slurm_alone():
    """The test cluster's files are its own: nothing under /etc/slurm or /etc/munge is read or written."""
    from slurm_cluster import SlurmCluster

    cluster = SlurmCluster(Path("/tmp/nowhere"))
    conf = cluster.slurm_conf()
    assert "/etc/" not in conf and f"AuthInfo=socket={cluster.munge_socket}" in conf
    assert cluster.env["SLURM_CONF"] == "/tmp/nowhere/slurm.conf"
