"""Spec validation: what a plugin author sees when a contribution is wrong."""

from __future__ import annotations

import types

import pytest

from biolm import hookimpl
from biolm.spec_checks import SpecError
from biolm.specs import (
    AggregationSpec,
    BenchmarkSpec,
    DatasetSpec,
    EntrySpec,
    GroupSpec,
    MetricSpec,
    PreprocessorSpec,
    PublishedModelSpec,
    SplitSpec,
    SummarySpec,
    TaskTypeSpec,
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


def test_a_task_type_must_be_a_slug_and_an_unknown_domain_is_named():
    dataset(task_type="tagging").validate()  # any contributed task type; collect_contributions checks it exists
    with pytest.raises(SpecError, match="task_type 'Tagging Task'"):
        dataset(task_type="Tagging Task").validate()
    with pytest.raises(SpecError, match="domain 'legal'"):
        dataset(domain="legal").validate()


def test_a_dataset_naming_an_unknown_task_type_is_skipped_with_the_known_ones_named():
    from biolm.plugins import collect_contributions, get_plugin_manager

    module = types.ModuleType("tagging_plugin")
    module.biolm_datasets = hookimpl(lambda: [dataset(slug="tagged", task_type="tagging")])
    contributions = collect_contributions(
        get_plugin_manager(load_entrypoints=False, extra_plugins=[("tagging_plugin", module)])
    )
    [problem] = contributions.problems
    assert "dataset 'tagged' names unknown task type 'tagging' (known: deidentification," in problem.message
    assert "tagged" not in contributions.datasets


def test_metric_task_type_and_preprocessor_specs_name_an_implementation():
    with pytest.raises(SpecError, match="metric kappa: implementation must be a callable or a 'module:attribute'"):
        MetricSpec("kappa", "Kappa", "", "kappa.py").validate()
    with pytest.raises(SpecError, match="value_range"):
        MetricSpec("kappa", "Kappa", "", "m:kappa", value_range=(100.0, 0.0)).validate()
    with pytest.raises(SpecError, match="context names \\['vocabulary'\\]"):
        MetricSpec("kappa", "Kappa", "", "m:kappa", context=("vocabulary",)).validate()
    with pytest.raises(SpecError, match="schema 'table' is not one of"):
        TaskTypeSpec("t", "T", "", "table", "m:Formulation", "accuracy").validate()
    with pytest.raises(SpecError, match="multi_element applies to the token-tagging schema only"):
        TaskTypeSpec("t", "T", "", "relation", "m:F", "micro-f1", multi_element=True).validate()
    with pytest.raises(SpecError, match="preprocessor p: implementation"):
        PreprocessorSpec("p", "P", "", "").validate()
    with pytest.raises(SpecError, match="negative_label 'none' is not one of its labels"):
        dataset(labels=("a", "b"), negative_label="none").validate()


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


def sized(parameters: object = 110_000_000, source: object = "Fang et al. 2023, Table 1") -> BenchmarkSpec:
    """The toy benchmark with one published row of the given size and size source."""
    row = PublishedModelSpec(
        "pubmedbert", "PubMedBERT", {"toy-ner": 1.0}, parameters=parameters, parameters_source=source
    )
    return benchmark(published=(row,))


def test_a_published_size_with_its_source_validates_and_so_does_a_row_with_neither():
    sized().validate()
    sized(None, "").validate()


@pytest.mark.parametrize("parameters", [0, -110_000_000, 110.5, "110M", True, 10**19])
def test_a_published_size_that_is_not_a_positive_whole_count_names_the_benchmark_model_and_field(parameters):
    with pytest.raises(SpecError, match=r"^benchmark toy: published model pubmedbert: parameters must be a positive"):
        sized(parameters).validate()


@pytest.mark.parametrize("source", ["", "   "])
def test_a_published_size_without_its_source_is_refused_naming_the_field_and_the_fix(source):
    with pytest.raises(SpecError) as refused:
        sized(source=source).validate()
    message = str(refused.value)
    assert message.startswith("benchmark toy: published model pubmedbert: parameters_source is empty;")
    assert "110,000,000 parameters" in message and "or leave parameters out" in message


def test_a_size_source_without_a_size_is_refused():
    with pytest.raises(SpecError, match=r"pubmedbert: parameters_source is given without parameters"):
        sized(None).validate()


def test_a_plugins_unsourced_size_is_reported_under_the_plugins_name_and_its_benchmark_skipped():
    from biolm.plugins import collect_contributions, get_plugin_manager

    module = types.ModuleType("sizes_plugin")
    module.biolm_benchmarks = hookimpl(lambda: [sized(source="")])
    contributions = collect_contributions(
        get_plugin_manager(load_entrypoints=False, extra_plugins=[("sizes_plugin", module)])
    )
    [problem] = [p for p in contributions.problems if p.plugin == "sizes_plugin"]
    assert "invalid BenchmarkSpec: benchmark toy: published model pubmedbert: parameters_source is empty" in (
        problem.message
    )
    assert "toy" not in contributions.benchmarks
