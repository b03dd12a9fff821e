"""Pretraining past one process on torch's engines: DDP, FSDP2 and DCP, with gloo on this CPU.

Real processes (``torch.multiprocessing`` spawn, a TCP rendezvous on a free port), a tiny model of each
family the engine pretrains, dropout off where weights are compared: processes cannot draw one
process's dropout masks, while every other draw (data order, masks, ALUM's noise) is a function of
(seed, step, row) and so the same whatever the number of processes.
"""

from __future__ import annotations

import pickle

import pytest
import torch
from distributed_pretraining import blocks, masker, run, settings, tiny_model

from workers.engine.pretrain.checkpoints import read_state, safe_reader
from workers.engine.pretrain.loop import LoopSettings, check_split, step_micro_batches
from workers.engine.pretrain.parallel import build_context, on_meta, place
from workers.engine.pretrain.run import continued_model

pytestmark = pytest.mark.slow
TOLERANCE = 1e-5  # fp32; the ranks' sums are added in another order than one process's


def assert_same_weights(actual: dict, expected: dict, atol: float = TOLERANCE) -> None:
    assert actual.keys() == expected.keys()
    for name, tensor in expected.items():
        torch.testing.assert_close(actual[name], tensor, rtol=0, atol=atol, msg=name)


def test_each_process_draws_only_its_rows_and_the_masks_do_not_depend_on_the_number_of_processes():
    loop = LoopSettings(steps=10, batch_size=12, accumulation=2, whole_word=True)
    data = blocks(40)
    whole = step_micro_batches(data, masker(), loop, 3, 0.15)
    for world in (2, 3, 4):
        shares = [step_micro_batches(data, masker(), loop, 3, 0.15, rank, world) for rank in range(world)]
        for micro, batch in enumerate(whole):
            for rank in range(world):
                for key in ("input_ids", "labels", "block"):
                    assert torch.equal(shares[rank][micro][key], batch[key][rank::world]), (world, rank, key)
    assert not torch.equal(whole[0]["labels"], step_micro_batches(data, masker(), loop, 4, 0.15)[0]["labels"])


def test_one_two_and_four_ddp_processes_end_with_the_weights_of_one_process_after_20_steps_with_accumulation(
    tmp_path,
):
    one = run(1, tmp_path / "1", settings=settings(parallelism="ddp"))
    assert one["log"][-1]["loss"] < one["log"][0]["loss"]  # it trained
    for world in (2, 4):
        many = run(world, tmp_path / str(world), settings=settings(parallelism="ddp"))
        assert many["summary"]["parallelism"] == "ddp" and many["summary"]["processes"] == world
        assert_same_weights(many["weights"], one["weights"])
        assert many["log"][-1]["heldout_loss"] == pytest.approx(one["log"][-1]["heldout_loss"], abs=TOLERANCE)
        assert [e["loss"] for e in many["log"]] == pytest.approx([e["loss"] for e in one["log"]], abs=TOLERANCE)
        # Rank 0 alone reports progress: the job's progress file is one file, on a folder every node may share.
        assert many["progress_reports"][0] == one["progress_reports"][0] > 0
        assert many["progress_reports"][1:] == [0] * (world - 1)


@pytest.mark.parametrize("family", ["bert", "roberta", "longformer", "big-bird", "megatron-bert"])
def test_fsdp_over_two_processes_trains_each_family_as_one_process_does(family, tmp_path):
    """FSDP2's reduce-scatter sums what DDP's all-reduce sums: within 1e-5 of one process, held-out loss too."""
    options = {"family": family, "settings": settings(steps=4, checkpoint_every=4, eval_every=4, parallelism="fsdp")}
    one = run(1, tmp_path / "one", **options)
    sharded = run(2, tmp_path / "fsdp", **options)
    assert sharded["summary"]["parallelism"] == "fsdp"
    assert_same_weights(sharded["weights"], one["weights"])
    assert sharded["log"][-1]["heldout_loss"] == pytest.approx(one["log"][-1]["heldout_loss"], abs=TOLERANCE)


def test_fsdp_with_activation_checkpointing_and_fused_adamw_on_the_shards_trains_as_one_process(tmp_path):
    loop = settings(steps=6, checkpoint_every=6, eval_every=6, optimizer_kernel="fused")
    one = run(1, tmp_path / "one", settings=loop)
    sharded = run(2, tmp_path / "fsdp", settings={**loop, "parallelism": "fsdp", "activation_checkpointing": True})
    assert sharded["summary"]["settings"]["activation_checkpointing"] is True
    assert_same_weights(sharded["weights"], one["weights"])


def test_a_tiny_megatron_bert_sharded_over_four_processes_holds_under_30_percent_of_the_replicated_bytes(tmp_path):
    """Parameters, gradients and AdamW's states, counted from the tensors each rank holds after a backward.

    A replicated rank (DDP) holds what one process holds, so the single process is the replicated reference.
    """
    loop = settings(steps=2, checkpoint_every=2, eval_every=2)
    replicated = run(1, tmp_path / "one", family="megatron-bert", settings=loop)
    sharded = run(4, tmp_path / "fsdp", family="megatron-bert", settings={**loop, "parallelism": "fsdp"})
    full = sum(replicated["bytes"][0].values())
    assert all(part > 0 for part in replicated["bytes"][0].values())
    for rank, counted in enumerate(sharded["bytes"]):
        assert counted["gradients"] > 0 and counted["optimizer"] > 0, rank
        assert sum(counted.values()) <= 0.30 * full, (rank, counted, replicated["bytes"][0])


@pytest.mark.parametrize("objective", ["distillation", "alum"])
def test_distillation_and_alum_under_ddp_train_as_in_one_process(objective, tmp_path):
    options = {"objective": objective, "settings": settings(steps=6, checkpoint_every=6, eval_every=6)}
    one = run(1, tmp_path / "one", **options)
    two = run(2, tmp_path / "two", **{**options, "settings": {**options["settings"], "parallelism": "ddp"}})
    assert_same_weights(two["weights"], one["weights"])


def test_a_run_resumed_on_four_then_two_then_one_process_continues_the_curve_of_an_uninterrupted_run(tmp_path):
    """FSDP's shards at 4, resumed as DDP at 2, then alone: DCP reshards the model and AdamW's states."""
    loop = settings(steps=12, checkpoint_every=4, eval_every=4)
    whole = run(1, tmp_path / "whole", settings=loop)
    out = tmp_path / "resumed"
    run(4, out, settings={**loop, "parallelism": "fsdp"}, stop_at=4)
    assert read_state(out / "checkpoint")["processes"] == 4
    run(2, out, settings={**loop, "parallelism": "ddp"}, stop_at=8, resume=True)
    resumed = run(1, out, settings=loop, resume=True)
    assert [e["step"] for e in resumed["log"]] == list(range(1, 13))
    assert [e["loss"] for e in resumed["log"]] == pytest.approx([e["loss"] for e in whole["log"]], abs=TOLERANCE)
    assert_same_weights(resumed["weights"], whole["weights"])


def test_a_run_resumed_on_the_same_number_of_processes_is_exact_dropout_included(tmp_path):
    loop = {**settings(steps=10, checkpoint_every=5, eval_every=5), "parallelism": "ddp"}
    whole = run(2, tmp_path / "whole", settings=loop, dropout=0.1)
    run(2, tmp_path / "resumed", settings=loop, dropout=0.1, stop_at=5)
    resumed = run(2, tmp_path / "resumed", settings=loop, dropout=0.1, resume=True)
    assert [e["loss"] for e in resumed["log"]] == [e["loss"] for e in whole["log"]]
    for name, tensor in whole["weights"].items():
        assert torch.equal(resumed["weights"][name], tensor), name


def test_a_checkpoint_whose_dcp_metadata_holds_other_objects_is_refused_unrun(tmp_path, capfd):
    run(1, tmp_path / "run", settings=settings(steps=2, checkpoint_every=2, eval_every=2))
    metadata = tmp_path / "run" / "checkpoint" / "shards" / ".metadata"
    assert safe_reader(metadata.parent).read_metadata().state_dict_metadata  # biolm's own metadata reads back

    class Payload:
        def __reduce__(self):
            return (print, ("this ran",))

    metadata.write_bytes(pickle.dumps(Payload()))
    capfd.readouterr()
    with pytest.raises(ValueError, match=r"builtins\.print, not one of DCP's metadata classes"):
        safe_reader(metadata.parent).read_metadata()
    assert "this ran" not in capfd.readouterr().out


def test_a_checkpoint_of_the_replicated_layout_before_dcp_is_refused_with_what_to_do(tmp_path):
    old = tmp_path / "checkpoint"
    old.mkdir()
    torch.save({"model": {}, "step": 3}, old / "state.pt")
    with pytest.raises(ValueError, match=r"before sharded checkpoints .* start the run again without --resume"):
        read_state(old)


def test_the_micro_batch_must_give_every_process_a_row():
    check_split(LoopSettings(steps=1, batch_size=8, accumulation=2), 4)  # 4 rows for 4 processes: one each
    with pytest.raises(ValueError, match="cannot give each of 4 processes a row: lower the accumulation"):
        check_split(LoopSettings(steps=1, batch_size=8, accumulation=4), 4)


@pytest.mark.parametrize("family", ["bert", "megatron-bert"])
def test_only_rank_0_draws_a_fresh_model_and_the_others_build_it_without_memory(family):
    with build_context(1, 4):
        empty = tiny_model(family)
    assert all(tensor.is_meta for tensor in (*empty.parameters(), *empty.buffers()))
    for rank, world in ((0, 4), (0, 1)):
        with build_context(rank, world):
            drawn = tiny_model(family)
        assert not any(tensor.is_meta for tensor in drawn.parameters())


def test_a_model_built_empty_is_placed_with_its_embeddings_and_decoder_still_one_parameter():
    with build_context(1, 2):
        model = tiny_model("bert")
    place(model, torch.device("cpu"))
    assert not on_meta(model)
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    reference = tiny_model("bert")
    assert len(list(model.parameters())) == len(list(reference.parameters()))  # DDP compares these lists


def test_a_checkpoint_to_continue_is_read_in_fp32_by_rank_0_alone_and_built_empty_on_the_others(tmp_path):
    from transformers import AutoModelForMaskedLM

    saved = tiny_model("bert").to(torch.bfloat16)  # a checkpoint saved in bf16, as a published one may be
    saved.save_pretrained(tmp_path)
    read = continued_model(AutoModelForMaskedLM, tmp_path, rank=0, world=2)
    assert not on_meta(read) and all(p.dtype == torch.float32 for p in read.parameters())
    for name, tensor in saved.state_dict().items():
        torch.testing.assert_close(read.state_dict()[name], tensor.float(), rtol=0, atol=0)
    empty = continued_model(AutoModelForMaskedLM, tmp_path, rank=1, world=2)
    assert on_meta(empty)
    place(empty, torch.device("cpu"))  # what DDP's broadcast fills: the same parameters, shapes and dtypes
    shapes = {name: (p.shape, p.dtype) for name, p in read.named_parameters()}
    assert {name: (p.shape, p.dtype) for name, p in empty.named_parameters()} == shapes
    assert empty.get_output_embeddings().weight is empty.get_input_embeddings().weight
    assert not on_meta(continued_model(AutoModelForMaskedLM, tmp_path, rank=0, world=1))
