"""A slice of a fine-tuning job's protocol: the part one job of a sliced protocol runs.

Gu et al. 2021's grid points, the further seeds at the chosen point, and Lewis et al. 2020's reported
folds train apart; a small selection job chooses the point between them, and a gather job writes the
one results document (``workers.engine.protocol``). A sliced job's spec carries its slice and the
jobs whose slice documents it reads; the job of the whole protocol carries neither.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from biolm.contract.errors import ContractError

SLICE_FILE = "slice.json"  # what a slice job's engine writes, and its worker uploads (the gather: results.json)
SLICE_PATTERN = re.compile(r"(point|seed|fold):(\d+)|select|gather")
READS_PATTERN = re.compile(r"(point|seed|fold)-\d+|select")


@dataclass(frozen=True)
class Slice:
    """One part of a protocol: ``part`` is point, select, seed, fold or gather; ``index`` the point, seed or fold."""

    part: str
    index: int | None = None

    @classmethod
    def parse(cls, text: str) -> Slice:
        match = SLICE_PATTERN.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ContractError(f"slice {text!r}: expected point:K, select, seed:K, fold:F or gather", "slice")
        return cls(match.group(1), int(match.group(2))) if match.group(1) else cls(text)

    @property
    def name(self) -> str:
        """Its document's name among the slices a later one reads, without ``.json``: ``point-3``, ``select``."""
        return self.part if self.index is None else f"{self.part}-{self.index}"

    @property
    def trains(self) -> bool:
        """Whether it trains (and so needs the model and the data); the selection and the gather read documents."""
        return self.part not in ("select", "gather")

    def __str__(self) -> str:
        return self.part if self.index is None else f"{self.part}:{self.index}"


def check_reads(reads: object) -> tuple[tuple[str, int], ...]:
    """``reads`` as (slice name, job id) pairs, each name a slice's document and each id a job's."""
    if not isinstance(reads, list | tuple):
        raise ContractError("reads must be a list of [slice name, job id] pairs", "reads")
    checked = []
    for pair in reads:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ContractError("reads must be a list of [slice name, job id] pairs", "reads")
        name, job = pair
        if not isinstance(name, str) or READS_PATTERN.fullmatch(name) is None:
            raise ContractError(f"reads: {name!r} is not a slice's document name (point-K, select, ...)", "reads")
        if isinstance(job, bool) or not isinstance(job, int) or job < 1:
            raise ContractError(f"reads: {name}'s job must be a job id, not {job!r}", "reads")
        checked.append((name, job))
    return tuple(checked)


def planned(points: int, seeds: int, folds: Sequence[int] = ()) -> list[Slice]:
    """Every slice of a protocol of ``points`` grid points and ``seeds`` seeds, each after those it reads.

    ``folds``: the cross-validation folds' numbers, the first one selecting (Lewis et al. 2020); then
    each other fold is a slice, with all its seeds. Without folds each further seed is one.
    """
    after = [Slice("fold", fold) for fold in folds[1:]] if folds else [Slice("seed", k) for k in range(1, seeds)]
    return [*(Slice("point", k) for k in range(points)), Slice("select"), *after, Slice("gather")]


def reads_of(part: Slice, slices: Sequence[Slice]) -> list[Slice]:
    """The slices whose documents ``part`` reads: the selection every point, a seed or a fold the selection,
    the gather all of them."""
    if part.part == "point":
        return []
    if part.part == "select":
        return [other for other in slices if other.part == "point"]
    if part.part in ("seed", "fold"):
        return [Slice("select")]
    return [other for other in slices if other.part != "gather"]
