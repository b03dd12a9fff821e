"""The Slurm worker's settings (``BIOLM_SLURM_*``, docs/operators.md, "Running on a cluster"), apart from the
executor (:mod:`workers.runner.slurm`) so that what only reads them (the worker launchers, ``manage.py worker``)
loads nothing of the engine's.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from biolm.memory_plan import parse_memory

# Slurm's time limit formats (sbatch --time): minutes, minutes:seconds, hours:minutes:seconds, days-hours,
# days-hours:minutes, days-hours:minutes:seconds; or no limit.
TIME_LIMIT = re.compile(r"^(\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$", re.IGNORECASE)


class SlurmSettingsError(ValueError):
    """A BIOLM_SLURM_* variable that cannot be used; the message is one line naming it and what was expected."""


@dataclass(frozen=True)
class SlurmSettings:
    """Where and how long the worker's batch jobs may run, from ``BIOLM_SLURM_*`` (docs/operators.md, Slurm).

    ``extra_args`` go to ``sbatch``'s command line, after the script's own ``#SBATCH`` lines, so a site's
    option (``--qos=high``, ``--constraint=a100``) wins over the script's.
    """

    partition: str = ""
    account: str = ""
    time_limit: str = ""
    extra_args: tuple[str, ...] = ()
    poll_s: float = 5.0

    def __post_init__(self) -> None:
        for variable, value in (("BIOLM_SLURM_PARTITION", self.partition), ("BIOLM_SLURM_ACCOUNT", self.account)):
            if value and not re.fullmatch(r"[\w.,-]+", value):
                raise SlurmSettingsError(f"{variable}={value!r}: expected a Slurm name (letters, digits, _ . , -)")
        if self.time_limit and not TIME_LIMIT.match(self.time_limit):
            raise SlurmSettingsError(
                f"BIOLM_SLURM_TIME_LIMIT={self.time_limit!r}: expected a Slurm time limit such as 90, 4:00:00, "
                "2-00:00:00 or UNLIMITED"
            )
        if self.extra_args and not self.extra_args[0].startswith("-"):
            raise SlurmSettingsError(
                f"BIOLM_SLURM_EXTRA_ARGS={shlex.join(self.extra_args)!r}: expected sbatch options, starting "
                "with '-' (such as --qos=high)"
            )
        if not self.poll_s > 0:  # also refuses NaN
            raise SlurmSettingsError(f"BIOLM_SLURM_POLL_S={self.poll_s!r}: expected a positive number of seconds")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SlurmSettings:
        """The settings the environment gives; an unset or empty variable keeps its default."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str:
            return env.get(name, "").strip()

        raw_args, raw_poll = get("BIOLM_SLURM_EXTRA_ARGS"), get("BIOLM_SLURM_POLL_S")
        try:
            extra_args = tuple(shlex.split(raw_args))
        except ValueError as exc:
            raise SlurmSettingsError(f"BIOLM_SLURM_EXTRA_ARGS={raw_args!r}: expected shell words ({exc})") from None
        try:
            poll_s = float(raw_poll) if raw_poll else cls.poll_s
        except ValueError:
            raise SlurmSettingsError(
                f"BIOLM_SLURM_POLL_S={raw_poll!r}: expected a positive number of seconds"
            ) from None
        return cls(partition=get("BIOLM_SLURM_PARTITION"), account=get("BIOLM_SLURM_ACCOUNT"),
                   time_limit=get("BIOLM_SLURM_TIME_LIMIT"), extra_args=extra_args, poll_s=poll_s)  # fmt: skip


@dataclass(frozen=True)
class SlurmReach:
    """What one job of the Slurm worker may span, which its heartbeat reports and placement trusts
    (:class:`biolm.placement.Seat`): up to ``max_nodes`` nodes of ``gpus_per_node`` GPUs each (0: CPU nodes),
    each GPU a ``gpu_model`` of ``gpu_memory_bytes``. The worker runs on a login node, which has no GPU to ask,
    so these are settings (``BIOLM_SLURM_MAX_NODES``, ``BIOLM_SLURM_GPUS_PER_NODE``, ``BIOLM_SLURM_GPU_MODEL``,
    ``BIOLM_SLURM_GPU_MEMORY``); the submit-time memory plan reads the memory from the heartbeat."""

    max_nodes: int = 1
    gpus_per_node: int = 0
    gpu_model: str = ""
    gpu_memory_bytes: int = 0

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SlurmReach:
        """The reach the environment gives; a bad value is a :class:`SlurmSettingsError` naming its variable."""
        env = os.environ if environ is None else environ
        counts = {}
        for variable, default, low in (("BIOLM_SLURM_MAX_NODES", 1, 1), ("BIOLM_SLURM_GPUS_PER_NODE", 0, 0)):
            raw = env.get(variable, "").strip() or str(default)
            if not raw.isdigit() or not low <= int(raw) <= 1024:
                raise SlurmSettingsError(f"{variable}={raw!r}: expected a whole number from {low} to 1024")
            counts[variable] = int(raw)
        raw_memory = env.get("BIOLM_SLURM_GPU_MEMORY", "").strip()
        try:
            memory = parse_memory(raw_memory) if raw_memory else 0
        except ValueError:
            raise SlurmSettingsError(
                f"BIOLM_SLURM_GPU_MEMORY={raw_memory!r}: expected each GPU's memory, such as 80GB or 141GB"
            ) from None
        return cls(counts["BIOLM_SLURM_MAX_NODES"], counts["BIOLM_SLURM_GPUS_PER_NODE"],
                   env.get("BIOLM_SLURM_GPU_MODEL", "").strip()[:200], memory)  # fmt: skip

    def devices(self) -> list[dict]:
        """One node's GPUs as a heartbeat describes them (``[{"name", "memory_bytes"}]``); none on CPU nodes."""
        if not self.gpus_per_node or not (self.gpu_model or self.gpu_memory_bytes):
            return []
        return [{"name": self.gpu_model or "GPU", "memory_bytes": self.gpu_memory_bytes}] * self.gpus_per_node
