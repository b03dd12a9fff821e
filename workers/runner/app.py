"""The GPU worker's Celery application and its one task, configured from the environment only.

``celery -A workers.runner.app worker -Q gpu --pool solo`` (``python -m workers.runner`` starts one
per GPU). The task (:data:`biolm.broker.GPU_TASK`) takes a job id and its token; the claim returns
the job's spec. It acknowledges its message only after the job ends (``acks_late``), a message whose
worker died is handed to another (``reject_on_worker_lost``), and a worker takes one message at a
time (prefetch 1). It never retries itself: a failed attempt is reported to the platform, whose
back-off and attempt limit (:mod:`jobs.lifecycle`) decide on the next one.

Environment: ``CELERY_BROKER_URL`` (default: the embedded filesystem broker under
``BIOLM_VAR_DIR``), ``BIOLM_API_URL`` (the platform's internal API, default
``http://127.0.0.1:8000/internal/``), ``BIOLM_WORKER_SECRET`` (to register the worker's
heartbeats; a data holder's workers have its own credential in its place, and serve its queue only),
``BIOLM_WORKER_DIR`` (scratch space for jobs), ``BIOLM_HEARTBEAT_S``.

``BIOLM_EXECUTOR=slurm`` makes it a Slurm worker (:mod:`workers.runner.executors`): on a cluster's login
node, it runs each job as a batch job, and its seat is what its settings say one job may reach
(:class:`workers.runner.slurm.SlurmReach`: nodes, GPUs per node, their model and memory), not what this
host has.

A worker consumes the broker queue of what it owns (:mod:`biolm.placement`: ``gpu``, ``gpu-4``,
``gpu-shared``), in place of the ``gpu`` that ``-Q`` names, so that the dispatcher's choice of worker
holds however it was started; its heartbeat says how many GPUs it owns, how many no running job holds,
and each one's model and memory.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from celery import Celery
from celery.signals import celeryd_after_setup, worker_ready, worker_shutting_down

from biolm import broker
from biolm.owner_only import owner_only_files
from biolm.placement import GPU_QUEUE, Need, Seat, holder_named_by
from workers.runner.client import PlatformClient, Rejected, Unreachable
from workers.runner.execution import HEARTBEAT_S, JobRun
from workers.runner.executors import check_slurm, executor
from workers.runner.gpu_workers import SHARES_GPU_VARIABLE, describe_gpus, visible_gpus, workers_per_gpu
from workers.runner.health import health_file
from workers.runner.processes import dump_stacks_on_signal
from workers.runner.slurm_settings import SlurmReach

logger = logging.getLogger("biolm.worker")
owner_only_files()  # `celery -A workers.runner.app worker` starts here: job scratch space and results owner-only
dump_stacks_on_signal()  # `kill -USR2 <pid>`: every thread's stack in the worker's log (a worker that will not stop)

ROOT = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("BIOLM_VAR_DIR", ROOT / "var"))
BROKER_URL = os.environ.get("CELERY_BROKER_URL", broker.DEFAULT_URL)
API_URL = os.environ.get("BIOLM_API_URL", "http://127.0.0.1:8000/internal/").rstrip("/") + "/"
WORK_DIR = Path(os.environ.get("BIOLM_WORKER_DIR", VAR_DIR / "worker"))
QUEUES = os.environ.get("BIOLM_WORKER_QUEUES", "gpu").split(",")
CREDENTIAL = os.environ.get("BIOLM_WORKER_SECRET", "")  # the platform's secret, or a data holder's own credential
HOLDER = holder_named_by(CREDENTIAL)  # a holder's worker serves its holder's queue only (biolm.placement)
EXECUTOR = executor()  # a bad BIOLM_EXECUTOR (or Slurm setting) stops the worker at start, in one line
if EXECUTOR == "slurm":
    check_slurm()


def gpu_count() -> int:
    """The GPUs this worker's jobs run on, which its heartbeat reports so that the site names a GPU only where
    there is one: ``BIOLM_WORKER_GPUS`` (set by :func:`workers.runner.gpu_workers.worker_processes`), else the
    devices ``CUDA_VISIBLE_DEVICES`` lists, else those ``nvidia-smi`` sees (none without a driver)."""
    if os.environ.get("BIOLM_WORKER_GPUS", "").strip().isdigit():
        return int(os.environ["BIOLM_WORKER_GPUS"])
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([device for device in visible.split(",") if device.strip() and device.strip() != "-1"])
    return visible_gpus()


def seat() -> Seat:
    """What this worker offers: its GPUs (:func:`gpu_count`), shared with other workers when
    ``BIOLM_WORKER_SHARES_GPU`` is 1 (:func:`workers.runner.gpu_workers.worker_processes` sets it); a Slurm
    worker's reach on the cluster (``BIOLM_SLURM_MAX_NODES`` nodes of ``BIOLM_SLURM_GPUS_PER_NODE``)."""
    if EXECUTOR == "slurm":
        reach = SlurmReach.from_environment()
        return Seat(reach.gpus_per_node, nodes=reach.max_nodes, slurm=True, holder=HOLDER)
    count = gpu_count()
    return Seat(count, shared=count > 0 and os.environ.get(SHARES_GPU_VARIABLE, "").strip() == "1", holder=HOLDER)


def sharers(seat: Seat) -> int:
    """How many workers share this worker's GPU (``BIOLM_WORKERS_PER_GPU``): 1 when it owns its GPUs."""
    if not seat.shared:
        return 1
    try:
        return workers_per_gpu()
    except ValueError:  # the supervisor checked the setting before it started this worker; an odd value counts 1
        return 1


def own_gpus() -> list[dict]:
    """The model and memory of each GPU this worker owns (none on the CPU, or without nvidia-smi); a Slurm
    worker's: one node's, as its settings say (``BIOLM_SLURM_GPU_MODEL``, ``BIOLM_SLURM_GPU_MEMORY``)."""
    if EXECUTOR == "slurm":
        return SlurmReach.from_environment().devices()
    if not gpu_count():
        return []
    return describe_gpus(os.environ.get("CUDA_VISIBLE_DEVICES") or None)


app = Celery("biolm-worker")
app.conf.update(
    broker_url=BROKER_URL,
    broker_transport=broker.transport(BROKER_URL),
    broker_use_ssl=broker.use_ssl(BROKER_URL, os.environ.get("BIOLM_BROKER_CA_FILE", "")),
    broker_transport_options=broker.transport_options(
        BROKER_URL,
        VAR_DIR,
        int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", broker.DEFAULT_VISIBILITY_TIMEOUT_S)),
        holder=HOLDER,
    ),
    broker_connection_retry_on_startup=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue="gpu",
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    # Remote control reads keys named for the worker (<name>.celery.pidbox), outside a holder's own (held-<name>*):
    # the platform sends none, and a holder's worker, whose broker user may read only its own keys, takes none.
    worker_enable_remote_control=not HOLDER,
)


@app.task(bind=True, name=broker.GPU_TASK, acks_late=True, reject_on_worker_lost=True, max_retries=0, shared=False)
def run_job(self, job_id: int, token: str) -> str:
    global _running
    worker = self.request.hostname or "worker"
    _running = JobRun(job_id, token, api_url=API_URL, worker=worker, work_dir=WORK_DIR, executor=EXECUTOR,
                      credential=CREDENTIAL)  # fmt: skip
    try:
        outcome = _running.run()
    finally:
        _running = None
    logger.info("job #%s: %s %s", job_id, outcome.status, outcome.detail[:200])
    return outcome.status


_running: JobRun | None = None  # the job this worker runs now (the solo pool runs one at a time)


def held_gpus(run: JobRun | None) -> int:
    """The GPUs ``run`` holds: its spec's (pretraining: ``gpus``; fine-tuning: one), none before its claim."""
    spec = getattr(run, "spec", None)
    if spec is None:
        return 0
    return Need.of(spec.KIND, {"gpus": getattr(spec, "gpus", 1)}).gpus


@celeryd_after_setup.connect
def _consume_the_seats_queue(sender=None, instance=None, **_: object) -> None:
    """Consume this worker's seat's broker queue in place of ``gpu`` (``-Q gpu``, as a worker started by hand
    says): a message sent to a four-GPU seat must not reach it unless it owns four."""
    queues = getattr(getattr(instance, "app", None), "amqp", None)
    if queues is None:
        return
    consume_seat_queue(queues.queues, seat().queue)


def consume_seat_queue(queues, queue: str) -> None:
    """Make Celery's ``queues`` (``app.amqp.queues``) consume ``queue`` in place of the plain ``gpu`` one."""
    if queue == GPU_QUEUE or GPU_QUEUE not in queues.consume_from:
        return
    queues.select_add(queues[queue])  # declared as `-Q` declares it, as the platform sends to it: both named `queue`
    queues.deselect([GPU_QUEUE])


class Liveness(threading.Thread):
    """Posts the worker's heartbeat to the platform, so it counts this worker's slot when dispatching."""

    def __init__(self, name: str) -> None:
        super().__init__(daemon=True, name="biolm-liveness")
        self.worker_name = name
        self.stopped = threading.Event()
        self.client = PlatformClient(API_URL, CREDENTIAL, retry_for_s=HEARTBEAT_S)
        self.seat = seat()
        self.devices = own_gpus()  # the models and memory do not change while the worker runs
        self.sharers = sharers(self.seat)  # the platform counts a job's share of the GPU, not the whole card

    def beat(self) -> dict:
        """The heartbeat's body: alive, on ``QUEUES``, one job at a time, and the GPUs it owns and has free."""
        free = max(0, self.seat.gpus - held_gpus(_running))
        return {"name": self.worker_name, "queues": QUEUES, "slots": 1, "gpus": self.seat.gpus, "gpus_free": free,
                "shares_gpu": self.seat.shared, "workers_per_gpu": self.sharers, "gpu_devices": self.devices,
                "executor": EXECUTOR, "nodes": self.seat.nodes}  # fmt: skip

    def run(self) -> None:
        alive = health_file(WORK_DIR, self.worker_name)
        while not self.stopped.is_set():
            try:
                self.client.post("workers/heartbeat", self.beat())
            except (Unreachable, Rejected) as exc:
                logger.warning("worker heartbeat not delivered: %s", exc)
            else:  # for the host's health check (python -m workers.runner.health)
                try:
                    alive.parent.mkdir(parents=True, exist_ok=True)
                    alive.touch()
                except OSError as exc:
                    logger.warning("cannot mark %s alive: %s", alive, exc)
            self.stopped.wait(HEARTBEAT_S)


_liveness: Liveness | None = None


@worker_ready.connect
def _start_liveness(sender=None, **_: object) -> None:
    global _liveness
    _liveness = Liveness(getattr(sender, "hostname", None) or "worker")
    _liveness.start()


@worker_shutting_down.connect
def _stop_liveness(**_: object) -> None:
    if _liveness is not None:
        _liveness.stopped.set()
