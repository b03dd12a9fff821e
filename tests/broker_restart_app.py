"""A Celery app on biolm's broker settings, with one task that holds its message until told to finish.

:mod:`test_broker_reconnect` runs it in a real prefork worker against a real Redis that it stops
and restarts while the task runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery import Celery

from biolm import broker

URL = os.environ["BROKER_RESTART_URL"]
app = Celery("biolm-broker-restart", broker=URL)
app.conf.update(broker_transport=broker.transport(URL), task_acks_late=True, worker_prefetch_multiplier=1,
                broker_connection_retry_on_startup=True)  # fmt: skip


@app.task(name="hold_then_write")
def hold_then_write(folder: str, name: str) -> None:
    """Wait for ``<folder>/release``, then write ``<folder>/<name>``: the test decides when the task ends."""
    (Path(folder) / f"{name}.started").touch()
    while not (Path(folder) / "release").exists():
        time.sleep(0.1)
    (Path(folder) / name).write_text("done")
