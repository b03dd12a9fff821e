"""Overrides of a protocol's settings: the one list of what a submitter may change, typed and range-checked.

A protocol (:mod:`biolm.protocols`) fixes the grid, the epochs and the seeds a paper used; a
submitter may ask for fewer seeds, one grid point or a shorter run. Those changes are this one
dataclass wherever they are accepted: ``manage.py submit --overrides JSON``, the submissions API's
``overrides`` field, the form's advanced settings, the engine's command line (each field is a
flag there, parsed by ``HfArgumentParser``) and a job's spec. Values are checked here, types and
ranges, when the spec is built at submit: ``{"seeds": 0}`` is the submitter's mistake, refused
before anything is queued, never an engine exit charged to the platform.

``None`` means "the protocol's own": :meth:`Overrides.to_json` writes only what was changed, so
``{}`` is the protocol as the paper ran it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Any

from biolm.contract.errors import ContractError
from biolm.contract.values import changed_settings, known_settings

GRIDS = ("full", "single")
PRECISIONS = ("auto", "bf16", "fp32")
SEED_MAX = 2**31 - 1
LIMITS: dict[str, tuple[int, int]] = {
    "seeds": (1, 100),
    "first_seed": (0, SEED_MAX),
    "epochs": (1, 1000),
    "batch_size": (1, 65536),
    "max_length": (8, 1_048_576),
    "max_train_examples": (1, 2**31 - 1),
    "max_eval_examples": (1, 2**31 - 1),
}
LEARNING_RATE_MAX = 1.0


def _setting(help_text: str, default: Any = None) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class Overrides:
    """What a submitter may change of a protocol; each ``None`` keeps the protocol's value."""

    grid: str = _setting("full (the protocol's grid) or single (its largest lr and batch, for quick runs).", "full")
    seeds: int | None = _setting("Seeds on test (default: the protocol's, usually 5).")
    first_seed: int | None = _setting("The first seed; the others follow it (default 42).")
    epochs: int | None = _setting("Epochs of every run (default: the protocol's for the dataset).")
    learning_rate: float | None = _setting("Fix the learning rate (a one-point grid).")
    batch_size: int | None = _setting("Fix the batch size (a one-point grid).")
    max_length: int | None = _setting("Maximum tokens per input; longer token inputs are split (default 512).")
    max_train_examples: int | None = _setting("Use only the first N training examples (recorded in the results).")
    max_eval_examples: int | None = _setting("Use only the first N dev and test examples (recorded in the results).")
    precision: str | None = _setting("auto (bf16 where the hardware runs it natively), bf16 or fp32.")

    def __post_init__(self) -> None:
        if self.grid not in GRIDS:
            raise _refused("grid", f"must be one of {', '.join(GRIDS)}", self.grid)
        if self.precision is not None and self.precision not in PRECISIONS:
            raise _refused("precision", f"must be one of {', '.join(PRECISIONS)}", self.precision)
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise _refused(name, f"must be a whole number from {low:,} to {high:,}", value)
        rate = self.learning_rate
        if rate is not None:
            number = not isinstance(rate, bool) and isinstance(rate, int | float)
            if not number or not math.isfinite(rate) or not 0 < rate <= LEARNING_RATE_MAX:
                raise _refused("learning_rate", f"must be a number above 0 and at most {LEARNING_RATE_MAX:g}", rate)
            object.__setattr__(self, "learning_rate", float(rate))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(item.name for item in fields(cls))

    @classmethod
    def from_json(cls, data: object) -> Overrides:
        """The overrides of a JSON object; an unknown setting or a bad value is a :class:`ContractError`."""
        return cls(**known_settings(cls, data, "overrides", "setting", "the settings a submission may change"))

    def to_json(self) -> dict[str, Any]:
        """Only what differs from the protocol: ``{}`` is the protocol as its paper ran it."""
        return changed_settings(self)

    def merged(self, other: Overrides) -> Overrides:
        """These overrides with ``other``'s changed settings on top."""
        return dataclasses.replace(self, **other.to_json())

    @property
    def custom(self) -> bool:
        """Whether anything of the protocol was changed."""
        return bool(self.to_json())


def _refused(name: str, requirement: str, value: object) -> ContractError:
    return ContractError(f"{name} {requirement}, not {value!r}", "overrides", name)
