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

Callers give a fresh, empty destination and remove it on every path out (the checkpoint intake
uses a temporary directory); what was written before a refusal is theirs to drop.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tarfile
import unicodedata
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from biolm.errors import first_line
from biolm.intake_limits import ArchiveLimits

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
CHUNK = 1 << 20
MAX_NAME_CHARS = 1024
MAX_PART_CHARS = 255
# Folders that archivers add beside the content (macOS Finder); never part of a checkpoint.
IGNORED_TOP_LEVEL = ("__MACOSX",)


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
) -> Written:
    """Write the regular files of the tar (any compression) or zip ``source`` under the empty ``destination``.

    ``label`` is how messages name the archive (never a temporary path); ``compressed_size``,
    the archive's size where ``source`` is a stream, bounds the expansion ratio.
    """
    sink = _Sink(Path(destination), limits, label)
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
    # "r|*": a stream, read once from start to end, so a store's file object needs no seeking.
    with tarfile.open(fileobj=handle, mode="r|*") as archive:
        for member in archive:
            name = sink.member_name(member.name)
            if member.isdir():
                sink.directory(name)
                continue
            if not member.isfile() or member.issparse():
                raise ArchiveRefused(f"{sink.label}: member {member.name!r} is {_tar_kind(member)}; {_ONLY_FILES}")
            sink.check_declared_size(name, member.size)
            source = archive.extractfile(member)
            assert source is not None  # a regular file always has content
            sink.file(name, source)


def _unpack_zip(handle: BinaryIO, sink: _Sink) -> None:
    with zipfile.ZipFile(handle) as archive:
        for info in archive.infolist():
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
            sink.check_declared_size(name, info.file_size)
            with archive.open(info) as source:
                sink.file(name, source)


def copy_tree(
    source: Path, destination: Path, limits: ArchiveLimits, *, label: str, skip: tuple[str, ...] = ()
) -> Written:
    """Copy the regular files under the directory ``source`` to the empty ``destination``, following no link.

    ``skip`` names top-level entries left out (and not looked into).
    """
    sink = _Sink(Path(destination), limits, label)
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

    def __init__(self, root: Path, limits: ArchiveLimits, label: str) -> None:
        self.root, self.limits, self.label = root, limits, label
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

    def check_declared_size(self, name: PurePosixPath, size: int) -> None:
        """Refuse before writing what the header already says is too large (the stream is counted anyway)."""
        if size > self.limits.max_member_bytes:
            self._too_large_member(name)
        if self.written.total_bytes + size > self.limits.max_total_bytes:
            self._too_large_total()

    def file(self, name: PurePosixPath, source: BinaryIO) -> None:
        key = name.as_posix()
        if key in self.seen:
            raise ArchiveRefused(f"{self.label}: member {key!r} appears twice")
        self.seen.add(key)
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
                if size > self.limits.max_member_bytes:
                    self._too_large_member(name)
                if self.written.total_bytes > self.limits.max_total_bytes:
                    self._too_large_total()
                self._check_ratio()
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
