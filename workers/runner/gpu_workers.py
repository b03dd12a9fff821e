"""The GPU worker processes of one host: which GPUs each owns, how each is started, and how a failing one is reported.

By default one worker per visible GPU. ``BIOLM_GPUS_PER_WORKER=N`` (``--gpus-per-worker N``) gives each
worker N GPUs of the host instead (``CUDA_VISIBLE_DEVICES=0,1,2,3``), for pretraining jobs that ask for
several; the GPUs left over, if N does not divide them, make one smaller worker. ``BIOLM_WORKERS_PER_GPU=K``
(``--per-gpu K``) does the opposite, K workers on each GPU, for small fine-tuning jobs only
(:mod:`biolm.placement`); the two cannot both be above 1. Each worker consumes the broker queue of
what it owns (:attr:`biolm.placement.Seat.queue`), so a job reaches only a worker that can hold it.

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

from biolm.placement import Seat, holder_named_by
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


def describe_gpus(devices: str | None = None) -> list[dict]:
    """Each GPU's model and memory, ``[{"name": "NVIDIA H200", "memory_bytes": ...}]``, as nvidia-smi reports them.

    ``devices`` (a ``CUDA_VISIBLE_DEVICES`` value: indices or UUIDs) restricts the answer to a worker's own
    GPUs; none at all without nvidia-smi, or when it fails: the heartbeat then says only how many.
    """
    command = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"]
    if devices:
        command += ["-i", devices]
    try:
        listing = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired, OSError):
        return []
    if listing.returncode != 0:
        return []
    found = []
    for line in listing.stdout.splitlines():
        name, _, memory = line.rpartition(",")
        if name.strip() and memory.strip().isdigit():  # memory.total is in MiB with nounits
            found.append({"name": name.strip()[:200], "memory_bytes": int(memory.strip()) * 2**20})
    return found


PER_GPU_VARIABLE = "BIOLM_WORKERS_PER_GPU"
PER_GPU_MAX = 64
PER_WORKER_VARIABLE = "BIOLM_GPUS_PER_WORKER"
SHARES_GPU_VARIABLE = "BIOLM_WORKER_SHARES_GPU"  # "1": set by worker_processes on workers sharing a GPU


def node_name(name: str, index: int) -> str:
    """Celery's name for worker ``index`` (``-n PREFIX<i>@%h``: ``%h`` is this host's name)."""
    return f"{name}{index}@{socket.gethostname()}"


def _whole_number(flag: str, variable: str, value: str | None) -> int:
    """``value`` (the flag's), else the variable's, else 1; a :class:`ValueError` names the one that is wrong."""
    source, raw = (flag, value) if value is not None else (variable, os.environ.get(variable))
    if raw is None or raw.strip() == "":
        return 1
    if not raw.strip().isdigit() or not 1 <= int(raw) <= PER_GPU_MAX:
        raise ValueError(f"{source} takes a whole number from 1 to {PER_GPU_MAX}, not {raw!r}")
    return int(raw)


def workers_per_gpu(value: str | None = None) -> int:
    """How many workers share each GPU: ``value`` (a ``--per-gpu`` flag), else ``BIOLM_WORKERS_PER_GPU``, else 1.

    A fine-tuning run of a BERT-base-sized model at the papers' batch sizes keeps a GPU busy for
    a fraction of each step (the host launching kernels takes the rest: 6.7 ms of GPU work in a
    42 ms step on an H200), so several jobs sharing the card finish more work in all: four engine
    processes on one H200 ran 4.5x the steps of one, each at full speed (docs/performance.md). A
    :class:`ValueError` names the setting when it is not a whole number from 1.
    """
    return _whole_number("--per-gpu", PER_GPU_VARIABLE, value)


def gpus_per_worker(value: str | None = None, per_gpu: int = 1) -> int:
    """How many GPUs each worker owns: ``value`` (``--gpus-per-worker``), else ``BIOLM_GPUS_PER_WORKER``, else 1.

    A pretraining job asking for N GPUs runs only on a worker owning N of one host (:mod:`biolm.placement`),
    so a host meant for such jobs gives its workers several. A :class:`ValueError` names the setting when it
    is not a whole number from 1, or when workers would both share GPUs (``per_gpu`` above 1) and own several.
    """
    count = _whole_number("--gpus-per-worker", PER_WORKER_VARIABLE, value)
    if count > 1 and per_gpu > 1:
        raise ValueError(
            f"{PER_WORKER_VARIABLE} ({count}) and {PER_GPU_VARIABLE} ({per_gpu}) cannot both be above 1: "
            "a worker either shares one GPU or owns several"
        )
    return count


def worker_devices(gpus: int, per_gpu: int = 1, per_worker: int = 1) -> list[tuple[int, ...]]:
    """Each worker's GPUs, in the order of their names (``()``: the one worker of a host without a GPU).

    Workers ``PREFIX0`` .. ``PREFIX<per_gpu - 1>`` share GPU 0, the next ``per_gpu`` GPU 1, and so on; with
    ``per_worker`` GPUs each, worker 0 owns GPUs 0 .. per_worker - 1, worker 1 the next ones, and a last
    worker owns what is left when ``per_worker`` does not divide ``gpus`` (no GPU stands idle).
    """
    if per_worker > 1:
        return [tuple(range(first, min(first + per_worker, gpus))) for first in range(0, gpus, per_worker)] or [()]
    return [(device,) for device in range(gpus) for _ in range(per_gpu)] or [()]


def worker_processes(
    gpus: int,
    name: str = "gpu",
    loglevel: str = "INFO",
    environment: Mapping[str, str] | None = None,
    per_gpu: int = 1,
    per_worker: int = 1,
) -> list[ManagedProcess]:
    """The host's Celery workers: ``per_gpu`` per GPU, or one per ``per_worker`` GPUs (one on the CPU when
    ``gpus`` is 0), each on the broker queue of what it owns, never with ``DATABASE_URL``."""
    base = dict(os.environ if environment is None else environment)
    base.pop("DATABASE_URL", None)
    base["BIOLM_WORKER_QUEUES"] = "gpu"
    holder = holder_named_by(base.get("BIOLM_WORKER_SECRET", ""))  # a data holder's host: its seats' queues
    result = []
    for index, devices in enumerate(worker_devices(gpus, per_gpu, per_worker)):
        pinned = dict(base)
        seat = Seat(len(devices), shared=bool(devices) and per_gpu > 1, holder=holder)
        pinned["BIOLM_WORKER_GPUS"] = str(seat.gpus)  # what its heartbeat reports (app.gpu_count)
        pinned[SHARES_GPU_VARIABLE] = "1" if seat.shared else "0"
        pinned[PER_GPU_VARIABLE] = str(per_gpu if seat.shared else 1)  # the share its heartbeat reports
        if devices:
            pinned["CUDA_VISIBLE_DEVICES"] = ",".join(str(device) for device in devices)
            pinned.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # CUDA's device 2 is nvidia-smi's GPU 2
        command = [
            sys.executable, "-m", "celery", "-A", "workers.runner.app", "worker", "-Q", seat.queue, "--pool", "solo",
            "-n", f"{name}{index}@%h", "--without-gossip", "--without-mingle", "--loglevel", loglevel,
        ]  # fmt: skip
        result.append(ManagedProcess(node_name(name, index), command, pinned, ROOT))
    return result


def slurm_worker_process(
    name: str = "slurm", loglevel: str = "INFO", environment: Mapping[str, str] | None = None
) -> ManagedProcess:
    """The one worker of a cluster's login node (``--executor slurm``): it owns no GPU here, and runs each job
    as a Slurm batch job on the seat its settings reach (``slurm-MxN``), never with ``DATABASE_URL``."""
    from workers.runner.slurm_settings import SlurmReach

    env = dict(os.environ if environment is None else environment)
    env.pop("DATABASE_URL", None)
    env.update(BIOLM_WORKER_QUEUES="gpu", BIOLM_EXECUTOR="slurm", BIOLM_WORKER_GPUS="0", CUDA_VISIBLE_DEVICES="")
    env[SHARES_GPU_VARIABLE] = "0"
    reach = SlurmReach.from_environment(env)
    holder = holder_named_by(env.get("BIOLM_WORKER_SECRET", ""))
    queue = Seat(reach.gpus_per_node, nodes=reach.max_nodes, slurm=True, holder=holder).queue
    command = [
        sys.executable, "-m", "celery", "-A", "workers.runner.app", "worker", "-Q", queue, "--pool", "solo",
        "-n", f"{name}0@%h", "--without-gossip", "--without-mingle", "--loglevel", loglevel,
    ]  # fmt: skip
    return ManagedProcess(node_name(name, 0), command, env, ROOT)


def report_give_up(managed: ManagedProcess, reason: str) -> None:
    """Tell the platform that this worker is failing, so the admin and the demo show it (best effort)."""
    api = os.environ.get("BIOLM_API_URL", "http://127.0.0.1:8000/internal/").rstrip("/") + "/"
    client = PlatformClient(api, os.environ.get("BIOLM_WORKER_SECRET", ""), retry_for_s=10)
    try:
        client.post("workers/problem", {"name": managed.name, "queues": ["gpu"], "problem": reason})
    except (Unreachable, Rejected) as exc:
        logger.warning("%s: the platform was not told that it is failing: %s", managed.name, exc)
