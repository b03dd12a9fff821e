"""What plugin authors get: ``startplugin``, ``biolm.testing`` (fixtures, ``check_plugin``), an installable biolm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest

from biolm import hookimpl
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import AdapterSpec, ArchitectureSpec, DatasetSpec, MetricSample, MetricSpec, PreprocessorSpec
from biolm.testing import check_plugin

pytestmark = [pytest.mark.backend, pytest.mark.once]  # startplugin and plugins run through manage.py
ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def run(*command: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env or OFFLINE, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("plugins")
    result = run(sys.executable, "manage.py", "startplugin", "biolm-acme", "--dir", str(directory))
    assert result.returncode == 0, result.stderr
    return directory / "biolm-acme"


# --- startplugin ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_freshly_generated_plugin_passes_its_own_tests_against_the_installed_biolm(generated):
    # No PYTHONPATH: biolm and biolm.testing come from the installed (editable) biolm, as for any author.
    # Nor this suite's Django settings: a plugin author's environment has none.
    env = {key: value for key, value in OFFLINE.items() if key not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    result = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=generated, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_the_generated_plugin_is_lint_clean(generated):
    assert run(sys.executable, "-m", "ruff", "check", ".", cwd=generated).returncode == 0
    assert run(sys.executable, "-m", "ruff", "format", "--check", ".", cwd=generated).returncode == 0


@pytest.mark.slow
def test_the_generated_plugin_installs_and_contributes_to_every_hook(generated, tmp_path):
    target = tmp_path / "site"
    installed = run(
        sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
        "--target", str(target), str(generated),
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    listed = run(sys.executable, "manage.py", "plugins", "--json", env={**OFFLINE, "PYTHONPATH": str(target)})
    assert listed.returncode == 0, listed.stderr
    acme = next(p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "acme")
    assert acme["contributes"] == {
        "architectures": ["acme-bert"],
        "benchmarks": ["acme-bench"],
        "datasets": ["acme-sentences"],
        "metrics": ["acme-balanced-accuracy"],
        "preprocessors": ["acme-strip-urls"],
        "recipes": ["acme-mlm"],
        "task_types": ["acme-pooled-classification"],
    }


def test_startplugin_refuses_a_bad_name_and_never_overwrites(generated):
    bad = run(sys.executable, "manage.py", "startplugin", "Acme Plugin", "--dir", str(generated.parent))
    assert bad.returncode != 0 and "lower-case letters and digits" in bad.stderr
    again = run(sys.executable, "manage.py", "startplugin", "biolm-acme", "--dir", str(generated.parent))
    assert again.returncode != 0 and "already exists" in again.stderr


# --- biolm.testing ----------------------------------------------------------------------------------

BUILTIN_PLUGINS = (
    "plugins.tasks.metrics",
    "plugins.tasks.task_types",
    "plugins.architectures.transformers_encoders",
    "plugins.preprocessors.text",
    "plugins.recipes.papers",
    "plugins.datasets.demo_catalogue",
    "plugins.benchmarks.blurb_mini",
)


@pytest.mark.parametrize("name", BUILTIN_PLUGINS)
def test_built_in_plugins_keep_the_contract_the_kit_checks(name):
    import importlib

    check_plugin(importlib.import_module(name))


def _broken_plugin() -> types.ModuleType:
    module = types.ModuleType("broken_biolm_plugin")

    def half(gold, predictions):
        return 50.0

    def unit_scale(gold, predictions):
        return sum(g == p for g, p in zip(gold, predictions, strict=True)) / len(gold)

    def hoards(documents):
        return list(documents)  # reads the whole corpus before giving anything back

    sample = MetricSample(gold=("a", "b"), predictions=("a", "b"))
    module.biolm_metrics = hookimpl(
        lambda: [
            MetricSpec("half-metric", "Half", "", half, sample=sample),
            MetricSpec("unit-metric", "Unit scale", "", unit_scale, sample=sample),
            MetricSpec("unsampled-metric", "No sample", "", unit_scale),
        ]
    )
    module.biolm_corpus_preprocessors = hookimpl(lambda: [PreprocessorSpec("hoarder", "Hoarder", "", hoards)])
    module.biolm_datasets = hookimpl(
        lambda: [
            DatasetSpec(
                "no-samples", "No samples", "nli", "accuracy", "clinical", "",
                adapter=AdapterSpec("classification", "biolm.canonical_jsonl:read_canonical_jsonl"),
            )
        ]
    )  # fmt: skip
    module.biolm_architectures = hookimpl(
        lambda: [ArchitectureSpec("typo-bert", "Typo", "bert", "", presets={"tiny": {"num_hiden_layers": 2}})]
    )
    return module


def test_check_plugin_reports_every_broken_contribution_at_once():
    with pytest.raises(AssertionError) as failure:
        check_plugin(_broken_plugin())
    report = str(failure.value)
    assert "metrics half-metric: perfect predictions score 50.0, not 100.0" in report
    assert "metrics unit-metric: perfect predictions score 1.0, not 100.0" in report
    assert "metrics unsampled-metric: it has no sample=" in report
    assert "preprocessors hoarder: it read 10,000 documents without giving 3 back: it must stream" in report
    assert "datasets no-samples: its adapter has no samples= directory" in report
    assert "architectures typo-bert: preset tiny: bert configs have no setting(s) ['num_hiden_layers']" in report


def test_check_plugin_rejects_a_task_type_whose_formulation_is_not_a_formulation():
    from biolm.specs import TaskTypeSpec

    module = types.ModuleType("odd_task_plugin")
    module.biolm_task_types = hookimpl(
        lambda: [TaskTypeSpec("odd", "Odd", "", "classification", "collections:OrderedDict", "accuracy")]
    )
    with pytest.raises(AssertionError, match="task_types odd: its formulation 'collections:OrderedDict' is not"):
        check_plugin(module)


def test_plugin_manager_registers_a_plugin_whose_hooks_answer_and_removes_it_after_the_test(plugin_manager):
    module = types.ModuleType("hooked_plugin")
    module.biolm_pretraining_recipes = hookimpl(lambda: [])
    manager = plugin_manager(module)
    assert manager.get_plugin("hooked_plugin") is module
    assert [] in manager.hook.biolm_pretraining_recipes()
    assert "plugins.tasks.metrics" in dict(manager.list_name_plugin())  # beside the built-ins


def test_register_plugin_gives_a_fresh_manager_and_leaves_no_trace(register_plugin):
    module = types.ModuleType("kappa_plugin")
    sample = MetricSample(gold=("a",), predictions=("a",))
    module.biolm_metrics = hookimpl(lambda: [MetricSpec("kappa", "Kappa", "", lambda g, p: 100.0, sample=sample)])
    assert "kappa" in register_plugin(module).metrics
    assert "kappa" not in collect_contributions(get_plugin_manager(load_entrypoints=False)).metrics


# --- the installable package ----------------------------------------------------------------------


def test_biolm_the_kit_and_the_engine_import_from_anywhere_without_pythonpath(tmp_path):
    env = {key: value for key, value in OFFLINE.items() if key != "PYTHONPATH"}
    code = "import biolm.testing, workers.engine.finetune, plugins.tasks.metrics; print(biolm.testing.__name__)"
    result = run(sys.executable, "-c", code, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "biolm.testing"


@pytest.mark.slow
def test_the_built_wheel_holds_the_core_the_kit_the_engine_and_the_plugins_data(tmp_path):
    import shutil

    # Built from a copy of the checkout's files, so setuptools' build/ never lands in (or comes from) the tree.
    listed = run("git", "ls-files", "-co", "--exclude-standard").stdout.splitlines()
    source = tmp_path / "src"
    for name in listed:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(tmp_path),
        str(source),
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("biolm-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "biolm/testing.py",
        "biolm/schemas/relation.py",
        "biolm/plugin_template/src/__module__/__init__.py.tmpl",
        "workers/engine/finetune.py",
        "plugins/tasks/metrics.py",
        "plugins/benchmarks/published/blurb.json",
        "plugins/datasets/demo/demo-ner/train.jsonl",
    ):
        assert expected in names, expected
    assert not any(name.startswith(("registry/", "leaderboard/", "biolm_site/")) for name in names)


def test_the_undocumented_builtin_contributions_fixture_still_works_for_one_minor_version_and_says_what_replaces_it(
    request,
):
    with pytest.warns(DeprecationWarning, match=r"goes in biolm 0\.2: call biolm\.plugins\.collect_contributions"):
        contributions = request.getfixturevalue("biolm_builtin_contributions")
    assert "blurb" in contributions.benchmarks
