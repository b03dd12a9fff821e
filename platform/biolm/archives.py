"""Unpack an untrusted archive, or copy an untrusted directory, into a fresh folder: regular files only, within limits.

``tarfile.extractall(filter="data")`` is not enough on the Pythons biolm supports: the
nested-symlink pattern of CVE-2025-4517 writes outside the target on 3.11.7. So nothing here
calls ``extractall``. Each member is read in turn and written by this module, which creates
only directories and regular files: a checkpoint needs nothing else, so links, hard links,
devices, FIFOs and sparse files are refused rather than sanitised, as are absolute names, ``..``
and backslashes. Files are opened with ``O_EXCL | O_NOFOLLOW``, so a name can never reach
through something that is already there. The bytes written are counted as they stream, against
:class:`~biolm.intake_limits.ArchiveLimits`, so a bomb stops at its limit rather than at a
full disk.

A directory is copied the same way, with ``os.scandir`` and without following a single link: a
symbolic link in a submitted folder could name any file on the host (``/etc/hostname``, the
platform's secrets), and copying it would publish that file in the artefact store.

Memory stays bounded whatever the upload: ``tarfile`` reads a GNU long name or a pax header whole
into memory, so each is refused from its declared size, over :data:`MAX_TAR_HEADER_BYTES`, before it
is read (:class:`_BoundedTarInfo`); compressed tars are read through the standard library's
decompressing files, which never inflate more than they are asked for (``tarfile``'s own stream
mode inflates whatever a 16 KiB read of bzip2 holds: an 860-byte .tar.bz2 cost 1.7 GB); a zip's central directory is
sized from its end record before ``zipfile`` reads it, and only stored or deflated entries are
read (``zipfile`` inflates bzip2 and LZMA entries unbounded).

Given a :class:`~biolm.checkpoint_files.CheckpointFiles` (``files=``, where a checkpoint is taken
in), each file must be of a kind a checkpoint holds, and is bounded by its kind's cap; the
expansion ratio is checked for each member as well as for the whole archive, so real weights
cannot dilute a bomb beside them.

Callers give a fresh, empty destination and remove it on every path out (the checkpoint intake
uses a temporary directory); what was written before a refusal is theirs to drop.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import stat
import tarfile
import unicodedata
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from biolm.checkpoint_files import CheckpointFiles, FileKind
from biolm.errors import first_line
from biolm.intake_limits import KIB, ArchiveLimits

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
CHUNK = 1 << 20
MAX_NAME_CHARS = 1024
MAX_PART_CHARS = 255
# Folders that archivers add beside the content (macOS Finder); never part of a checkpoint.
IGNORED_TOP_LEVEL = ("__MACOSX",)
# A GNU long name or link, or a pax header, is a few hundred bytes; tarfile reads each whole into memory.
MAX_TAR_HEADER_BYTES = 64 * KIB
# A zip's central directory holds about 100 bytes a member (46 fixed, the name, a few extra fields).
ZIP_DIRECTORY_BYTES_PER_MEMBER = 1 * KIB


class ArchiveRefused(ValueError):
    """The archive or directory holds something biolm will not write; the message names the member and why."""


@dataclass
class Written:
    """What was written: each file's path (relative, POSIX), size and SHA-256, in order."""

    files: list[tuple[str, int, str]] = field(default_factory=list)
    total_bytes: int = 0

    def content_sha256(self, under: str = "") -> str:
        """One digest of every file's name and content: equal for two copies of the same checkpoint.

        Names count from ``under``, the checkpoint's own folder inside what was unpacked (see
        :func:`content_root`), so the same files packed under another top folder, or given as a
        directory once and as an archive later, are the same checkpoint.
        """
        prefix = under.strip("/") + "/" if under.strip("/.") else ""
        digest = hashlib.sha256()
        for name, size, sha in sorted((n.removeprefix(prefix), s, h) for n, s, h in self.files):
            digest.update(f"{name}\0{size}\0{sha}\n".encode())
        return digest.hexdigest()


def is_archive_name(name: str) -> bool:
    return name.endswith(ARCHIVE_SUFFIXES)


def unpack(
    source: Path | BinaryIO,
    destination: Path,
    limits: ArchiveLimits,
    *,
    label: str,
    compressed_size: int | None = None,
    files: CheckpointFiles | None = None,
) -> Written:
    """Write the regular files of the tar (any compression) or zip ``source`` under the empty ``destination``.

    ``label`` is how messages name the archive (never a temporary path); ``compressed_size``,
    the archive's size where ``source`` is a stream, bounds the expansion ratio; ``files``, where
    a checkpoint is taken in, is what each file may be.
    """
    sink = _Sink(Path(destination), limits, label, files)
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        compressed_size = path.stat().st_size
        with path.open("rb") as handle:
            return _unpack_stream(handle, sink, compressed_size)
    return _unpack_stream(source, sink, compressed_size)


def _unpack_stream(handle: BinaryIO, sink: _Sink, compressed_size: int | None) -> Written:
    sink.compressed_size = compressed_size
    head = handle.read(4)
    handle.seek(0)
    try:
        if head.startswith(b"PK"):
            _unpack_zip(handle, sink)
        else:
            _unpack_tar(handle, sink)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError) as exc:
        raise ArchiveRefused(f"{sink.label}: not a readable tar or zip archive ({first_line(exc, 200)})") from None
    except (OSError, ValueError) as exc:  # zlib.error, lzma.LZMAError and friends are OSError or ValueError
        if isinstance(exc, ArchiveRefused):
            raise
        raise ArchiveRefused(f"{sink.label}: the archive is corrupt ({first_line(exc, 200)})") from None
    return sink.written


def _unpack_tar(handle: BinaryIO, sink: _Sink) -> None:
    counted = _Counted(handle)
    with ExitStack() as stack:
        stream = stack.enter_context(_decompressed(counted))
        try:
            # "r|": a stream, read once from start to end, so a store's file object needs no seeking.
            archive = stack.enter_context(tarfile.open(fileobj=stream, mode="r|", tarinfo=_BoundedTarInfo))
            while (member := archive.next()) is not None:
                archive.members.clear()  # a stream needs no list of the members behind it: memory stays flat
                _tar_member(archive, member, sink, counted)
        except _HeaderRefused as exc:
            raise ArchiveRefused(f"{sink.label}: {str(exc).replace('{n}', str(sink.members + 1))}") from None


def _tar_member(archive: tarfile.TarFile, member: tarfile.TarInfo, sink: _Sink, counted: _Counted) -> None:
    if member.isdir() and _names_the_root(member.name):  # ``tar -C folder .`` packs the folder itself as "."
        return
    name = sink.member_name(member.name)
    if member.isdir():
        sink.directory(name)
        return
    if not member.isfile() or member.issparse():
        raise ArchiveRefused(f"{sink.label}: member {member.name!r} is {_tar_kind(member)}; {_ONLY_FILES}")
    sink.check_declared_size(name, member.size)
    source = archive.extractfile(member)
    assert source is not None  # a regular file always has content
    start = counted.count
    sink.file(name, source, lambda: counted.count - start)


class _Counted:
    """A file read once from start to end, counting the bytes read: how much of a compressed archive a member took."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.count = handle, 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.count += len(data)
        return data


def _decompressed(counted: _Counted):
    """The tar inside ``counted``: each of these files inflates only as much as each read asks for."""
    head = counted.handle.read(6)
    counted.handle.seek(0)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=counted, mode="rb")  # type: ignore[arg-type]
    if head.startswith(b"BZh"):
        return bz2.BZ2File(counted)  # type: ignore[arg-type]
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(counted)  # type: ignore[arg-type]
    return _NoClose(counted)


class _NoClose:
    """A plain tar, read as it is (the caller closes the handle)."""

    def __init__(self, counted: _Counted) -> None:
        self.read = counted.read

    def __enter__(self) -> _NoClose:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _HeaderRefused(Exception):
    """A tar header refused while ``tarfile`` parses it; ``{n}`` in the message is the member's number."""


_EXTENDED_HEADERS = {
    tarfile.GNUTYPE_LONGNAME: "GNU long-name", tarfile.GNUTYPE_LONGLINK: "GNU long-link",
    tarfile.XHDTYPE: "pax", tarfile.XGLTYPE: "pax global", tarfile.SOLARIS_XHDTYPE: "Solaris pax",
}  # fmt: skip


class _BoundedTarInfo(tarfile.TarInfo):
    """Checks an extended header's declared size before ``tarfile`` reads it whole into memory.

    The headers before one member (a chain of long names and pax headers) may hold
    :data:`MAX_TAR_HEADER_BYTES` together, and the archive's global pax headers, which ``tarfile``
    keeps, as much again. GNU sparse headers, whose maps ``tarfile`` reads block after block, are
    refused on sight: a checkpoint holds no sparse file.
    """

    def _proc_member(self, tarfile):  # tarfile's own signature: the argument shadows the module there too
        kind = _EXTENDED_HEADERS.get(self.type)
        if kind is None:
            tarfile._biolm_pending = 0
            if self.type == b"S":  # tarfile.GNUTYPE_SPARSE
                raise _HeaderRefused(f"member {self.name[:200]!r} is a sparse file; {_ONLY_FILES}")
            return super()._proc_member(tarfile)
        pending = getattr(tarfile, "_biolm_pending", 0) + self.size
        global_total = getattr(tarfile, "_biolm_global", 0) + (self.size if self.type == b"g" else 0)
        if max(pending, global_total) > MAX_TAR_HEADER_BYTES:
            shown = f"a {kind} header of {self.size:,} bytes" if self.size > MAX_TAR_HEADER_BYTES else (
                f"{kind} headers of {max(pending, global_total):,} bytes in all")  # fmt: skip
            raise _HeaderRefused(
                f"member #{{n}} has {shown}, over the {MAX_TAR_HEADER_BYTES:,} tar headers may hold, refused "
                f"unread; archive the checkpoint again with names under {MAX_NAME_CHARS:,} characters and no extended "
                "attributes"
            )
        tarfile._biolm_pending, tarfile._biolm_global = pending, global_total
        return super()._proc_member(tarfile)

    def _proc_gnusparse_10(self, next, pax_headers, tarfile):  # tarfile's own signature
        raise _HeaderRefused(f"member {next.name[:200]!r} is a sparse file; {_ONLY_FILES}")


def _unpack_zip(handle: BinaryIO, sink: _Sink) -> None:
    _check_zip_directory(handle, sink)
    with zipfile.ZipFile(handle) as archive:
        for info in archive.infolist():
            if info.is_dir() and _names_the_root(info.filename):
                continue
            name = sink.member_name(info.filename)
            mode = info.external_attr >> 16
            if info.is_dir():
                sink.directory(name)
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits (Windows, ZipFile.open): a file
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                raise ArchiveRefused(f"{sink.label}: member {info.filename!r} is {kind}; {_ONLY_FILES}")
            if info.flag_bits & 0x1:
                raise ArchiveRefused(
                    f"{sink.label}: member {info.filename!r} is encrypted; archive it without a password"
                )
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ArchiveRefused(
                    f"{sink.label}: member {info.filename!r} is compressed with method {info.compress_type}, which "
                    "biolm does not read; archive it again stored or deflated (zip's default) or as a .tar.gz"
                )
            sink.check_declared_size(name, info.file_size)
            with archive.open(info) as source:
                # What the entry took of the archive, as read (not as its header claims, which could lie).
                sink.file(name, source, lambda start=info.header_offset: handle.tell() - start)


def _check_zip_directory(handle: BinaryIO, sink: _Sink) -> None:
    """Refuse a central directory too large for the member limit before ``zipfile`` reads all of it into memory."""
    end = zipfile._EndRecData(handle)  # the end record (zip64's where there is one), as ZipFile itself finds it
    handle.seek(0)
    if end is None:
        return  # zipfile refuses it in its own words
    entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]
    limits = sink.limits
    if entries > limits.max_members or size > limits.max_members * ZIP_DIRECTORY_BYTES_PER_MEMBER:
        raise ArchiveRefused(
            f"{sink.label}: its zip directory lists {entries:,} files in {size:,} bytes, more than the limit of "
            f"{limits.max_members:,} files and folders ({limits.variable('max_members')}) needs"
        )


def copy_tree(
    source: Path,
    destination: Path,
    limits: ArchiveLimits,
    *,
    label: str,
    skip: tuple[str, ...] = (),
    files: CheckpointFiles | None = None,
) -> Written:
    """Copy the regular files under the directory ``source`` to the empty ``destination``, following no link.

    ``skip`` names top-level entries left out (and not looked into); ``files``, as for :func:`unpack`.
    """
    sink = _Sink(Path(destination), limits, label, files)
    root = Path(source)
    if root.is_symlink():
        raise ArchiveRefused(f"{label}: is a symbolic link; {_NO_LINKS}")
    for relative, entry in _walk(root, PurePosixPath(), skip):
        name = sink.member_name(relative.as_posix() + ("/" if entry.is_dir(follow_symlinks=False) else ""))
        if entry.is_symlink():
            raise ArchiveRefused(f"{label}: {relative.as_posix()} is a symbolic link; {_NO_LINKS}")
        if entry.is_dir(follow_symlinks=False):
            sink.directory(name)
        elif entry.is_file(follow_symlinks=False):
            sink.check_declared_size(name, entry.stat(follow_symlinks=False).st_size)
            descriptor = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(descriptor, "rb") as handle:
                sink.file(name, handle)
        else:
            raise ArchiveRefused(f"{label}: {relative.as_posix()} is not a regular file (a device, FIFO or socket); "
                                 f"{_ONLY_FILES}")  # fmt: skip
    return sink.written


def _walk(
    directory: Path, relative: PurePosixPath, skip: tuple[str, ...] = ()
) -> Iterator[tuple[PurePosixPath, os.DirEntry]]:
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name in skip:
                continue
            yield relative / entry.name, entry
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(Path(entry.path), relative / entry.name)


def content_root(directory: Path) -> Path:
    """The checkpoint inside an unpacked archive: its one top-level folder, or the archive's root."""
    entries = [p for p in Path(directory).iterdir() if not p.name.startswith(".") and p.name not in IGNORED_TOP_LEVEL]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink() else Path(directory)


_ONLY_FILES = "a checkpoint holds regular files and folders only"
_NO_LINKS = (
    "biolm copies no links, since a link can name any file on this host; "
    "replace it with the file it points to (cp -rL) if you trust it"
)


def _names_the_root(raw: str) -> bool:
    """Whether a folder member is the archive's own root (``.``, ``./``): packed from inside a folder, it is skipped.

    Only dots and slashes, never a leading slash (absolute) nor ``..``: every other name goes through
    :meth:`_Sink.member_name`'s checks.
    """
    return bool(raw) and not raw.startswith("/") and all(part in ("", ".") for part in raw.split("/"))


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "a symbolic link"
    if member.islnk():
        return "a hard link"
    if member.ischr() or member.isblk():
        return "a device file"
    if member.isfifo():
        return "a FIFO"
    if member.issparse():
        return "a sparse file"
    return "not a regular file"


class _Sink:
    """Writes members under ``root``, refusing unsafe names and counting bytes against the limits."""

    def __init__(self, root: Path, limits: ArchiveLimits, label: str, files: CheckpointFiles | None = None) -> None:
        self.root, self.limits, self.label, self.files = root, limits, label, files
        self.written = Written()
        self.members = 0
        self.seen: set[str] = set()
        self.compressed_size: int | None = None
        self.root.mkdir(parents=True, exist_ok=True)
        if any(self.root.iterdir()):
            raise ValueError(f"{self.root}: the destination must be empty")

    def member_name(self, raw: str) -> PurePosixPath:
        """The member's safe relative path; refuses absolute, ``..``, backslash and control-character names."""
        self.members += 1
        if self.members > self.limits.max_members:
            raise ArchiveRefused(
                f"{self.label}: more than {self.limits.max_members:,} files and folders, the limit "
                f"({self.limits.variable('max_members')})"
            )
        shown = repr(raw[:200])
        if not raw or len(raw) > MAX_NAME_CHARS:
            raise ArchiveRefused(
                f"{self.label}: member name {shown} is empty or longer than {MAX_NAME_CHARS} characters"
            )
        if "\\" in raw or raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
            raise ArchiveRefused(
                f"{self.label}: member {shown} has an absolute or Windows path; names must be relative"
            )
        if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in raw):
            raise ArchiveRefused(f"{self.label}: member {shown} has control or formatting characters in its name")
        parts = [part for part in raw.split("/") if part not in ("", ".")]
        if not parts:
            raise ArchiveRefused(f"{self.label}: member {shown} names no file")
        if ".." in parts:
            raise ArchiveRefused(f"{self.label}: member {shown} would be written outside the archive's folder ('..')")
        if any(len(part) > MAX_PART_CHARS for part in parts):
            raise ArchiveRefused(f"{self.label}: member {shown} has a name part over {MAX_PART_CHARS} characters")
        return PurePosixPath(*parts)

    def directory(self, name: PurePosixPath) -> None:
        self._make_parents(name / "x")

    def kind(self, name: PurePosixPath) -> FileKind | None:
        """What the file is, where a checkpoint is taken in; refuses a file of no kind a checkpoint holds."""
        if self.files is None:
            return None
        kind = self.files.kind_in_archive(name)
        if kind is None:
            raise ArchiveRefused(f"{self.label}: {self.files.refusal(name.as_posix())}")
        return kind

    def check_declared_size(self, name: PurePosixPath, size: int) -> None:
        """Refuse before writing what the header already says is too large (the stream is counted anyway)."""
        kind = self.kind(name)
        if kind is not None and size > kind.max_bytes:
            self._too_large_kind(name, kind)
        if size > self.limits.max_member_bytes:
            self._too_large_member(name)
        if self.written.total_bytes + size > self.limits.max_total_bytes:
            self._too_large_total()

    def file(self, name: PurePosixPath, source: BinaryIO, compressed: Callable[[], int] | None = None) -> None:
        """Write one member, counting it against its kind's cap, the limits and (``compressed``: the archive bytes
        it has taken so far) its own expansion ratio."""
        key = name.as_posix()
        if key in self.seen:
            raise ArchiveRefused(f"{self.label}: member {key!r} appears twice")
        self.seen.add(key)
        kind = self.kind(name)
        cap = min(kind.max_bytes, self.limits.max_member_bytes) if kind else self.limits.max_member_bytes
        parent = self._make_parents(name)
        target = os.path.join(parent, name.name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        try:
            descriptor = os.open(target, flags, 0o600)
        except FileExistsError:
            raise ArchiveRefused(f"{self.label}: member {key!r} clashes with a folder of the same name") from None
        digest, size = hashlib.sha256(), 0
        with os.fdopen(descriptor, "wb") as out:
            for chunk in iter(lambda: source.read(CHUNK), b""):
                size += len(chunk)
                self.written.total_bytes += len(chunk)
                if size > cap:
                    self._too_large_kind(name, kind) if kind and cap == kind.max_bytes else self._too_large_member(name)
                if self.written.total_bytes > self.limits.max_total_bytes:
                    self._too_large_total()
                self._check_ratio()
                if compressed is not None:
                    self._check_member_ratio(name, size, compressed())
                digest.update(chunk)
                out.write(chunk)
        self.written.files.append((key, size, digest.hexdigest()))

    def _make_parents(self, name: PurePosixPath) -> str:
        """Create the folders above ``name`` under the root, refusing any that is not a real folder."""
        current = str(self.root)
        for part in name.parts[:-1]:
            current = os.path.join(current, part)
            try:
                os.mkdir(current, 0o700)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(current).st_mode):
                    raise ArchiveRefused(
                        f"{self.label}: {name.as_posix()!r} passes through a file, not a folder"
                    ) from None
        return current

    def _check_ratio(self) -> None:
        total, compressed = self.written.total_bytes, self.compressed_size
        if compressed and total > self.limits.ratio_floor_bytes and total > self.limits.max_ratio * compressed:
            raise ArchiveRefused(
                f"{self.label}: expands more than {self.limits.max_ratio:g} times its {compressed:,} bytes, the limit "
                f"({self.limits.variable('max_ratio')}); an archive bomb is refused"
            )

    def _check_member_ratio(self, name: PurePosixPath, size: int, compressed: int) -> None:
        if size > self.limits.ratio_floor_bytes and size > self.limits.max_ratio * max(compressed, 1):
            raise ArchiveRefused(
                f"{self.label}: {name.as_posix()} expands more than {self.limits.max_ratio:g} times the {compressed:,} "
                f"bytes it takes in the archive, the limit for each file ({self.limits.variable('max_ratio')}); an "
                "archive bomb is refused"
            )

    def _too_large_kind(self, name: PurePosixPath, kind: FileKind) -> None:
        raise ArchiveRefused(
            f"{self.label}: {name.as_posix()} is larger than {kind.max_bytes:,} bytes, the most {kind.name} may hold "
            f"({kind.why}); remove it or make it smaller"
        )

    def _too_large_member(self, name: PurePosixPath) -> None:
        raise ArchiveRefused(
            f"{self.label}: {name.as_posix()} is larger than {self.limits.max_member_bytes:,} bytes, "
            f"the limit per file ({self.limits.variable('max_member_bytes')})"
        )

    def _too_large_total(self) -> None:
        raise ArchiveRefused(
            f"{self.label}: holds more than {self.limits.max_total_bytes:,} bytes, the limit "
            f"({self.limits.variable('max_total_bytes')})"
        )
