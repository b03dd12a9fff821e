"""The form's uploads: a checkpoint stopped as soon as it is too large, files handed to the intake, always removed.

Uploads stream to temporary files under ``FILE_UPLOAD_TEMP_DIR`` (settings), never into memory.
Such a file is named ``tmpXXXX.upload.gz`` whatever it was called, while the checkpoint intake
tells an archive's kind by its suffix (``.tar.gz``, ``.tgz``, ``.tar``, ``.zip``), so
:func:`on_disk` hard-links it, under a name with its own suffix, into a fresh folder of the
intake's scratch space; the folder goes when the submission is done, and :func:`discard` removes
the uploads themselves, whatever happened.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.template.defaultfilters import filesizeformat

from registry.intake import scratch_folder

MIB = 1 << 20
TAR_OVERHEAD_PER_MEMBER = 1024  # a tar member's header and padding: 512 bytes each at most


def largest_archive_bytes() -> int:
    """The largest checkpoint archive worth receiving: one that could still unpack within the limits.

    ``BIOLM_ARCHIVE_MAX_BYTES`` bounds what an archive holds; a compressed archive is at most that
    plus its members' headers (safetensors barely compress, so this is also about what they take).
    """
    limits = settings.BIOLM_ARCHIVE_LIMITS
    return limits.max_total_bytes + limits.max_members * TAR_OVERHEAD_PER_MEMBER + MIB


def too_large_sentence(name: str) -> str:
    limits = settings.BIOLM_ARCHIVE_LIMITS
    return (
        f"{name} is larger than {filesizeformat(largest_archive_bytes())}, and a checkpoint may hold at most "
        f"{filesizeformat(limits.max_total_bytes)} ({limits.variable('max_total_bytes')}); upload a smaller checkpoint"
    )


class CheckpointSizeHandler(FileUploadHandler):
    """Skips a checkpoint upload the moment it passes :func:`largest_archive_bytes`, before the disk fills.

    It goes first in the request's handlers: it passes each chunk on to the one that writes the
    temporary file, and when the upload is too large, raises ``SkipFile``, upon which Django
    closes (deletes) that file and reads the rest of the request without keeping it. The form
    then shows :attr:`refused`, field name to sentence.
    """

    def __init__(self, request=None, fields: Iterable[str] = ("checkpoint",)) -> None:
        super().__init__(request)
        self.watched = frozenset(fields)
        self.limit = largest_archive_bytes()
        self.refused: dict[str, str] = {}
        self.watching = False

    def new_file(self, field_name, file_name, *args, **kwargs) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        self.watching = field_name in self.watched

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if self.watching and start + len(raw_data) > self.limit:
            self.refused[self.field_name] = too_large_sentence(self.file_name)
            raise SkipFile
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler (the temporary file's) makes the file


@contextmanager
def on_disk(upload: UploadedFile, name: str) -> Iterator[Path]:
    """``upload`` as a file called ``name`` in a fresh scratch folder, removed with its folder on the way out.

    A hard link costs nothing; across file systems it is a copy, and an upload kept in memory
    (were the settings to allow it) is written out.
    """
    with tempfile.TemporaryDirectory(prefix="biolm-upload-", dir=scratch_folder()) as folder:
        target = Path(folder) / name
        source = getattr(upload, "temporary_file_path", None)
        if source is not None:
            try:
                os.link(source(), target)
            except OSError:
                shutil.copyfile(source(), target)
        else:
            with target.open("wb") as handle:
                for chunk in upload.chunks():
                    handle.write(chunk)
        yield target


def discard(uploads: Iterable[UploadedFile]) -> None:
    """Close and delete the request's uploads now, not whenever the server gets to it."""
    for upload in uploads:
        path = getattr(upload, "temporary_file_path", None)
        location = path() if path is not None else None
        upload.close()
        if location is not None:
            Path(location).unlink(missing_ok=True)
