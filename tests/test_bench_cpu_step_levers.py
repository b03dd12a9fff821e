"""bench.cpu_step_levers: the CPU fine-tuning step's remaining levers, measured in one process."""

from __future__ import annotations

import json

import pytest

from bench import cpu_step_levers


def test_the_levers_tool_measures_every_figure_it_names(tmp_path, capsys):
    assert cpu_step_levers.main(["--out", str(tmp_path), "--tiny", "--steps", "2", "--rounds", "2"]) == 0
    result = json.loads((tmp_path / "cpu_step_levers.json").read_text(encoding="utf-8"))
    assert set(result["matmul_gflops"]) == {"cube_1024", "feed_forward", "input_gradient", "weight_gradient", "qkv"}
    assert all(rate > 0 for rate in result["matmul_gflops"].values())
    phases = result["phases_ms"]
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["update"] > 0
    assert 10 <= phases["real_tokens_per_step"] <= 60 * 32
    shares = result["profile"]["share_by_kind"]
    assert sum(shares.values()) == pytest.approx(1.0)
    assert {"matmul", "dropout", "optimizer"} <= set(shares)  # the step's products, its masks and its update
    assert result["profile"]["profiled_steps"] == 2 and result["profile"]["busy_ms_per_step"] > 0
    assert set(result["variants"]) == set(cpu_step_levers.VARIANTS)
    for figure in result["variants"].values():
        assert len(figure["rounds_ms"]) == 2 and figure["ms_per_step"] > 0 and figure["faults_per_step"] >= 0
    assert result["variants"]["base"]["ratio_to_base"] == pytest.approx(1.0)
    assert "torch_compile" not in result  # only with --compile, which takes about a minute
    printed = capsys.readouterr().out
    assert "minor faults per step" in printed and "CPU self time by kind: " in printed
