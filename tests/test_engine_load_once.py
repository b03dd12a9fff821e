"""A fine-tuning job reads its checkpoint from disk once, and its results equal the per-run path's.

Both paths really train a tiny BERT checkpoint (a real safetensors directory). The disk reads
are counted by wrapping the two functions that read a checkpoint's tensors: transformers'
``safe_open`` (what ``from_pretrained`` reads a directory with) and the safetensors
``load_file`` that :class:`~workers.engine.formulations.base.PristineWeights` reads it with.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers.modeling_utils
from checkpoints import demo_texts, tiny_bert

import workers.engine.formulations.base as formulations_base
from workers.engine.finetune import finetune
from workers.engine.formulations.base import ModelSource, PristineWeights
from workers.engine.runs import FinetuneSpec


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600, hidden=32)


@pytest.fixture
def checkpoint_reads(monkeypatch, checkpoint):
    """The safetensors files of ``checkpoint`` read so far, one entry per read, by either loader."""
    reads: list[str] = []

    def counted(function):
        def wrapper(path, *args, **kwargs):
            if Path(path).resolve().parent == checkpoint.resolve():
                reads.append(Path(path).name)
            return function(path, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(transformers.modeling_utils, "safe_open", counted(transformers.modeling_utils.safe_open))
    monkeypatch.setattr(formulations_base, "load_file", counted(formulations_base.load_file))
    return reads


def outcome(results: dict) -> dict:
    """What a job decides: every run's dev and test values and loss, the choice of point, the predictions."""
    return {
        "runs": [(r["fold"], r["seed"], r["metrics"], r["train"]["final_loss"]) for r in results["runs"]],
        "selection": results["selection"],
        "chosen": results["chosen_hyperparameters"],
        "test": results["test"],
        "predictions": results["predictions"],
        "per_fold": results.get("cross_validation", {}).get("per_fold"),
    }


def both_paths(spec_for, reads: list[str]) -> tuple[dict, int, dict, int]:
    """The job's results and checkpoint reads loading once, then loading per run."""
    once = finetune(spec_for("once"), load_once=True)
    reads_once = len(reads)
    per_run = finetune(spec_for("per-run"), load_once=False)
    return once, reads_once, per_run, len(reads) - reads_once


@pytest.mark.slow  # two jobs of eight runs
def test_a_job_reads_its_checkpoint_once_for_its_grid_and_seeds_with_unchanged_results(
    tmp_path, checkpoint, checkpoint_reads
):
    def spec_for(name: str) -> FinetuneSpec:
        return FinetuneSpec.build(
            dataset="demo-relation", out=tmp_path / name, model=checkpoint, grid="full", seeds=3, epochs=1,
            max_train_examples=32, max_eval_examples=24, max_length=64,
        )  # fmt: skip

    once, reads_once, per_run, reads_per_run = both_paths(spec_for, checkpoint_reads)
    runs = len(once["selection"]) + len(once["runs"]) - 1  # each grid point, then the other seeds
    assert len(once["selection"]) == 6 and runs == 8
    assert reads_once == 1
    assert reads_per_run == runs
    assert outcome(once) == outcome(per_run)


@pytest.mark.slow  # two jobs of nineteen runs
def test_a_cross_validated_job_reads_its_checkpoint_once_for_all_folds_with_unchanged_results(
    tmp_path, checkpoint, checkpoint_reads, official_data
):
    official_data("EU-ADR", "biobert-REdata")

    def spec_for(name: str) -> FinetuneSpec:
        return FinetuneSpec.build(
            dataset="eu-adr", out=tmp_path / name, model=checkpoint, protocol="lewis2020", seeds=2, epochs=1,
            max_train_examples=24, max_eval_examples=16, max_length=64,
        )  # fmt: skip

    once, reads_once, per_run, reads_per_run = both_paths(spec_for, checkpoint_reads)
    assert once["cross_validation"]["folds"] == 10 and len(once["runs"]) == 9 * 2
    assert reads_once == 1
    assert reads_per_run > len(once["runs"]) / 2  # the per-run path reads for (nearly) every run it trains
    assert outcome(once) == outcome(per_run)


def test_models_built_from_the_kept_weights_start_from_the_checkpoint_and_never_change_it(checkpoint):
    from transformers import AutoModelForTokenClassification

    weights = PristineWeights(checkpoint)
    source = ModelSource(checkpoint, weights=weights)
    torch.manual_seed(5)
    first = source.head_model(AutoModelForTokenClassification, num_labels=3)
    with torch.no_grad():
        for parameter in first.parameters():
            parameter.add_(1.0)  # what training would do to a model sharing the kept tensors
    torch.manual_seed(5)
    second = source.head_model(AutoModelForTokenClassification, num_labels=3)
    torch.manual_seed(5)
    from_disk = ModelSource(checkpoint).head_model(AutoModelForTokenClassification, num_labels=3)
    expected = from_disk.state_dict()
    assert second.state_dict().keys() == expected.keys()
    assert all(torch.equal(tensor, expected[name]) for name, tensor in second.state_dict().items())
    assert second.config.name_or_path == from_disk.config.name_or_path == str(checkpoint)
