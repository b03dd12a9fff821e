"""How a run is named across the contract: one function writes a run's key, one reads it back.

Predictions and per-example scores in a results document are keyed by run: the seed (``"42"``)
or, under cross-validation, the fold and the seed (``"fold3-seed42"``).
"""

from __future__ import annotations

import re

from biolm.contract.errors import ContractError

_FOLD_RUN = re.compile(r"^fold(?P<fold>[1-9]\d*)-seed(?P<seed>-?\d+)$")
_SEED_RUN = re.compile(r"^(?P<seed>-?\d+)$")


def run_key(fold: int | None, seed: int) -> str:
    """``"42"`` without folds, ``"fold3-seed42"`` on fold 3."""
    return str(seed) if fold is None else f"fold{fold}-seed{seed}"


def parse_run_key(key: str) -> tuple[int | None, int]:
    """``(fold, seed)`` of a key :func:`run_key` wrote; anything else is a :class:`ContractError`."""
    for pattern in (_SEED_RUN, _FOLD_RUN):
        match = pattern.match(str(key))
        if match is not None:
            fold = match.groupdict().get("fold")
            return (int(fold) if fold is not None else None), int(match["seed"])
    raise ContractError(f"run key {key!r} is neither a seed (42) nor a fold and a seed (fold3-seed42)", "predictions")
