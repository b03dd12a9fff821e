"""Slurm as an executor: a worker on a cluster's login node runs a job's engine command as a batch job.

A local worker runs the engine as its child (:mod:`workers.runner.execution`); on a cluster the
scheduler owns the compute nodes, so the worker hands the same command to ``sbatch`` and follows the
batch job instead: it polls ``scontrol show job`` every ``BIOLM_SLURM_POLL_S`` seconds, passes the new
text of the job's ``--output`` file to a heartbeat callback, ``scancel``\\ s the job when the callback
says ``stop``, and maps Slurm's ending to biolm's failure causes. Like HELM's slurm_runner, the
platform keeps its own record of the job and never shells into nodes.

A job on several nodes runs one ``torchrun`` per node (``srun`` with one task per node), meeting in a
c10d rendezvous hosted on the allocation's first node. The batch script runs there (Slurm starts a
batch job's script on the first node of its allocation), so the script picks a port that is free on
that node and reads the node's address with ``scontrol show node``: the address the nodes reach each
other by (``NodeAddr``) need not be a name that resolves, and on the test cluster (tests/slurm_cluster.py)
two nodes named n1 and n2 both live at 127.0.0.1.

The batch job is ``--no-requeue``: a job Slurm loses (a failed node, a preemption, a time limit) ends,
and the platform decides whether to try it again (it does: those are "platform" causes, refunded, and a
pretraining job resumes from its last uploaded checkpoint). The job's working folder (the spec, the
packed corpus, the checkpoint folder, the log) must be on a filesystem every node shares.

The batch job's environment is the worker's minus its secrets (``BIOLM_WORKER_SECRET``) and the
database (``DATABASE_URL``): the engine needs neither, and like the rest of the runner this module
imports no Django.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from biolm.engine_exits import failure_cause
from workers.runner.failures import engine_exit

# The settings live in slurm_settings (which loads nothing of the engine's); the executor's users find them here too.
from workers.runner.slurm_settings import TIME_LIMIT, SlurmReach, SlurmSettings, SlurmSettingsError  # noqa: F401

logger = logging.getLogger("biolm.worker")

ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT_S = 60.0
# Variables a batch job never gets: the worker's credential for the platform, the database, and the broker (whose
# URL may carry a password): the engine needs none of them.
WITHHELD_VARIABLES = ("BIOLM_WORKER_SECRET", "DATABASE_URL", "CELERY_BROKER_URL")

# Slurm's job states (``scontrol show job``'s JobState) that end a job; COMPLETING is not one (epilogs run).
TERMINAL_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
    "TIMEOUT", "REVOKED", "SPECIAL_EXIT",
})  # fmt: skip
# Endings that are the cluster's, not the job's: retried (resuming from the checkpoint) and refunded.
PLATFORM_ENDINGS = frozenset({"OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "TIMEOUT", "BOOT_FAIL", "DEADLINE"})
# Lines Slurm's own programs add to a job's output ("srun: error: n1: task 0: Exited with exit code 1",
# "slurmstepd-n1: error: *** JOB 7 ON n1 CANCELLED ..."): not the engine's, so not its last line.
SLURM_LINE = re.compile(r"^(srun|slurmstepd(-\S+)?|sbatch|salloc): ")
SCONTROL_KEY = re.compile(r"(?:^| )([A-Za-z][\w:/.-]*)=")


class SlurmError(RuntimeError):
    """A Slurm command failed (the controller unreachable, a refused submission): one line, with its stderr."""


class SlurmJobUnknown(SlurmError):
    """``scontrol`` no longer knows the job (it ended over ``MinJobAge`` ago, or the controller lost its state)."""


# -- the batch script ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchJob:
    """One biolm job as a Slurm batch job: what runs, on how many nodes, and where its files go.

    With ``torchrun`` (the default), ``command`` is what torchrun runs on every node, after its own
    options: ``["-m", "workers.engine", "pretrain", ...]`` or a script and its arguments. Without,
    ``command`` is a whole command line, run once on one node (a single-process job). ``directory``
    is the job's working folder, on a filesystem every node shares: the script and the log go there.
    """

    job_id: int
    directory: Path
    command: tuple[str, ...]
    nodes: int = 1
    gpus_per_node: int = 0
    nproc_per_node: int = 1
    max_restarts: int = 0
    torchrun: bool = True
    python: str = sys.executable
    workdir: Path = ROOT
    environment: Mapping[str, str] = field(default_factory=dict)
    time_limit: str = ""  # this job's own, instead of BIOLM_SLURM_TIME_LIMIT

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("a batch job needs a command")
        if self.nodes < 1 or self.gpus_per_node < 0 or self.nproc_per_node < 1 or self.max_restarts < 0:
            raise ValueError(f"job #{self.job_id}: nodes and processes per node must be at least 1, GPUs and "
                             "restarts at least 0")  # fmt: skip
        if not self.torchrun and self.nodes != 1:
            raise ValueError(f"job #{self.job_id}: a job without torchrun runs on one node, not {self.nodes}")
        if self.time_limit and not TIME_LIMIT.match(self.time_limit):
            raise ValueError(f"job #{self.job_id}: {self.time_limit!r} is not a Slurm time limit")
        if any(character.isspace() for character in f"{self.directory}{self.workdir}"):  # #SBATCH lines take no quotes
            raise ValueError(f"job #{self.job_id}: its folders' paths must not contain spaces: {self.directory}")

    @property
    def name(self) -> str:
        return f"biolm-job-{self.job_id}"

    @property
    def script_path(self) -> Path:
        return self.directory / "slurm-batch.sh"

    @property
    def log_path(self) -> Path:
        return self.directory / "slurm.log"


def batch_script(job: BatchJob, settings: SlurmSettings) -> str:
    """The text of ``job``'s batch script: its ``#SBATCH`` options, its environment, then srun (or the command)."""
    options = [f"--job-name={job.name}", f"--nodes={job.nodes}", "--ntasks-per-node=1"]
    if job.gpus_per_node:  # omitted on CPU clusters, where asking for GPUs would leave the job pending forever
        options.append(f"--gpus-per-node={job.gpus_per_node}")
    options += [f"--partition={settings.partition}"] if settings.partition else []
    options += [f"--account={settings.account}"] if settings.account else []
    time_limit = job.time_limit or settings.time_limit
    options += [f"--time={time_limit}"] if time_limit else []
    options += [f"--output={job.log_path}", f"--chdir={job.workdir}", "--no-requeue"]
    lines = ["#!/bin/bash", f"# biolm job #{job.job_id} (workers/runner/slurm.py)"]
    lines += [f"#SBATCH {option}" for option in options]
    lines += ["set -eu", "export PYTHONUNBUFFERED=1"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in sorted(job.environment.items())]
    lines += [f"unset {' '.join(WITHHELD_VARIABLES)}"]
    lines += _torchrun_lines(job) if job.torchrun else [f"exec {shlex.join(job.command)}"]
    return "\n".join(lines) + "\n"


def _torchrun_lines(job: BatchJob) -> list[str]:
    """One torchrun per node (srun, one task per node), meeting on the first node of the allocation."""
    python = shlex.quote(job.python)
    free_port = 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
    torchrun = [
        job.python, "-m", "torch.distributed.run", "--nnodes", "$SLURM_NNODES", "--nproc-per-node",
        str(job.nproc_per_node), "--rdzv-backend", "c10d", "--rdzv-endpoint", "$rdzv_host:$rdzv_port",
        "--rdzv-id", f"biolm-{job.job_id}-$SLURM_JOB_ID", "--max-restarts", str(job.max_restarts),
    ]  # fmt: skip
    quoted = " ".join(f'"{word}"' if "$" in word else shlex.quote(word) for word in torchrun)
    return [
        "# The rendezvous is hosted on the first node, where this script runs: its address as Slurm knows it",
        "# (NodeAddr: node names need not resolve) and a port free there.",
        'first_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)',
        "rdzv_host=$(scontrol show node \"$first_node\" -o | sed -n 's/.* NodeAddr=\\([^ ]*\\).*/\\1/p')",
        "rdzv_host=${rdzv_host:-$first_node}",
        f"rdzv_port=$({python} -c {shlex.quote(free_port)})",
        f'echo "biolm: job #{job.job_id} is Slurm job $SLURM_JOB_ID on $SLURM_JOB_NODELIST;'
        ' rendezvous at $rdzv_host:$rdzv_port ($first_node)"',
        f"exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 {quoted} {shlex.join(job.command)}",
    ]


def write_batch_script(job: BatchJob, settings: SlurmSettings) -> Path:
    """Write :func:`batch_script` into the job's folder (kept there: it says exactly what ran)."""
    job.directory.mkdir(parents=True, exist_ok=True)
    job.script_path.write_text(batch_script(job, settings), encoding="utf-8")
    job.script_path.chmod(0o755)
    return job.script_path


# -- Slurm's commands ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobState:
    """A batch job's state as ``scontrol show job -o`` reports it.

    ``exit_code`` and ``signal`` split Slurm's ``ExitCode=code:signal`` (the batch script's status, or the
    signal that ended it); ``nodes`` is Slurm's compressed list (``n[1-2]``), :meth:`Slurm.hostnames` expands it.
    """

    job_id: str
    state: str
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    nodes: str = ""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def status(self) -> int:
        """The status as :func:`biolm.engine_exits.failure_cause` reads it: a signal is negative, as Popen's."""
        return -self.signal if self.signal else self.exit_code


def parse_job_line(line: str) -> JobState:
    """One ``scontrol show job -o`` line (``Key=value`` pairs separated by spaces) as a :class:`JobState`."""
    fields = scontrol_fields(line)
    if "JobId" not in fields or "JobState" not in fields:
        raise SlurmError(f"not a line of scontrol show job -o: {line[:200]!r}")
    code, _, signal = fields.get("ExitCode", "0:0").partition(":")
    nodes = fields.get("NodeList", "")
    return JobState(
        job_id=fields["JobId"], state=fields["JobState"].split()[0], exit_code=int(code or 0),
        signal=int(signal or 0), reason=fields.get("Reason", ""), nodes="" if nodes == "(null)" else nodes,
    )  # fmt: skip


def scontrol_fields(line: str) -> dict[str, str]:
    """``{"JobId": "7", "Reason": "launch failed requeued held", ...}``: a value runs to the next `` Key=``."""
    keys = list(SCONTROL_KEY.finditer(line.strip()))
    text = line.strip()
    return {
        match.group(1): text[match.end() : keys[index + 1].start() if index + 1 < len(keys) else len(text)].strip()
        for index, match in enumerate(keys)
    }


class Slurm:
    """Slurm's client commands, run with ``env`` (which names the cluster's slurm.conf, where not the default)."""

    def __init__(self, env: Mapping[str, str] | None = None, timeout_s: float = COMMAND_TIMEOUT_S) -> None:
        self.env = dict(os.environ if env is None else env)
        self.timeout_s = timeout_s

    def _run(self, *command: str, env: Mapping[str, str] | None = None) -> str:
        try:
            done = subprocess.run(command, env=dict(env or self.env), capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"{command[0]} failed: {exc}") from None
        if done.returncode != 0:
            said = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
            if "Invalid job id" in said:
                raise SlurmJobUnknown(f"{shlex.join(command)}: {said}")
            raise SlurmError(f"{shlex.join(command)}: {said}")
        return done.stdout

    def submit(self, script: Path, settings: SlurmSettings, env: Mapping[str, str] | None = None) -> str:
        """``sbatch --parsable``: the new job's id. ``env`` is the batch job's environment (default: this one's)."""
        out = self._run("sbatch", "--parsable", *settings.extra_args, str(script), env=env)
        job_id = out.strip().split(";")[0]  # "id" or "id;cluster"
        if not job_id.isdigit():
            raise SlurmError(f"sbatch --parsable said {out.strip()!r}, not a job id")
        return job_id

    def state(self, job_id: str) -> JobState:
        """``scontrol show job -o``; :class:`SlurmJobUnknown` once Slurm has forgotten the job."""
        for line in self._run("scontrol", "show", "job", "-o", job_id).splitlines():
            if line.strip():
                state = parse_job_line(line)
                if state.job_id == job_id:
                    return state
        raise SlurmJobUnknown(f"scontrol show job {job_id} did not list it")

    def cancel(self, job_id: str) -> None:
        """``scancel``: Slurm signals every step (SIGTERM, SIGKILL after KillWait) and the job ends CANCELLED."""
        self._run("scancel", job_id)

    def hostnames(self, node_list: str) -> tuple[str, ...]:
        """``n[1-2]`` as ``("n1", "n2")``."""
        if not node_list:
            return ()
        return tuple(self._run("scontrol", "show", "hostnames", node_list).split())


# -- the log -------------------------------------------------------------------------------------------------


class LogFollower:
    """The new text of a file that grows (the batch job's ``--output``), read from where the last read stopped.

    Decoded incrementally, so a UTF-8 character split across two reads is not garbled; a file that does not
    exist yet (the job is pending) reads as empty.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read(self) -> str:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return ""
        self.offset += len(data)
        return self._decoder.decode(data)

    def follow(self, done: Callable[[], bool], poll_s: float = 1.0) -> Iterator[str]:
        """Yield each new piece of text until ``done()``, then what was written before it was."""
        while not done():
            text = self.read()
            if text:
                yield text
            time.sleep(poll_s)
        rest = self.read()
        if rest:
            yield rest

    def tail(self, chars: int = 4000) -> str:
        """The file's last ``chars`` characters."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(max(0, self.path.stat().st_size - chars * 4))
                return handle.read().decode("utf-8", "replace")[-chars:]
        except FileNotFoundError:
            return ""


# -- endings -------------------------------------------------------------------------------------------------


def engine_lines(log_tail: str) -> str:
    """The log without Slurm's own lines, so the engine's ``error: ...`` line is the last one again."""
    return "\n".join(line for line in log_tail.splitlines() if not SLURM_LINE.match(line))


def cause_of(state: JobState, log_tail: str) -> str:
    """Whose failure a finished batch job is: "" for success, else biolm's cause (execution.failure_cause's words).

    The cluster's endings (a lost node, out of memory, preempted, over its time) are "platform": retried,
    resuming from the checkpoint, and refunded. CANCELLED is "cancelled". FAILED is the batch script's
    non-zero status, which is the engine's (the script execs srun, which passes on its task's status), so
    the engine's exit code and its last line keep their meaning; under torchrun, which exits 1 whatever its
    ranks did, the engine's own status and lines are read from torchrun's report (:func:`engine_exit`).
    """
    if state.state == "COMPLETED" and state.status == 0:
        return ""
    if state.state == "CANCELLED":
        return "cancelled"
    if state.state == "FAILED":
        return failure_cause(*engine_exit(state.status, engine_lines(log_tail)))
    return "platform"  # PLATFORM_ENDINGS, and endings no engine causes (REVOKED, SPECIAL_EXIT, a forgotten job)


# -- one run -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmOutcome:
    """How a batch job ended: Slurm's state, the script's status, biolm's cause ("" on success), where it ran.

    ``stopped`` says the heartbeat asked for the cancel (the platform's verdict), not someone on the cluster.
    """

    slurm_job_id: str
    state: str
    exit_code: int
    signal: int
    cause: str
    nodes: tuple[str, ...]
    reason: str = ""
    stopped: bool = False
    log_tail: str = ""

    @property
    def succeeded(self) -> bool:
        return not self.cause

    @property
    def status(self) -> int:
        """The batch script's status as :func:`biolm.engine_exits.failure_cause` reads it (a signal negative)."""
        return -self.signal if self.signal else self.exit_code


Heartbeat = Callable[[str], str]  # the log's new text -> the platform's verdict: "continue" or "stop"


def job_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment sbatch passes to the batch job: the worker's, less its credential and the database."""
    return {k: v for k, v in (os.environ if base is None else base).items() if k not in WITHHELD_VARIABLES}


class SlurmRun:
    """Submit one :class:`BatchJob`, follow it to its end with a heartbeat each poll, and say how it ended.

    Each poll reads the job's state, then calls ``heartbeat`` with the log's new text (and a line of its own
    when the job's state changes: "pending (Resources)" tells the platform why nothing happens yet). A
    ``"stop"`` verdict cancels the job, which then ends CANCELLED. An exception in the loop (the worker
    shutting down) cancels it too: nothing the worker started outlives it. A controller that does not
    answer is waited for, since the job runs on without it.
    """

    def __init__(self, job: BatchJob, settings: SlurmSettings, heartbeat: Heartbeat, *, slurm: Slurm | None = None,
                 env: Mapping[str, str] | None = None) -> None:  # fmt: skip
        self.job, self.settings, self.heartbeat = job, settings, heartbeat
        self.slurm = slurm or Slurm()
        self.env = job_environment(self.slurm.env if env is None else env)
        self.log = LogFollower(job.log_path)
        self.slurm_job_id = ""
        self._said = ""

    def run(self) -> SlurmOutcome:
        """Submit, follow, and say how the job ended; a refused submission raises :class:`SlurmError` (the
        platform's failure: sbatch refusing a partition or an account is this cluster's configuration)."""
        self.slurm_job_id = self.slurm.submit(write_batch_script(self.job, self.settings), self.settings, self.env)
        logger.info("job #%s: Slurm job %s submitted", self.job.job_id, self.slurm_job_id)
        stopped = False
        try:
            while True:
                state = self._poll()
                if state is not None and state.terminal:
                    break
                if self.heartbeat(self._news(state) + self.log.read()) == "stop" and not stopped:
                    stopped = self._cancel()
                time.sleep(self.settings.poll_s)
        except SlurmJobUnknown as exc:
            return self._outcome(JobState(self.slurm_job_id, "UNKNOWN", reason=str(exc)), stopped)
        except BaseException:
            self._cancel()
            raise
        return self._outcome(state, stopped)

    def _poll(self) -> JobState | None:
        """The job's state, or None while the controller does not answer (logged; the next poll asks again)."""
        try:
            return self.slurm.state(self.slurm_job_id)
        except SlurmJobUnknown:
            raise
        except SlurmError as exc:
            logger.warning("job #%s: Slurm job %s: %s", self.job.job_id, self.slurm_job_id, exc)
            return None

    def _news(self, state: JobState | None) -> str:
        """A line for the job's log when Slurm's state (or its reason) changed since the last poll."""
        if state is None:
            return ""
        said = f"{state.state.lower()}" + (f" ({state.reason})" if state.reason not in ("", "None") else "")
        if said == self._said:
            return ""
        self._said = said
        where = f" on {state.nodes}" if state.nodes else ""
        return f"slurm job {self.slurm_job_id}: {said}{where}\n"

    def _cancel(self) -> bool:
        try:
            self.slurm.cancel(self.slurm_job_id)
            return True
        except SlurmError as exc:  # asked again at the next "stop"
            logger.warning("job #%s: could not cancel Slurm job %s: %s", self.job.job_id, self.slurm_job_id, exc)
            return False

    def _outcome(self, state: JobState, stopped: bool) -> SlurmOutcome:
        rest = self.log.read()
        self.heartbeat(self._news(state) + rest)  # the last lines; the verdict no longer matters
        tail = self.log.tail()
        try:
            nodes = self.slurm.hostnames(state.nodes)
        except SlurmError:
            nodes = (state.nodes,) if state.nodes else ()
        outcome = SlurmOutcome(self.slurm_job_id, state.state, state.exit_code, state.signal, cause_of(state, tail),
                               nodes, state.reason, stopped, tail)  # fmt: skip
        logger.info("job #%s: Slurm job %s ended %s (exit %s:%s) on %s: cause %r", self.job.job_id,
                    self.slurm_job_id, state.state, state.exit_code, state.signal, ",".join(nodes) or "-",
                    outcome.cause or "none")  # fmt: skip
        return outcome


def run_batch_job(job: BatchJob, heartbeat: Heartbeat, settings: SlurmSettings | None = None,
                  env: Mapping[str, str] | None = None) -> SlurmOutcome:  # fmt: skip
    """Run ``job`` on Slurm with the settings the environment gives (:meth:`SlurmSettings.from_environment`)."""
    return SlurmRun(job, settings or SlurmSettings.from_environment(), heartbeat, slurm=Slurm(env)).run()
