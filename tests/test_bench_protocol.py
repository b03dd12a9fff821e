"""``python -m bench protocol``: a real submission carried through a real platform, and its cost accounted for.

One dataset (NCBI-disease, 4 training and 8 evaluation examples) under BLURB's grid and seeds (one
epoch per run), with the real MiniLM-L6 checkpoint, real workers and the real engine. No timing is asserted (a shared
two-core machine), only that the figures are consistent with one another and with the protocol.

Not marked ``backend``: the benchmark starts a platform of its own (on the PostgreSQL server that
``DATABASE_URL`` names, else on SQLite), so it runs once in CI, in the first pass, against PostgreSQL
as a deployment would; the embedded-defaults pass would only run the same three minutes again.
"""

from __future__ import annotations

import json
import os

import pytest

from bench import protocol


def database_server() -> str:
    """The PostgreSQL server CI's first pass names, or "" (SQLite, the embedded defaults' pass)."""
    url = os.environ.get("DATABASE_URL", "")
    return url.rsplit("/", 1)[0] if url.startswith("postgres") else ""


@pytest.mark.slow
def test_the_protocol_bench_runs_blurbs_whole_grid_and_seeds_and_accounts_for_every_second(tmp_path, official_data):
    official_data("NCBI-disease", "blurb")
    # One epoch per run keeps BLURB's grid and seeds (what is checked) and the test short; production's
    # allowed silence (30 s), which score jobs keep by heartbeating while they score (jobs/keepalive.py).
    config = protocol.Config(datasets=("ncbi-disease:4",), max_eval_examples=8, overrides='{"epochs": 1}',
                             heartbeat_s=1, stale_s=30, tick_s=1, matmul_size=1024, timeout_s=1500,
                             database_server=database_server())  # fmt: skip
    result = protocol.run(config, tmp_path)
    written = json.loads((tmp_path / "protocol.json").read_text(encoding="utf-8"))
    assert written["overhead_ratio"] == pytest.approx(result["overhead_ratio"])
    ncbi = written["datasets"]["ncbi-disease"]
    # BLURB's protocol: six grid points on dev, then the chosen point's four other seeds.
    assert ncbi["trainings"] == 6 + 4
    assert ncbi["data_sizes"]["train"] == 4 and ncbi["data_sizes"]["test"] == 8
    # The FLOPs count the very tokens the engine trained on.
    flops = ncbi["flops"]
    assert flops["tokens_per_training_as_reported"] == [flops["tokens_per_training_counted_here"]]
    assert flops["trained_tokens"] == 10 * flops["tokens_per_training_counted_here"]
    # The steps are part of the wall time, and the breakdown accounts for all of it.
    assert 0 < ncbi["steps_seconds"] < ncbi["wall_seconds"] <= ncbi["to_result_seconds"]
    assert ncbi["overhead_ratio"] == pytest.approx(ncbi["wall_seconds"] / ncbi["steps_seconds"])
    assert sum(ncbi["breakdown"].values()) == pytest.approx(ncbi["wall_seconds"])
    assert all(seconds > 0 for seconds in ncbi["worker_and_engine_other_measured_apart"].values())
    assert ncbi["breakdown"]["scoring_bootstrap_recording"] > 0
    total = written["total"]
    assert total["overhead_ratio"] == pytest.approx(total["wall_seconds"] / total["steps_seconds"])
    # Needed FLOPs over the wall time, against the peak measured in the same run (a busy machine's peak may
    # come out below what the steps reached, so only the order of the two utilisations is certain).
    peak = written["matmul_peak"]["flops_per_second"]
    assert total["protocol_mfu"] == pytest.approx(total["flops"] / (total["wall_seconds"] * peak))
    assert 0 < total["protocol_mfu"] < total["steps_mfu"]
    assert written["goals"]["met"]["overhead_ratio"] == (total["overhead_ratio"] <= protocol.GOAL_OVERHEAD)
    if written["device"] == "cpu":
        assert written["whole_blurb_projection"] == {"status": "not measured: no GPU", "measured": False}
    assert "ebm-pico" in written["not_measured"]


def test_without_the_official_data_it_says_so_in_one_line_and_is_marked_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BIOLM_DATA_DIR", str(tmp_path / "nowhere"))
    result = protocol.run(protocol.Config(datasets=("ncbi-disease:4",)), tmp_path)
    written = json.loads((tmp_path / "protocol.json").read_text(encoding="utf-8"))
    assert written["skipped"] == result["skipped"]
    assert str(tmp_path / "nowhere") in written["skipped"] and "BIOLM_DATA_DIR" in written["skipped"]
    assert "skipped: official data not found" in capsys.readouterr().out


def test_the_subset_covers_every_blurb_task_type_the_official_data_can_train():
    from biolm.plugins import collect_contributions, get_plugin_manager

    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    blurb = contributions.benchmarks["blurb"]
    groups = {group.slug: set(group.members) for group in blurb.aggregation.groups}
    measured = set(protocol.Config().plan()) | set(protocol.NOT_TRAINABLE)
    assert all(entries & measured for entries in groups.values()), groups
    assert set(protocol.Config().plan()) <= set(protocol.BLURB_DATASETS)
