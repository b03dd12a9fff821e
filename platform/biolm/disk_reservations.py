"""Disk space promised to uploads still being received, counted across every process of a site.

An upload's declared length used to be checked against the free space alone. Two uploads that
each fit, received at once by two web processes, then filled the disk between them: each saw the
space the other had not written yet. So an upload that is let in reserves its length here until
its body is on disk (or its request ends), and the next one's check counts what is already
promised as used.

The ledger is a folder of small files, one per reservation, named by the process that holds it,
and written under an exclusive ``flock`` of the folder's lock file, so the check and the reservation
are one step for every process of the host. A reservation whose process died (a web worker killed
mid-upload) no longer counts.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from biolm.file_lock import exclusive


class NoRoom(Exception):
    """The upload does not fit beside what is already promised; the message says why."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


class DiskReservations:
    """The ledger in ``folder`` (created on first use)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def _locked(self) -> AbstractContextManager[None]:
        return exclusive(self.folder / ".lock")

    def promised(self) -> int:
        """Bytes reserved by uploads still being received, by live processes."""
        total = 0
        for entry in self.folder.glob("*.bytes") if self.folder.exists() else ():
            pid = int(entry.name.split("-", 1)[0])
            try:
                size = int(entry.read_text(encoding="ascii") or 0)
            except (FileNotFoundError, ValueError):  # released meanwhile, or being written
                continue
            if _alive(pid):
                total += size
            else:
                entry.unlink(missing_ok=True)
        return total

    def take(self, size: int, refusal: Callable[[int, int], str | None]) -> str:
        """Reserve ``size`` bytes unless ``refusal(size, promised)`` says why not (raised as :class:`NoRoom`).

        Returns the reservation's name, for :meth:`release`.
        """
        with self._locked():
            sentence = refusal(size, self.promised())
            if sentence is not None:
                raise NoRoom(sentence)
            name = f"{os.getpid()}-{uuid.uuid4().hex}.bytes"
            (self.folder / name).write_text(str(size), encoding="ascii")
        return name

    def release(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)
