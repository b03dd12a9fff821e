"""``python -m workers.runner [--gpus N|auto] [--name PREFIX]``: one GPU worker process per visible GPU.

Each process is a Celery worker on the ``gpu`` queue with ``CUDA_VISIBLE_DEVICES`` pinned to its
GPU, the solo pool (one job at a time, run in the process that heartbeats) and a name
``PREFIX<i>@host``. With no GPU, one worker runs jobs on the CPU. ``DATABASE_URL`` is removed
from their environment. Ctrl-C (or SIGTERM) stops them all.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from workers.runner.processes import wait_for_all

ROOT = Path(__file__).resolve().parents[2]


def visible_gpus() -> int:
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))


def commands(gpus: int, name: str, loglevel: str) -> list[tuple[list[str], dict]]:
    base = os.environ.copy()
    base.pop("DATABASE_URL", None)
    base["BIOLM_WORKER_QUEUES"] = "gpu"
    devices = list(range(gpus)) or [None]
    result = []
    for index, device in enumerate(devices):
        environment = dict(base)
        if device is not None:
            environment["CUDA_VISIBLE_DEVICES"] = str(device)
        command = [
            sys.executable, "-m", "celery", "-A", "workers.runner.app", "worker", "-Q", "gpu", "--pool", "solo",
            "-n", f"{name}{index}@%h", "--without-gossip", "--without-mingle", "--loglevel", loglevel,
        ]  # fmt: skip
        result.append((command, environment))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", default="auto", help="how many GPU workers (default: one per visible GPU)")
    parser.add_argument("--name", default="gpu", help="worker name prefix (default: gpu)")
    parser.add_argument("--loglevel", default="INFO")
    args = parser.parse_args(argv)
    gpus = visible_gpus() if args.gpus == "auto" else int(args.gpus)
    children = [subprocess.Popen(c, cwd=ROOT, env=e) for c, e in commands(gpus, args.name, args.loglevel)]
    return max(wait_for_all(children))


if __name__ == "__main__":
    sys.exit(main())
