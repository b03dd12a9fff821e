"""A plugin installed while the platform runs, and a plugin whose metric raises, in real processes (``-m faults``).

The platform runs on an interpreter of the test's own (a virtualenv whose site folder reaches the
project's packages), so a plugin can be ``pip install -e``'d into it while the web app and the
workers run, as a plugin author does: the editable install's ``.pth`` file is something a
running interpreter never reads by itself. The plugin contributes three datasets: one scored with
the built-in accuracy, one with a metric of its own that divides by zero, one with a metric that
raises only on the test split, which the platform scores.

* The first is fine-tuned and scored without restarting anything: the CPU worker notices the
  new plugin before it scores.
* The second fails at its first attempt on the worker, the third at the platform's scoring: the
  plugin's bug is the plugin's, reported in one line naming the plugin, the metric and the line
  that raised, with the traceback in the job's log; it is not retried, it is refunded (the submitter
  is not at fault) and counted against the plugin, and the submission says it failed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from checkpoints import tiny_bert
from throwaway_venv import platform_on_own_interpreter

from bench.harness import wait_until
from tests.distributions import write_distribution
from tests.faulty_plugin import write_polarity_splits

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.backend]

PLUGIN = """
from pathlib import Path

from biolm import hookimpl
from biolm.canonical_jsonl import READER
from biolm.specs import AdapterSpec, AggregationSpec, BenchmarkSpec, DatasetSpec, EntrySpec, MetricSpec, SummarySpec

DATA = Path(__file__).resolve().parent / "data"


@hookimpl
def biolm_metrics():
    return [MetricSpec("acme-fragile", "Fragile accuracy", "Accuracy over a count that is zero.",
                       "biolm_acme.metrics:fragile_accuracy"),
            MetricSpec("acme-even", "Even accuracy", "Accuracy, on an even number of examples only.",
                       "biolm_acme.metrics:even_accuracy")]


def _dataset(slug, metric):
    return DatasetSpec(slug, slug, "document-classification", metric, "biomedical", "Invented findings.",
                       labels=("up", "down"), adapter=AdapterSpec("classification", READER, default_path=str(DATA)))


@hookimpl
def biolm_datasets():
    return [_dataset("acme-good", "accuracy"), _dataset("acme-bad", "acme-fragile"), _dataset("acme-late", "acme-even")]


@hookimpl
def biolm_benchmarks():
    return [BenchmarkSpec("acme-bench", "Acme benchmark", "Polarity, twice.",
                          entries=(EntrySpec("acme-good", "acme-good", "accuracy"),
                                   EntrySpec("acme-bad", "acme-bad", "acme-fragile"),
                                   EntrySpec("acme-late", "acme-late", "acme-even")),
                          aggregation=AggregationSpec("1", "mean", summaries=(SummarySpec("mean", "Mean", "mean"),)))]
"""

METRICS = """
def fragile_accuracy(gold, predictions):
    correct = sum(g == p for g, p in zip(gold, predictions))
    return 100 * correct / _seen(gold)


def _seen(gold):
    return len(gold) - len(gold)


def even_accuracy(gold, predictions):
    if len(gold) % 2:
        raise RuntimeError(f"{len(gold)} examples, an odd number")
    return 100 * sum(g == p for g, p in zip(gold, predictions)) / len(gold)
"""
RAISING_LINE = METRICS.splitlines().index("    return 100 * correct / _seen(gold)") + 1
ODD_LINE = METRICS.splitlines().index('        raise RuntimeError(f"{len(gold)} examples, an odd number")') + 1


def write_plugin(source: Path) -> Path:
    files = {"biolm_acme/__init__.py": PLUGIN, "biolm_acme/metrics.py": METRICS}
    write_distribution(source, "biolm-acme", "0.1", files, {"acme": "biolm_acme"})
    write_polarity_splits(source / "biolm_acme" / "data", {"train": 60, "dev": 16, "test": 17})  # acme-even: odd
    return source


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    yield from platform_on_own_interpreter(tmp_path_factory)


def test_a_plugin_installed_while_workers_run_is_used_and_its_raising_metric_fails_its_job_once(
    platform, against_postgres, tmp_path
):
    platform.start_gpu_worker("gpu-plugins")
    live = "SELECT name FROM jobs_worker WHERE name IN ('cpu@harness', 'gpu-plugins@harness')"
    wait_until(lambda: len(platform.query(live)) == 2, 120, "both workers to heartbeat")

    plugin = write_plugin(tmp_path / "biolm-acme")
    subprocess.run([sys.executable, "-m", "pip", "--python", platform.python, "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "-e", str(plugin)], check=True, capture_output=True)  # fmt: skip
    platform.manage("sync_plugins")
    platform.manage("import_dataset", "acme-good", "acme-bad", "acme-late")
    checkpoint = tiny_bert(tmp_path / "tiny-bert", ["Treatment raised expression ."] * 8, 120, hidden=32)
    overrides = '{"grid": "single", "seeds": 1, "epochs": 1, "max_length": 32}'
    submitted = platform.submit("--model", str(checkpoint), "--benchmark", "acme-bench", "--overrides", overrides)
    jobs = {(job["kind"], job["dataset"]): job["id"] for job in submitted["jobs"]}

    good = platform.wait_for_job(jobs["score", "acme-good"], ("succeeded", "failed"), timeout=300)
    assert good["status"] == "succeeded", (good, platform.job(jobs["finetune", "acme-good"]))
    assert "reloaded the plugins, which changed: biolm-acme 0.1 installed" in good["log"]
    assert [row["dataset"] for row in platform.results(submitted["model"])] == ["acme-good"]

    bad = platform.wait_for_job(jobs["finetune", "acme-bad"], ("succeeded", "failed"), timeout=300)
    assert bad["status"] == "failed" and bad["attempts"] == 1 and bad["failure_cause"] == "plugin"
    assert bad["blamed_plugin"] == "acme"  # counted against the plugin (the admin's plugin list)
    assert bad["error"] == (
        "plugin acme (biolm-acme 0.1): metric 'acme-fragile' raised ZeroDivisionError: division by zero "
        f"at biolm_acme/metrics.py:{RAISING_LINE}"
    )
    assert "Traceback (most recent call last)" in bad["log"]  # the log holds the log
    downstream = platform.job(jobs["score", "acme-bad"])
    assert downstream["status"] == "failed" and downstream["failure_cause"] == "plugin"

    # acme-even is fine on dev (16 examples), so the fine-tune succeeds; the platform raises it scoring test (17).
    late = platform.wait_for_job(jobs["score", "acme-late"], ("succeeded", "failed"), timeout=300)
    assert platform.job(jobs["finetune", "acme-late"])["status"] == "succeeded"
    assert late["status"] == "failed" and late["attempts"] == 1 and late["failure_cause"] == "plugin"
    assert late["blamed_plugin"] == "acme"
    assert late["error"] == (
        "plugin acme (biolm-acme 0.1): metric 'acme-even' raised RuntimeError: 17 examples, an odd number "
        f"at biolm_acme/metrics.py:{ODD_LINE}"
    )
    assert "Traceback (most recent call last)" in late["log"]

    (submission,) = platform.query(
        "SELECT status, refunded FROM submissions_submission WHERE id = ?", submitted["submission"]
    )
    assert submission["status"] == "failed" and submission["refunded"]  # a plugin's bug is not the submitter's
