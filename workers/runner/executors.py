"""Which executor a worker runs its jobs with: ``local`` (the engine as the worker's child) or ``slurm``.

``BIOLM_EXECUTOR`` (``python -m workers.runner --executor``, ``manage.py worker --executor``) chooses. A Slurm
worker runs on a cluster's login node and hands each job to ``sbatch`` (:mod:`workers.runner.slurm`), so its
settings are checked before it starts, each bad one in one line naming it: a worker that would fail every job
is better refused at start.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

EXECUTOR_VARIABLE = "BIOLM_EXECUTOR"
EXECUTORS = ("local", "slurm")


def executor(value: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``value`` (a ``--executor`` flag), else ``BIOLM_EXECUTOR``, else ``local``; a :class:`ValueError` names
    the one that is neither ``local`` nor ``slurm``."""
    source, raw = ("--executor", value) if value is not None else (EXECUTOR_VARIABLE, (environ or os.environ).get(
        EXECUTOR_VARIABLE))  # fmt: skip
    chosen = (raw or "").strip().lower() or "local"
    if chosen not in EXECUTORS:
        raise ValueError(f"{source} takes local or slurm, not {raw!r}")
    return chosen


def check_slurm(environ: Mapping[str, str] | None = None) -> None:
    """Refuse, in one line, a Slurm worker whose settings cannot be used or whose host has no ``sbatch``."""
    from workers.runner.slurm_settings import SlurmReach, SlurmSettings

    env = os.environ if environ is None else environ
    SlurmSettings.from_environment(env)
    SlurmReach.from_environment(env)
    path = os.pathsep.join([env.get("PATH", ""), "/usr/sbin"])
    missing = [command for command in ("sbatch", "scontrol", "scancel") if shutil.which(command, path=path) is None]
    if missing:
        raise ValueError(f"{EXECUTOR_VARIABLE}=slurm: {', '.join(missing)} not found on PATH: run the Slurm worker "
                         "on a login node of the cluster")  # fmt: skip
