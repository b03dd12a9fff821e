"""A real third-party plugin distribution, built and pip-installed in a temporary directory.

It contributes a dataset and a benchmark with a published result through the
``biolm`` entry-point group, plus a second entry point that fails to import.
Nothing in the platform's code knows about it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biolm.plugins import collect_contributions, get_plugin_manager
from tests.distributions import install_distribution

pytestmark = pytest.mark.backend  # an installed plugin meets manage.py plugins
ROOT = Path(__file__).resolve().parents[1]

PLUGIN_SOURCE = """
from biolm import hookimpl
from biolm.specs import AggregationSpec, BenchmarkSpec, DatasetSpec, EntrySpec, PublishedModelSpec, SummarySpec


@hookimpl
def biolm_datasets():
    return [DatasetSpec("toy-sts", "Toy STS", "sentence-similarity", "pearson", "clinical", "Invented pairs.")]


@hookimpl
def biolm_benchmarks():
    return [
        BenchmarkSpec(
            slug="toy-bench",
            name="Toy benchmark",
            description="A benchmark from a third-party distribution.",
            entries=(EntrySpec("toy-sts", "toy-sts", "pearson"), EntrySpec("bc5-chem", "bc5-chem", "entity-f1")),
            aggregation=AggregationSpec("1", "mean", summaries=(SummarySpec("mean", "Mean", "mean"),)),
            published=(PublishedModelSpec("toy-model", "Toy model", {"toy-sts": 80.0, "bc5-chem": 90.0}),),
            published_source="Toy et al. 2026",
        )
    ]
"""


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory) -> Path:
    """Build the distribution from source and pip-install it into a target directory."""
    target = install_distribution(
        tmp_path_factory.mktemp("biolm-toy-plugin"),
        tmp_path_factory.mktemp("site"),
        "biolm-toy-plugin",
        "0.1",
        {
            "biolm_toy_plugin/__init__.py": PLUGIN_SOURCE,
            "biolm_toy_plugin/broken.py": "import a_module_that_is_not_installed\n",
        },
        {"toy": "biolm_toy_plugin", "broken": "biolm_toy_plugin.broken"},
    )
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target))
    for name in [m for m in sys.modules if m.startswith("biolm_toy_plugin")]:
        del sys.modules[name]


def test_installed_plugin_contributes_its_dataset_and_benchmark(installed_plugin):
    contributions = collect_contributions(get_plugin_manager())
    assert "toy-sts" in contributions.datasets
    assert "toy-bench" in contributions.benchmarks
    toy = next(info for info in contributions.plugins if info.name == "toy")
    assert (toy.source, toy.distribution, toy.version) == ("entrypoint", "biolm-toy-plugin", "0.1")


def test_installed_plugin_that_fails_to_import_is_reported_by_name(installed_plugin):
    contributions = collect_contributions(get_plugin_manager())
    [problem] = contributions.problems
    assert problem.plugin == "broken (biolm-toy-plugin 0.1)"
    assert "a_module_that_is_not_installed" in problem.message


@pytest.mark.django_db
def test_installed_benchmark_reaches_the_database_and_leaderboard(installed_plugin, client):
    from registry.models import Benchmark, Dataset
    from registry.sync import sync_contributions

    report = sync_contributions(collect_contributions(get_plugin_manager()))
    assert any("broken" in p for p in report.problems)
    assert Dataset.objects.get(slug="toy-sts").plugin == "toy"
    bench = Benchmark.objects.get(slug="toy-bench")
    page = client.get(bench.get_absolute_url())
    assert page.status_code == 200
    assert "Toy model" in page.content.decode()
    assert bench.scores.get().score == pytest.approx(85.0)


def test_manage_py_plugins_lists_the_installed_plugin_and_its_problem(installed_plugin):
    env = {**os.environ, "PYTHONPATH": str(installed_plugin)}
    out = subprocess.run(
        [sys.executable, "manage.py", "plugins", "--json"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    data = json.loads(out)
    toy = next(p for p in data["plugins"] if p["name"] == "toy")
    assert toy["contributes"] == {"benchmarks": ["toy-bench"], "datasets": ["toy-sts"]}
    assert [p["plugin"] for p in data["problems"]] == ["broken (biolm-toy-plugin 0.1)"]
