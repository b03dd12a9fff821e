"""One dated dump of every public result (leaderboard.results_dump): written, served, linked, and loaded back.

The board is tests/web_fixture.py's: five public models on BLURB-mini (one of them with a result of its own on
each dataset's seeds), papers' numbers on BLURB, and one private model, whose results must not be in the file.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from web_fixture import PRIVATE_MODEL, PUBLIC_MODELS, SNAPSHOT_DATE, build_web_fixture

from leaderboard.results_dump import COLUMNS, dump_name, hub_id, write_dump

pytestmark = pytest.mark.django_db
DAY = dt.date(2026, 12, 4)


@pytest.fixture
def board(artefact_store):
    return build_web_fixture()


def lines(client, url: str) -> list[dict]:
    response = client.get(url)
    assert response.status_code == 200, url
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_the_dump_has_every_public_result_in_the_documented_columns_and_no_private_one(board, client):
    dump = write_dump(DAY)
    rows = lines(client, f"/exports/results-{DAY.isoformat()}.jsonl")
    assert len(rows) == dump.lines > 0 and lines(client, "/exports/results.jsonl") == rows  # the latest is this one
    assert all(list(row) == sorted(COLUMNS) for row in rows)  # every column, every line
    models = {row["model"] for row in rows}
    assert {board.models[m.slug].address for m in PUBLIC_MODELS} <= models
    assert board.models[PRIVATE_MODEL.slug].address not in models
    ours = [row for row in rows if row["origin"] == "reproduced" and row["benchmark"] == "blurb-mini"]
    assert ours and all(row["dump_date"] == "2026-12-04" and row["layout_version"] == 1 for row in rows)
    for row in ours:
        assert len(row["run_values"]) == row["n_runs"] and row["statistic"] in ("mean", "median")
        assert abs(sum(row["run_values"]) / len(row["run_values"]) - row["value"]) < 1e-6
        assert isinstance(json.loads(row["plugin_pins"]), list)
    reported = [row for row in rows if row["origin"] == "reported"]
    assert all(row["statistic"] == "reported" and row["run_values"] == [] for row in reported)


def test_the_dump_loads_with_the_datasets_library_with_no_type_errors(board, artefact_store, tmp_path):
    import datasets

    write_dump(DAY)
    path = artefact_store / "store" / dump_name(DAY)
    loaded = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache"))
    assert set(loaded.column_names) == set(COLUMNS) and len(loaded) > 0
    types = {name: str(feature.dtype) if hasattr(feature, "dtype") else type(feature).__name__
             for name, feature in loaded.features.items()}  # fmt: skip
    assert types["value"] == "float64" and types["std"] == "float64" and types["n_runs"] == "int64"
    assert types["preview"] == "bool" and types["plugin_pins"] == "string" and types["model"] == "string"
    assert type(loaded.features["run_values"]).__name__ in ("List", "Sequence", "LargeList")


def test_a_snapshot_page_links_the_dump_of_its_day_once_one_is_written(board, client):
    page = f"/leaderboard/blurb-mini/{SNAPSHOT_DATE.isoformat()}/"
    assert "/exports/results-" not in client.get(page).content.decode()
    write_dump(SNAPSHOT_DATE)
    assert f'href="/exports/results-{SNAPSHOT_DATE.isoformat()}.jsonl"' in client.get(page).content.decode()
    assert client.get("/exports/results-2020-01-01.jsonl").status_code == 404


def test_export_results_writes_the_days_file_and_refuses_a_bad_date(board, artefact_store):
    from django.core.management import CommandError, call_command

    call_command("export_results", "--date", "2026-12-05")
    assert (artefact_store / "store" / "exports" / "results-2026-12-05.jsonl").is_file()
    with pytest.raises(CommandError, match="expected YYYY-MM-DD"):
        call_command("export_results", "--date", "12/05/2026")


def test_only_a_hub_id_is_given_as_one_not_a_path_or_an_address():
    assert hub_id("microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract") == (
        "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract"
    )
    assert hub_id("/srv/models/bert") == hub_id("s3://bucket/model") == hub_id("") == hub_id("a/b/c") == ""


def test_the_readers_guide_documents_exactly_the_dumps_columns():
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "readers.md").read_text(encoding="utf-8")
    section = guide.split("### Every public result in one file", 1)[1].split("\n## ", 1)[0]
    documented = [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")]
    assert documented == list(COLUMNS)
