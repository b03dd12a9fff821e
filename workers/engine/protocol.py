"""The fine-tuning protocol of seed 004 section 6.2 (and seed 001 section 5.2).

Hyperparameters are chosen on dev from a grid -- learning rate {1e-5, 3e-5, 5e-5} x batch
size {16, 32} x the dataset's epochs -- by the dataset's task metric; then N seeds are run
at the chosen point and scored on test (5 seeds; 10 for the small, high-variance BIOSSES,
BioASQ and PubMedQA, as their dataset specs say). We report mean, standard deviation and median over seeds: seed 001
reports medians, seed 004 means, and METRICS.md warns that single runs vary by points.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass

from workers.engine.training import Hyperparameters

LEARNING_RATES = (1e-5, 3e-5, 5e-5)
BATCH_SIZES = (16, 32)


def grid(name: str, epochs: int) -> list[Hyperparameters]:
    """``blurb``: the paper's 6-point grid; ``single``: one point (5e-5, 32). ``epochs`` is the task's.

    The task's epochs and seeds come from its specs (``Task.epochs``, ``Task.seeds``): the task
    type's protocol defaults, overridden by the dataset (10 seeds on BIOSSES, BioASQ, PubMedQA).
    """
    if name == "blurb":
        return [Hyperparameters(lr, bs, epochs) for lr, bs in itertools.product(LEARNING_RATES, BATCH_SIZES)]
    if name == "single":
        return [Hyperparameters(5e-5, 32, epochs)]
    raise ValueError(f"unknown grid {name!r}; expected 'blurb' or 'single'")


@dataclass(frozen=True)
class Summary:
    mean: float
    std: float
    median: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Summary:
        return cls(
            mean=statistics.fmean(values),
            std=statistics.stdev(values) if len(values) > 1 else 0.0,
            median=statistics.median(values),
            n=len(values),
        )
