"""How a worker sends a job's output: straight to the S3 store when the claim says so, else to the web.

A claim's ``uploads`` (``{"part_bytes": N}``) means the artefact store is an S3 bucket: the worker
hashes the file once (the whole and each part, :func:`biolm.upload_parts.file_digests`), asks the
platform for pre-signed ``PUT``s signed with those digests, sends each part, and says it is done.
A part whose connection drops is sent again alone, from its first byte (the client's retries), so a
100 GB resume archive never starts over. Without ``uploads`` the file is ``PUT`` to the web app.
"""

from __future__ import annotations

import logging
from pathlib import Path

from biolm.upload_parts import file_digests, part_sizes
from workers.runner.client import FileRange, PlatformClient

logger = logging.getLogger("biolm.worker")


def send_output(client: PlatformClient, job_path: str, name: str, file: Path, delivery: str,
                uploads: dict | None) -> None:  # fmt: skip
    """Upload ``file`` as the job's output ``name`` (``job_path`` is ``jobs/<id>``)."""
    if not uploads:
        client.upload(f"{job_path}/outputs/{name}", file, delivery)
        return
    part_bytes = int(uploads["part_bytes"])
    digests = file_digests(file, part_bytes)
    planned = client.post(f"{job_path}/outputs/{name}/upload",
                          {"delivery": delivery, "size": digests.size, "sha256": digests.sha256,
                           "parts": list(digests.parts)})  # fmt: skip
    offset = 0
    for part, length in zip(planned["parts"], part_sizes(digests.size, part_bytes), strict=True):
        client.put(part["url"], FileRange(Path(file), offset, length), part["headers"])
        offset += length
    client.post(f"{job_path}/outputs/{name}/uploaded", {"delivery": delivery, "upload_id": planned["upload_id"]})
    logger.info("%s: %s sent to the object store (%d bytes, %d part(s))", job_path, name, digests.size,
                len(planned["parts"]))  # fmt: skip
