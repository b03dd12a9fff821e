"""A plugin's bugs are the plugin's: which contributed code raised, named in one line (``biolm.plugin_faults``).

A real plugin package is written to a temporary folder and registered like any plugin: a metric
that divides by zero in a helper, ones that return NaN, 250 or a word, one that runs out of memory, a
reader shared by two datasets that raises ``ValueError``, a reader that refuses its file the
documented way, and readers that yield nothing, or nothing for a split. A metric that returns a
wrong value and a reader that yields nothing are reported as what they did, not as an exception.
The engine's command line reports the raising metric and the empty reader with exit status 3 and
one line, which the GPU worker turns into a plugin failure; ``manage.py import_dataset`` says the
same line and imports nothing.
"""

from __future__ import annotations

import importlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biolm.corpus import apply_preprocessors
from biolm.dataset_io import DataFormatError, load_canonical_files, load_dataset_files
from biolm.engine_exits import PLUGIN_FAULT, failure_cause, failure_summary
from biolm.plugin_faults import PluginFault, blame
from biolm.specs import ContractBreach, ImplementationError
from tests.distributions import install_distribution
from tests.faulty_plugin import CORPUS, METRICS, READER, line_of, loaded, write_package, write_polarity_splits

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


@pytest.mark.parametrize(
    ("slug", "definition", "conduct"),
    [
        ("acme-nan", "def not_a_number(gold, predictions):", "returned nan, not a finite number"),
        ("acme-text", "def a_word(gold, predictions):", "returned 'excellent', not a finite number"),
        (
            "acme-percent",
            "def above_a_hundred(gold, predictions):",
            "returned 250.0, outside its range [0.0, 100.0] (the 0-100 scale?)",
        ),
    ],
)
def test_a_metric_that_returns_a_wrong_value_is_reported_as_what_it_returned_at_its_definition(
    contributions, slug, definition, conduct
):
    exc = raised(lambda: contributions.metrics[slug].compute(["up"], ["up"]))
    assert isinstance(exc, ContractBreach) and isinstance(exc, ImplementationError)  # the engine stops on either
    fault = blame(exc, contributions)
    location = f"acme_faulty/metrics.py:{line_of(METRICS, definition)}"
    assert (fault.plugin, fault.kind, fault.slug, fault.location, fault.conduct) == (
        "acme", "metrics", slug, location, conduct
    )  # fmt: skip
    assert str(fault) == f"plugin acme: metric {slug!r} {conduct} (defined at {location})"
    assert "raised" not in str(fault) and "ImplementationError" not in str(fault)


def test_an_empty_read_is_the_plugins_even_where_the_folder_names_the_machines_words(contributions, tmp_path):
    """A path with "cuda" in it must not make a reader's empty read look like a CUDA failure."""
    folder = write_polarity_splits(tmp_path / "cuda-out-of-memory-runs", {"train": 2, "dev": 2, "test": 2})
    exc = raised(lambda: load_dataset_files(contributions.datasets["acme-untrained"], folder))
    assert blame(exc, contributions).slug == "acme-untrained"


def test_a_reader_shared_by_two_datasets_is_blamed_on_the_dataset_being_read(contributions):
    spec = contributions.datasets["acme-b"]
    exc = raised(lambda: load_dataset_files(spec, Path(spec.adapter.default_path)))
    fault = blame(exc, contributions, dataset="acme-b")
    assert (fault.kind, fault.slug, fault.exception) == ("datasets", "acme-b", "ValueError: line 2 has no label")
    line = line_of(READER, '    raise ValueError("line 2 has no label")')
    assert fault.location == f"acme_faulty/reader.py:{line}"
    assert str(fault).startswith("plugin acme: dataset reader 'acme-b' raised ValueError")


def test_a_reader_that_yields_no_examples_is_blamed_on_its_plugin_naming_the_folder(contributions):
    spec = contributions.datasets["acme-empty"]
    folder = Path(spec.adapter.default_path)
    exc = raised(lambda: load_dataset_files(spec, folder))
    assert isinstance(exc, ContractBreach) and not isinstance(exc, DataFormatError)
    line = line_of(READER, "def nothing(directory, **options):")
    assert str(blame(exc, contributions, dataset="acme-empty")) == (
        f"plugin acme: dataset reader 'acme-empty' yielded no examples from {folder} "
        f"(defined at acme_faulty/reader.py:{line})"
    )


def test_a_reader_that_yields_nothing_for_a_split_the_dataset_needs_is_blamed_not_called_a_missing_split(
    contributions,
):
    spec = contributions.datasets["acme-untrained"]
    folder = Path(spec.adapter.default_path)
    fault = blame(raised(lambda: load_dataset_files(spec, folder)), contributions, dataset="acme-untrained")
    line = line_of(READER, "def sideways_only(directory, **options):")
    assert str(fault) == (
        f"plugin acme: dataset reader 'acme-untrained' yielded no train examples from {folder} "
        f"(defined at acme_faulty/reader.py:{line})"
    )
    assert "missing" not in str(fault)


def test_an_optional_split_read_empty_is_noted_as_absent_not_blamed(contributions):
    spec = contributions.datasets["acme-no-dev"]
    loaded = load_dataset_files(spec, Path(spec.adapter.default_path))
    assert loaded.sizes == {"train": 24, "test": 8}
    assert loaded.notes == ["dev split absent from this distribution"]


def test_the_workers_copy_read_empty_is_not_charged_to_the_plugin(contributions, tmp_path):
    """A worker reads the platform's canonical export with the platform's reader, not the plugin's."""
    folder = write_polarity_splits(tmp_path / "export", {"train": 0, "dev": 2, "test": 2})
    (folder / "train.jsonl").write_text("\n")
    with pytest.raises(DataFormatError, match="missing the train split"):
        load_canonical_files(contributions.datasets["acme-untrained"], folder)


@pytest.mark.django_db
def test_importing_a_dataset_whose_reader_yields_nothing_names_the_plugin_and_imports_nothing(
    monkeypatch, settings, tmp_path
):
    from django.core.management import CommandError, call_command

    from registry.management.commands import import_dataset
    from registry.models import DatasetImport
    from registry.sync import sync_contributions

    settings.BIOLM_VAR_DIR = tmp_path / "var"
    with loaded(tmp_path / "acme") as contributions:
        sync_contributions(contributions)
        monkeypatch.setattr(import_dataset, "load_contributions", lambda: contributions)
        stderr = io.StringIO()
        with pytest.raises(CommandError) as error:
            call_command("import_dataset", "acme-empty", stdout=io.StringIO(), stderr=stderr)
        folder = contributions.datasets["acme-empty"].adapter.default_path
    line = line_of(READER, "def nothing(directory, **options):")
    message = str(error.value)
    assert message.startswith(
        f"acme-empty: plugin acme: dataset reader 'acme-empty' yielded no examples from {folder} "
        f"(defined at acme_faulty/reader.py:{line})"
    )
    assert "\n" not in message and "Traceback" not in stderr.getvalue() and "missing" not in message
    assert not DatasetImport.objects.filter(dataset__slug="acme-empty").exists()
    assert not (tmp_path / "var" / "datasets" / "acme-empty").exists()


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


@pytest.mark.slow
def test_the_engine_reports_a_reader_that_yields_nothing_as_the_plugins_fault_in_one_line(installed, tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(installed), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [
        sys.executable, "-m", "workers.engine", "finetune", "--architecture", "bert:tiny", "--dataset", "acme-empty",
        "--grid", "single", "--seeds", "1", "--epochs", "1", "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    finished = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert finished.returncode == PLUGIN_FAULT, finished.stderr[-3000:]
    line = line_of(READER, "def nothing(directory, **options):")
    expected = (
        f"plugin acme (acme-faulty 0.3): dataset reader 'acme-empty' yielded no examples from "
        f"{installed / 'acme_faulty' / 'data'} (defined at acme_faulty/reader.py:{line})"
    )
    log = finished.stdout + finished.stderr
    assert finished.stderr.strip().splitlines()[-1] == f"error: {expected}"
    assert failure_cause(finished.returncode, log) == "plugin"
    assert failure_summary(finished.returncode, log) == expected
