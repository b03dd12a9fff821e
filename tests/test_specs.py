"""Spec validation: what a plugin author sees when a contribution is wrong."""

from __future__ import annotations

import pytest

from biolm.specs import (
    AggregationSpec,
    BenchmarkSpec,
    DatasetSpec,
    EntrySpec,
    GroupSpec,
    PublishedModelSpec,
    SpecError,
    SplitSpec,
    SummarySpec,
)


def dataset(**changes) -> DatasetSpec:
    fields = dict(slug="toy-ner", name="Toy NER", task_type="ner", metric="entity-f1", domain="biomedical",
                  description="", splits=(SplitSpec("train", 10), SplitSpec("test", 5)))  # fmt: skip
    return DatasetSpec(**(fields | changes))


def benchmark(**changes) -> BenchmarkSpec:
    fields = dict(
        slug="toy",
        name="Toy",
        description="",
        entries=(EntrySpec("toy-ner", "toy-ner", "entity-f1"),),
        aggregation=AggregationSpec("1", "all", summaries=(SummarySpec("all", "All", "mean"),)),
    )
    return BenchmarkSpec(**(fields | changes))


def test_a_well_formed_dataset_and_benchmark_validate():
    dataset().validate()
    benchmark().validate()


@pytest.mark.parametrize("slug", ["NCBI-disease", "bc5 chem", "", "-x", "x-"])
def test_slugs_must_be_lower_case_identifiers(slug):
    with pytest.raises(SpecError, match="slug"):
        dataset(slug=slug).validate()


def test_unknown_task_type_and_domain_are_named():
    with pytest.raises(SpecError, match="task_type 'tagging'"):
        dataset(task_type="tagging").validate()
    with pytest.raises(SpecError, match="domain 'legal'"):
        dataset(domain="legal").validate()


def test_repeated_split_names_are_rejected():
    with pytest.raises(SpecError, match="split names repeat"):
        dataset(splits=(SplitSpec("train", 1), SplitSpec("train", 2))).validate()


def test_group_with_unknown_entry_is_rejected():
    agg = AggregationSpec("1", "g", groups=(GroupSpec("g", "G", ("nope",)),))
    with pytest.raises(SpecError, match="group g has unknown"):
        benchmark(aggregation=agg).validate()


def test_primary_must_name_a_summary_or_group():
    agg = AggregationSpec("1", "nothing", summaries=(SummarySpec("all", "All", "mean"),))
    with pytest.raises(SpecError, match="primary 'nothing'"):
        benchmark(aggregation=agg).validate()


def test_weighted_summary_needs_one_weight_per_group():
    agg = AggregationSpec(
        "1",
        "w",
        groups=(GroupSpec("g", "G", ("toy-ner",)),),
        summaries=(SummarySpec("w", "W", "weighted_mean_of_groups", ("g",), ()),),
    )
    with pytest.raises(SpecError, match="one positive weight per group"):
        benchmark(aggregation=agg).validate()


def test_published_scores_must_name_known_entries_and_be_numbers():
    with pytest.raises(SpecError, match=r"unknown entries \['bc2gm'\]"):
        benchmark(published=(PublishedModelSpec("m", "M", {"bc2gm": 1.0}),)).validate()
    with pytest.raises(SpecError, match="not a number"):
        benchmark(published=(PublishedModelSpec("m", "M", {"toy-ner": "93.1"}),)).validate()
