"""How an output is cut into the parts of a multipart upload: one rule for the worker and the platform.

A worker hashes each part while it hashes the whole file (one read of a file that may be 100 GB),
so it must know the parts' boundaries before it asks the platform to sign them; the platform
signs each part's URL with the digest declared for it and checks the parts it receives against the
same boundaries. Both call :func:`part_size`, from the output's size and the platform's part-size
setting (``BIOLM_S3_MULTIPART_BYTES``, sent in the claim).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

MAX_PARTS = 10_000  # S3's limit on one upload's parts
MIN_PART_BYTES = 5 << 20  # S3's smallest part but the last (EntityTooSmall when the upload is completed)


def part_size(size: int, part_bytes: int) -> int:
    """The size of every part but the last: ``part_bytes``, grown where ``size`` would need more than 10,000."""
    if part_bytes < MIN_PART_BYTES:
        raise ValueError(f"a part is at least {MIN_PART_BYTES} bytes (5 MiB, S3's smallest), not {part_bytes}")
    return max(part_bytes, math.ceil(size / MAX_PARTS))


def part_count(size: int, part_bytes: int) -> int:
    """How many parts an output of ``size`` bytes goes up in (1: a single ``PUT``)."""
    return max(1, math.ceil(size / part_size(size, part_bytes)))


def part_sizes(size: int, part_bytes: int) -> list[int]:
    each, count = part_size(size, part_bytes), part_count(size, part_bytes)
    return [each] * (count - 1) + [size - each * (count - 1)]


@dataclass(frozen=True)
class Digests:
    """A file's size and SHA-256 (hex), and each of its parts' SHA-256 (hex; one part when it goes up whole)."""

    size: int
    sha256: str
    parts: tuple[str, ...]


def file_digests(path: Path, part_bytes: int, chunk: int = 1 << 20) -> Digests:
    """The whole file's and each part's SHA-256, in one read."""
    size = Path(path).stat().st_size
    whole, parts = hashlib.sha256(), []
    with Path(path).open("rb") as handle:
        for length in part_sizes(size, part_bytes):
            digest, left = hashlib.sha256(), length
            while left:
                data = handle.read(min(chunk, left))
                if not data:
                    raise ValueError(f"{path} shrank while it was read ({size} bytes expected)")
                whole.update(data)
                digest.update(data)
                left -= len(data)
            parts.append(digest.hexdigest())
    return Digests(size, whole.hexdigest(), tuple(parts))
