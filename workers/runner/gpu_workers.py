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


def node_name(name: str, index: int) -> str:
    """Celery's name for worker ``index`` (``-n PREFIX<i>@%h``: ``%h`` is this host's name)."""
    return f"{name}{index}@{socket.gethostname()}"


def worker_processes(
    gpus: int, name: str = "gpu", loglevel: str = "INFO", environment: Mapping[str, str] | None = None
) -> list[ManagedProcess]:
    """One Celery worker per GPU (one on the CPU when ``gpus`` is 0), never with ``DATABASE_URL``."""
    base = dict(os.environ if environment is None else environment)
    base.pop("DATABASE_URL", None)
    base["BIOLM_WORKER_QUEUES"] = "gpu"
    devices = list(range(gpus)) or [None]
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
