"""Turn per-entry numbers into a benchmark's group and summary scores.

This is the one place where a benchmark's aggregation is computed: the
``score`` command, the materialised leaderboard scores and the tests that
recompute the papers' summary columns all call :func:`aggregate`. It is pure
Python (no Django, no numpy) so that plugins and workers can use it too.

A group or summary whose inputs are incomplete is ``None``: a partial average
would rank a model that skipped its hardest datasets above one that did not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from biolm.specs import BenchmarkSpec


@dataclass(frozen=True)
class Aggregate:
    """The outcome of aggregating one model's entries on one benchmark."""

    score: float | None
    groups: dict[str, float | None] = field(default_factory=dict)
    summaries: dict[str, float | None] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing


class UnknownEntriesError(ValueError):
    """A score file names entries the benchmark does not have."""

    def __init__(self, benchmark: str, unknown: list[str], known: tuple[str, ...]) -> None:
        self.unknown = unknown
        super().__init__(
            f"benchmark {benchmark!r} has no dataset(s) {', '.join(repr(u) for u in unknown)}; "
            f"expected some of: {', '.join(known)}"
        )


def _mean(values: list[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]


def aggregate(benchmark: BenchmarkSpec, scores: Mapping[str, float]) -> Aggregate:
    """Aggregate ``{entry key: value}`` the way ``benchmark`` defines it.

    Raises :class:`UnknownEntriesError` for keys the benchmark does not have;
    missing keys are allowed and reported in ``Aggregate.missing``.
    """
    keys = benchmark.entry_keys()
    unknown = sorted(set(scores) - set(keys))
    if unknown:
        raise UnknownEntriesError(benchmark.slug, unknown, keys)
    values: dict[str, float | None] = {k: (float(scores[k]) if k in scores else None) for k in keys}
    agg = benchmark.aggregation

    groups = {g.slug: _mean([values[m] for m in g.members]) for g in agg.groups}
    summaries: dict[str, float | None] = {}
    for summary in agg.summaries:
        if summary.method == "mean":
            members = summary.members or keys
            summaries[summary.slug] = _mean([values[m] for m in members])
        elif summary.method == "mean_of_groups":
            summaries[summary.slug] = _mean([groups[g] for g in summary.members])
        else:
            parts = [groups[g] for g in summary.members]
            if any(p is None for p in parts):
                summaries[summary.slug] = None
            else:
                total = sum(w * p for w, p in zip(summary.weights, parts, strict=True))  # type: ignore[operator]
                summaries[summary.slug] = total / sum(summary.weights)
    primary = summaries.get(agg.primary, groups.get(agg.primary))
    missing = tuple(k for k in keys if values[k] is None)
    return Aggregate(score=primary, groups=groups, summaries=summaries, missing=missing)
