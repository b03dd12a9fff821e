"""A plugin re-installed from another folder while the workers run: the next job runs the new code and names it
(``-m faults``: real processes, PostgreSQL).

The platform runs on an interpreter of the test's own (tests/throwaway_venv.py), so a plugin can be
pip-installed into it while the web app, the CPU worker and a GPU worker run, as a plugin author
does. The plugin's metric answers a constant that only its version gives (11 for 0.1.0, 22 for
0.2.0): a result's value says which code scored it, and its jobs' specs say which version they
pinned. Both flavours are tried, an editable install (``pip install -e``) and a regular one.

Where a GPU host's code is not the code a job's spec pins (0.1.0 put back after a job pinned 0.2.0, as on
a host not yet upgraded), its worker hands the job back at the claim: nothing is failed or charged, the
worker's row says which code it runs and which the job pins, and the job runs once the host runs the
pinned code again.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert
from throwaway_venv import pip_install, platform_on_own_interpreter

from bench.harness import Platform, wait_until
from tests.distributions import write_distribution
from tests.faulty_plugin import write_polarity_splits

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.backend]

PLUGIN = """
from pathlib import Path

from biolm import hookimpl
from biolm.canonical_jsonl import READER
from biolm.specs import AdapterSpec, AggregationSpec, BenchmarkSpec, DatasetSpec, EntrySpec, MetricSpec, SummarySpec

SLUG = "{slug}"
VALUE = {value}
DATA = Path(__file__).resolve().parent / "data"


def constant(gold, predictions):
    return VALUE


@hookimpl
def biolm_metrics():
    return [MetricSpec(SLUG + "-score", "Probe score", "The version's own constant.", constant)]


@hookimpl
def biolm_datasets():
    return [DatasetSpec(SLUG, SLUG, "document-classification", SLUG + "-score", "biomedical", "Invented findings.",
                        labels=("up", "down"), adapter=AdapterSpec("classification", READER, default_path=str(DATA)))]


@hookimpl
def biolm_benchmarks():
    return [BenchmarkSpec(SLUG + "-bench", "Probe", "One dataset.", entries=(EntrySpec(SLUG, SLUG, SLUG + "-score"),),
                          aggregation=AggregationSpec("1", "mean", summaries=(SummarySpec("mean", "Mean", "mean"),)))]
"""
OVERRIDES = '{"grid": "single", "seeds": 1, "epochs": 1, "max_length": 32}'


def write_plugin(folder: Path, module: str, slug: str, version: str, value: float) -> Path:
    distribution = f"biolm-{slug}"
    package_data = f'\n[tool.setuptools.package-data]\n{module} = ["data/*/*.jsonl", "data/*.jsonl"]\n'
    write_distribution(folder, distribution, version, {f"{module}/__init__.py": PLUGIN.format(slug=slug, value=value)},
                       {slug: module}, extra=package_data)  # fmt: skip
    write_polarity_splits(folder / module / "data", {"train": 24, "dev": 8, "test": 8})
    return folder


GPU_HEARTBEAT = "SELECT 1 FROM jobs_worker WHERE name = 'gpu-reinstall@harness'"


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    for running in platform_on_own_interpreter(tmp_path_factory):
        running.start_gpu_worker("gpu-reinstall")
        wait_until(lambda running=running: running.query(GPU_HEARTBEAT), 120, "the GPU worker to heartbeat")
        yield running


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny-bert", demo_texts(), 300, hidden=32)


def evaluate(platform: Platform, checkpoint: Path, slug: str, *extra: str) -> dict:
    """Submit the checkpoint on the probe's benchmark; the submission, once its score job ended."""
    submitted = platform.submit("--model", str(checkpoint), "--benchmark", f"{slug}-bench", "--overrides", OVERRIDES,
                                *extra)  # fmt: skip
    jobs = {job["kind"]: job["id"] for job in submitted["jobs"]}
    platform.wait_for_job(jobs["score"], ("succeeded", "failed", "cancelled"), timeout=300)
    return {**submitted, "jobs": {kind: platform.job(job_id) for kind, job_id in jobs.items()}}


def pinned(job: dict, slug: str) -> str:
    (pin,) = [pin for pin in job["spec"]["code"] if pin["name"] == slug]
    return pin["version"]


def recorded_value(platform: Platform, finetune_job: int) -> float:
    (row,) = platform.query("SELECT value FROM leaderboard_result WHERE job_id = ?", finetune_job)
    return row["value"]


@pytest.mark.parametrize("editable", [True, False], ids=["editable", "regular"])
def test_a_plugin_reinstalled_from_another_folder_runs_its_new_code_under_its_new_version(
    platform, against_postgres, checkpoint, tmp_path, editable
):
    slug = f"probe-{'e' if editable else 'r'}"
    module = slug.replace("-", "_")
    pip_install(platform.python, write_plugin(tmp_path / "a", module, slug, "0.1.0", 11.0), editable=editable)
    platform.manage("sync_plugins")
    platform.manage("import_dataset", slug)
    first = evaluate(platform, checkpoint, slug)
    assert first["jobs"]["score"]["status"] == "succeeded", first["jobs"]
    assert pinned(first["jobs"]["finetune"], slug) == pinned(first["jobs"]["score"], slug) == "0.1.0"
    assert recorded_value(platform, first["jobs"]["finetune"]["id"]) == 11.0

    pip_install(platform.python, write_plugin(tmp_path / "b", module, slug, "0.2.0", 22.0), editable=editable)
    platform.manage("sync_plugins")
    second = evaluate(platform, checkpoint, slug)  # other pinned code: a new evaluation, not the first reused
    assert second["submission"] != first["submission"] and second["jobs"]["score"]["status"] == "succeeded"
    assert pinned(second["jobs"]["finetune"], slug) == pinned(second["jobs"]["score"], slug) == "0.2.0"
    assert recorded_value(platform, second["jobs"]["finetune"]["id"]) == 22.0  # the new code scored it
    # The CPU worker says it reloaded (from 0.1.0, or from nothing in a pool process that had not looked yet).
    reloaded = next(line for line in second["jobs"]["score"]["log"].splitlines() if line.startswith("reloaded"))
    assert f"biolm-{slug} 0.1.0 -> 0.2.0" in reloaded or f"biolm-{slug} 0.2.0 installed" in reloaded
    assert "the installed plugins changed since the last job" in second["jobs"]["finetune"]["log"]  # and the GPU's
    (plugin,) = platform.query("SELECT version, fingerprint FROM registry_plugin WHERE name = ?", slug)
    assert plugin["version"] == "0.2.0" and plugin["fingerprint"].startswith("sha256:")


def test_a_host_running_other_code_than_a_job_pins_hands_it_back_uncharged_until_it_runs_the_pinned_code(
    platform, against_postgres, checkpoint, tmp_path
):
    slug, module = "probe-m", "probe_m"
    pip_install(platform.python, write_plugin(tmp_path / "b", module, slug, "0.2.0", 22.0), editable=True)
    platform.manage("sync_plugins")
    platform.manage("import_dataset", slug)
    platform.kill("gpu-reinstall")  # the job waits for a GPU worker while the plugin goes back to 0.1.0
    submitted = platform.submit("--model", str(checkpoint), "--benchmark", f"{slug}-bench", "--overrides", OVERRIDES)
    finetune = next(job["id"] for job in submitted["jobs"] if job["kind"] == "finetune")
    assert pinned(platform.job(finetune), slug) == "0.2.0"
    pip_install(platform.python, write_plugin(tmp_path / "a", module, slug, "0.1.0", 11.0), editable=True)
    platform.start_gpu_worker("gpu-reinstall")
    expected = f"host gpu-reinstall@harness runs biolm-{slug} 0.1.0, the job pins biolm-{slug} 0.2.0 (job #{finetune})"
    wait_until(lambda: platform.query("SELECT code_note FROM jobs_worker WHERE name = 'gpu-reinstall@harness'")
               == [{"code_note": expected}], 120, "the worker to hand the job back, saying why")  # fmt: skip
    waiting = platform.job(finetune)
    assert (waiting["status"], waiting["attempts"], waiting["failure_cause"]) == ("queued", 0, "")  # not charged
    assert "handed back, no attempt charged" in platform.log("gpu-reinstall")

    pip_install(platform.python, write_plugin(tmp_path / "b", module, slug, "0.2.0", 22.0), editable=True)  # upgraded
    done = platform.wait_for_job(finetune, ("succeeded", "failed"), timeout=300)
    assert done["status"] == "succeeded" and done["attempts"] == 1, done
    assert platform.query("SELECT code_note FROM jobs_worker WHERE name = 'gpu-reinstall@harness'") == [
        {"code_note": ""}
    ]  # it runs the pinned code now
