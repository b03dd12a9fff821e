"""Protocols: a paper's fine-tuning procedure, and the one computation of its statistic over seeds and folds.

A reproduced row sits on the leaderboard beside a paper's published row, so it is measured the
way that paper measured. A protocol (a :class:`~biolm.specs.ProtocolSpec`, contributed by a
plugin through ``biolm_protocols`` like every other contribution) turns a dataset into a
:class:`Plan`: the hyperparameter points searched on dev, how a checkpoint is chosen inside a
run, how many seeds run on test, whether the dataset is scored on its cross-validation folds, and
the statistic the paper reports over the runs.

This module is the registry's half that everyone shares, with no engine and no Django: submit asks
:func:`plan_for` whether a job runs on folds, the engine asks it what to train, and the engine, the
recording and the bootstrap all combine runs with :func:`combine`, so the number a page shows is
computed by exactly one piece of code. A submitter may change a protocol's settings
(:class:`~biolm.contract.Overrides`: fewer seeds, one grid point, ...); :func:`plan_for` applies
them, and a result obtained that way is said to be on custom settings wherever it is shown.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from biolm.contract.overrides import Overrides
from biolm.specs import STATISTICS, ContractBreach, DatasetSpec, ProtocolSpec, TaskTypeSpec

__all__ = [
    "STATISTICS",
    "Hyperparameters",
    "Plan",
    "RunValue",
    "Summary",
    "combine",
    "plan_for",
    "preview_overrides",
    "protocol_named",
]

PREVIEW = {"grid": "single", "seeds": 1}
"""What a quick preview is: one grid point (the largest learning rate and batch) and one seed."""


def preview_overrides(extra: Mapping[str, object] | None = None) -> Overrides:
    """A quick preview's overrides: :data:`PREVIEW`, on top of what a site adds (``BIOLM_PREVIEW_OVERRIDES``:
    the demo caps epochs, length and examples so a preview fits two CPU cores)."""
    return Overrides.from_json({**(extra or {}), **PREVIEW})


@dataclass(frozen=True)
class Hyperparameters:
    """One point of a protocol's grid, and how a run at it chooses its checkpoint."""

    learning_rate: float = 5e-5
    batch_size: int = 32
    epochs: int = 3
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    evaluate_every_steps: int | None = None  # evaluate on dev every N optimisation steps
    evaluate_each_epoch: bool = False  # ... or at the end of every epoch
    patience: int | None = None  # stop after this many evaluations without a better score
    max_steps: int | None = None  # stop here (a fold's early-stopping point); the schedule is unchanged

    def key(self) -> str:
        key = f"lr={self.learning_rate:g},bs={self.batch_size},ep={self.epochs}"
        if self.max_steps is not None:
            key += f",steps<={self.max_steps}"
        return key

    @property
    def selects_checkpoint(self) -> bool:
        return bool(self.evaluate_every_steps) or self.evaluate_each_epoch

    def without_selection(self, max_steps: int | None = None) -> Hyperparameters:
        """The same run without in-loop evaluation, stopped at ``max_steps`` (a chosen checkpoint's step)."""
        return dataclasses.replace(
            self, evaluate_every_steps=None, evaluate_each_epoch=False, patience=None, max_steps=max_steps
        )


@dataclass(frozen=True)
class Plan:
    """What one protocol does with one dataset."""

    protocol: str
    points: tuple[Hyperparameters, ...]
    seeds: int
    statistic: str  # one of STATISTICS: what the paper reports over seeds (and folds)
    cross_validation: bool = False
    description: str = ""

    def describe(self) -> dict:
        return {
            "name": self.protocol,
            "description": self.description,
            "statistic": self.statistic,
            "seeds": self.seeds,
            "cross_validation": self.cross_validation,
            "points": [dataclasses.asdict(hp) for hp in self.points],
        }


def protocol_named(protocols: Mapping[str, ProtocolSpec], slug: str) -> ProtocolSpec:
    """The contributed protocol ``slug``; an error naming the known ones otherwise."""
    spec = protocols.get(slug)
    if spec is None:
        known = ", ".join(sorted(protocols)) or "none (is the plugin that provides protocols installed?)"
        raise ValueError(f"unknown protocol {slug!r}; known: {known}")
    return spec


def plan_for(
    protocol: ProtocolSpec, dataset: DatasetSpec, task_type: TaskTypeSpec, overrides: Overrides | None = None
) -> Plan:
    """``protocol``'s plan for ``dataset``, with ``overrides`` applied (epochs, seeds, one grid point, lr, batch)."""
    plan = protocol.plan(dataset, task_type)
    if not isinstance(plan, Plan) or not plan.points or plan.seeds < 1:  # the plugin's fault, not the submitter's
        conduct = f"returned {str(plan)[:80]!r}, not a Plan with points and seeds, for {dataset.slug}"
        raise ContractBreach(f"protocol {protocol.slug}: its planner", conduct, ("protocols", protocol.slug),
                             protocol.planner)  # fmt: skip
    plan = dataclasses.replace(plan, protocol=protocol.slug, statistic=protocol.statistic)
    overrides = overrides or Overrides()
    points = list(plan.points)
    if overrides.epochs is not None:
        points = [dataclasses.replace(hp, epochs=overrides.epochs) for hp in points]
    if overrides.grid == "single":  # a quick check's one point: the grid's largest learning rate and batch
        points = [max(points, key=lambda hp: (hp.learning_rate, hp.batch_size))]
    if overrides.learning_rate is not None or overrides.batch_size is not None:
        points = [
            dataclasses.replace(
                points[0],
                learning_rate=overrides.learning_rate or points[0].learning_rate,
                batch_size=overrides.batch_size or points[0].batch_size,
            )
        ]
    seeds = overrides.seeds if overrides.seeds is not None else plan.seeds
    return dataclasses.replace(plan, points=tuple(points), seeds=seeds)


@dataclass(frozen=True)
class RunValue:
    """One run's test value: its fold (None without cross-validation), its seed and the metric's value."""

    fold: int | None
    seed: int
    value: float


@dataclass(frozen=True)
class Summary:
    """The statistic over a result's runs: the value a protocol reports, with the spread a reader needs."""

    mean: float
    std: float
    median: float
    n: int  # seeds, or under cross-validation folds
    statistic: str
    value: float  # the protocol's statistic: the recorded result

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


def combine(runs: Iterable[RunValue], statistic: str) -> Summary | None:
    """The protocol's statistic over ``runs``: seeds within a fold, then folds; None when no run has a value.

    Without cross-validation every seed is a value of its own. Under cross-validation each fold's
    seeds are combined into the fold's value by their median (Lewis et al. 2020 run one seed per
    fold by default, and report medians), then the folds are combined. The reported value is
    ``statistic`` (``mean`` or ``median``) over those values; mean, std and median are always given.
    A run whose value is not finite counts as no value.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r} is not one of {', '.join(STATISTICS)}")
    by_fold: dict[object, list[float]] = {}
    for run in runs:
        if run.value is None or not math.isfinite(run.value):
            continue
        key = ("seed", run.seed) if run.fold is None else ("fold", run.fold)
        by_fold.setdefault(key, []).append(float(run.value))
    values = [statistics.median(group) for group in by_fold.values()]
    if not values:
        return None
    mean, median = statistics.fmean(values), statistics.median(values)
    return Summary(
        mean=mean,
        std=statistics.stdev(values) if len(values) > 1 else 0.0,
        median=median,
        n=len(values),
        statistic=statistic,
        value=median if statistic == "median" else mean,
    )
