"""``manage.py worker [--queues gpu,cpu] [--gpus N|auto]``: the platform's CPU worker and the GPU workers.

* ``cpu``: a Celery worker of this project on the ``cpu`` queue with the embedded beat, which
  ticks every ``BIOLM_TICK_S`` seconds (reaper and dispatcher) and runs the platform's own jobs
  (recording results). It needs the database.
* ``gpu``: ``python -m workers.runner``: one worker per visible GPU (one on the CPU when there is
  none), started without ``DATABASE_URL``; they reach the platform at ``BIOLM_API_URL`` with the
  worker secret, which this command passes to them.

Ctrl-C stops every process it started.
"""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workers.runner.processes import wait_for_all

QUEUES = ("gpu", "cpu")


class Command(BaseCommand):
    help = "Start the platform's CPU worker (with the job tick) and the GPU workers."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queues", default="gpu,cpu", help="comma-separated: gpu, cpu (default: both)")
        parser.add_argument("--gpus", default="auto", help="GPU workers to start (default: one per visible GPU)")
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, queues: str, gpus: str, loglevel: str, **options) -> None:
        chosen = [q.strip() for q in queues.split(",") if q.strip()]
        unknown = sorted(set(chosen) - set(QUEUES))
        if unknown or not chosen:
            raise CommandError(f"--queues takes gpu and/or cpu, not {queues!r}")
        root = settings.BASE_DIR
        environment = {**os.environ, "BIOLM_WORKER_SECRET": settings.BIOLM_WORKER_SECRET}
        paths = [str(root / "platform"), str(root), os.environ.get("PYTHONPATH")]
        environment["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        children = []
        if "cpu" in chosen:
            command = [
                sys.executable, "-m", "celery", "-A", "biolm_site", "worker", "-Q", "cpu", "-B", "--concurrency", "2",
                "-n", "cpu@%h", "--without-gossip", "--without-mingle", "--loglevel", loglevel,
                "--schedule", str(settings.BIOLM_VAR_DIR / "celerybeat-schedule"),
            ]  # fmt: skip
            children.append(subprocess.Popen(command, cwd=root, env=environment))
        if "gpu" in chosen:
            command = [sys.executable, "-m", "workers.runner", "--gpus", gpus, "--loglevel", loglevel]
            children.append(subprocess.Popen(command, cwd=root, env=environment))
        self.stdout.write(f"started {', '.join(chosen)} workers (Ctrl-C stops them)")
        codes = wait_for_all(children)
        if any(codes):
            raise CommandError(f"a worker exited with status {max(codes)}")
