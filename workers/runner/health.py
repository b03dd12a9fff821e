"""``python -m workers.runner.health [--gpus N|auto] [--per-gpu K | --gpus-per-worker N] [--name PREFIX]``: alive?

docker-compose's health check of the ``worker-gpu`` service. Each worker process's liveness
thread touches ``BIOLM_WORKER_DIR/health/<worker name>`` whenever the platform accepted its
heartbeat, while it runs a job too (a Celery ping would not do: the solo pool answers control
messages only between jobs). The host is healthy when every one of its workers
(``PREFIX<i>@host``, as :mod:`workers.runner` names them, ``--per-gpu`` or
``BIOLM_WORKERS_PER_GPU`` of them per GPU, or one per ``--gpus-per-worker`` or
``BIOLM_GPUS_PER_WORKER`` GPUs) did so within ``--max-age`` seconds; the
check exits 1 naming those that did not.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from workers.runner.gpu_workers import gpus_per_worker, node_name, visible_gpus, worker_devices, workers_per_gpu


def health_file(work_dir: Path, worker: str) -> Path:
    return Path(work_dir) / "health" / worker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.runner.health", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", default="auto", help="how many workers the host runs (default: one per GPU)")
    parser.add_argument("--per-gpu", default=None, help="workers per GPU (default: BIOLM_WORKERS_PER_GPU, else 1)")
    parser.add_argument(
        "--gpus-per-worker", default=None, help="GPUs per worker (default: BIOLM_GPUS_PER_WORKER, else 1)"
    )
    parser.add_argument("--name", default="gpu", help="worker name prefix (default: gpu)")
    parser.add_argument("--max-age", type=float, default=60.0, help="seconds since the last accepted heartbeat")
    args = parser.parse_args(argv)
    if args.gpus != "auto" and not args.gpus.isdigit():
        parser.error(f"--gpus takes a number or auto, not {args.gpus!r}")
    try:
        per_gpu = workers_per_gpu(args.per_gpu)
        per_worker = gpus_per_worker(args.gpus_per_worker, per_gpu)
    except ValueError as exc:
        parser.error(str(exc))
    count = len(worker_devices(visible_gpus() if args.gpus == "auto" else int(args.gpus), per_gpu, per_worker))
    root = Path(__file__).resolve().parents[2]
    work_dir = Path(os.environ.get("BIOLM_WORKER_DIR", Path(os.environ.get("BIOLM_VAR_DIR", root / "var")) / "worker"))
    now = time.time()
    stale = []
    for index in range(count):
        name = node_name(args.name, index)
        try:
            age = now - health_file(work_dir, name).stat().st_mtime
        except FileNotFoundError:
            stale.append(f"{name} (no heartbeat yet)")
            continue
        if age > args.max_age:
            stale.append(f"{name} (last heartbeat {age:.0f} s ago)")
    if stale:
        print(f"not alive: {', '.join(stale)}", file=sys.stderr)
        return 1
    print(f"alive: {count} worker(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
