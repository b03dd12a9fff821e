"""Errors shared by the core's modules (no Django, no heavy imports)."""

from __future__ import annotations

from pathlib import Path


def first_line(exc: BaseException, limit: int = 300) -> str:
    """An exception's first line, for a one-line error (the traceback, if any, goes to the log)."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__


class DataFormatError(ValueError):
    """Input that cannot be used, located by file and line."""

    def __init__(self, where: str | Path, message: str, line: int | None = None) -> None:
        self.where = f"{where}:{line}" if line is not None else str(where)
        self.message = message
        super().__init__(f"{self.where}: {message}")


class Where(str):
    """An example's location (``file:line``), and the location of each of its values where that differs.

    A CoNLL sentence spans one line per token and a JSON entry one line per key, so an error about
    one tag or one answer must name that value's line, not the example's first. Readers attach
    ``items`` (one location per token) and ``fields`` (a location per schema field, or a callable
    computing it only when an error needs it); :func:`locate` picks the most precise. A plain
    ``file:line`` string is accepted everywhere a ``Where`` is.
    """

    items: tuple[str, ...]
    fields: dict[str, object]

    def __new__(cls, where: str, items: tuple[str, ...] | list[str] = (), fields: dict | None = None) -> Where:
        located = super().__new__(cls, where)
        located.items = tuple(items)
        located.fields = dict(fields or {})
        return located


def locate(where: str, *, field: str | None = None, item: int | None = None) -> str:
    """The most precise location known for ``field`` or token ``item`` of the example at ``where``."""
    if isinstance(where, Where):
        if item is not None and 0 <= item < len(where.items):
            return where.items[item]
        if field is not None and field in where.fields:
            value = where.fields[field]
            return str(value() if callable(value) else value)
    return str(where)
