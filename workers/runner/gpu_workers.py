"""The GPU worker processes of one host: one per visible GPU, how each is started, and how a failing one is reported.

``python -m workers.runner`` and ``manage.py worker`` both build their processes here and keep
them alive with :class:`workers.runner.processes.Supervisor`.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from workers.runner.client import PlatformClient, Rejected, Unreachable
from workers.runner.processes import ManagedProcess

ROOT = Path(__file__).resolve().parents[2]
logger = logging.getLogger("biolm.worker")


def visible_gpus() -> int:
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))


PER_GPU_VARIABLE = "BIOLM_WORKERS_PER_GPU"
PER_GPU_MAX = 64


def node_name(name: str, index: int) -> str:
    """Celery's name for worker ``index`` (``-n PREFIX<i>@%h``: ``%h`` is this host's name)."""
    return f"{name}{index}@{socket.gethostname()}"


def workers_per_gpu(value: str | None = None) -> int:
    """How many workers share each GPU: ``value`` (a ``--per-gpu`` flag), else ``BIOLM_WORKERS_PER_GPU``, else 1.

    A fine-tuning run of a BERT-base-sized model at the papers' batch sizes keeps a GPU busy for
    a fraction of each step (the host launching kernels takes the rest: 6.7 ms of GPU work in a
    42 ms step on an H200), so several jobs sharing the card finish more work in all: four engine
    processes on one H200 ran 4.5x the steps of one, each at full speed (docs/performance.md). A
    :class:`ValueError` names the setting when it is not a whole number from 1.
    """
    source, raw = ("--per-gpu", value) if value is not None else (PER_GPU_VARIABLE, os.environ.get(PER_GPU_VARIABLE))
    if raw is None or raw.strip() == "":
        return 1
    if not raw.strip().isdigit() or not 1 <= int(raw) <= PER_GPU_MAX:
        raise ValueError(f"{source} takes a whole number from 1 to {PER_GPU_MAX}, not {raw!r}")
    return int(raw)


def worker_devices(gpus: int, per_gpu: int = 1) -> list[int | None]:
    """Each worker's GPU, in the order of their names (``None``: the one worker of a host without a GPU).

    Workers ``PREFIX0`` .. ``PREFIX<per_gpu - 1>`` share GPU 0, the next ``per_gpu`` GPU 1, and so on.
    """
    return [device for device in range(gpus) for _ in range(per_gpu)] or [None]


def worker_processes(
    gpus: int,
    name: str = "gpu",
    loglevel: str = "INFO",
    environment: Mapping[str, str] | None = None,
    per_gpu: int = 1,
) -> list[ManagedProcess]:
    """``per_gpu`` Celery workers per GPU (one on the CPU when ``gpus`` is 0), never with ``DATABASE_URL``."""
    base = dict(os.environ if environment is None else environment)
    base.pop("DATABASE_URL", None)
    base["BIOLM_WORKER_QUEUES"] = "gpu"
    devices = worker_devices(gpus, per_gpu)
    result = []
    for index, device in enumerate(devices):
        pinned = dict(base)
        pinned["BIOLM_WORKER_GPUS"] = "0" if device is None else "1"  # what its heartbeat reports (app.gpu_count)
        if device is not None:
            pinned["CUDA_VISIBLE_DEVICES"] = str(device)
        command = [
            sys.executable, "-m", "celery", "-A", "workers.runner.app", "worker", "-Q", "gpu", "--pool", "solo",
            "-n", f"{name}{index}@%h", "--without-gossip", "--without-mingle", "--loglevel", loglevel,
        ]  # fmt: skip
        result.append(ManagedProcess(node_name(name, index), command, pinned, ROOT))
    return result


def report_give_up(managed: ManagedProcess, reason: str) -> None:
    """Tell the platform that this worker is failing, so the admin and the demo show it (best effort)."""
    api = os.environ.get("BIOLM_API_URL", "http://127.0.0.1:8000/internal/").rstrip("/") + "/"
    client = PlatformClient(api, os.environ.get("BIOLM_WORKER_SECRET", ""), retry_for_s=10)
    try:
        client.post("workers/problem", {"name": managed.name, "queues": ["gpu"], "problem": reason})
    except (Unreachable, Rejected) as exc:
        logger.warning("%s: the platform was not told that it is failing: %s", managed.name, exc)
