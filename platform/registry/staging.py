"""Staging directories for dataset imports, and the clean-up of those a killed import left behind.

An import writes its DatasetDict into ``.<fingerprint>-<random>/`` beside its final place and
renames it into place when complete, so a half-written dataset is never visible. A process that
is killed (SIGKILL, out of memory, a lost machine) cannot remove its staging directory, so each
one records its owner's host and process id, and the next import removes those whose owner is
gone: a process that no longer exists on this host, or one of another host (shared storage)
older than :data:`FOREIGN_STAGING_SECONDS`. A live import's staging is never touched.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("biolm.imports")
OWNER_FILE = "owner.json"
FOREIGN_STAGING_SECONDS = 24 * 3600


def new_staging_directory(parent: Path, fingerprint: str) -> Path:
    staging = Path(tempfile.mkdtemp(prefix=f".{fingerprint}-", dir=parent))
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}
    (staging / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    return staging


def write_once(target: Path, name: str, write: Callable[[Path], None]) -> bool:
    """Create ``target`` by ``write(staging / "data")`` and a rename; whether this call created it.

    Nothing half-written is ever visible at ``target``. An existing ``target`` (the same content,
    by its fingerprinted name) is kept, also when a concurrent import renames it into place first.
    """
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned_staging(parent)
    if target.exists():
        return False
    staging = new_staging_directory(parent, name)
    try:
        write(staging / "data")
        try:
            (staging / "data").rename(target)
        except OSError:
            if not target.is_dir():  # not another import of the same content finishing first
                raise
            return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def remove_abandoned_staging(parent: Path) -> list[Path]:
    """Remove the staging directories under ``parent`` whose import is no longer running; return them."""
    removed = []
    for candidate in parent.glob(".*-*"):
        if candidate.is_dir() and _abandoned(candidate):
            shutil.rmtree(candidate, ignore_errors=True)
            logger.info("removed %s, left by an import that did not finish", candidate)
            removed.append(candidate)
    return removed


def _abandoned(staging: Path) -> bool:
    try:
        owner = json.loads((staging / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # killed before it wrote its owner (or from an older biolm)
        return time.time() - staging.stat().st_mtime > 60
    if owner.get("host") != socket.gethostname():
        return time.time() - float(owner.get("started", 0)) > FOREIGN_STAGING_SECONDS
    return not _running(int(owner.get("pid", -1)))


def _running(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True
