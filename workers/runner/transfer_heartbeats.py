"""Heartbeats from a thread of their own while a transfer blocks the loop that usually sends them.

A GPU worker heartbeats from its supervision loop, between waits on the engine. Around the engine
it downloads the job's inputs, packs and uploads each new pretraining checkpoint, and packs and
uploads the model it produced, each a blocking call. For a real model these take longer than the
platform's silence limit (``BIOLM_HEARTBEAT_STALE_S``, 30 s by default): BERT-base's checkpoint
with its optimizer state is 1.3 GB, GatorTron's tens of GB. A job silent that long is reaped and
given to another worker, so a worker that was only uploading lost the job and its work. In CI a
pretraining job was taken from its worker after its last step, while the worker packed and
uploaded its model (the faults suite's silence limit is 8 s).

While one of these transfers runs, :func:`heartbeats_while` posts a bare heartbeat every interval
from a thread with a client of its own (the supervision loop's client is not shared across
threads). It ignores the verdict: a job cancelled or taken meanwhile is noticed by the next call of
the loop (its heartbeat answers "stop", its upload or completion a conflict).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from workers.runner.client import Conflict, PlatformClient, Rejected, Unreachable

logger = logging.getLogger("biolm.worker")


@contextmanager
def heartbeats_while(client: PlatformClient, path: str, delivery: str, every_s: float, what: str) -> Iterator[None]:
    """Post ``{"delivery": delivery}`` to ``path`` every ``every_s`` seconds until the block ends."""
    done = threading.Event()
    own = PlatformClient(client.api_url, client.token, retry_for_s=every_s)

    def beat() -> None:
        while not done.wait(every_s):
            try:
                own.post(path, {"delivery": delivery, "log": ""})
            except (Unreachable, Rejected, Conflict) as exc:  # the loop's next call judges; keep trying
                logger.warning("%s: heartbeat while %s not delivered: %s", path, what, exc)

    thread = threading.Thread(target=beat, name=f"heartbeat-while-{what}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
