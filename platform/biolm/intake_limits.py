"""The limits a checkpoint must stay within before biolm stores or loads it, each set by an environment variable.

A submitted checkpoint is untrusted input: a 10 MB archive can expand to terabytes, and a
10-line config can ask a worker for hundreds of gigabytes. The limits live here, Django-free,
because both sides read them: the platform when it takes a submission in, and a GPU worker
(which holds no settings) when it unpacks an archive the platform sent. The defaults admit the
largest encoders biolm evaluates (GatorTron-large's 8.9 billion parameters in fp32 are 36 GB),
and an operator raises or lowers each with its variable.

The archive limit follows from the parameter cap rather than being a round number: a checkpoint
within :class:`CheckpointLimits` holds at most 4 bytes a parameter of weights (fp32), one
safetensors header per shard, and the files whose kinds :mod:`biolm.checkpoint_files` allows,
each under its own cap. At the default 10 billion parameters that is 40 GB of weights plus
an 8 MiB header and about 0.9 GB of tokenizer files, index, reports and configs: about 41 GB.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import ClassVar, Self

GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10

# Each kind of file a checkpoint may hold has its cap (biolm.checkpoint_files); weights are bounded by parameters.
BYTES_PER_PARAMETER = 4  # fp32, the widest dtype a released encoder is shipped in
CONFIG_FILE_BYTES = 1 * MIB  # config.json, modules.json, 1_Pooling/config.json ...
DOCUMENT_FILE_BYTES = 1 * MIB  # README.md, LICENSE, .gitattributes ...
TOKENIZER_FILE_BYTES = 64 * MIB  # tokenizer.json, vocab.txt, spiece.model ... (and the weight index)
REPORT_FILE_BYTES = 64 * MIB  # biolm's own pretraining.json and loss.json
TOKENIZER_FILE_COUNT = 9  # the tokenizer files a checkpoint may hold, one of each (checkpoint_files.TOKENIZER_FILES)
# What a checkpoint's files other than its weights may add up to: every tokenizer file, the weight index and
# the two reports at their caps, and 64 MiB of configs and documents (dozens of files at their 1 MiB caps).
OTHER_FILES_BYTES = (TOKENIZER_FILE_COUNT + 1) * TOKENIZER_FILE_BYTES + 2 * REPORT_FILE_BYTES + 64 * MIB
DEFAULT_MAX_PARAMETERS = 10_000_000_000  # GatorTron's largest has 8.9 billion
# The safetensors library allows 100 MB, but a header is read and parsed in the web process, where 95 MB of
# JSON cost 330 MB; 8 MiB describes 80,000 tensors, twenty times the most a 256-layer encoder has.
SAFETENSORS_HEADER_BYTES = 8 * MIB


def largest_weights_file(max_parameters: int, header_bytes: int = SAFETENSORS_HEADER_BYTES) -> int:
    """The largest safetensors file within ``max_parameters``: 8 bytes of length, the header, 4 bytes a parameter."""
    return 8 + header_bytes + BYTES_PER_PARAMETER * max_parameters


def largest_checkpoint(max_parameters: int, header_bytes: int = SAFETENSORS_HEADER_BYTES) -> int:
    """The most a checkpoint within ``max_parameters`` holds: its weights plus every other file at its cap.

    At 10 billion parameters: 40,000,000,000 + 8,388,616 + 671,088,640 (ten 64 MiB tokenizer files and the
    index) + 134,217,728 (two 64 MiB reports) + 67,108,864 (configs and documents) = 40,880,803,848 bytes.
    """
    return largest_weights_file(max_parameters, header_bytes) + OTHER_FILES_BYTES


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

    max_total_bytes: int = largest_checkpoint(DEFAULT_MAX_PARAMETERS)
    max_members: int = 2000
    max_member_bytes: int = largest_weights_file(DEFAULT_MAX_PARAMETERS)
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

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Self:
        """The variables set; the byte limits no variable sets follow ``BIOLM_CHECKPOINT_MAX_PARAMETERS``."""
        parameters = CheckpointLimits.from_env(environ).max_parameters
        derived = {
            "max_total_bytes": largest_checkpoint(parameters),
            "max_member_bytes": largest_weights_file(parameters),
        }
        return cls(**{**derived, **_read(cls, environ)})


# A resumable pretraining checkpoint (torch.distributed.checkpoint): fp32 weights and AdamW's two fp32 moments.
RESUME_BYTES_PER_PARAMETER = 12
RESUME_FILES_PER_PROCESS = 2  # a DCP shard and an RNG file per rank
RESUME_OTHER_FILES = 16  # DCP's metadata, the scheduler, state.json, loss.json, a distillation projection's keys
RESUME_FILE_OVERHEAD_BYTES = 1 * MIB  # per file: DCP's per-tensor framing, an RNG file (about 20 KB)
RESUME_METADATA_BYTES = 64 * MIB  # DCP's metadata: a few hundred bytes per tensor and shard


def resume_archive_limits(parameters: int, processes: int, base: ArchiveLimits | None = None) -> ArchiveLimits:
    """The limits of a pretraining job's own resume archive, from the job's model, not the submission cap.

    A submitted checkpoint holds 4 bytes a parameter, and :class:`ArchiveLimits` is sized for that. A
    resume archive holds 12 (weights and AdamW's states, fp32), in a shard per rank: GatorTron-large's
    8.9 billion parameters make about 106 GB, which the submission limit (about 41 GB) would refuse.
    ``parameters`` is the job's model as the memory plan counts it; every other limit is ``base``'s.
    """
    base = base or ArchiveLimits.from_env()
    files = RESUME_FILES_PER_PROCESS * processes + RESUME_OTHER_FILES
    states = RESUME_BYTES_PER_PARAMETER * parameters
    total = states + files * RESUME_FILE_OVERHEAD_BYTES + RESUME_METADATA_BYTES + 2 * REPORT_FILE_BYTES
    return ArchiveLimits(
        max_total_bytes=max(base.max_total_bytes, total), max_members=max(base.max_members, files),
        max_member_bytes=max(base.max_member_bytes, states + RESUME_FILE_OVERHEAD_BYTES), max_ratio=base.max_ratio,
        ratio_floor_bytes=base.ratio_floor_bytes,
    )  # fmt: skip


@dataclass(frozen=True)
class CheckpointLimits(_FromEnvironment):
    """How large a model a checkpoint's config may describe, checked before any weight is read."""

    max_parameters: int = DEFAULT_MAX_PARAMETERS
    max_hidden_size: int = 16_384
    max_layers: int = 256
    max_attention_heads: int = 256
    max_intermediate_size: int = 65_536
    max_vocab_size: int = 1_048_576
    max_positions: int = 65_536
    max_config_bytes: int = CONFIG_FILE_BYTES
    max_safetensors_header_bytes: int = SAFETENSORS_HEADER_BYTES

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
