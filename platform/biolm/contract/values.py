"""What the contract's settings dataclasses share: writing only what differs from the defaults."""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def changed_settings(instance: Any) -> dict[str, Any]:
    """The fields of a settings dataclass that differ from their defaults: ``{}`` when nothing was changed.

    A spec then reads as what someone chose, and two specs that chose the same are equal JSON.
    """
    return {
        item.name: getattr(instance, item.name)
        for item in fields(instance)
        if getattr(instance, item.name) != item.default
    }
