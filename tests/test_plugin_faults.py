"""A plugin's bugs are the plugin's: which contributed code raised, named in one line (``biolm.plugin_faults``).

A real plugin package is written to a temporary folder and registered like any plugin: a metric
that divides by zero in a helper, one that returns NaN, one that runs out of memory, a reader
shared by two datasets that raises ``ValueError``, and a reader that refuses its file the
documented way. The engine's command line reports the raising metric with exit status 3 and one
line, which the GPU worker turns into a plugin failure.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biolm.corpus import apply_preprocessors
from biolm.dataset_io import load_dataset_files
from biolm.plugin_faults import PluginFault, blame
from biolm.specs import ImplementationError
from tests.distributions import install_distribution
from tests.faulty_plugin import CORPUS, METRICS, READER, line_of, loaded, write_package
from workers.engine.exit_status import PLUGIN_FAULT
from workers.runner.execution import failure_cause, failure_summary

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def contributions(tmp_path_factory):
    with loaded(tmp_path_factory.mktemp("acme")) as contributions:
        yield contributions


def raised(call) -> BaseException:
    try:
        call()
    except BaseException as exc:
        return exc
    raise AssertionError("it did not raise")


def test_a_metric_that_raises_is_blamed_on_its_plugin_at_the_line_of_the_plugins_code(contributions):
    exc = raised(lambda: contributions.metrics["acme-zero"].compute(["up"], ["up"]))
    fault = blame(exc, contributions)
    line = line_of(METRICS, "    return 100 * a / b")
    assert fault == PluginFault("acme", "metrics", "acme-zero", "ZeroDivisionError: division by zero",
                                f"acme_faulty/metrics.py:{line}")  # fmt: skip
    assert str(fault) == (
        f"plugin acme: metric 'acme-zero' raised ZeroDivisionError: division by zero at acme_faulty/metrics.py:{line}"
    )
    assert "\n" not in str(fault)


def test_a_metric_that_breaks_its_contract_is_blamed_at_its_definition(contributions):
    exc = raised(lambda: contributions.metrics["acme-nan"].compute(["up"], ["up"]))
    assert isinstance(exc, ImplementationError)
    fault = blame(exc, contributions)
    assert (fault.plugin, fault.kind, fault.slug) == ("acme", "metrics", "acme-nan")
    assert fault.location == f"acme_faulty/metrics.py:{line_of(METRICS, 'def not_a_number(gold, predictions):')}"
    assert "returned nan, not a finite number" in fault.exception


def test_a_reader_shared_by_two_datasets_is_blamed_on_the_dataset_being_read(contributions):
    spec = contributions.datasets["acme-b"]
    exc = raised(lambda: load_dataset_files(spec, Path(spec.adapter.default_path)))
    fault = blame(exc, contributions, dataset="acme-b")
    assert (fault.kind, fault.slug, fault.exception) == ("datasets", "acme-b", "ValueError: line 2 has no label")
    line = line_of(READER, '    raise ValueError("line 2 has no label")')
    assert fault.location == f"acme_faulty/reader.py:{line}"
    assert str(fault).startswith("plugin acme: dataset reader 'acme-b' raised ValueError")


def test_a_reader_refusing_a_file_the_documented_way_is_not_a_plugin_fault(contributions):
    spec = contributions.datasets["acme-refusing"]
    exc = raised(lambda: load_dataset_files(spec, Path(spec.adapter.default_path)))
    assert blame(exc, contributions, dataset="acme-refusing") is None


def test_a_formulation_refusing_its_input_is_not_a_fault_but_its_key_error_is(contributions):
    formulation = importlib.import_module("acme_faulty.formulation").Polarity()
    assert blame(raised(lambda: formulation.encode([])), contributions) is None  # ValueError: its contract's refusal
    fault = blame(raised(lambda: formulation.encode([{"text": "x"}])), contributions)
    assert (fault.kind, fault.slug, fault.exception) == ("task_types", "acme-polarity", "KeyError: 'polarity'")
    assert str(fault).startswith("plugin acme: task type formulation 'acme-polarity' raised KeyError")


def test_a_corpus_preprocessor_that_fails_mid_stream_is_blamed_on_its_plugin(contributions):
    stream = apply_preprocessors(["id|A title|text", "no title here"], [contributions.preprocessors["acme-titles"]])
    assert next(stream) == "A title"
    fault = blame(raised(lambda: next(stream)), contributions)
    line = line_of(CORPUS, '        yield document.split("|")[1]')
    assert str(fault) == (
        "plugin acme: corpus preprocessor 'acme-titles' raised IndexError: list index out of range "
        f"at acme_faulty/corpus.py:{line}"
    )


def test_running_out_of_memory_in_a_plugin_is_the_machines_failure_not_the_plugins(contributions):
    exc = raised(lambda: contributions.metrics["acme-oom"].compute(["up"], ["up"]))
    assert isinstance(exc, MemoryError) and blame(exc, contributions) is None
    cuda = RuntimeError("CUDA error: an illegal memory access was encountered")
    assert blame(cuda, contributions) is None


def test_an_exception_of_the_platforms_own_code_is_not_blamed_on_a_plugin(contributions):
    exc = raised(lambda: {}["language_model"])
    assert blame(exc, contributions) is None


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    source = write_package(tmp_path_factory.mktemp("acme-source"))
    files = {str(p.relative_to(source)): p.read_text() for p in source.rglob("*") if p.is_file()}
    package_data = '\n[tool.setuptools.package-data]\nacme_faulty = ["data/*.jsonl"]\n'
    return install_distribution(
        tmp_path_factory.mktemp("acme-build"), tmp_path_factory.mktemp("site"), "acme-faulty", "0.3", files,
        {"acme": "acme_faulty"}, package_data,
    )  # fmt: skip


@pytest.mark.slow
def test_the_engine_reports_a_raising_plugin_metric_in_one_line_and_the_worker_charges_the_plugin(installed, tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(installed), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [
        sys.executable, "-m", "workers.engine", "finetune", "--architecture", "bert:tiny", "--dataset", "acme-scored",
        "--grid", "single", "--seeds", "1", "--epochs", "1", "--max_length", "32", "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    finished = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert finished.returncode == PLUGIN_FAULT, finished.stderr[-3000:]
    line = line_of(METRICS, "    return 100 * a / b")
    expected = (
        "plugin acme (acme-faulty 0.3): metric 'acme-zero' raised ZeroDivisionError: division by zero "
        f"at acme_faulty/metrics.py:{line}"
    )
    lines = finished.stderr.strip().splitlines()
    assert lines[-1] == f"error: {expected}"
    assert "Traceback (most recent call last)" in finished.stderr  # kept for the job's log
    log = finished.stdout + finished.stderr
    assert failure_cause(finished.returncode, log) == "plugin"
    assert failure_summary(finished.returncode, log) == expected
