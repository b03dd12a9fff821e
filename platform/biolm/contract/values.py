"""What the contract's settings dataclasses share: writing only what differs from the defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from biolm.contract.errors import ContractError


def changed_settings(instance: Any) -> dict[str, Any]:
    """The fields of a settings dataclass that differ from their defaults: ``{}`` when nothing was changed.

    A spec then reads as what someone chose, and two specs that chose the same are equal JSON.
    """
    return {
        item.name: getattr(instance, item.name)
        for item in fields(instance)
        if getattr(instance, item.name) != item.default
    }


def known_settings(cls: type, data: object, field: str, what: str, listing: str) -> dict[str, Any]:
    """``data`` as keyword arguments of the settings dataclass ``cls``, or a :class:`ContractError` on ``field``.

    ``None`` is no settings. An unknown setting is named, with the ones there are, so a typo says
    what was meant: ``no setting 'epochz'; the settings a submission may change: grid, seeds, ...``.
    """
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ContractError(f"{field} must be a JSON object of settings, not {type(data).__name__}", field)
    names = [item.name for item in fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ContractError(
            f"no {what} {', '.join(map(repr, unknown))}; {listing}: {', '.join(names)}", field, unknown[0]
        )
    return dict(data)
