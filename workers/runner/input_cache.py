"""A host's cache of the checkpoints its jobs download, keyed by content and shared by its workers.

A submission's jobs all read one checkpoint: one job per dataset, and (sliced) one per grid point, seed or
fold. Without a cache each job downloads every weight file again, through the object store or the web.
Here each file a job's manifest names is kept once under its SHA-256 (``<root>/<aa>/<sha256>``), and a
job's folder gets a hard link to it: the second job on the host, by any of its workers, reads no byte
over the network. The manifest's digest is the key, and the download is checked against it before it
enters the cache, so a cached file is always the file the platform named.

The workers of a host share ``BIOLM_WORKER_DIR``, and the cache lives in it (``input-cache``). Two workers
fetching the same file take turns on a lock of that file's own, so it is downloaded once; the cache keeps
at most ``BIOLM_INPUT_CACHE_BYTES`` (default 50 GiB; 0 turns it off), evicting the least recently used
files first. A job that still holds a link to an evicted file keeps its bytes until it ends.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from biolm.file_lock import exclusive

logger = logging.getLogger("biolm.worker")
DEFAULT_LIMIT_BYTES = 50 << 30
LIMIT_VARIABLE = "BIOLM_INPUT_CACHE_BYTES"


@dataclass(frozen=True)
class InputCache:
    root: Path
    limit_bytes: int

    @classmethod
    def for_host(cls, work_dir: Path) -> InputCache | None:
        """The cache in ``work_dir`` (every worker of the host has the same), sized by ``BIOLM_INPUT_CACHE_BYTES``;
        None when that is 0."""
        text = os.environ.get(LIMIT_VARIABLE, "").strip()
        try:
            limit = int(text) if text else DEFAULT_LIMIT_BYTES
        except ValueError:
            raise ValueError(f"{LIMIT_VARIABLE}={text!r}: expected a number of bytes (0 turns the cache off)") from None
        return cls(Path(work_dir) / "input-cache", limit) if limit > 0 else None

    def fetch(self, entry: dict, target: Path, download: Callable[[dict, Path], Path]) -> bool:
        """Put the file ``entry`` names (``{sha256, size, ...}``) at ``target``, downloading it only if no job on this
        host has; True when it came from the cache. ``download(entry, path)`` fetches and checks one file."""
        digest = str(entry["sha256"])
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            raise ValueError(f"manifest entry {entry.get('path')!r}: sha256 {digest!r} is not a SHA-256 digest")
        blob = self.root / digest[:2] / digest
        blob.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(blob.with_name(f"{digest}.lock")):
            hit = blob.is_file() and blob.stat().st_size == entry["size"]
            if not hit:
                partial = blob.with_name(f"{digest}.partial-{os.getpid()}")
                try:
                    download(entry, partial)
                    partial.chmod(0o444)  # every job's link is this one file: none may write to it
                    os.replace(partial, blob)
                finally:
                    partial.unlink(missing_ok=True)
            os.utime(blob)  # its use, for the least-recently-used order
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            try:
                os.link(blob, target)
            except OSError:  # another filesystem: a copy
                shutil.copyfile(blob, target)
        if not hit:
            self.evict(keep=blob)
        return hit

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Remove the least recently used files until the cache holds at most its limit; the files removed."""
        removed: list[Path] = []
        with exclusive(self.root / "evict.lock"):
            blobs = [path for path in self.root.glob("??/*") if path.is_file() and len(path.name) == 64]
            ages = sorted(blobs, key=lambda path: path.stat().st_mtime)
            total = sum(path.stat().st_size for path in blobs)
            for path in ages:
                if total <= self.limit_bytes:
                    break
                if path == keep:
                    continue
                size = path.stat().st_size
                with exclusive(path.with_name(f"{path.name}.lock")):
                    path.unlink(missing_ok=True)
                total -= size
                removed.append(path)
        if removed:
            logger.info("input cache: evicted %d file(s) to stay within %d bytes", len(removed), self.limit_bytes)
        return removed
