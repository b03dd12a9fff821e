"""A plugin that passes validation never crashes sync_plugins; a hook that exits is reported by name.

Every bad value here used to pass validation and then fail on PostgreSQL (a value too long for
its column, NaN in a JSON column, an integer too large) or exit the command with the plugin's
code. CI runs this file on PostgreSQL first, where the columns' limits are enforced.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from biolm import hookimpl
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import (
    AggregationSpec,
    ArchitectureSpec,
    BenchmarkSpec,
    DatasetSpec,
    EntrySpec,
    MetricSpec,
    PublishedModelSpec,
    RecipeSpec,
    SummarySpec,
)
from tests.distributions import install_distribution

pytestmark = pytest.mark.backend  # a raising plugin meets manage.py plugins
ROOT = Path(__file__).resolve().parents[1]
LONG = "x" * 101


def bench(slug: str, *published: PublishedModelSpec, **changes) -> BenchmarkSpec:
    fields = dict(
        slug=slug,
        name="Robust",
        description="",
        entries=(EntrySpec("biosses", "biosses", "pearson"),),
        aggregation=AggregationSpec("1", "mean", summaries=(SummarySpec("mean", "Mean", "mean"),)),
        published=published,
    )
    return BenchmarkSpec(**(fields | changes))


def model(slug: str = "m", **changes) -> PublishedModelSpec:
    return PublishedModelSpec(**({"slug": slug, "name": "M", "scores": {"biosses": 80.0}} | changes))


BAD_DATASETS = {
    "slug over 100 characters": DatasetSpec("a" * 101, "N", "ner", "entity-f1", "biomedical", ""),
    "name over 200 characters": DatasetSpec("long-name", "n" * 201, "ner", "entity-f1", "biomedical", ""),
    "label over 200 characters": DatasetSpec(
        "long-label", "N", "ner", "entity-f1", "biomedical", "", labels=("l" * 201,)
    ),
}
BAD_BENCHMARKS = {
    "NaN published score": bench("nan-bench", model(scores={"biosses": math.nan})),
    "infinite published score": bench("inf-bench", model(scores={"biosses": math.inf})),
    "published score outside its metric's range": bench("range-bench", model(scores={"biosses": 180.0})),
    "aggregation version over 50 characters": bench(
        "version-bench", aggregation=AggregationSpec("v" * 51, "mean", summaries=(SummarySpec("mean", "Mean", "mean"),))
    ),
    "entry variant over 200 characters": bench(
        "variant-bench", entries=(EntrySpec("biosses", "biosses", "pearson", variant="v" * 201),)
    ),
    "published model name over 200 characters": bench("name-bench", model(name="n" * 201)),
    "published model slug too long for the model row": bench("slug-bench", model(slug="s" * 140)),
    "published vocabulary over 300 characters": bench("vocab-bench", model(vocabulary="v" * 301)),
    "published parameter count beyond a 64-bit column": bench("params-bench", model(parameters=2**70)),
    "infinite reported summary": bench("summary-bench", model(reported_summaries={"mean": math.inf})),
    "source paper over 300 characters": bench("source-bench", source_paper="s" * 301),
}
BAD_OTHERS = {
    "architecture preset that is not JSON": ArchitectureSpec("set-bert", "S", "bert", "", presets={"tiny": {"x": {1}}}),
    "recipe setting that is NaN": RecipeSpec("nan-recipe", "N", "", ("mlm",), {"mask_rate": math.nan}),
    "metric name over 200 characters": MetricSpec("long-metric", "m" * 201, "", "m:f"),
}


def robust_plugin() -> types.ModuleType:
    module = types.ModuleType("robust_plugin")
    good = DatasetSpec("robust-ok", "Robust OK", "ner", "entity-f1", "biomedical", "A valid dataset.")
    module.biolm_datasets = hookimpl(lambda: [good, *BAD_DATASETS.values()])
    module.biolm_benchmarks = hookimpl(lambda: [bench("robust-bench", model()), *BAD_BENCHMARKS.values()])
    module.biolm_architectures = hookimpl(lambda: [BAD_OTHERS["architecture preset that is not JSON"]])
    module.biolm_pretraining_recipes = hookimpl(lambda: [BAD_OTHERS["recipe setting that is NaN"]])
    module.biolm_metrics = hookimpl(lambda: [BAD_OTHERS["metric name over 200 characters"]])
    return module


@pytest.mark.django_db
def test_a_plugin_with_every_kind_of_bad_value_is_reported_and_never_crashes_sync_plugins():
    from registry.models import Benchmark, Dataset
    from registry.sync import sync_contributions

    contributions = collect_contributions(
        get_plugin_manager(load_entrypoints=False, extra_plugins=[("robust_plugin", robust_plugin())])
    )
    problems = [p.message for p in contributions.problems if p.plugin == "robust_plugin"]
    assert len(problems) == len(BAD_DATASETS) + len(BAD_BENCHMARKS) + len(BAD_OTHERS), problems
    report = sync_contributions(contributions)  # on PostgreSQL each bad value used to raise here
    assert Dataset.objects.filter(slug="robust-ok").exists()
    assert Benchmark.objects.get(slug="robust-bench").scores.get().score == pytest.approx(80.0)
    assert len([p for p in report.problems if p.startswith("robust_plugin")]) == len(problems)


@pytest.mark.parametrize("kind", sorted(BAD_BENCHMARKS))
def test_each_bad_benchmark_value_is_named(kind):
    module = types.ModuleType("one_bad_plugin")
    module.biolm_benchmarks = hookimpl(lambda: [BAD_BENCHMARKS[kind]])
    contributions = collect_contributions(
        get_plugin_manager(load_entrypoints=False, extra_plugins=[("one_bad_plugin", module)])
    )
    [problem] = contributions.problems
    expected = {
        "NaN published score": "m.biosses is not finite: nan",
        "infinite published score": "m.biosses is not finite: inf",
        "published score outside its metric's range": "m.biosses = 180.0 is outside pearson's range [-100, 100]",
        "aggregation version over 50 characters": "aggregation version is 51 characters long; at most 50 fit",
        "entry variant over 200 characters": "entry biosses: variant is 201 characters long; at most 200 fit",
        "published model name over 200 characters": "published model m: name is 201 characters long",
        "published model slug too long for the model row": "published model slug is 140 characters long; at most 138",
        "published vocabulary over 300 characters": "vocabulary is 301 characters long; at most 300 fit",
        "published parameter count beyond a 64-bit column": "parameters must be a positive integer of at most",
        "infinite reported summary": "reported summary mean must be a finite number, got inf",
        "source paper over 300 characters": "source_paper is 301 characters long; at most 300 fit",
    }[kind]
    assert expected in problem.message, problem.message


def test_a_plugin_name_too_long_for_its_column_is_reported():
    module = types.ModuleType("n")
    contributions = collect_contributions(
        get_plugin_manager(load_entrypoints=False, extra_plugins=[("p" * 201, module)])
    )
    [problem] = contributions.problems
    assert "plugin name is 201 characters long; at most 200 fit" in problem.message


def test_a_hook_raising_systemexit_is_reported_by_name_and_the_command_still_runs(tmp_path):
    source = "import sys\n\nfrom biolm import hookimpl\n\n\n@hookimpl\ndef biolm_metrics():\n    sys.exit(7)\n"
    target = install_distribution(
        tmp_path / "src", tmp_path / "site", "biolm-exits", "0.1", {"biolm_exits/__init__.py": source},
        {"exits": "biolm_exits"},
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(target), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "manage.py", "plugins", "--json"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    [problem] = [p for p in json.loads(result.stdout)["problems"] if p["plugin"] == "exits"]
    assert problem["message"] == "biolm_metrics raised SystemExit: 7"
