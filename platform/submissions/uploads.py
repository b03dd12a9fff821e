"""The form's uploads: a checkpoint stopped as soon as it is too large, files handed to the intake, always removed.

Uploads stream to temporary files under ``FILE_UPLOAD_TEMP_DIR`` (settings), never into memory.
Such a file is named ``tmpXXXX.upload.gz`` whatever it was called, while the checkpoint intake
tells an archive's kind by its suffix (``.tar.gz``, ``.tgz``, ``.tar``, ``.zip``), so
:func:`on_disk` hard-links it, under a name with its own suffix, into a fresh folder of the
intake's scratch space; the folder goes when the submission is done, and :func:`discard` removes
the uploads themselves, whatever happened.

A request is refused before a byte of its body is read (:func:`declared_refusal`) when the length it
declares is over what a submission may send, or would leave the disk of the upload folder or of the
artefact store less than ``BIOLM_DISK_RESERVE_BYTES`` free, counting what the uploads still being
received have promised (:mod:`biolm.disk_reservations`): the answer goes out and the connection
closes without the body ever being received, let alone written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.core.signals import request_finished
from django.dispatch import receiver
from django.http import QueryDict
from django.template.defaultfilters import filesizeformat
from django.utils.datastructures import MultiValueDict

from biolm.disk_reservations import NoRoom
from jobs.disk_room import no_room_sentence, reservations
from registry.intake import scratch_folder

MIB = 1 << 20
TAR_OVERHEAD_PER_MEMBER = 1024  # a tar member's header and padding: 512 bytes each at most
FORM_OVERHEAD = MIB  # the form's other fields (a description of 5000 characters at most) and the multipart framing


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


def largest_request_bytes() -> int:
    """The longest submission request worth reading: the largest archive plus the form's other fields."""
    return largest_archive_bytes() + FORM_OVERHEAD


def _declared_length(content_length: int | str | None) -> int | None:
    try:
        return int(content_length or 0)
    except ValueError:
        return None  # Django's parser refuses a malformed length itself, reading nothing


def _too_large(length: int) -> str | None:
    if length <= largest_request_bytes():
        return None
    limits = settings.BIOLM_ARCHIVE_LIMITS
    return (
        f"the upload is {filesizeformat(length)}, larger than the {filesizeformat(largest_archive_bytes())} a "
        f"checkpoint archive may be ({limits.variable('max_total_bytes')}); upload a smaller checkpoint"
    )


def _room_for_upload(size: int, promised: int) -> str | None:
    return no_room_sentence("the upload", size, promised)


def declared_refusal(content_length: int | str | None) -> str | None:
    """Why a request that declares ``content_length`` bytes must not be read at all; None when it may be read."""
    length = _declared_length(content_length)
    if length is None:
        return None
    return _too_large(length) or _room_for_upload(length, reservations().promised())


_held = threading.local()  # the reservations this thread's request holds, released when it ends at the latest


def _release(name: str | None) -> None:
    if name is None:
        return
    reservations().release(name)
    held = getattr(_held, "names", set())
    held.discard(name)


@receiver(request_finished, dispatch_uid="biolm-upload-reservations")
def _release_what_the_request_held(**_: object) -> None:
    """A request that ended before its upload completed (a refused form, an error) leaves no reservation behind."""
    for name in list(getattr(_held, "names", ())):
        _release(name)


class CheckpointSizeHandler(FileUploadHandler):
    """Skips a checkpoint upload the moment it passes :func:`largest_archive_bytes`, before the disk fills.

    It goes first in the request's handlers. Before the body is read, a request whose declared
    length :func:`declared_refusal` refuses is parsed as empty, its body never read, and
    :attr:`unread` says so. Otherwise it passes each chunk on to the one that writes the
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
        self.unread = False
        self.reservation: str | None = None  # this request's share of the disk, held while its body is received

    def handle_raw_input(
        self, input_data, META, content_length: int, boundary, encoding: str | None = None
    ) -> tuple[QueryDict, MultiValueDict] | None:
        """Refuse the request by its declared length: an empty parse, so that Django reads none of its body."""
        length = _declared_length(content_length)
        sentence = None if length is None else _too_large(length)
        if sentence is None and length is not None:
            try:
                self.reservation = reservations().take(length, _room_for_upload)
                _held.names = getattr(_held, "names", set()) | {self.reservation}
            except NoRoom as refused:
                sentence = str(refused)
        if sentence is None:
            return None
        self.refused[sorted(self.watched)[0]] = sentence
        self.unread = True
        return QueryDict(encoding=encoding), MultiValueDict()

    def upload_complete(self) -> None:
        """The body is on disk, which the free space now shows: the reservation has done its work."""
        _release(self.reservation)
        self.reservation = None

    def upload_interrupted(self) -> None:
        _release(self.reservation)
        self.reservation = None

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
