"""What pages read of a job's files in the artefact store, summarised and cached.

A job's results file and a pretraining run's loss log are written once and can be megabytes; a page
must not re-read them on every view. :func:`artefact_summary` keeps a summary under the file's
name, size and modification time, so a rewritten file is read afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

from django.core.cache import cache

from jobs import artefacts

ARTEFACT_CACHE_S = 24 * 3600
"""How long a summary of a job's file stays cached; the key changes anyway if the file does."""


def artefact_summary(name: str, summarise: Callable[[Any], Any]) -> Any:
    """``summarise`` of the JSON file ``name`` in the artefact store; None when it is missing or unreadable.

    Cached under the file's name, size and modification time: a job's files are written once,
    and re-reading megabytes of predictions on every page view would make the page slow.
    """
    store = artefacts.storage()
    try:
        stamp = [store.size(name)]
    except (FileNotFoundError, OSError):
        return None
    with contextlib.suppress(NotImplementedError, OSError, AttributeError):  # a storage without times
        stamp.append(store.get_modified_time(name).timestamp())
    key = "model-page:" + hashlib.sha256(f"{summarise.__name__}:{name}:{stamp}".encode()).hexdigest()
    cached = cache.get(key)
    if cached is not None:
        return cached["value"]
    try:
        with store.open(name, "rb") as handle:
            value = summarise(json.loads(handle.read()))
    except (OSError, ValueError, RecursionError):
        value = None
    cache.set(key, {"value": value}, ARTEFACT_CACHE_S)
    return value


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
