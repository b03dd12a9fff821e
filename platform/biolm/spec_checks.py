"""The checks every plugin contribution's ``validate()`` is made of, and the error they raise.

Each names the field it refuses, so a plugin author reads what to fix (:class:`SpecError`).
"""

from __future__ import annotations

import json
import math

from biolm.column_limits import NAME_MAX, SLUG_MAX
from biolm.name_patterns import SLUG_RE


class SpecError(ValueError):
    """A plugin returned a description that cannot be used."""


def check_slug(value: str, what: str, limit: int = SLUG_MAX) -> None:
    """Raise SpecError unless ``value`` is a lower-case slug of at most ``limit`` characters."""
    if not isinstance(value, str) or not SLUG_RE.match(value):
        raise SpecError(f"{what} {value!r} is not a lower-case slug (letters, digits, '-', '_', '.')")
    check_length(value, limit, what)


def require_text(value: object, what: str, limit: int = NAME_MAX) -> None:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{what} must be a non-empty string, got {value!r}")
    check_length(value, limit, what)


def check_length(value: object, limit: int, what: str) -> None:
    if not isinstance(value, str):
        raise SpecError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise SpecError(f"{what} is {len(value)} characters long; at most {limit} fit ({value[:40]!r}...)")


def check_json(value: object, what: str) -> None:
    """Settings, presets and options are stored as JSON: no NaN, no sets, no arbitrary objects."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{what} must be JSON data (numbers, strings, lists, mappings; finite): {exc}") from None


def check_count(value: object, what: str, limit: int, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limit:
        raise SpecError(f"{what} must be a positive integer of at most {limit}, got {value!r}")


def check_finite(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"{what} must be a finite number, got {value!r}")
