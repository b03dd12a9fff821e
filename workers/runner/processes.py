"""Supervising worker processes: Ctrl-C or SIGTERM to the supervisor reaches every child."""

from __future__ import annotations

import signal
import subprocess


def wait_for_all(children: list[subprocess.Popen]) -> list[int]:
    """Wait for ``children``, passing SIGINT and SIGTERM on to them as SIGTERM (Celery's warm shutdown)."""

    def stop(_signum, _frame) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    return [child.wait() for child in children]
