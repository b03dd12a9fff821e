"""Checkpoints, corpora and predictions in the artefact store, behind Django's storage API.

The store is the storage alias ``settings.BIOLM_ARTEFACT_STORAGE`` (``var/media`` by default).
Workers never see its credentials: a job's spec names artefacts with their sizes and SHA-256
digests, and :func:`download_manifest` gives a worker each file's location, a local path for a
filesystem store or the storage's URL for one without local paths (pre-signed, for S3 through
django-storages), so the worker downloads with the standard library and checks every digest.

Submitted checkpoints and corpora are stored by content (:func:`store_blob`, under ``blobs/sha256/``):
an entry's ``name`` is the blob and its ``path`` the file's place in the checkpoint, so identical
files, whoever submits them and however often, are kept once.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, storages

BLOBS = "blobs/sha256"  # content-addressed files: one copy of each distinct content, however often submitted


class ArtefactError(ValueError):
    """An artefact could not be read or stored; the message names the file."""


def storage() -> Storage:
    return storages[settings.BIOLM_ARTEFACT_STORAGE]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def store_directory(directory: Path, prefix: str) -> list[dict]:
    """Copy every file under ``directory`` to ``prefix/...``; the manifest of what was stored."""
    files = sorted(p for p in Path(directory).rglob("*") if p.is_file())
    if not files:
        raise ArtefactError(f"{directory}: no files to store")
    return [store_file(path, f"{prefix}/{path.relative_to(directory).as_posix()}") for path in files]


def blob_name(digest: str) -> str:
    """Where the content with SHA-256 ``digest`` is kept: ``blobs/sha256/ab/abcdef...``."""
    return f"{BLOBS}/{digest[:2]}/{digest}"


def store_blob(path: Path, relative: str, created: list[str] | None = None) -> dict:
    """Store ``path`` once by its content; the entry names the blob and keeps ``relative`` as its ``path``.

    A checkpoint submitted five times (or by five users) costs one copy. ``created`` collects the
    blobs this call wrote, so a submission that fails afterwards removes those and only those:
    a blob that was there before belongs to somebody else too.
    """
    digest, size = sha256(path), Path(path).stat().st_size
    name, target = blob_name(digest), storage()
    if not target.exists(name):
        with Path(path).open("rb") as handle:
            saved = target.save(name, File(handle, name=digest))
        if saved != name:  # a racing writer stored the same content first: keep theirs
            target.delete(saved)
        elif created is not None:
            created.append(name)
    return {"name": name, "path": relative, "size": size, "sha256": digest}


def store_directory_blobs(directory: Path, created: list[str] | None = None) -> list[dict]:
    """Every file under ``directory`` stored by content (:func:`store_blob`); the manifest, by relative path."""
    files = sorted(p for p in Path(directory).rglob("*") if p.is_file())
    if not files:
        raise ArtefactError(f"{directory}: no files to store")
    return [store_blob(path, path.relative_to(directory).as_posix(), created) for path in files]


def delete_names(names: list[str]) -> None:
    target = storage()
    for name in names:
        if target.exists(name):
            target.delete(name)


def store_file(path: Path, name: str) -> dict:
    """Store one file under exactly ``name`` (an existing artefact of that name is replaced)."""
    target = storage()
    if target.exists(name):
        target.delete(name)
    with Path(path).open("rb") as handle:
        saved = target.save(name, File(handle, name=Path(name).name))
    return {"name": saved, "size": Path(path).stat().st_size, "sha256": sha256(path)}


def store_file_object(handle, name: str) -> dict:
    """Store an uploaded file (read once, in chunks: a checkpoint may be gigabytes) under exactly ``name``."""
    target = storage()
    if target.exists(name):
        target.delete(name)
    digest, size = hashlib.sha256(), 0
    with tempfile.TemporaryFile() as spool:
        for chunk in handle.chunks() if hasattr(handle, "chunks") else iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
            spool.write(chunk)
        spool.seek(0)
        saved = target.save(name, File(spool, name=Path(name).name))
    return {"name": saved, "size": size, "sha256": digest.hexdigest()}


def store_bytes(data: bytes, name: str) -> dict:
    target = storage()
    if target.exists(name):
        target.delete(name)
    saved = target.save(name, File(io.BytesIO(data), name=Path(name).name))
    return {"name": saved, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def delete_prefix(prefix: str) -> int:
    """Delete every artefact under ``prefix``; how many files went."""
    target = storage()
    deleted = 0
    try:
        folders, files = target.listdir(prefix)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for name in files:
        target.delete(f"{prefix}/{name}")
        deleted += 1
    for folder in folders:
        deleted += delete_prefix(f"{prefix}/{folder}")
    return deleted


def locate(name: str) -> str:
    """Where a worker reads the artefact: its local path, or a URL (pre-signed for S3)."""
    target = storage()
    try:
        return target.path(name)
    except NotImplementedError:
        return target.url(name)


def download_manifest(entries: list[dict], prefix: str, url_for: Callable[[str], str] = locate) -> list[dict]:
    """The manifest a worker receives for artefacts stored under ``prefix``: path within it, location, digest."""
    cut = len(prefix.rstrip("/")) + 1
    return [
        {
            "path": entry.get("path") or entry["name"][cut:],  # a blob keeps its path; other names hold it
            "url": url_for(entry["name"]),
            "size": entry["size"],
            "sha256": entry["sha256"],
        }
        for entry in entries
    ]
