"""Hostile archives and checkpoints, built in the tests (no attack file is ever committed).

Each builder writes one archive or directory an attacker with an account (or a job's token)
could hand biolm, and says nothing about the outcome: the tests assert refusal.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import stat
import struct
import tarfile
import zipfile
from pathlib import Path

CANARY = "biolm-was-here"


def tar_with(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as archive:
        for info, content in members:
            if content is not None:
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
            else:
                archive.addfile(info)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, linkname, mode
    return info


def checkpoint_members(directory: Path, prefix: str = "") -> list[tuple[tarfile.TarInfo, bytes]]:
    """A real checkpoint's files as tar members, so an archive fails only for what the test adds."""
    return [(member(prefix + p.relative_to(directory).as_posix()), p.read_bytes()) for p in sorted(directory.rglob("*"))
            if p.is_file()]  # fmt: skip


def cve_2025_4517_tar(path: Path, destination: Path, outside: Path) -> Path:
    """The nested-symlink pattern of CVE-2025-4517, as CPython's own regression test builds it.

    Directories with names long enough that ``os.path.realpath`` stops expanding past PATH_MAX,
    each shadowed by a one-letter symlink; a final link that climbs back out of the destination;
    then a hard link and a regular file written through ``escape/``, which on an unpatched
    Python (3.11.7 included) lands in ``outside`` although ``extractall(filter="data")`` checked it.
    """
    steps = "abcdefghijklmnop"
    max_path = os.pathconf(destination.parent, "PC_PATH_MAX")
    component = "d" * ((max_path - len(str(destination)) - 1) // (len(steps) + 1))
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    current = ""
    for step in steps:
        members.append((member(os.path.join(current, component), tarfile.DIRTYPE, mode=0o777), None))
        members.append((member(os.path.join(current, step), tarfile.SYMTYPE, linkname=component), None))
        current = os.path.join(current, component)
    linkpath = os.path.join(*steps, "l" * 254)
    members.append((member(linkpath, tarfile.SYMTYPE, linkname=os.path.join(*[".."] * len(steps))), None))
    climb = os.path.relpath(outside, destination)
    members.append((member("escape", tarfile.SYMTYPE, linkname=os.path.join(linkpath, "..", climb)), None))
    members.append((member("flaglink", tarfile.LNKTYPE, linkname=os.path.join("escape", "flag")), None))
    members.append((member("flaglink"), b"overwritten"))
    members.append((member("escape/newfile"), CANARY.encode()))
    return tar_with(path, members, mode="w")


def zip_with(path: Path, entries: list[tuple[str, bytes, int | None]]) -> Path:
    """``(name, content, unix mode or None)`` entries; a mode with S_IFLNK makes the entry a symlink."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content, mode in entries:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode is not None:
                info.external_attr = mode << 16
            archive.writestr(info, content)
    return path


def zip_symlink(name: str, target: str) -> tuple[str, bytes, int]:
    return name, target.encode(), stat.S_IFLNK | 0o777


def zip_bomb(path: Path, expanded_bytes: int) -> Path:
    """One deflated file of zeros: about 1,000 times smaller than what it expands to."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("model.safetensors", "w") as out:
        chunk = bytes(1 << 20)
        for _ in range(expanded_bytes // len(chunk)):
            out.write(chunk)
    return path


def tar_bomb(path: Path, expanded_bytes: int) -> Path:
    """A gzipped tar of one file of zeros, streamed so the test never holds it in memory."""
    import gzip

    with gzip.open(path, "wb", compresslevel=9) as raw, tarfile.open(fileobj=raw, mode="w|") as archive:
        info = member("model.safetensors")
        info.size = expanded_bytes
        archive.addfile(info, _Zeros(expanded_bytes))
    return path


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


class _Payload:
    """Unpickling this writes a file: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, CANARY))


def pickle_that_writes(path: Path, marker: Path) -> Path:
    path.write_bytes(pickle.dumps({"state_dict": _Payload(marker)}, protocol=4))
    return path


def copy_checkpoint(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def edit_config(directory: Path, **changes) -> Path:
    config = json.loads((directory / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def safetensors_with_header(path: Path, header: bytes, data: bytes = b"") -> Path:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")} if root.exists() else set()


def tar_with_extended_header(path: Path, kind: bytes, declared_bytes: int, then: str = "model/config.json") -> Path:
    """A .tar.gz whose first header is a GNU long name (``L``) or link (``K``), or a pax header (``x``, ``g``),
    of ``declared_bytes``, then one small member: written as it streams, so a 256 MiB header costs the test
    no memory and the file about a thousandth of it."""
    import gzip

    header = tarfile.TarInfo("././@LongLink" if kind in (b"L", b"K") else "pax_header")
    header.type, header.size = kind, declared_bytes
    record = b"%d path=" % declared_bytes  # a pax record's length prefix, then its keyword; the rest is the value
    with gzip.open(path, "wb", compresslevel=6) as out:
        out.write(header.tobuf(format=tarfile.GNU_FORMAT))
        left = declared_bytes
        if kind in (b"x", b"g"):
            out.write(record)
            left -= len(record)
        chunk = b"a" * (1 << 20)
        while left > 0:
            out.write(chunk[: min(left, len(chunk))])
            left -= min(left, len(chunk))
        out.write(bytes(-declared_bytes % tarfile.BLOCKSIZE))
        content = b"{}"
        info = tarfile.TarInfo(then)
        info.size = len(content)
        out.write(info.tobuf(format=tarfile.GNU_FORMAT) + content + bytes(tarfile.BLOCKSIZE - len(content)))
        out.write(bytes(2 * tarfile.BLOCKSIZE))
    return path


def tar_with_many_members(path: Path, count: int) -> Path:
    """A .tar.gz of ``count`` empty files: a few kilobytes that list more members than the limit allows."""
    import gzip

    with gzip.open(path, "wb") as raw, tarfile.open(fileobj=raw, mode="w|") as archive:
        for n in range(count):
            archive.addfile(member(f"model/f{n}.json"), io.BytesIO())
    return path


def zip_with_many_members(path: Path, count: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for n in range(count):
            archive.writestr(f"model/f{n}.json", b"")
    return path


EXTENDED_HEADERS = {"long name": b"L", "long link": b"K", "pax": b"x", "pax global": b"g"}


def tar_bz2_bomb(path: Path, expanded_bytes: int) -> Path:
    """A bzip2-compressed tar of one file of zeros: bzip2 packs 1 GiB of zeros into under 1 KB."""
    import bz2

    with bz2.open(path, "wb") as raw, tarfile.open(fileobj=raw, mode="w|") as archive:
        info = member("model.safetensors")
        info.size = expanded_bytes
        archive.addfile(info, _Zeros(expanded_bytes))
    return path


def peak_allocated(action) -> int:
    """The most bytes Python held at once, beyond what it held before, while ``action()`` ran (it may raise)."""
    import tracemalloc

    tracemalloc.start()
    try:
        action()
    except Exception:  # the tests assert the refusal itself separately
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def protocol_0_pickle(path: Path) -> Path:
    """A protocol-0 pickle, which opens with no magic byte: ``cposix\\nsystem`` runs a shell command when loaded."""
    path.write_bytes(b"cposix\nsystem\n(S'touch /tmp/biolm-pickle-ran'\ntR.")
    return path


def zip_of_checkpoint_and(path: Path, directory: Path, name: str, zeros: int, level: int = 1) -> Path:
    """A zip of a real checkpoint's files plus one deflated file of ``zeros`` zero bytes called ``name``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
        for file in sorted(directory.rglob("*")):
            if file.is_file():
                archive.write(file, file.relative_to(directory).as_posix())
        with archive.open(name, "w", force_zip64=True) as out:
            chunk = bytes(8 << 20)
            for start in range(0, zeros, len(chunk)):
                out.write(chunk[: min(len(chunk), zeros - start)])
    return path
