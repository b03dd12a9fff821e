"""The single aggregation implementation, on hand-made benchmarks where every answer is known."""

from __future__ import annotations

import pytest

from biolm.aggregation import UnknownEntriesError, aggregate
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec


def make_benchmark(summaries: tuple[SummarySpec, ...], primary: str) -> BenchmarkSpec:
    entries = tuple(EntrySpec(key, key, "accuracy") for key in ("a1", "a2", "a3", "b1"))
    groups = (GroupSpec("a", "A", ("a1", "a2", "a3")), GroupSpec("b", "B", ("b1",)))
    spec = BenchmarkSpec(
        slug="toy",
        name="Toy",
        description="",
        entries=entries,
        aggregation=AggregationSpec(version="1", primary=primary, groups=groups, summaries=summaries),
    )
    spec.validate()
    return spec


SCORES = {"a1": 90.0, "a2": 80.0, "a3": 70.0, "b1": 40.0}


def test_mean_of_groups_weights_each_group_equally_not_each_dataset():
    bench = make_benchmark((SummarySpec("macro", "Macro", "mean_of_groups", ("a", "b")),), "macro")
    outcome = aggregate(bench, SCORES)
    assert outcome.groups == {"a": 80.0, "b": 40.0}
    assert outcome.score == pytest.approx(60.0)  # the mean over datasets would be 70.0


def test_plain_mean_over_all_entries_when_members_are_empty():
    bench = make_benchmark((SummarySpec("all", "All", "mean"),), "all")
    assert aggregate(bench, SCORES).score == pytest.approx(70.0)


def test_weighted_mean_of_groups_uses_the_given_weights():
    bench = make_benchmark((SummarySpec("w", "W", "weighted_mean_of_groups", ("a", "b"), (3, 1)),), "w")
    assert aggregate(bench, SCORES).score == pytest.approx((80.0 * 3 + 40.0) / 4)


def test_a_group_can_be_the_primary_score():
    bench = make_benchmark((), "b")
    assert aggregate(bench, SCORES).score == 40.0


def test_missing_entries_leave_dependent_groups_and_summaries_empty():
    bench = make_benchmark((SummarySpec("macro", "Macro", "mean_of_groups", ("a", "b")),), "macro")
    outcome = aggregate(bench, {"a1": 90.0, "b1": 40.0})
    assert outcome.missing == ("a2", "a3")
    assert outcome.groups == {"a": None, "b": 40.0}
    assert outcome.score is None
    assert not outcome.complete


def test_unknown_entries_are_rejected_by_name():
    bench = make_benchmark((SummarySpec("all", "All", "mean"),), "all")
    with pytest.raises(UnknownEntriesError, match="'zz'"):
        aggregate(bench, {**SCORES, "zz": 1.0})
