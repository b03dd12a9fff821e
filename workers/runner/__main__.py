"""``python -m workers.runner [--gpus N|auto] [--per-gpu K | --gpus-per-worker N] [--name PREFIX] [--executor E]``.

Each process is a Celery worker with ``CUDA_VISIBLE_DEVICES`` pinned to its GPUs, the solo pool (one
job at a time, run in the process that heartbeats) and a name ``PREFIX<i>@host``: one per visible
GPU; or ``--per-gpu K`` (``BIOLM_WORKERS_PER_GPU``) sharing each GPU, so that fine-tuning jobs too
small to fill a card run side by side; or ``--gpus-per-worker N`` (``BIOLM_GPUS_PER_WORKER``) GPUs
each, for pretraining jobs that ask for N. Each consumes the broker queue of what it owns
(:mod:`biolm.placement`). With no GPU, one worker runs jobs on the CPU. ``DATABASE_URL`` is removed
from their environment. A worker process that dies is restarted (:mod:`workers.runner.processes`);
one that keeps dying at start-up is given up on and reported to the platform, which shows it as
failing. Ctrl-C (or SIGTERM) stops them all.

``--executor slurm`` (``BIOLM_EXECUTOR=slurm``) starts instead the one worker of a cluster's login node,
``slurm0@host``, which runs each job as a Slurm batch job (:mod:`workers.runner.executors`); its settings
(``BIOLM_SLURM_*``) are checked first, and a bad one is a one-line error.
"""

from __future__ import annotations

import argparse
import logging
import sys

from biolm.owner_only import owner_only_files
from workers.runner.executors import check_slurm, executor
from workers.runner.gpu_workers import (
    gpus_per_worker,
    report_give_up,
    slurm_worker_process,
    visible_gpus,
    worker_processes,
    workers_per_gpu,
)
from workers.runner.processes import RestartPolicy, Supervisor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", default="auto", help="how many GPU workers (default: one per visible GPU)")
    parser.add_argument(
        "--per-gpu", default=None, help="workers sharing each GPU (default: BIOLM_WORKERS_PER_GPU, else 1)"
    )
    parser.add_argument(
        "--gpus-per-worker", default=None, help="GPUs each worker owns (default: BIOLM_GPUS_PER_WORKER, else 1)"
    )
    parser.add_argument("--name", default=None, help="worker name prefix (default: gpu, or slurm)")
    parser.add_argument(
        "--executor", default=None, help="local or slurm: how jobs run (default: BIOLM_EXECUTOR, else local)"
    )
    parser.add_argument("--loglevel", default="INFO")
    args = parser.parse_args(argv)
    owner_only_files()  # inherited by every worker process it starts
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s: %(levelname)s/supervisor] %(message)s")
    try:
        policy = RestartPolicy.from_environment()
    except ValueError as exc:
        parser.error(str(exc))
    try:
        chosen = executor(args.executor)
        if chosen == "slurm":
            check_slurm()
    except ValueError as exc:
        parser.error(str(exc))
    if chosen == "slurm":
        process = slurm_worker_process(args.name or "slurm", args.loglevel)
        return Supervisor([process], policy, on_give_up=report_give_up).run()
    if args.gpus != "auto" and not args.gpus.isdigit():
        parser.error(f"--gpus takes a number or auto, not {args.gpus!r}")
    try:
        per_gpu = workers_per_gpu(args.per_gpu)
        per_worker = gpus_per_worker(args.gpus_per_worker, per_gpu)
    except ValueError as exc:
        parser.error(str(exc))
    gpus = visible_gpus() if args.gpus == "auto" else int(args.gpus)
    processes = worker_processes(gpus, args.name or "gpu", args.loglevel, per_gpu=per_gpu, per_worker=per_worker)
    supervisor = Supervisor(processes, policy, on_give_up=report_give_up)
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
