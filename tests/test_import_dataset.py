"""Importing official files: all or nothing, recorded with sizes and fingerprint, gold labels never shown."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from official_data import data_dir

from registry.models import Dataset, DatasetImport

pytestmark = pytest.mark.django_db


@pytest.fixture
def biosses(official_data) -> Path:
    """BLURB's BIOSSES folder in the official data folder."""
    return official_data("BIOSSES", "blurb")


needs_biosses = pytest.mark.usefixtures("biosses")


@pytest.fixture(autouse=True)
def isolated_storage(settings, tmp_path):
    settings.BIOLM_VAR_DIR = tmp_path / "var"
    settings.BIOLM_DATA_DIR = data_dir()
    return tmp_path / "var"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@needs_biosses
def test_import_records_sizes_labels_fingerprint_and_stores_a_loadable_datasetdict(isolated_storage):
    from datasets import load_from_disk

    out = run("import_dataset", "biosses")
    assert "biosses: imported" in out and "train 64, dev 16, test 20" in out
    record = DatasetImport.objects.get(dataset__slug="biosses")
    assert record.split_sizes == {"train": 64, "dev": 16, "test": 20}
    assert len(record.fingerprint) == 16
    assert Path(record.stored_path).is_relative_to(isolated_storage)
    stored = load_from_disk(record.stored_path)
    assert stored["test"].num_rows == 20
    assert set(stored["train"].column_names) == {"id", "text", "text_pair", "score"}
    assert len(record.longest_examples) == 3 and {"split", "id", "length"} <= set(record.longest_examples[0])


@needs_biosses
def test_importing_the_same_content_twice_keeps_one_record():
    run("import_dataset", "biosses")
    second = json.loads(run("import_dataset", "biosses", "--json"))
    assert second[0]["created"] is False
    assert DatasetImport.objects.filter(dataset__slug="biosses").count() == 1


@needs_biosses
def test_a_malformed_copy_fails_with_file_and_line_and_leaves_nothing_behind(tmp_path, isolated_storage, biosses):
    broken = tmp_path / "biosses-broken"
    shutil.copytree(biosses, broken)
    lines = (broken / "dev.tsv").read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace("\t", " ", 1)  # the fourth line loses a column
    (broken / "dev.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CommandError) as error:
        run("import_dataset", "biosses", "--path", str(broken))
    assert f"{broken / 'dev.tsv'}:4:" in str(error.value)
    assert "column" in str(error.value)
    assert not DatasetImport.objects.filter(dataset__slug="biosses").exists()
    assert not any((isolated_storage / "datasets").rglob("*.arrow"))


@needs_biosses
def test_a_database_failure_after_storing_removes_the_stored_copy(monkeypatch, isolated_storage):
    def fail(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(DatasetImport.objects, "update_or_create", fail)
    with pytest.raises(RuntimeError, match="database went away"):
        run("import_dataset", "biosses")
    assert not any((isolated_storage / "datasets").rglob("*.arrow"))


def test_unknown_dataset_names_a_suggestion():
    with pytest.raises(CommandError, match=r"unknown dataset 'biosess' \(did you mean 'biosses'\?\)"):
        run("import_dataset", "biosess")


def test_a_missing_directory_is_reported():
    with pytest.raises(CommandError, match="no-such-dir: is not a directory"):
        run("import_dataset", "biosses", "--path", "/no-such-dir")


@needs_biosses
def test_datasets_lists_registered_available_and_missing_with_where_to_get_them(official_data):
    official_data("NCBI-disease", "blurb")  # listed as available
    run("import_dataset", "biosses")
    listing = {row["dataset"]: row for row in json.loads(run("datasets", "--json"))}
    assert listing["biosses"]["status"] == "registered"
    assert listing["biosses"]["imported_sizes"] == {"train": 64, "dev": 16, "test": 20}
    assert listing["biosses"]["paper_splits"]["train"] == {"size": 64, "unit": "pairs"}
    assert listing["ncbi-disease"]["status"] == "available"
    assert listing["mednli"]["status"] == "missing" and listing["mednli"]["access"] == "restricted"
    text = run("datasets")
    assert "restricted: bring your own files" in text
    assert "`manage.py import_dataset ncbi-disease`" in text


def test_datasets_leaves_out_the_source_of_a_missing_dataset_whose_spec_names_none(settings, tmp_path, monkeypatch):
    import dataclasses

    import registry.management.commands.datasets as command
    from registry.sync import load_contributions

    settings.BIOLM_DATA_DIR = tmp_path / "no-data"  # every dataset is missing
    contributions = load_contributions()
    with_source = contributions.datasets["mednli"]
    assert with_source.source
    contributions.datasets["mednli"] = dataclasses.replace(with_source, source="")
    monkeypatch.setattr(command, "load_contributions", lambda: contributions)
    text = run("datasets")
    lines = text.splitlines()
    mednli = next(i for i, line in enumerate(lines) if line.strip().startswith("mednli "))
    where = next(line for line in lines[mednli + 1 :] if "bring your own files" in line or "not found" in line)
    assert where.strip() == "restricted: bring your own files"  # no dangling "; source: "
    assert not any(line.rstrip().endswith("source:") for line in lines)
    assert "; source: " in text  # the datasets that name one still say where to get them
    listing = {row["dataset"]: row for row in json.loads(run("datasets", "--json"))}
    assert listing["mednli"]["source"] == ""


@needs_biosses
def test_test_split_gold_labels_and_texts_never_appear_on_any_page(client, django_user_model, biosses):
    from biolm.dataset_io import read_tsv

    run("import_dataset", "biosses")
    test_rows = [fields for _, fields in read_tsv(biosses / "test.tsv", 4, header=None)][1:]
    admin = django_user_model.objects.create_superuser("root", "root@example.org", "root-password-123")
    client.force_login(admin)
    record = DatasetImport.objects.get(dataset__slug="biosses")
    pages = [
        "/",
        "/datasets/",
        "/datasets/biosses/",
        "/leaderboard/blurb/",
        "/admin/registry/datasetimport/",
        f"/admin/registry/datasetimport/{record.pk}/change/",
        f"/admin/registry/dataset/{Dataset.objects.get(slug='biosses').pk}/change/",
    ]
    for page in pages:
        html = client.get(page).content.decode()
        for _pair_id, sentence1, sentence2, _score in test_rows:
            assert sentence1[:60] not in html, page
            assert sentence2[:60] not in html, page


def test_dataset_page_shows_terms_and_how_to_bring_restricted_files(client):
    html = client.get("/datasets/mednli/").content.decode()
    assert "restricted" in html
    assert "import_dataset mednli --path DIR" in html
    assert "Licence and terms" in html


def test_datasets_compares_files_with_the_paper_in_the_papers_unit(official_data):
    official_data("BC5-disease", "blurb")
    run("import_dataset", "bc5-disease")
    row = next(r for r in json.loads(run("datasets", "--json")) if r["dataset"] == "bc5-disease")
    assert row["imported_sizes"] == {"train": 4560, "dev": 4581, "test": 4797}  # sentences
    assert row["imported_paper_unit_sizes"] == {"train": 4182, "dev": 4246, "test": 4424}  # mentions
    assert row["differs_from_paper"] == {"dev": {"paper": 4244, "files": 4246}}
    assert "differs:  dev has 4,246 in the files, 4,244 in the paper" in run("datasets")


def test_a_plugin_reader_that_raises_is_reported_in_one_line_naming_the_plugin_never_as_a_traceback(
    monkeypatch, tmp_path, isolated_storage
):
    from registry.management.commands import import_dataset
    from registry.sync import sync_contributions
    from tests.faulty_plugin import READER, line_of, loaded

    with loaded(tmp_path / "acme") as contributions:
        sync_contributions(contributions)
        monkeypatch.setattr(import_dataset, "load_contributions", lambda: contributions)
        stderr = io.StringIO()
        with pytest.raises(CommandError) as error:
            call_command("import_dataset", "acme-a", stdout=io.StringIO(), stderr=stderr)
    line = line_of(READER, '    raise ValueError("line 2 has no label")')
    message = str(error.value)
    assert message.startswith(
        f"acme-a: plugin acme: dataset reader 'acme-a' raised ValueError: line 2 has no label "
        f"at acme_faulty/reader.py:{line} (raise biolm.errors.DataFormatError"
    )
    assert "\n" not in message and "Traceback" not in stderr.getvalue()
    assert not DatasetImport.objects.filter(dataset__slug="acme-a").exists()


def test_a_plugin_reader_refusing_its_file_is_reported_with_the_file_and_line(monkeypatch, tmp_path, isolated_storage):
    from registry.management.commands import import_dataset
    from registry.sync import sync_contributions
    from tests.faulty_plugin import loaded

    with loaded(tmp_path / "acme") as contributions:
        sync_contributions(contributions)
        monkeypatch.setattr(import_dataset, "load_contributions", lambda: contributions)
        with pytest.raises(CommandError, match=r"acme-refusing: .*train\.tsv:2: expected 3 columns, found 2$"):
            call_command("import_dataset", "acme-refusing", stdout=io.StringIO())
