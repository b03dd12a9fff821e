"""The limits a checkpoint must stay within before biolm stores or loads it, each set by an environment variable.

A submitted checkpoint is untrusted input: a 10 MB archive can expand to terabytes, and a
10-line config can ask a worker for hundreds of gigabytes. The limits live here, Django-free,
because both sides read them: the platform when it takes a submission in, and a GPU worker
(which holds no settings) when it unpacks an archive the platform sent. The defaults admit the
largest encoders biolm evaluates (GatorTron-large's 8.9 billion parameters in fp32 are 36 GB),
and an operator raises or lowers each with its variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import ClassVar, Self

GIB = 1 << 30
MIB = 1 << 20


class LimitSettingError(ValueError):
    """An environment variable that sets a limit is not a positive number; the message names it."""


class _FromEnvironment:
    """Limits whose fields an operator sets with the environment variables in ``VARIABLES``."""

    VARIABLES: ClassVar[dict[str, str]] = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Self:
        return cls(**_read(cls, environ))

    def variable(self, field: str) -> str:
        return self.VARIABLES[field]


@dataclass(frozen=True)
class ArchiveLimits(_FromEnvironment):
    """How much an archive (or a directory) may hold; every refusal names the limit and its variable."""

    max_total_bytes: int = 64 * GIB
    max_members: int = 2000
    max_member_bytes: int = 64 * GIB
    # bytes written per byte of archive: safetensors compress by about 1.1x and tokenizers by
    # 5-10x, while a zip or gzip bomb runs to 1000x and more. Below ``ratio_floor_bytes`` of output
    # the ratio is not checked, so a small archive of small text files is never refused for it.
    max_ratio: float = 100.0
    ratio_floor_bytes: int = 16 * MIB

    VARIABLES = {
        "max_total_bytes": "BIOLM_ARCHIVE_MAX_BYTES",
        "max_members": "BIOLM_ARCHIVE_MAX_FILES",
        "max_member_bytes": "BIOLM_ARCHIVE_MAX_FILE_BYTES",
        "max_ratio": "BIOLM_ARCHIVE_MAX_RATIO",
    }


@dataclass(frozen=True)
class CheckpointLimits(_FromEnvironment):
    """How large a model a checkpoint's config may describe, checked before any weight is read."""

    max_parameters: int = 20_000_000_000
    max_hidden_size: int = 16_384
    max_layers: int = 256
    max_attention_heads: int = 256
    max_intermediate_size: int = 65_536
    max_vocab_size: int = 1_048_576
    max_positions: int = 65_536
    max_config_bytes: int = 1 * MIB
    max_safetensors_header_bytes: int = 100_000_000  # the safetensors library's own bound

    VARIABLES = {
        "max_parameters": "BIOLM_CHECKPOINT_MAX_PARAMETERS",
        "max_hidden_size": "BIOLM_CHECKPOINT_MAX_HIDDEN_SIZE",
        "max_layers": "BIOLM_CHECKPOINT_MAX_LAYERS",
        "max_attention_heads": "BIOLM_CHECKPOINT_MAX_ATTENTION_HEADS",
        "max_intermediate_size": "BIOLM_CHECKPOINT_MAX_INTERMEDIATE_SIZE",
        "max_vocab_size": "BIOLM_CHECKPOINT_MAX_VOCAB_SIZE",
        "max_positions": "BIOLM_CHECKPOINT_MAX_POSITIONS",
    }


def _read(cls: type, environ: Mapping[str, str]) -> dict[str, int | float]:
    values: dict[str, int | float] = {}
    kinds = {f.name: f.type for f in fields(cls)}
    for field, variable in cls.VARIABLES.items():
        raw = environ.get(variable, "").strip()
        if not raw:
            continue
        number = float if kinds[field] in (float, "float") else int
        try:
            value = number(raw.replace("_", ""))
        except ValueError:
            kind = "a whole number" if number is int else "a number"
            raise LimitSettingError(f"{variable}={raw!r} is not {kind}") from None
        if value <= 0:
            raise LimitSettingError(f"{variable}={raw!r} must be positive")
        values[field] = value
    return values
