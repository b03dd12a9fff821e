"""``bench time_to_leaderboard``: BLURB's full protocol scheduled on simulated GPU workers, sliced as the platform
queues it and as one job per dataset, with the efficiency goals checked."""

from __future__ import annotations

import json

import pytest

from bench import time_to_leaderboard as bench
from bench.time_to_leaderboard import Job, schedule


def test_the_schedule_runs_ready_jobs_at_once_and_a_dependent_one_after_what_it_waits_for():
    jobs = [Job(0, "a", "slice", 10), Job(1, "a", "slice", 10), Job(2, "a", "finetune", 5, [0, 1]),
            Job(3, "a", "score", 1, [2], "cpu")]  # fmt: skip
    assert schedule(jobs, 2)["wall_seconds"] == 16  # both points at once, then the gather, then the score
    assert schedule(jobs, 1)["wall_seconds"] == 26
    assert schedule(jobs, 2)["gpu_busy_seconds"] == 25


def test_ready_jobs_go_out_in_the_order_they_were_queued():
    jobs = [Job(0, "a", "slice", 10), Job(1, "b", "slice", 1), Job(2, "b", "slice", 1, [1])]
    run = schedule([*jobs, Job(3, "a", "score", 0, [0], "cpu"), Job(4, "b", "score", 0, [2], "cpu")], 1)
    assert run["scored_at_seconds"] == {"a": 10, "b": 12}


@pytest.mark.official_data
def test_blurbs_sliced_protocol_meets_the_efficiency_goals_and_beats_one_job_per_dataset(tmp_path, official_data):
    for folder in ("GAD", "BIOSSES", "HoC", "PubMedQA", "BioASQ"):  # the datasets whose rates are derived
        official_data(folder, "blurb")
    result = bench.run(bench.Config(workers="1,2,8,16", figures=str(tmp_path / "none.json")), tmp_path)
    assert json.loads((tmp_path / "time_to_leaderboard.json").read_text())["goals"] == result["goals"]
    assert result["figures_from"].startswith("docs/performance.md")
    assert set(result["not_scheduled"]) == {"ebm-pico"}
    # Per dataset 6 points, the selection, the further seeds (4, or 9 on BIOSSES, PubMedQA and BioASQ), the
    # gather and the score job; PICO left out.
    assert result["jobs"] == {"sliced": 9 * (6 + 1 + 4 + 1 + 1) + 3 * (6 + 1 + 9 + 1 + 1), "one_per_dataset": 12 * 2}
    sliced, whole = result["sliced"], result["one_per_dataset"]
    assert sliced["1"]["efficiency"] == whole["1"]["efficiency"] == 1.0
    assert all(result["goals"][n]["met"] for n in ("8", "16")), result["goals"]
    assert sliced["16"]["wall_seconds"] < whole["16"]["wall_seconds"] / 1.5
    assert all(g["source"] == "recorded" for s, g in result["durations"].items() if s in bench.RECORDED_EPOCH_SECONDS)
