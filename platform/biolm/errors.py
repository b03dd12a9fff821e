"""Errors shared by the core's modules (no Django, no heavy imports)."""

from __future__ import annotations

from pathlib import Path


class DataFormatError(ValueError):
    """Input that cannot be used, located by file and line."""

    def __init__(self, where: str | Path, message: str, line: int | None = None) -> None:
        self.where = f"{where}:{line}" if line is not None else str(where)
        self.message = message
        super().__init__(f"{self.where}: {message}")
