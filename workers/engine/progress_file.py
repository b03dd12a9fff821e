"""The engine's progress as a small JSON file that a supervising process reads (``BIOLM_PROGRESS_FILE``).

A job runner starts the engine as a child process and reports its progress to the platform in
heartbeats. Parsing a progress bar is brittle; a file the engine replaces atomically, at most a
few times a second, is not: the reader always sees one whole, recent state.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

ENVIRONMENT_VARIABLE = "BIOLM_PROGRESS_FILE"
MIN_INTERVAL_S = 0.5


class ProgressFile:
    def __init__(self, path: Path, min_interval_s: float = MIN_INTERVAL_S) -> None:
        self.path = Path(path)
        self.min_interval_s = min_interval_s
        self._last = 0.0

    @classmethod
    def from_environment(cls) -> ProgressFile | None:
        value = os.environ.get(ENVIRONMENT_VARIABLE)
        return cls(Path(value)) if value else None

    def write(self, label: str, step: int, total: int, loss: float | None = None, **extra: float | None) -> None:
        """Record the state; skipped if the last write was moments ago, unless this step ends its phase."""
        now = time.monotonic()
        if step < total and now - self._last < self.min_interval_s:
            return
        self._last = now
        state = {"label": label, "step": step, "total": total, "loss": loss, "time": time.time(), **extra}
        # A name of this process's own: two writers (ranks of one job on a shared folder) never rename each
        # other's file away; the reader still sees one whole state, the last one replaced.
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(state), encoding="utf-8")
        os.replace(temporary, self.path)


def read(path: Path) -> dict | None:
    """The last state written, or None if there is none yet."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
