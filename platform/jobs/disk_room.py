"""Room on the platform's disks for what it is about to receive: uploads, and the files they unpack into.

``BIOLM_DISK_RESERVE_BYTES`` stays free whatever arrives, so one large upload (or several at once)
cannot fill the disk that the database, the logs and the running jobs write to. A submission's
upload (:mod:`submissions.uploads`) and a job's output sent through the web (:mod:`jobs.api`) are
both checked here before their bodies are read, counting what the uploads still being received
have promised (:mod:`biolm.disk_reservations`).
"""

from __future__ import annotations

import shutil
from contextlib import suppress
from pathlib import Path

from django.conf import settings
from django.template.defaultfilters import filesizeformat

from biolm.disk_reservations import DiskReservations
from jobs import artefacts
from registry.intake import scratch_folder


def disk_folders() -> dict[str, Path]:
    """The local folders a submission fills, by what they are: uploads, the intake's unpacking, the store.

    The artefact store counts only where it is a local filesystem (an S3 bucket has no disk here).
    """
    folders = {"upload folder": Path(settings.FILE_UPLOAD_TEMP_DIR), "scratch folder": scratch_folder()}
    with suppress(NotImplementedError):  # a storage without local paths
        folders["artefact store"] = Path(artefacts.storage().path(""))
    return folders


def no_room_sentence(label: str, size: int, promised: int = 0) -> str | None:
    """Why ``size`` more bytes of ``label`` would leave a disk of :func:`disk_folders` under the reserve; None if not.

    ``BIOLM_DISK_RESERVE_BYTES`` stays free whatever is submitted, so one large upload (or several
    at once) cannot fill the disk that the database, the logs and the running jobs write to.
    ``promised`` is what uploads still being received have reserved (:func:`reservations`): space
    they will take though the disk does not show it yet. It is counted in full, though part of it
    may be written already, so concurrent uploads are refused a little early rather than too late.
    """
    reserve = settings.BIOLM_DISK_RESERVE_BYTES
    seen = set()
    for what, folder in disk_folders().items():
        folder.mkdir(parents=True, exist_ok=True)
        device = folder.stat().st_dev
        if device in seen:
            continue
        seen.add(device)
        free = shutil.disk_usage(folder).free
        if size + promised + reserve > free:
            others = f", {filesizeformat(promised)} of it promised to uploads being received," if promised else ""
            return (
                f"{label} ({filesizeformat(size)}) does not fit: the {what}'s disk has {filesizeformat(free)} free"
                f"{others} and keeps {filesizeformat(reserve)} of it in reserve (BIOLM_DISK_RESERVE_BYTES); try again "
                "later, or ask the site's operator to free disk space"
            )
    return None


def reservations() -> DiskReservations:
    """The site's ledger of uploads being received (under ``BIOLM_VAR_DIR``, shared by its web processes)."""
    return DiskReservations(Path(settings.BIOLM_VAR_DIR) / "upload-reservations")


def reserve(label: str, content_length: int | str | None) -> str:
    """Reserve a request's declared length for ``label`` unless it would not fit (:class:`NoRoom`); the name to
    release. A request that declares no length reserves nothing: the server then reads what it is sent."""
    try:
        length = max(0, int(content_length or 0))
    except ValueError:
        length = 0
    return reservations().take(length, lambda size, promised: no_room_sentence(label, size, promised))
