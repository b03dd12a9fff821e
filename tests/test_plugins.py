"""The plugin system: built-ins load through the hooks, broken plugins are named and skipped."""

from __future__ import annotations

import inspect
import sys
import types

import pytest

from biolm import hookimpl, hookspecs
from biolm.plugins import DEFAULT_PLUGINS, collect_contributions, get_plugin_manager
from biolm.specs import AggregationSpec, BenchmarkSpec, DatasetSpec, EntrySpec, MetricSpec, SummarySpec

HOOK_NAMES = sorted(name for name in dir(hookspecs) if name.startswith("biolm_"))


def builtins_only(*extra) -> object:
    return collect_contributions(get_plugin_manager(load_entrypoints=False, extra_plugins=extra))


def test_every_hook_is_documented_with_what_it_returns():
    for name in HOOK_NAMES:
        doc = inspect.getdoc(getattr(hookspecs, name))
        assert doc and "Return" in doc, f"hook {name} needs a docstring saying what it returns"


def test_every_hook_has_a_builtin_implementation():
    pm = get_plugin_manager(load_entrypoints=False)
    for name in HOOK_NAMES:
        assert getattr(pm.hook, name).get_hookimpls(), f"no built-in plugin implements {name}"


def test_builtin_plugins_load_without_problems():
    contributions = builtins_only()
    assert contributions.problems == []
    assert {info.name for info in contributions.plugins} == set(DEFAULT_PLUGINS)
    assert {"blurb", "lewis2020", "bioformer", "gatortron", "clinical-longformer"} <= set(contributions.benchmarks)
    assert contributions.origin[("benchmarks", "blurb")] == "plugins.benchmarks.blurb"


def test_a_plugin_that_fails_to_import_is_reported_by_name_and_the_rest_still_load():
    pm = get_plugin_manager(default_plugins=(*DEFAULT_PLUGINS, "plugins.does_not_exist"), load_entrypoints=False)
    contributions = collect_contributions(pm)
    assert [p.plugin for p in contributions.problems] == ["plugins.does_not_exist"]
    assert "failed to import" in contributions.problems[0].message
    assert "blurb" in contributions.benchmarks


class InvalidDataset:
    @hookimpl
    def biolm_datasets(self):
        return [
            DatasetSpec("Bad Slug", "Bad", "ner", "entity-f1", "biomedical", ""),
            DatasetSpec("fine-ner", "Fine", "ner", "entity-f1", "biomedical", ""),
        ]


def test_an_invalid_spec_is_reported_by_plugin_name_and_skipped_while_its_valid_ones_load():
    contributions = builtins_only(("invalid-dataset-plugin", InvalidDataset()))
    assert len(contributions.problems) == 1
    problem = contributions.problems[0]
    assert problem.plugin == "invalid-dataset-plugin"
    assert "'Bad Slug' is not a lower-case slug" in problem.message
    assert "fine-ner" in contributions.datasets


class RaisingPlugin:
    @hookimpl
    def biolm_metrics(self):
        raise RuntimeError("boom")


class WrongTypePlugin:
    @hookimpl
    def biolm_metrics(self):
        return {"slug": "not-a-spec"}


def test_a_hook_that_raises_or_returns_the_wrong_type_is_reported_and_skipped():
    contributions = builtins_only(("raising", RaisingPlugin()), ("wrong-type", WrongTypePlugin()))
    messages = {p.plugin: p.message for p in contributions.problems}
    assert "raised RuntimeError: boom" in messages["raising"]
    assert "must return a list" in messages["wrong-type"]
    assert "entity-f1" in contributions.metrics


class DuplicateMetric:
    @hookimpl
    def biolm_metrics(self):
        return [MetricSpec("accuracy", "My accuracy", "", "my_plugin.metrics:accuracy")]


def test_a_duplicate_slug_keeps_the_builtin_and_reports_the_newcomer():
    contributions = builtins_only(("dupe", DuplicateMetric()))
    assert contributions.metrics["accuracy"].name == "Accuracy"
    assert contributions.problems[0].plugin == "dupe"
    assert "already provided by plugins.tasks.metrics" in contributions.problems[0].message


class BenchmarkWithUnknownDataset:
    @hookimpl
    def biolm_benchmarks(self):
        entries = (EntrySpec("bc5-chem", "bc5-chem", "entity-f1"), EntrySpec("ghost", "ghost-dataset", "accuracy"))
        aggregation = AggregationSpec("1", "all", summaries=(SummarySpec("all", "All", "mean"),))
        return [BenchmarkSpec("ghostly", "Ghostly", "", entries, aggregation)]


def test_a_benchmark_naming_an_unknown_dataset_is_skipped_with_the_dataset_named():
    contributions = builtins_only(("ghost-plugin", BenchmarkWithUnknownDataset()))
    assert "ghostly" not in contributions.benchmarks
    assert contributions.problems[0].plugin == "ghost-plugin"
    assert "['ghost-dataset']" in contributions.problems[0].message


def test_a_hook_implementation_may_be_a_plain_module():
    module = types.ModuleType("module_plugin")
    module.biolm_metrics = hookimpl(lambda: [MetricSpec("kappa", "Cohen's kappa", "", "module_plugin:kappa")])
    sys.modules["module_plugin"] = module
    try:
        assert "kappa" in builtins_only(("module_plugin", module)).metrics
    finally:
        del sys.modules["module_plugin"]


def test_an_unknown_hook_name_is_reported_not_fatal():
    class Typo:
        @hookimpl
        def biolm_datsets(self):
            return []

    contributions = builtins_only(("typo", Typo()))
    assert contributions.problems[0].plugin == "typo"
    assert "biolm_datsets" in contributions.problems[0].message


@pytest.mark.parametrize("name", HOOK_NAMES)
def test_each_hook_returns_specs_that_validate(name):
    pm = get_plugin_manager(load_entrypoints=False)
    for answer in getattr(pm.hook, name)():
        for spec in answer or ():
            spec.validate()
