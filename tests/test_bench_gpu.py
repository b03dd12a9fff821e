"""The GPU figures' code, run here on the CPU: ``bench blurb_gpu`` and fine-tuning's GPU MFU arm.

On a GPU they measure BERT-base on whole datasets (bench/lent_gpu.sh runs them on a bare GPU
machine); here the same functions run with a tiny BERT on a few examples of the official data, so
that what they record and how the projection adds it up is checked where CI runs. No timing is
asserted: only that the figures are consistent with each other and with the protocol.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from bench import blurb_gpu, finetune_throughput

TINY = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}


def measured(epoch32: float, epoch16: float, prediction: float, other32: float, other16: float) -> dict:
    """A dataset's two measured jobs as blurb_gpu records them (one epoch; 1 and 2 trainings)."""
    sizes = {"train": 100, "dev": 40, "test": 60}
    return {
        "bs32": {"trainings": 1, "epochs": 1, "training_seconds": epoch32, "prediction_seconds": prediction,
                 "other_seconds": other32, "sizes": sizes},
        "bs16": {"trainings": 2, "epochs": 1, "training_seconds": 2 * epoch16, "prediction_seconds": 2 * prediction,
                 "other_seconds": other16, "sizes": sizes},
        "protocol": {
            "points": [{"learning_rate": lr, "batch_size": bs, "epochs": 20} for lr in (1e-5, 3e-5, 5e-5)
                       for bs in (16, 32)],
            "seeds": 5,
            "cross_validation": False,
        },
    }  # fmt: skip


def test_the_projection_runs_the_grid_at_its_batch_sizes_and_the_seeds_at_the_slower_one():
    figure = measured(epoch32=2.0, epoch16=3.0, prediction=0.5, other32=4.0, other16=4.25)
    projected = blurb_gpu.project_dataset(figure, process_start=10.0)
    per_run = 0.25  # the batch-16 job ran one training more than the batch-32 job
    at16, at32 = 20 * 3.0 + 0.5 + per_run, 20 * 2.0 + 0.5 + per_run
    assert projected["grid_seconds"] == pytest.approx(3 * at16 + 3 * at32)
    assert projected["seeds_seconds"] == pytest.approx(4 * at16)
    assert projected["fixed_seconds"] == pytest.approx(10.0 + 4.0 - per_run)
    assert projected["seconds"] == pytest.approx(10.0 + 3.75 + 7 * at16 + 3 * at32)
    assert projected["trainings"] == 10


def test_a_cut_dataset_is_scaled_to_its_whole_splits_by_examples():
    figure = measured(epoch32=2.0, epoch16=3.0, prediction=0.5, other32=4.0, other16=4.0)
    whole = {"train": 1000, "dev": 400, "test": 600}
    rates = blurb_gpu.rates(figure, whole)
    assert rates["epoch_seconds"] == {32: pytest.approx(20.0), 16: pytest.approx(30.0)}
    assert rates["prediction_seconds"] == pytest.approx(5.0)
    assert blurb_gpu.project_dataset(figure, 0.0, whole)["seconds"] > blurb_gpu.project_dataset(figure, 0.0)["seconds"]


def test_a_protocol_on_folds_is_refused_rather_than_projected_as_if_it_had_a_test_set():
    figure = measured(2.0, 3.0, 0.5, 4.0, 4.0)
    figure["protocol"]["cross_validation"] = True
    with pytest.raises(ValueError, match="folds"):
        blurb_gpu.project_dataset(figure, 0.0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_without_a_gpu_it_is_marked_skipped_in_one_line(tmp_path, capsys):
    result = blurb_gpu.run(blurb_gpu.Config(), tmp_path)
    assert result["skipped"].startswith("no GPU")
    assert json.loads((tmp_path / "blurb_gpu.json").read_text())["skipped"] == result["skipped"]
    assert "skipped: no GPU" in capsys.readouterr().out
    figure = finetune_throughput.gpu_mfu(finetune_throughput.Config())
    assert figure == {"goal": 0.3, "measured": False, "reason": "not measured: no GPU"}


@pytest.mark.slow
def test_it_measures_each_dataset_with_the_engines_own_jobs_and_projects_its_whole_protocol(tmp_path, official_data):
    official_data("NCBI-disease", "blurb")
    official_data("BIOSSES", "blurb")
    config = blurb_gpu.Config(datasets=("ncbi-disease", "ebm-pico", "biosses"), model="bert:tiny", device="cpu",
                              max_train_examples=12, max_eval_examples=6)  # fmt: skip
    result = blurb_gpu.run(config, tmp_path)
    written = json.loads((tmp_path / "blurb_gpu.json").read_text())
    assert set(written["measured"]) == {"ncbi-disease", "biosses"}
    assert "ebm-pico" in written["not_measured"]
    ncbi = written["measured"]["ncbi-disease"]
    assert (ncbi["bs32"]["trainings"], ncbi["bs16"]["trainings"]) == (1, 2)
    assert ncbi["bs32"]["steps"] == math.ceil(12 / 32) and ncbi["bs16"]["steps"] == 2 * math.ceil(12 / 16)
    assert ncbi["bs32"]["sizes"] == {"train": 12, "dev": 6, "test": 6}
    for job in (ncbi["bs32"], ncbi["bs16"]):  # the job's seconds are its parts
        parts = job["training_seconds"] + job["prediction_seconds"] + job["other_seconds"]
        assert job["wall_seconds"] == pytest.approx(parts) and job["training_seconds"] > 0
    assert ncbi["protocol"]["seeds"] == 5 and len(ncbi["protocol"]["points"]) == 6  # Gu et al. 2021's grid
    assert written["measured"]["biosses"]["protocol"]["seeds"] == 10
    assert written["cut"]["ncbi-disease"]["whole"]["train"] > 12
    projection = written["projection"]
    assert projection["per_dataset"]["ncbi-disease"]["rates"]["train_scale"] == pytest.approx(
        written["cut"]["ncbi-disease"]["whole"]["train"] / 12
    )
    assert projection["projected_minutes"] == pytest.approx(
        sum(p["seconds"] for p in projection["per_dataset"].values()) / 60
    )
    assert result["process_start_seconds"] > 0 and result["matmul_peak"] is None
    partial = json.loads((tmp_path / "blurb_gpu.partial.json").read_text())  # what a cut-short run keeps
    assert partial["measured"] == written["measured"]


@pytest.mark.slow
def test_the_gpu_finetune_figure_runs_the_engines_loop_on_the_whole_training_set_and_reads_mfu(official_data):
    official_data("BC5-chem", "blurb")
    config = finetune_throughput.Config(gpu_device="cpu", train_examples=40, gpu_batch_sizes=(8, 16), gpu_epochs=2,
                                        matmul_size=128)  # fmt: skip
    figure = finetune_throughput.measure_gpu(config, size=TINY)
    assert set(figure["batch_sizes"]) == {"8", "16"} and figure["train_examples"] == 40
    for batch, run in figure["batch_sizes"].items():
        assert run["steps"] == 2 * math.ceil(40 / int(batch))
        assert run["mfu"] == pytest.approx(run["flops"] / run["seconds"] / figure["matmul_peak"]["flops_per_second"])
        assert run["real_tokens"] == figure["batch_sizes"]["8"]["real_tokens"]  # the same sentences at each batch
    assert figure["measured"] is False and figure["met"] == "not measured: no GPU"


@pytest.mark.slow
def test_the_step_profile_times_the_engines_step_and_processes_side_by_side_on_any_device(tmp_path):
    from bench import step_profile

    arguments = ["--out", str(tmp_path), "--device", "cpu", "--tiny", "--steps", "3", "--processes", "2"]
    assert step_profile.main([*arguments, "--seconds", "0.5"]) == 0
    written = json.loads((tmp_path / "step_profile.json").read_text())
    assert written["eager"]["ms_per_step"] > 0 and written["eager"]["device_busy_ms_per_step"] is None
    assert "aten::" in written["eager"]["top_operators"]
    assert {"matmul", "optimizer"} <= set(written["eager"]["ms_per_step_by_kind"])
    counted = written["operators"]
    assert all(0 < counted[phase]["not_views"] <= counted[phase]["all"] for phase in ("forward", "backward", "update"))
    assert counted["total"]["all"] == sum(counted[phase]["all"] for phase in ("forward", "backward", "update"))
    assert written["graph"] == {"measured": False, "reason": "CUDA graphs need a GPU"}
    two = written["side_by_side"]["2"]  # two processes started together, each counting its own steps
    assert len(two["per_process"]) == 2 and min(two["per_process"]) > 0
    assert two["steps_per_second"] == pytest.approx(sum(two["per_process"]))
    assert two["ratio_to_one"] is None  # no single-process round to compare with
    assert written["unfinished"] == []


def test_a_step_profile_stopped_part_way_keeps_the_parts_it_finished(tmp_path, monkeypatch):
    """A lent GPU stops each figure at a hard time limit: what was measured before it must survive."""
    from bench import step_profile

    def stopped(*args):
        raise KeyboardInterrupt  # as the time limit's signal would, part way through

    monkeypatch.setattr(step_profile, "graph", stopped)
    with pytest.raises(KeyboardInterrupt):
        step_profile.main(["--out", str(tmp_path), "--device", "cpu", "--tiny", "--steps", "2"])
    written = json.loads((tmp_path / "step_profile.json").read_text())
    assert written["eager"]["ms_per_step"] > 0 and written["operators"]["total"]["all"] > 0
    assert written["unfinished"] == ["graph", "side_by_side"]


def test_the_step_profile_skips_the_side_by_side_rounds_when_given_no_process_counts(tmp_path):
    from bench import step_profile

    arguments = ["--out", str(tmp_path), "--device", "cpu", "--tiny", "--steps", "2", "--processes", ""]
    assert step_profile.main(arguments) == 0
    written = json.loads((tmp_path / "step_profile.json").read_text())
    assert written["side_by_side"] == {} and written["eager"]["ms_per_step"] > 0


def test_a_run_cut_short_still_has_one_dataset_of_each_task_type_measured_first():
    from biolm.plugins import collect_contributions, get_plugin_manager

    datasets = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets
    order = blurb_gpu.Config().datasets
    assert sorted(order) == sorted(blurb_gpu.BLURB_DATASETS)
    types = [datasets[slug].task_type for slug in order if slug not in blurb_gpu.NOT_TRAINABLE]
    kinds = set(types)
    assert len(kinds) == 5 and set(types[: len(kinds)]) == kinds  # every trainable task type before any repeats
