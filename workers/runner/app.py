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
heartbeats), ``BIOLM_WORKER_DIR`` (scratch space for jobs), ``BIOLM_HEARTBEAT_S``.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from celery import Celery
from celery.signals import worker_ready, worker_shutting_down

from biolm import broker
from biolm.owner_only import owner_only_files
from workers.runner.client import PlatformClient, Rejected, Unreachable
from workers.runner.execution import HEARTBEAT_S, JobRun
from workers.runner.gpu_workers import visible_gpus
from workers.runner.health import health_file
from workers.runner.processes import dump_stacks_on_signal

logger = logging.getLogger("biolm.worker")
owner_only_files()  # `celery -A workers.runner.app worker` starts here: job scratch space and results owner-only
dump_stacks_on_signal()  # `kill -USR2 <pid>`: every thread's stack in the worker's log (a worker that will not stop)

ROOT = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("BIOLM_VAR_DIR", ROOT / "var"))
BROKER_URL = os.environ.get("CELERY_BROKER_URL", broker.DEFAULT_URL)
API_URL = os.environ.get("BIOLM_API_URL", "http://127.0.0.1:8000/internal/").rstrip("/") + "/"
WORK_DIR = Path(os.environ.get("BIOLM_WORKER_DIR", VAR_DIR / "worker"))
QUEUES = os.environ.get("BIOLM_WORKER_QUEUES", "gpu").split(",")


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


app = Celery("biolm-worker")
app.conf.update(
    broker_url=BROKER_URL,
    broker_transport=broker.transport(BROKER_URL),
    broker_transport_options=broker.transport_options(
        BROKER_URL, VAR_DIR, int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", broker.DEFAULT_VISIBILITY_TIMEOUT_S))
    ),
    broker_connection_retry_on_startup=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue="gpu",
    task_ignore_result=True,
    worker_hijack_root_logger=False,
)


@app.task(bind=True, name=broker.GPU_TASK, acks_late=True, reject_on_worker_lost=True, max_retries=0, shared=False)
def run_job(self, job_id: int, token: str) -> str:
    worker = self.request.hostname or "worker"
    outcome = JobRun(job_id, token, api_url=API_URL, worker=worker, work_dir=WORK_DIR).run()
    logger.info("job #%s: %s %s", job_id, outcome.status, outcome.detail[:200])
    return outcome.status


class Liveness(threading.Thread):
    """Posts the worker's heartbeat to the platform, so it counts this worker's slot when dispatching."""

    def __init__(self, name: str) -> None:
        super().__init__(daemon=True, name="biolm-liveness")
        self.worker_name = name
        self.stopped = threading.Event()
        self.client = PlatformClient(API_URL, os.environ.get("BIOLM_WORKER_SECRET", ""), retry_for_s=HEARTBEAT_S)
        self.gpus = gpu_count()

    def run(self) -> None:
        alive = health_file(WORK_DIR, self.worker_name)
        while not self.stopped.is_set():
            try:
                beat = {"name": self.worker_name, "queues": QUEUES, "slots": 1, "gpus": self.gpus}
                self.client.post("workers/heartbeat", beat)
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
