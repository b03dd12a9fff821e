"""Read a safetensors file's header, and check it against the file, without reading a single weight.

A safetensors file is an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range, then the bytes. Reading the header alone is enough to refuse a
garbage, truncated or hostile file at submission (a header that claims 10 GB, tensors whose
ranges overlap or overrun the file) and to count its parameters, so the platform never sends a
worker weights it would fail on hours later. The checks follow the safetensors format's own
validation: https://github.com/huggingface/safetensors (``Metadata::validate``).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8, "C64": 8,
}  # fmt: skip


class SafetensorsHeaderError(ValueError):
    """A safetensors file that cannot be what it claims; the message names the file and the fault."""


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def read_header(path: Path, max_header_bytes: int, *, label: str | None = None) -> list[TensorEntry]:
    """The tensors ``path`` holds, after checking that its header describes exactly the bytes that follow."""
    shown = label or path.name
    size = path.stat().st_size
    with path.open("rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise SafetensorsHeaderError(f"{shown}: {size} bytes is too short for a safetensors file")
        (length,) = struct.unpack("<Q", prefix)
        if length > max_header_bytes:
            raise SafetensorsHeaderError(
                f"{shown}: its header claims {length:,} bytes, over the {max_header_bytes:,} "
                "a safetensors header may have"
            )
        if 8 + length > size:
            raise SafetensorsHeaderError(
                f"{shown}: truncated: its header claims {length:,} bytes, the file has {size:,}"
            )
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise SafetensorsHeaderError(f"{shown}: not a safetensors file: its header is not JSON") from None
    if not isinstance(header, dict):
        raise SafetensorsHeaderError(f"{shown}: not a safetensors file: its header is not a JSON object")
    tensors, ranges = [], []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensor, begin, end = _entry(shown, name, entry)
        tensors.append(tensor)
        ranges.append((begin, end, name))
    data_bytes = size - 8 - length
    _check_ranges(shown, sorted(ranges), data_bytes)
    return tensors


def _entry(shown: str, name: str, entry: object) -> tuple[TensorEntry, int, int]:
    if not isinstance(entry, dict):
        raise SafetensorsHeaderError(f"{shown}: tensor {name!r} has no description")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise SafetensorsHeaderError(f"{shown}: tensor {name!r} has an unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_natural(d) for d in shape) or len(shape) > 8:
        raise SafetensorsHeaderError(f"{shown}: tensor {name!r} has an invalid shape {str(shape)[:80]}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_natural(o) for o in offsets)):
        raise SafetensorsHeaderError(f"{shown}: tensor {name!r} has invalid data offsets {str(offsets)[:80]}")
    begin, end = offsets
    expected = math.prod(shape) * DTYPE_BYTES[dtype]
    if end < begin or end - begin != expected:
        raise SafetensorsHeaderError(
            f"{shown}: tensor {name!r} of shape {shape} in {dtype} needs {expected:,} bytes, its offsets give "
            f"{end - begin:,}"
        )
    return TensorEntry(name, dtype, tuple(shape)), begin, end


def _check_ranges(shown: str, ranges: list[tuple[int, int, str]], data_bytes: int) -> None:
    """The tensors' byte ranges tile the data exactly: no gap, no overlap, nothing past the end."""
    position = 0
    for begin, end, name in ranges:
        if begin != position:
            fault = "overlaps the tensor before it" if begin < position else "leaves a gap before it"
            raise SafetensorsHeaderError(f"{shown}: tensor {name!r} {fault}")
        position = end
    if position > data_bytes:
        raise SafetensorsHeaderError(
            f"{shown}: truncated: its header describes {position:,} bytes of tensors, the file holds {data_bytes:,}"
        )
    if position < data_bytes:
        raise SafetensorsHeaderError(f"{shown}: {data_bytes - position:,} bytes after the last tensor belong to none")


def _natural(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62
