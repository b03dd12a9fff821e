"""One delivery of one job: claim, download, run the engine as a child process, report, finish.

The claim returns the job's spec (its typed contract, :mod:`biolm.contract`), once. The worker
checks that every plugin the spec pins is installed here (a missing one is the platform's: the job
is retried, perhaps elsewhere) and that the installed code is the pinned code (other code is the
plugin's fault: not retried, refunded), writes the spec to a file and runs the engine on it
(``--spec FILE``). The engine is a fresh process, so it always loads the plugins as installed now;
when they changed since this worker's last job, the job's log says so.

On a cluster (``BIOLM_EXECUTOR=slurm``, :mod:`workers.runner.executors`) only "run the engine" differs:
the same command runs as a Slurm batch job (:class:`workers.runner.slurm.SlurmRun`: srun and torchrun
on each of the job's nodes), whose log and progress file, in the job's folder on a filesystem the nodes
share, reach the platform in the same heartbeats; a "stop" verdict is an ``scancel``. Slurm's endings
that are the cluster's (a lost node, out of memory, preempted, over its time limit, or cancelled on the
cluster by someone other than the platform) are the platform's: retried, resuming from the uploaded
checkpoint.

The engine runs in a child process (``python -m workers.engine ...``, or torchrun for a
pretraining job on several GPUs) so that the worker can always stop it: a heartbeat answered
"stop" (the job was cancelled, or reaped and given to another worker) terminates it within one
heartbeat interval. While it runs, every heartbeat carries the engine's progress file and the new
lines of its log; a pretraining run's newest checkpoint is uploaded as it appears, so an attempt
after a crash resumes from it instead of from step 0. Downloads, packing and uploads heartbeat from
a thread while they block (:mod:`workers.runner.transfer_heartbeats`): a large model's take longer
than the platform's silence limit.

Failures are told apart by cause: the engine exiting with status 1 is a refusal of the submission's
input (a malformed checkpoint, say) and is charged; status 3 is a plugin's code raising (its one-
line error names the plugin, the contribution and the line) or other code than the job pins, not
retried and refunded; anything else (a killed child, a download that failed, the platform
unreachable) is the platform's, retried and refunded. The job's error is one line; the engine's
output, traceback included, is the job's log.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from biolm import contract, plugin_set
from biolm.archives import ArchiveRefused, unpack
from biolm.contract.jobs import COMPLETION_CHECKING
from biolm.contract.scores import SCORES_FILE, ScoreInputs
from biolm.engine_exits import failure_cause, failure_summary, plugin_of
from biolm.intake_limits import ArchiveLimits, resume_archive_limits
from biolm.placement import holder_named_by
from workers.engine.progress_file import ENVIRONMENT_VARIABLE as PROGRESS_VARIABLE
from workers.engine.progress_file import read as read_progress
from workers.runner.client import Conflict, PlatformClient, Rejected, Unreachable
from workers.runner.failures import engine_exit
from workers.runner.input_cache import InputCache
from workers.runner.outputs import send_output
from workers.runner.slurm import (
    BatchJob,
    SlurmError,
    SlurmOutcome,
    SlurmReach,
    SlurmRun,
    SlurmSettings,
    engine_lines,
)
from workers.runner.transfer_heartbeats import heartbeats_while

GATHER = contract.Slice("gather")
logger = logging.getLogger("biolm.worker")

ROOT = Path(__file__).resolve().parents[2]
HEARTBEAT_S = float(os.environ.get("BIOLM_HEARTBEAT_S", "5"))
LOG_CHUNK_CHARS = 8_000
STOP_GRACE_S = 10.0


@dataclass
class Outcome:
    status: str  # succeeded, delivered (the platform checks the outputs), failed, stopped, not-claimed
    detail: str = ""


CACHED_ROLE = "model"  # the checkpoint: what every job of a submission reads


class JobRun:
    def __init__(self, job_id: int, token: str, *, api_url: str, worker: str, work_dir: Path,
                 executor: str = "local", credential: str = "") -> None:  # fmt: skip
        self.job_id, self.worker, self.executor, self.credential = job_id, worker, executor, credential
        self.spec: contract.FinetuneJob | contract.PretrainJob | None = None
        self.uploads: dict | None = None  # the claim's {"part_bytes"}: outputs go straight to the S3 store
        self.held_by = ""  # the claim's: the data holder whose hosts keep this job's data (this one's)
        self.client = PlatformClient(api_url, token)
        self.delivery = uuid.uuid4().hex
        self.work_dir = Path(work_dir)
        self.directory = self.work_dir / f"job-{job_id}-{self.delivery[:8]}"
        self.log_path = self.directory / "engine.log"
        self.progress_path = self.directory / "progress.json"
        self._log_sent = 0
        self._checkpoint_sent = 0.0
        self._phase: tuple[str, float, int] | None = None
        self._moved: tuple[float, int] = (0.0, 0)  # when the step last moved, and to which
        self._notes: list[str] = []

    def path(self, suffix: str) -> str:
        return f"jobs/{self.job_id}/{suffix}"

    def run(self) -> Outcome:
        try:
            claim = {
                "delivery": self.delivery,
                "worker": self.worker,
                "code": [pin.to_json() for pin in contract.code_here()],
            }
            # A data holder's worker proves it is one: a held job's claim needs the holder's credential.
            proof = {"X-Biolm-Worker-Credential": self.credential} if holder_named_by(self.credential) else {}
            claimed = self.client.post(self.path("claim"), claim, proof)
        except Conflict as exc:
            logger.info("job #%s not claimed: %s", self.job_id, exc)
            return Outcome("not-claimed", str(exc))
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            return self._run_claimed(claimed)
        except Conflict as exc:  # the job was taken from this delivery while it ran
            return Outcome("stopped", str(exc))
        except (Unreachable, Rejected, OSError) as exc:
            return self._fail(f"{type(exc).__name__}: {exc}", "platform")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _run_claimed(self, claimed: dict) -> Outcome:
        try:
            self.spec = contract.parse_job_spec(claimed["spec"])
            self.uploads = claimed.get("uploads")
            self.held_by = claimed.get("held_by") or ""
        except contract.ContractError as exc:  # a spec this worker cannot read: an older or newer biolm
            return self._fail(f"this worker cannot read the job's spec: {exc}", "platform")
        if self.spec.KIND == "score" and not self.held_by:  # the platform scores on its own gold
            return self._fail("a score job runs on a GPU worker only for a data holder's own data", "platform")
        if getattr(self.spec, "nodes", 1) > 1 and self.executor != "slurm":  # placement never sends one here
            return self._fail(f"a job on {self.spec.nodes} nodes runs on a cluster's (Slurm) worker; this worker "
                              "runs jobs on its own host", "platform")  # fmt: skip
        refused = self._check_code()
        if refused is not None:
            return refused
        spec_file = self.directory / "spec.json"
        spec_file.write_text(json.dumps(claimed["spec"], indent=2), encoding="utf-8")
        with self._heartbeats_while("downloading the inputs"):
            inputs = {role: self._download(role, entries) for role, entries in claimed["inputs"].items()}
        out = self.directory / "out"
        try:
            command = self._command(spec_file, inputs, out)
        except ArchiveRefused as exc:  # a hostile resume archive: refusing it again would change nothing
            return self._fail(str(exc), "submission")
        except ValueError as exc:  # this worker's settings (BIOLM_TORCHRUN_MAX_RESTARTS): another may run it
            return self._fail(f"this worker cannot launch the job: {exc}", "platform")
        ended = self._run_on_slurm(command, out) if self.executor == "slurm" else self._run_here(command, out)
        if ended is not None:
            return ended
        with self._heartbeats_while("uploading the outputs"):
            if self.spec.KIND == "finetune":
                name = "results.json" if self.spec.part in (None, GATHER) else contract.SLICE_FILE
                self._send(name, out / name)
            elif self.spec.KIND == "score":
                self._send(SCORES_FILE, out / SCORES_FILE)
            else:
                archive = self._tar(out, self.directory / "model.tar", exclude=("checkpoint", "data"))
                self._send("model.tar", archive)
        return self._complete()

    def _complete(self) -> Outcome:
        """Ask the platform to accept the outputs, heartbeating while it does.

        A pretraining job's model is checked by the platform's CPU worker after the call (the answer
        says ``checking``); this worker is then done with the job. Other outputs are checked within the
        call, which on a busy host can outlast the platform's silence limit: the beats go on meanwhile,
        so a finished job is not reaped as a lost worker's and trained once more.
        """
        try:
            with self._heartbeats_while("the platform accepts the outputs"):
                answer = self.client.post(self.path("complete"), {"delivery": self.delivery})
        except Rejected as exc:  # 422: the outputs were refused; the platform has already failed the job
            return Outcome("failed", str(exc))
        if isinstance(answer, dict) and answer.get("status") == COMPLETION_CHECKING:
            return Outcome("delivered", "the platform checks the outputs before the job succeeds")
        return Outcome("succeeded")

    def _send(self, name: str, file: Path) -> None:
        send_output(self.client, f"jobs/{self.job_id}", name, file, self.delivery, self.uploads)

    def _download(self, role: str, entries: list[dict]) -> Path:
        """The role's files in the job's folder; a checkpoint's through the host's cache (:mod:`.input_cache`)."""
        folder = self.directory / "inputs" / role
        cache = InputCache.for_host(self.work_dir) if role == CACHED_ROLE else None
        cached = 0
        for entry in entries:
            relative = Path(entry["path"])
            if relative.is_absolute() or ".." in relative.parts:
                raise Rejected(f"input {entry['path']!r} would be written outside the job's folder")
            if cache is None:
                self.client.download(entry, folder / relative)
            else:
                cached += cache.fetch(entry, folder / relative, self.client.download)
        if cache is not None:
            self._note(f"the checkpoint's {len(entries)} file(s): {cached} from this host's cache, "
                       f"{len(entries) - cached} downloaded")  # fmt: skip
        return folder

    def _check_code(self) -> Outcome | None:
        """Refuse the job unless the code installed here is the code its spec pins; note plugins that changed."""
        changes = plugin_set.ensure_current()
        if changes:
            self._note(f"the installed plugins changed since the last job ({'; '.join(changes)}): the engine loads "
                       "them afresh")  # fmt: skip
        checked = contract.check(self.spec.code)
        if checked.missing:
            return self._fail(plugin_set.lacking_message(list(checked.missing), self.worker), "platform")
        if checked.differing:
            plugin, _ = checked.differing[0]
            return self._fail("; ".join(message for _, message in checked.differing), "plugin", plugin)
        return None

    def _command(self, spec_file: Path, inputs: dict[str, Path], out: Path) -> list[str] | BatchJob:
        """What runs the engine: a command line here, or a Slurm batch job of the same engine command."""
        if self.spec.KIND in ("finetune", "score"):
            make = self._finetune_command if self.spec.KIND == "finetune" else self._score_command
            command = make(spec_file, inputs, out)
            return self._batch_job(tuple(command), torchrun=False) if self.executor == "slurm" else command
        if self.executor == "slurm":
            return self._batch_job(("-m", "workers.engine", *self._pretrain_arguments(spec_file, inputs, out)), True)
        return self._pretrain_command(spec_file, inputs, out)

    def _pretrain_command(self, spec_file: Path, inputs: dict[str, Path], out: Path) -> list[str]:
        """The engine on this host: torchrun on the spec's GPUs, or one process."""
        arguments = self._pretrain_arguments(spec_file, inputs, out)
        if self.spec.gpus > 1:
            return [*torchrun_command(self.spec.gpus), "-m", "workers.engine", *arguments]
        return [sys.executable, "-m", "workers.engine", *arguments]

    def _batch_job(self, command: tuple[str, ...], torchrun: bool) -> BatchJob:
        """The engine command as a batch job: a pretraining job's torchrun on each of its nodes (``gpus`` ranks per
        node), a fine-tuning job's one process; GPUs asked of Slurm only where its nodes have them."""
        reach = SlurmReach.from_environment()
        gpus = self.spec.gpus if torchrun else 1
        return BatchJob(
            self.job_id, self.directory, command, nodes=getattr(self.spec, "nodes", 1) if torchrun else 1,
            gpus_per_node=gpus if reach.gpus_per_node else 0, nproc_per_node=gpus,
            max_restarts=max_restarts() if torchrun else 0, torchrun=torchrun,
            environment={PROGRESS_VARIABLE: str(self.progress_path), "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip

    def _run_here(self, command: list[str], out: Path) -> Outcome | None:
        """The engine as this worker's child; None when it succeeded, else how the attempt ended."""
        code, stopped = self._supervise(command, out)
        if stopped:
            return Outcome("stopped", "the platform asked this delivery to stop")
        self._beat()  # the last progress and log lines
        if code == 0:
            return None
        code, tail = engine_exit(code, self._log_tail())
        return self._fail(failure_summary(code, tail), failure_cause(code, tail), plugin_of(tail))

    def _run_on_slurm(self, job: BatchJob, out: Path) -> Outcome | None:
        """The engine as a Slurm batch job, heartbeating with its log; None when it succeeded, else how it ended."""

        def heartbeat(text: str) -> str:
            if text.strip():
                self._notes.append(_readable(text)[-LOG_CHUNK_CHARS:])
            verdict = self._beat()
            if verdict != "stop":
                self._upload_new_checkpoint(out)
            return verdict

        try:
            ended = SlurmRun(job, SlurmSettings.from_environment(), heartbeat).run()
        except SlurmError as exc:  # sbatch refused it: this cluster's configuration, not the job's
            return self._fail(f"Slurm did not take the job: {exc}", "platform")
        if ended.stopped:
            return Outcome("stopped", f"the platform asked this delivery to stop (scancel {ended.slurm_job_id})")
        if ended.succeeded:
            return None
        return self._fail(*slurm_failure(ended))

    def _finetune_command(self, spec_file: Path, inputs: dict[str, Path], out: Path) -> list[str]:
        """The engine on the job's spec; only where its files are here is added (a slice's: the earlier slices').

        A data holder's job reads the holder's own copy, gold and all, where the dataset's adapter finds it on
        this host (under ``BIOLM_DATA_DIR``): the platform sent no data.
        """
        command = [sys.executable, "-m", "workers.engine", "finetune", "--spec", str(spec_file)]
        if "model" in inputs:  # the selection and the gather of a sliced protocol read slice documents only
            command += ["--model", str(inputs["model"])]
        if "dataset" in inputs:
            command += ["--data_dir", str(inputs["dataset"])]
        if "slices" in inputs:
            command += ["--slices", str(inputs["slices"])]
        if not self.held_by:
            command += ["--data_format", "canonical", "--test_gold_withheld"]
        return [*command, "--out", str(out)]

    def _score_command(self, spec_file: Path, inputs: dict[str, Path], out: Path) -> list[str]:
        """A data holder's score job: the engine scores the fine-tuning job's results on this host's own copy of the
        data, gold included (``score --local_data``), with the model's tokenizer; only the scores leave."""
        score_inputs = ScoreInputs(str(inputs["results"] / "results.json"), str(inputs["model"]), self.spec.dataset,
                                   self.spec.metric, [], load_entrypoints=True)  # fmt: skip
        inputs_file = self.directory / "score-inputs.json"
        inputs_file.write_text(json.dumps(score_inputs.to_json()), encoding="utf-8")
        return [sys.executable, "-m", "workers.engine", "score", "--spec", str(inputs_file), "--out", str(out),
                "--local_data"]  # fmt: skip

    def _pretrain_arguments(self, spec_file: Path, inputs: dict[str, Path], out: Path) -> list[str]:
        """The engine's arguments for the pretraining job; an earlier attempt's checkpoint unpacked to resume."""
        corpus = next(p for p in inputs["corpus"].rglob("*") if p.is_file())
        arguments = ["pretrain", "--spec", str(spec_file), "--corpus", str(corpus), "--out", str(out)]
        if "checkpoint" in inputs:  # an earlier attempt's last checkpoint: resume from it
            # Member by member, within the limits: whoever holds a job token could have uploaded this archive.
            unpack(inputs["checkpoint"] / "checkpoint.tar", out, resume_limits(self.spec),
                   label=f"the checkpoint.tar of job #{self.job_id}")  # fmt: skip
            arguments.append("--resume")
            self._checkpoint_sent = (out / "checkpoint").stat().st_mtime
            self._note(f"resuming from the checkpoint an earlier attempt uploaded (step {_checkpoint_step(out)})")
        return arguments

    def _supervise(self, command: list[str], out: Path) -> tuple[int, bool]:
        """Run the engine, heartbeating; (exit status, whether the platform stopped it)."""
        environment = {**os.environ, PROGRESS_VARIABLE: str(self.progress_path), "HF_HUB_OFFLINE": "1"}
        environment.pop("DATABASE_URL", None)
        logger.info("job #%s: %s", self.job_id, " ".join(command))
        with self.log_path.open("wb") as log:
            child = subprocess.Popen(
                command, cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent,
            )  # fmt: skip
            try:
                while True:
                    try:
                        code = child.wait(timeout=HEARTBEAT_S)
                        return code, False
                    except subprocess.TimeoutExpired:
                        pass
                    if self._beat() == "stop":
                        self._stop(child)
                        return child.returncode, True
                    self._upload_new_checkpoint(out)
            except BaseException:
                self._stop(child)
                raise

    def _stop(self, child: subprocess.Popen) -> None:
        if child.poll() is not None:
            return
        os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()

    def _heartbeats_while(self, what: str) -> AbstractContextManager[None]:
        """Heartbeats from a thread while ``what`` (a download, a pack, an upload) blocks this loop."""
        return heartbeats_while(self.client, self.path("heartbeat"), self.delivery, HEARTBEAT_S, what)

    def _note(self, line: str) -> None:
        """A line of the worker's own in the job's log (the engine's output follows it)."""
        logger.info("job #%s: %s", self.job_id, line)
        self._notes.append(line + "\n")

    def _beat(self) -> str:
        payload: dict = {"delivery": self.delivery, "log": "".join(self._notes) + self._new_log()}
        self._notes.clear()
        progress = read_progress(self.progress_path)
        if progress:
            phase, step, total = job_steps(progress)
            payload.update(step=step, total=total, loss=progress.get("loss"))
            payload["eta_s"] = self._eta(phase, step, total)
        try:
            return self.client.post(self.path("heartbeat"), payload).get("verdict", "continue")
        except Unreachable as exc:  # keep training; the platform's reaper judges a long silence
            logger.warning("job #%s: heartbeat not delivered: %s", self.job_id, exc)
            return "continue"

    def _eta(self, phase: str, step: int, total: int) -> float | None:
        """Seconds left in the current phase (a fine-tuning job's runs, or the pretraining), from its pace.

        The pace is measured up to the last step that moved, and the estimate then counts down from that
        moment: while no step moves (an evaluation, a stall) it shrinks towards 0 rather than growing.
        """
        now = time.monotonic()
        if self._phase is None or self._phase[0] != phase or step < self._phase[2]:
            self._phase = (phase, now, step)
            self._moved = (now, step)
            return None
        if step > self._moved[1]:
            self._moved = (now, step)
        _, started, first_step = self._phase
        moved_at, last_step = self._moved
        done = last_step - first_step
        if done <= 0 or moved_at <= started:
            return None
        return max(0.0, (total - last_step) * (moved_at - started) / done - (now - moved_at))

    def _new_log(self) -> str:
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as handle:
            handle.seek(self._log_sent)
            data = handle.read()
        self._log_sent += len(data)
        return _readable(data.decode("utf-8", "replace"))[-LOG_CHUNK_CHARS:]

    def _log_tail(self, chars: int = 4000) -> str:
        return _readable(self.log_path.read_bytes()[-chars * 4 :].decode("utf-8", "replace"))[-chars:]

    def _upload_new_checkpoint(self, out: Path) -> None:
        checkpoint = out / "checkpoint"
        try:
            changed = checkpoint.stat().st_mtime
        except FileNotFoundError:
            return
        if changed <= self._checkpoint_sent:
            return
        with self._heartbeats_while("uploading a checkpoint"):
            try:
                archive = self._tar(out, self.directory / "checkpoint.tar", include=("checkpoint",))
                unchanged = checkpoint.stat().st_mtime == changed
            except (FileNotFoundError, tarfile.TarError):
                unchanged = False
            if not unchanged:  # swapped for a newer one while being read: the next beat takes that one
                return
            self._send("checkpoint.tar", archive)
        self._checkpoint_sent = changed

    @staticmethod
    def _tar(root: Path, target: Path, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> Path:
        with tarfile.open(target, "w") as archive:
            for path in sorted(root.iterdir()):
                if (
                    (include and path.name not in include)
                    or path.name in exclude
                    or path.name.endswith((".tmp", ".old"))
                ):
                    continue
                archive.add(path, arcname=path.name)
        return target

    def _fail(self, error: str, cause: str, plugin: str = "") -> Outcome:
        payload = {"delivery": self.delivery, "error": error, "cause": cause}
        try:
            self.client.post(self.path("fail"), {**payload, "plugin": plugin} if plugin else payload)
        except (Conflict, Rejected, Unreachable) as exc:
            logger.warning("job #%s: could not report its failure: %s", self.job_id, exc)
        return Outcome("failed", error)


def slurm_failure(ended: SlurmOutcome) -> tuple[str, str, str]:
    """A failed batch job's error line, cause and plugin (for :meth:`JobRun._fail`).

    FAILED is the engine's exit (its status and ``error:`` line, read through torchrun's report); every other
    ending is the cluster's, so the platform's: retried, resuming from the last uploaded checkpoint. A job
    cancelled on the cluster by someone other than the platform (an operator's ``scancel``, a drained
    partition) counts as preempted: the platform's own cancel is the way to stop a job for good.
    """
    where = f" on {','.join(ended.nodes)}" if ended.nodes else ""
    if ended.state == "FAILED":
        code, tail = engine_exit(ended.status, engine_lines(ended.log_tail))
        return failure_summary(code, tail), ended.cause, plugin_of(tail)
    if ended.state == "CANCELLED":
        return (f"Slurm job {ended.slurm_job_id} was cancelled on the cluster{where}, not by the platform "
                "(scancel): retried, resuming from its last checkpoint", "platform", "")  # fmt: skip
    reason = f" ({ended.reason})" if ended.reason not in ("", "None") else ""
    return (f"Slurm job {ended.slurm_job_id} ended {ended.state}{reason}{where}: the cluster's, so retried, resuming "
            "from its last checkpoint", "platform", "")  # fmt: skip


def job_steps(progress: dict) -> tuple[str, int, int]:
    """The phase, step and total a heartbeat reports, from the engine's progress file.

    A fine-tuning job runs several trainings (a grid's points, then seeds, or folds), each from step 0;
    where the engine says which run of how many (``run``, ``runs``), the steps count across the job, as if
    each run took as many steps as this one, so the bar moves once from 0 to 100% and never starts over.
    """
    step, total = int(progress["step"]), int(progress["total"])
    run, runs = int(progress.get("run") or 0), int(progress.get("runs") or 0)
    if runs > 0 and 1 <= run <= runs and total > 0:
        return "runs", (run - 1) * total + step, runs * total
    return str(progress.get("label", "")), step, total


def _die_with_parent() -> None:
    """In the child, before exec: be killed when the worker dies, so a killed worker leaves no orphan training."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def resume_limits(spec: contract.PretrainJob) -> ArchiveLimits:
    """The limits of the job's own resume archive: its model's 12 bytes a parameter in shards, not the 4 bytes a
    parameter a submitted checkpoint is held to (:func:`biolm.intake_limits.resume_archive_limits`).

    The model is counted from the recipe and the job's settings by the memory plan's arithmetic; a recipe this
    worker cannot size (an unknown architecture) keeps the submission limits, which refuse an archive too large.
    """
    from biolm.memory_plan import recipe_dims
    from biolm.plugins import collect_contributions, get_plugin_manager

    contributions = collect_contributions(get_plugin_manager())
    recipe = contributions.recipes.get(spec.recipe)
    try:
        dims = recipe_dims({**(recipe.settings if recipe else {}), **spec.settings}, contributions=contributions)
    except (ValueError, KeyError, TypeError):
        return ArchiveLimits.from_env()
    return resume_archive_limits(dims.pretraining_parameter_count(), spec.processes)


MAX_RESTARTS_VARIABLE = "BIOLM_TORCHRUN_MAX_RESTARTS"


def max_restarts(environ: dict | None = None) -> int:
    """torchrun's ``--max-restarts``: how often a crashed group restarts in place (resuming its checkpoint)."""
    raw = (environ if environ is not None else os.environ).get(MAX_RESTARTS_VARIABLE, "").strip() or "2"
    if not raw.isdigit() or int(raw) > 100:
        raise ValueError(f"{MAX_RESTARTS_VARIABLE} takes a whole number from 0 to 100, not {raw!r}")
    return int(raw)


def torchrun_command(gpus: int) -> list[str]:
    """torchrun on this host for ``gpus`` processes: a c10d rendezvous on a free local port (``--standalone``),
    and ``--max-restarts`` restarts of the group, which resume from the run's last checkpoint
    (:func:`workers.engine.pretrain.run.restarted_by_torchrun`) instead of step 0."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}",
            f"--max-restarts={max_restarts()}"]  # fmt: skip


def _checkpoint_step(out: Path) -> int | str:
    """The step of the checkpoint under ``out`` (its loss log's last entry), for the job's log."""
    try:
        log = json.loads((out / "checkpoint" / "loss.json").read_text(encoding="utf-8"))
        return max(int(entry["step"]) for entry in log) if log else 0
    except (OSError, ValueError, KeyError, TypeError):
        return "?"


def _readable(text: str) -> str:
    """Log text for people: progress bars redrawn hundreds of times become their latest state only.

    The engine's progress reaches the platform through its progress file; the bars' redraws would
    only push the lines that matter (warnings, errors, the summary) out of the job's log tail.
    """
    lines = [line.rstrip() for line in text.replace("\r", "\n").split("\n") if line.strip()]
    kept = [
        line
        for index, line in enumerate(lines)
        if not (_is_bar(line) and index + 1 < len(lines) and _is_bar(lines[index + 1]))
    ]
    return "\n".join(kept) + "\n" if kept else ""


def _is_bar(line: str) -> bool:
    return "%|" in line and ("it/s" in line or "step" in line)
