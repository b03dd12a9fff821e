"""A GPU worker that runs no engine, for the jobs benchmark: ``celery -A bench.noop_worker worker -Q gpu``.

Everything around the job is the real thing (the broker message, the claim, the download
manifest, the heartbeat, the upload, the completion through the internal API, the worker's
liveness heartbeats); only the fine-tuning itself is replaced by an empty result, so the
benchmark measures the queue and not the model. ``BENCH_HOLD_S`` keeps each job running that
long, heartbeating, before completing it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path

from celery import Celery

from biolm.broker import GPU_TASK
from biolm.contract import RESULTS_VERSION
from workers.runner import app as runner
from workers.runner.client import Conflict, PlatformClient

app = Celery("biolm-bench-noop")
app.conf.update({key: runner.app.conf[key] for key in (
    "broker_url", "broker_transport_options", "broker_connection_retry_on_startup", "task_acks_late",
    "task_reject_on_worker_lost", "worker_prefetch_multiplier", "task_default_queue", "task_ignore_result",
)})  # fmt: skip


@app.task(bind=True, name=GPU_TASK, acks_late=True, reject_on_worker_lost=True, max_retries=0, shared=False)
def run_job(self, job_id: int, token: str) -> str:
    client = PlatformClient(runner.API_URL, token)
    delivery = uuid.uuid4().hex
    try:
        claimed = client.post(f"jobs/{job_id}/claim", {"delivery": delivery, "worker": self.request.hostname or "noop"})
    except Conflict:
        return "not-claimed"
    spec = claimed["spec"]
    hold = float(os.environ.get("BENCH_HOLD_S", "0"))
    deadline = time.monotonic() + hold
    while time.monotonic() < deadline:
        if client.post(f"jobs/{job_id}/heartbeat", {"delivery": delivery}).get("verdict") == "stop":
            return "stopped"
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.json"
        path.write_text(json.dumps(empty_results(spec)))
        client.upload(f"jobs/{job_id}/outputs/results.json", path, delivery)
    client.post(f"jobs/{job_id}/complete", {"delivery": delivery})
    return "succeeded"


def empty_results(spec: dict) -> dict:
    """A results document with no runs: what the platform's completion checks accept, nothing trained."""
    return {
        "version": RESULTS_VERSION, "spec": spec, "dataset": spec.get("dataset"), "metric": spec.get("metric"),
        "runs": [], "predictions": {}, "data": {"test_gold_withheld": True},
    }  # fmt: skip
