"""An exclusive lock on a file, shared by every process of this host (``flock``).

One helper for the places where processes of one host take turns: the disk reservations of the web's
uploads (:mod:`biolm.disk_reservations`) and the GPU workers' checkpoint cache
(:mod:`workers.runner.input_cache`).
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its folder, when missing) until the block ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
