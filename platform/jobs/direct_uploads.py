"""A job's outputs sent by the worker straight to the S3 artefact store, never through a web request.

With a bucket configured (:mod:`jobs.s3_store`) a worker uploads an output in two calls around the
transfer itself:

1. :func:`plan` (``POST .../outputs/<name>/upload``) with the output's size, its SHA-256 and each
   part's SHA-256 (parts cut by :func:`biolm.upload_parts.part_size`): the platform answers a
   pre-signed ``PUT`` for each part, each signed with the digest declared for it, so the server
   refuses any other body. The plan is kept beside the output (``<name>.upload.json``), so the next
   call, on whichever web process, checks against what was signed.
2. :func:`finish` (``POST .../outputs/<name>/uploaded``): the platform completes a multipart upload
   after checking the server holds every planned part at its planned size, then checks the object's
   size (and, after a single ``PUT``, the checksum the server verified) and records the declared size
   and SHA-256 beside it, as an upload through the web records what it measured. Workers that later
   download it check that digest.

Without a bucket, outputs go through the web as before (:mod:`jobs.api`'s ``OutputView``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from botocore.exceptions import ClientError
from django.conf import settings

from biolm.upload_parts import part_count, part_size, part_sizes
from jobs import artefacts
from jobs.s3_store import ArtefactS3Storage, b64_digest


class UploadRefused(ValueError):
    """The declared upload does not match the plan, or what the server holds does not match it."""


def direct_store() -> ArtefactS3Storage | None:
    """The artefact store when workers upload to it directly; None when uploads go through the web."""
    store = artefacts.storage()
    return store if isinstance(store, ArtefactS3Storage) else None


def claim_settings() -> dict | None:
    """What a worker's claim tells it about uploads: the part size, or None (upload through the web)."""
    return {"part_bytes": settings.BIOLM_S3_MULTIPART_BYTES} if direct_store() is not None else None


def _plan_name(name: str) -> str:
    return name + ".upload.json"


@contextlib.contextmanager
def _refusals(name: str) -> Iterator[None]:
    """The object store's refusals (4xx) as :class:`UploadRefused`; its outages (5xx) stay errors a worker retries."""
    try:
        yield
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500)
        if status >= 500:
            raise
        error = exc.response.get("Error", {})
        raise UploadRefused(
            f"{name}: the object store refused it: {error.get('Code')}: {error.get('Message')}"
        ) from None


def plan(name: str, size: int, sha256: str, parts: list[str]) -> dict:
    """Pre-signed ``PUT``s for the output stored as ``name``: ``{"upload_id", "parts": [{number, url, headers}]}``."""
    with _refusals(name):
        return _plan(name, size, sha256, parts)


def _plan(name: str, size: int, sha256: str, parts: list[str]) -> dict:
    store = _store()
    part_bytes = settings.BIOLM_S3_MULTIPART_BYTES
    expected = part_count(size, part_bytes)
    if len(parts) != expected:
        raise UploadRefused(
            f"{name}: {size} bytes go up in {expected} part(s) of {part_size(size, part_bytes)} bytes, not {len(parts)}"
        )
    if expected == 1:
        upload_id, signed = None, [{"number": 1, **store.presigned_put(name, sha256)}]
    else:
        upload_id = store.start_multipart(name)
        signed = [store.presigned_part(name, upload_id, number, digest) for number, digest in enumerate(parts, 1)]
    _abandon_earlier(store, name)
    record = {"size": size, "sha256": sha256, "parts": parts, "upload_id": upload_id}
    artefacts.store_bytes(json.dumps(record).encode(), _plan_name(name))
    return {"upload_id": upload_id, "parts": signed}


def finish(name: str, upload_id: str | None) -> dict:
    """Complete and check the planned upload of ``name``; the entry recorded for it (name, size, sha256)."""
    with _refusals(name):
        return _finish(name, upload_id)


def _finish(name: str, upload_id: str | None) -> dict:
    store = _store()
    record = _planned(store, name)
    if record["upload_id"] != upload_id:
        raise UploadRefused(f"{name}: upload {upload_id!r} is not the one planned ({record['upload_id']!r})")
    if upload_id is not None:
        _complete_parts(store, name, record)
    held = store.stored(name)
    if held is None or held.size != record["size"]:
        raise UploadRefused(f"{name}: the store holds {held.size if held else 'nothing'}, not the "
                            f"{record['size']} bytes declared")  # fmt: skip
    if upload_id is None and held.sha256_b64 is not None and held.sha256_b64 != b64_digest(record["sha256"]):
        raise UploadRefused(f"{name}: the store verified another SHA-256 than the one declared")
    entry = {"name": name, "size": record["size"], "sha256": record["sha256"]}
    artefacts.store_bytes(json.dumps(entry).encode(), name + ".json")
    store.delete(_plan_name(name))
    return entry


def _complete_parts(store: ArtefactS3Storage, name: str, record: dict) -> None:
    held = {part["PartNumber"]: part for part in store.uploaded_parts(name, record["upload_id"])}
    sizes = part_sizes(record["size"], settings.BIOLM_S3_MULTIPART_BYTES)
    wrong = [number for number, size in enumerate(sizes, 1) if held.get(number, {}).get("Size") != size]
    if wrong or len(held) != len(sizes):
        shown = ", ".join(map(str, wrong[:10])) or "extra parts"
        raise UploadRefused(f"{name}: parts missing or of the wrong size ({shown}); send them again")
    listed = [held[number] for number in range(1, len(sizes) + 1)]
    store.finish_multipart(name, record["upload_id"], listed, record["parts"])


def _abandon_earlier(store: ArtefactS3Storage, name: str) -> None:
    """A new plan replaces an unfinished one (an attempt that died mid-upload): its parts are dropped."""
    if not store.exists(_plan_name(name)):
        return
    earlier = _planned(store, name)["upload_id"]
    if earlier is not None:
        with contextlib.suppress(ClientError):  # already completed or aborted
            store.abort_multipart(name, earlier)


def _planned(store: ArtefactS3Storage, name: str) -> dict:
    if not store.exists(_plan_name(name)):
        raise UploadRefused(f"{name}: no upload was planned (POST .../upload first)")
    with store.open(_plan_name(name), "rb") as handle:
        return json.loads(handle.read())


def _store() -> ArtefactS3Storage:
    store = direct_store()
    if store is None:
        raise UploadRefused("this platform's artefact store takes outputs through the web (no bucket is configured)")
    return store
