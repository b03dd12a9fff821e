"""``manage.py worker [--queues gpu,cpu] [--gpus N|auto] [--per-gpu K | --gpus-per-worker N]``: the workers, kept alive.

* ``cpu``: a Celery worker of this project on the ``cpu`` queue with the embedded beat, which
  ticks every ``BIOLM_TICK_S`` seconds (reaper and dispatcher) and runs the platform's own jobs
  (recording results). It needs the database.
* ``gpu``: one database-free worker per visible GPU, or ``--per-gpu K`` sharing each (``BIOLM_WORKERS_PER_GPU``),
  or one per ``--gpus-per-worker N`` GPUs (``BIOLM_GPUS_PER_WORKER``; one on the CPU, ``trainer0@host``, when
  there is none), as
  ``python -m workers.runner`` starts them: without ``DATABASE_URL``, reaching the platform at
  ``BIOLM_API_URL`` with the worker secret, which this command passes to them.

``--executor slurm`` (``BIOLM_EXECUTOR=slurm``) makes the ``gpu`` worker the one Slurm worker of a cluster's
login node, ``slurm0@host``, running each job as a batch job (docs/operators.md, "Running on a cluster").

Every process is supervised (:mod:`workers.runner.processes`): one that dies is restarted after
a back-off, one that keeps dying at start-up is given up on and shown as failing in the admin.
Ctrl-C stops every process it started.
"""

from __future__ import annotations

import os
import socket
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection

from jobs import dispatch
from workers.runner import executors, gpu_workers
from workers.runner.processes import ManagedProcess, RestartPolicy, Supervisor

QUEUES = ("gpu", "cpu")


def report_give_up(managed: ManagedProcess, reason: str) -> None:
    """The admin's workers panel and the waiting jobs say that this worker is failing."""
    queues = ["cpu"] if managed.name.startswith("cpu@") else ["gpu"]
    try:
        dispatch.record_problem(managed.name, queues, reason)
    except DatabaseError:  # a connection left open since an earlier report, and gone stale: once more, afresh
        connection.close()
        dispatch.record_problem(managed.name, queues, reason)


class Command(BaseCommand):
    help = "Start the platform's CPU worker (with the job tick) and the GPU workers, restarting any that dies."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queues", default="gpu,cpu", help="comma-separated: gpu, cpu (default: both)")
        parser.add_argument("--gpus", default="auto", help="GPU workers to start (default: one per visible GPU)")
        parser.add_argument(
            "--per-gpu", default=None, help="GPU workers sharing each GPU (default: BIOLM_WORKERS_PER_GPU, else 1)"
        )
        parser.add_argument(
            "--gpus-per-worker", default=None, help="GPUs each GPU worker owns (default: BIOLM_GPUS_PER_WORKER, else 1)"
        )
        parser.add_argument(
            "--executor", default=None, help="gpu workers: local or slurm (default: BIOLM_EXECUTOR, else local)"
        )
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, queues: str, gpus: str, per_gpu: str | None, gpus_per_worker: str | None, loglevel: str,
               executor: str | None = None, **options) -> None:  # fmt: skip
        chosen = [q.strip() for q in queues.split(",") if q.strip()]
        unknown = sorted(set(chosen) - set(QUEUES))
        if unknown or not chosen:
            raise CommandError(f"--queues takes gpu and/or cpu, not {queues!r}")
        if gpus != "auto" and not gpus.isdigit():
            raise CommandError(f"--gpus takes a number or auto, not {gpus!r}")
        try:
            policy = RestartPolicy.from_environment()
            sharing = gpu_workers.workers_per_gpu(per_gpu)
            owning = gpu_workers.gpus_per_worker(gpus_per_worker, sharing)
            chosen_executor = executors.executor(executor)
            if chosen_executor == "slurm" and "gpu" in chosen:
                executors.check_slurm()
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        root = settings.BASE_DIR
        environment = {**os.environ, "BIOLM_WORKER_SECRET": settings.BIOLM_WORKER_SECRET}
        paths = [str(root / "platform"), str(root), os.environ.get("PYTHONPATH")]
        environment["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        processes = []
        if "cpu" in chosen:
            command = [
                sys.executable, "-m", "celery", "-A", "biolm_site", "worker", "-Q", "cpu", "-B", "--concurrency", "2",
                "-n", "cpu@%h", "--without-gossip", "--without-mingle", "--loglevel", loglevel,
                "--schedule", str(settings.BIOLM_VAR_DIR / "celerybeat-schedule"),
            ]  # fmt: skip
            processes.append(ManagedProcess(f"cpu@{socket.gethostname()}", command, environment, root))
        if "gpu" in chosen and chosen_executor == "slurm":
            processes.append(gpu_workers.slurm_worker_process("slurm", loglevel, environment))
        elif "gpu" in chosen:
            count = gpu_workers.visible_gpus() if gpus == "auto" else int(gpus)
            # Named for what it runs on: trainer0@host where there is no GPU (pages show names; jobs.waiting.queue_name)
            name = "gpu" if count else "trainer"
            processes += gpu_workers.worker_processes(count, name, loglevel, environment, sharing, owning)
        self.stdout.write(f"started {', '.join(chosen)} workers (Ctrl-C stops them)")
        self.stdout.flush()
        if Supervisor(processes, policy, on_give_up=report_give_up).run():
            raise CommandError("every worker process was given up on (see the log above)")
