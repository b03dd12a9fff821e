"""Unpadded MLM + NSP: packed rows compute what padded rows compute, and attention never crosses sequences.

Real sentence pairs (PubMedQA's contexts, split into sentences and paired as BERT's
create_pretraining_data pairs them), a real learned WordPiece vocabulary and a real BERT with
its pretraining heads; the packed path is compared with today's padded path on the same batch.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest
import torch
from transformers import AutoModelForPreTraining

from biolm.corpus import apply_preprocessors
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.architectures import build_config
from workers.engine.pretrain.checkpoints import saved_model_names
from workers.engine.pretrain.data import open_pairs, write_pair_blocks
from workers.engine.pretrain.loop import LoopSettings, Masker, heldout_loss, optimizer_kernel, pretrain_loop
from workers.engine.pretrain.masking import IGNORE, masking_random
from workers.engine.pretrain.mlm import masked_lm_loss, mlm_forward
from workers.engine.pretrain.packing import PACKED_KEY, check_packable, first_fit_layout, pack
from workers.engine.tokenization import train_wordpiece

BLOCK = 128


@pytest.fixture(scope="module")
def pairs(official_data, tmp_path_factory):
    """NSP pairs of PubMedQA's first training fold, and the tokenizer learned on it."""
    entries = json.loads(official_data("PubMedQA", "blurb", "pqal_fold0", "train_set.json").read_text())
    texts = [" ".join(entry["CONTEXTS"]) for entry in list(entries.values())[:200]]
    sentences = collect_contributions(get_plugin_manager(load_entrypoints=False)).preprocessors["sentences"]
    segmented = list(apply_preprocessors(texts, [sentences]))
    tokenizer = train_wordpiece([text.replace("\n", " ") for text in segmented], 1500)
    directory = tmp_path_factory.mktemp("pairs")
    write_pair_blocks(iter(segmented), tokenizer, directory, block_size=BLOCK, heldout_share=0.1, task="nsp")
    return tokenizer, open_pairs(directory, "train", BLOCK), open_pairs(directory, "heldout", BLOCK)


def bert(tokenizer, attention: str = "sdpa", dropout: float = 0.0) -> torch.nn.Module:
    config = build_config(
        "bert:tiny", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_position_embeddings=BLOCK,
        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
    )  # fmt: skip
    torch.manual_seed(0)
    return AutoModelForPreTraining.from_config(config, attn_implementation=attention)


def masker(tokenizer) -> Masker:
    specials = tuple(sorted({tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}))
    return Masker(tokenizer.mask_token_id, len(tokenizer), specials, tokenizer.pad_token_id)


def shortest(pairs, count: int) -> np.ndarray:
    """The ``count`` most padded training instances (in corpus order): rows that packing merges."""
    lengths = (np.asarray(pairs[1]["ids"]) != pairs[0].pad_token_id).sum(axis=1)
    return np.sort(np.argsort(lengths, kind="stable")[:count])


def batch_of(pairs, rows, seed: int = 0) -> dict:
    tokenizer, train, _ = pairs
    return masker(tokenizer)(train, np.asarray(rows), 0.15, masking_random(seed, 0, rows), True)


def test_the_pair_blocks_are_padded_so_packing_has_work_to_do(pairs):
    everything = batch_of(pairs, range(len(pairs[1]["ids"])))
    assert everything["attention_mask"].float().mean() < 0.99  # some instances are padded
    batch = batch_of(pairs, shortest(pairs, 32))
    packed = pack(batch, bert(pairs[0]), pairs[0].pad_token_id)
    assert packed["input_ids"].shape[0] < 32  # fewer rows than sequences
    assert packed["input_ids"].numel() >= int(batch["attention_mask"].sum())
    assert sorted(packed["input_ids"][packed["input_ids"] != pairs[0].pad_token_id].tolist()) == sorted(
        batch["input_ids"][batch["attention_mask"].bool()].tolist()
    )  # every real token once, no padding token among them


def test_first_fit_packs_longest_first_without_overflowing_a_row():
    lengths = torch.tensor([90, 10, 50, 40, 96, 5, 45])
    layout = first_fit_layout(lengths, 96)
    ends = layout.start + lengths
    assert int(ends.max()) <= 96
    for row in range(layout.rows):  # no two sequences of a row overlap
        spans = sorted(zip(layout.start[layout.row == row].tolist(), ends[layout.row == row].tolist(), strict=True))
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    assert layout.rows == 4  # 96 | 90+5 | 50+45 | 40+10: the first-fit-decreasing answer


def first_fit_by_hand(lengths: list[int], width: int) -> tuple[list[int], list[int], int]:
    """First-fit decreasing as the textbook states it: each sequence, longest first, into the first row with room."""
    rooms: list[int] = []
    row, start = [0] * len(lengths), [0] * len(lengths)
    for index in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        target = next((r for r, room in enumerate(rooms) if room >= lengths[index]), None)
        if target is None:
            rooms.append(width)
            target = len(rooms) - 1
        row[index], start[index] = target, width - rooms[target]
        rooms[target] -= lengths[index]
    return row, start, len(rooms)


def test_the_array_first_fit_and_its_slots_are_the_textbooks_on_random_batches():
    generator = torch.Generator().manual_seed(7)
    for _ in range(300):
        width = int(torch.randint(4, 140, (1,), generator=generator))
        lengths = torch.randint(1, width + 1, (int(torch.randint(1, 40, (1,), generator=generator)),),
                                generator=generator)  # fmt: skip
        layout = first_fit_layout(lengths, width)
        row, start, rows = first_fit_by_hand(lengths.tolist(), width)
        assert (layout.row.tolist(), layout.start.tolist(), layout.rows) == (row, start, rows)
        packed = pack(
            {"input_ids": torch.arange(len(lengths) * width).view(len(lengths), width) + 10,
             "attention_mask": (torch.arange(width) < lengths[:, None]).long(),
             "labels": torch.zeros(len(lengths), width, dtype=torch.long)},
            bert_config_model(), pad_id=0,
        )  # fmt: skip
        if "sequence_starts" not in packed:  # every sequence fills its row: nothing to pack
            continue
        for index, (length, at) in enumerate(zip(lengths.tolist(), packed["sequence_starts"].tolist(), strict=True)):
            flat = packed["input_ids"].reshape(-1)
            assert flat[at : at + length].tolist() == list(range(index * width + 10, index * width + 10 + length))
            assert set(packed["segments"].reshape(-1)[at : at + length].tolist()) == {index}


def bert_config_model() -> torch.nn.Module:
    from transformers import BertConfig, BertForPreTraining

    return BertForPreTraining(BertConfig(vocab_size=64, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=16, max_position_embeddings=160))  # fmt: skip


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_the_packed_forward_gives_each_sequence_the_padded_forwards_logits_and_loss(pairs, attention):
    model = bert(pairs[0], attention).eval()
    batch = batch_of(pairs, shortest(pairs, 48))
    packed = pack(batch, model, pairs[0].pad_token_id)
    assert packed["input_ids"].shape[0] < 48  # rows hold several sequences
    cpu = torch.device("cpu")
    with torch.no_grad():
        padded_logits, padded_pairs = mlm_forward(model, batch, cpu, None)
        packed_logits, packed_pairs = mlm_forward(model, packed, cpu, None)
        total = int((batch["labels"] != IGNORE).sum())
        padded_loss = masked_lm_loss(model, batch, total, cpu, None, rows=48)
        packed_loss = masked_lm_loss(model, packed, total, cpu, None, rows=48)
    # the masked positions come in another order: match them by (sequence, position)
    order = torch.argsort(_masked_keys(batch, packed))
    torch.testing.assert_close(packed_logits[order], padded_logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(packed_pairs, padded_pairs, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(packed_loss, padded_loss, rtol=1e-5, atol=1e-5)


def _masked_keys(batch: dict, packed: dict) -> torch.Tensor:
    """For each masked slot of the packed batch (in its order), the padded flat index it came from."""
    width = batch["input_ids"].shape[1]
    lengths = batch["attention_mask"].sum(dim=1).tolist()
    origin = torch.full((packed["labels"].numel(),), -1)
    for index, (length, start) in enumerate(zip(lengths, packed[PACKED_KEY].tolist(), strict=True)):
        origin[start : start + length] = index * width + torch.arange(length)
    return origin[packed["labels"].reshape(-1) != IGNORE]


def test_changing_one_packed_sequence_leaves_every_other_sequences_outputs_unchanged(pairs):
    model = bert(pairs[0]).eval()
    batch = batch_of(pairs, shortest(pairs, 32))
    packed = pack(batch, model, pairs[0].pad_token_id)
    victim = int(torch.argmin(batch["attention_mask"].sum(dim=1)))  # a short one: it shares its row
    start, length = int(packed[PACKED_KEY][victim]), int(batch["attention_mask"][victim].sum())
    neighbours = _row_neighbours(packed, victim, start)
    assert neighbours, "the shortest sequence shares its row with another"
    changed = {**packed, "input_ids": packed["input_ids"].clone()}
    flat = changed["input_ids"].view(-1)
    flat[start + 1 : start + length - 1] = torch.randint(5, len(pairs[0]), (length - 2,))
    with torch.no_grad():
        before = model.base_model(**_encoder_inputs(model, packed))[0].reshape(-1, model.config.hidden_size)
        after = model.base_model(**_encoder_inputs(model, changed))[0].reshape(-1, model.config.hidden_size)
    assert not torch.allclose(before[start : start + length], after[start : start + length])
    for other_start, other_length in neighbours:
        torch.testing.assert_close(before[other_start : other_start + other_length],
                                   after[other_start : other_start + other_length], rtol=0, atol=1e-6)  # fmt: skip


def _row_neighbours(packed: dict, victim: int, start: int) -> list[tuple[int, int]]:
    width = packed["input_ids"].shape[1]
    segments = packed["segments"].view(-1)
    found = []
    for index, other in enumerate(packed[PACKED_KEY].tolist()):
        if index != victim and other // width == start // width:
            found.append((other, int((segments == index).sum())))
    return found


def _encoder_inputs(model, packed: dict) -> dict:
    from workers.engine.pretrain.packing import attention_mask

    keys = ("input_ids", "token_type_ids", "position_ids")
    return {**{k: packed[k] for k in keys}, "attention_mask": attention_mask(model, packed["segments"])}


def test_unpadded_training_matches_padded_training_in_held_out_loss(pairs, tmp_path):
    """Dropout draws differ between the layouts, so the runs are not bit for bit; their held-out losses agree."""
    tokenizer, train, heldout = pairs
    cpu, losses = torch.device("cpu"), {}
    for unpadded in (False, True):
        model = bert(tokenizer, dropout=0.1)
        settings = LoopSettings(steps=30, batch_size=16, learning_rate=1e-3, whole_word=True, eval_every=30,
                                checkpoint_every=30, eval_blocks=64, unpadded=unpadded)  # fmt: skip
        summary = pretrain_loop(model, train, heldout, masker(tokenizer), settings, tmp_path / str(unpadded),
                                device=cpu, dtype=None)  # fmt: skip
        padded_eval = dataclasses.replace(settings, unpadded=False)
        losses[unpadded] = heldout_loss(model, heldout, masker(tokenizer), padded_eval, cpu, None)
        assert summary["heldout_loss"] == pytest.approx(losses[unpadded], abs=1e-4)  # the packed eval agrees
    initial = heldout_loss(bert(tokenizer), heldout, masker(tokenizer), padded_eval, cpu, None)
    assert losses[True] < initial - 0.3  # it learned
    assert abs(losses[True] - losses[False]) < 0.02


def test_the_compiled_unpadded_loop_trains_what_the_eager_one_trains_and_saves_the_models_own_names(pairs, tmp_path):
    """``compile`` is the lever a GPU lease tries once its profile shows elementwise work: it must train, not crash.

    Inductor draws dropout from its own generator, so the runs agree in held-out loss, not bit for bit. Each
    arm's loss is the loop's own final evaluation (the same blocks and masks in both): evaluating the compiled
    model again here, on padded batches, would only add a compilation to the slowest test of this file.
    """
    tokenizer, train, heldout = pairs
    cpu, losses = torch.device("cpu"), {}
    for compiled in (False, True):
        model = bert(tokenizer, dropout=0.1)
        settings = LoopSettings(steps=30, batch_size=16, learning_rate=1e-3, whole_word=True, eval_every=30,
                                checkpoint_every=30, eval_blocks=64, unpadded=True, compile=compiled)  # fmt: skip
        summary = pretrain_loop(model, train, heldout, masker(tokenizer), settings, tmp_path / str(compiled),
                                device=cpu, dtype=None)  # fmt: skip
        assert (model.base_model._compiled_call_impl is not None) == compiled  # nn.Module.compile's own mark
        losses[compiled] = summary["heldout_loss"]
    initial = heldout_loss(bert(tokenizer), heldout, masker(tokenizer), settings, cpu, None)
    assert losses[True] < initial - 0.3  # it learned
    assert abs(losses[True] - losses[False]) < 0.02
    names = {compiled: saved_model_names(tmp_path / str(compiled) / "checkpoint") for compiled in (False, True)}
    assert names[True] == names[False]  # no "_orig_mod." prefix: a compiled run's checkpoint resumes anywhere


def test_unpadded_is_refused_where_it_cannot_restrict_attention(pairs, tmp_path):
    config = build_config("longformer:tiny", vocab_size=len(pairs[0]), pad_token_id=pairs[0].pad_token_id)
    from transformers import AutoModelForMaskedLM

    with pytest.raises(ValueError, match=r"unpadded pretraining needs an encoder .* longformer"):
        check_packable(AutoModelForMaskedLM.from_config(config))


def test_adamw_runs_fused_where_the_device_has_a_fused_kernel():
    assert optimizer_kernel("auto", torch.device("cpu")) == {"fused": True}
    assert optimizer_kernel("foreach", torch.device("cpu")) == {"foreach": True}
    assert optimizer_kernel("default", torch.device("cpu")) == {}
    with pytest.raises(ValueError, match="optimizer_kernel 'slow'"):
        LoopSettings(steps=1, optimizer_kernel="slow")


# --- the benchmark -------------------------------------------------------------------------------


def test_the_unpadded_benchmark_trains_both_arms_on_the_same_pairs_and_counts_them_alike(tmp_path, official_data):
    from bench import biomedical_corpus, pretrain_unpadded

    official_data("HoC", "blurb", "train.tsv")
    corpus = tmp_path / "corpus.txt"  # the benchmark's corpus, its first 400 documents (the whole takes minutes)
    corpus.write_text("\n".join(itertools.islice(biomedical_corpus.documents(), 400)) + "\n", encoding="utf-8")
    config = pretrain_unpadded.Config(corpus=str(corpus), size="tiny", steps=6, batch_size=4, block_sizes=("128",),
                                      warm_steps=1, profile_steps=2, eval_blocks=8, matmul_size=128,
                                      device="cpu")  # fmt: skip
    result = pretrain_unpadded.run(config, tmp_path)
    written = json.loads((tmp_path / "pretrain_unpadded.json").read_text())
    block = written["blocks"]["128"]
    assert set(block["arms"]) == {"padded", "unpadded"} and 0 < block["padding_share"] < 0.5
    assert block["skipped_arms"] == {"varlen": "FlashAttention's varlen kernels run on CUDA only (this run is on cpu)"}
    padded, unpadded = block["arms"]["padded"], block["arms"]["unpadded"]
    assert padded["real_tokens"] == unpadded["real_tokens"] > 0  # the same instances, padding not counted
    assert padded["flops"] == unpadded["flops"]
    assert unpadded["settings"] == {"unpadded": True, "varlen_attention": False, "optimizer_kernel": "auto",
                                    "compile": False, "batch_size": 4}  # fmt: skip
    assert block["heldout_loss_gap"] == pytest.approx(unpadded["heldout_loss"] - padded["heldout_loss"])
    # MFU against the peak measured in the run (a 128-cube here, whose best round a loaded runner can
    # slow many times over, so the figure is checked for its arithmetic, not its size)
    peak = written["matmul_peaks"][unpadded["utilisation"]["peak"]]["flops_per_second"]
    expected = unpadded["flops"]["flops"] / unpadded["seconds"] / peak
    assert unpadded["utilisation"]["mfu"] == pytest.approx(expected) and expected > 0
    assert block["host_packing"]["instances"] == 4 and block["host_packing"]["seconds_per_step"] > 0
    assert padded["timed_steps"] == 3  # 6 steps: 1 warm-up, 3 timed (one step alone is too noisy), 2 profiled
    for arm in (padded, unpadded):
        profile = arm["profile"]
        assert profile["profiled_steps"] == 2 and profile["busy_ms_per_step"] > 0
        assert profile["ms_per_step_by_kind"]["matmul"] > 0 and profile["ms_per_step_by_kind"]["optimizer"] > 0
        assert sum(profile["share_by_kind"].values()) == pytest.approx(1.0)
    assert result["goals"]["met"]["mfu_128"] == "not measured: no GPU"
    partial = json.loads((tmp_path / "pretrain_unpadded.partial.json").read_text())  # what a cut-short run keeps
    assert partial["measured"] == {"128": written["blocks"]["128"]["arms"]}
    assert "128 tokens: varlen skipped: FlashAttention's varlen kernels run on CUDA only" in pretrain_unpadded.summary(
        result
    )


def test_the_varlen_arm_is_compared_with_the_padded_one_where_its_kernel_runs(tmp_path, official_data, monkeypatch):
    """A CPU has no FlashAttention: the reference kernel stands in, so the arm's figures and comparison are checked."""
    from bench import biomedical_corpus, pretrain_unpadded
    from workers.engine import varlen_attention

    monkeypatch.setattr(varlen_attention, "kernel_for", lambda query: varlen_attention.reference_attention)
    monkeypatch.setattr(varlen_attention, "unavailable_reason", lambda device, dtype, head_size: None)
    official_data("HoC", "blurb", "train.tsv")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(itertools.islice(biomedical_corpus.documents(), 200)) + "\n", encoding="utf-8")
    config = pretrain_unpadded.Config(corpus=str(corpus), size="tiny", steps=3, batch_size=4, block_sizes=("128",),
                                      warm_steps=1, eval_blocks=4, matmul_size=64, device="cpu",
                                      arms=("padded", "varlen"))  # fmt: skip
    block = pretrain_unpadded.run(config, tmp_path)["blocks"]["128"]
    padded, varlen = block["arms"]["padded"], block["arms"]["varlen"]
    assert block["skipped_arms"] == {} and block["ratio"] is None  # no unpadded arm ran
    assert varlen["settings"]["unpadded"] and varlen["settings"]["varlen_attention"]
    assert varlen["real_tokens"] == padded["real_tokens"] and varlen["flops"] == padded["flops"]
    assert block["varlen_ratio"] == pytest.approx(varlen["tokens_per_second"] / padded["tokens_per_second"])
    assert block["varlen_heldout_loss_gap"] == pytest.approx(varlen["heldout_loss"] - padded["heldout_loss"])


def test_the_loss_goal_reads_not_measured_without_the_padded_arm_rather_than_failed():
    """The lease's compiled step runs the packed arms alone: its padded baseline is the eager step's."""
    from bench import pretrain_unpadded

    setup = pretrain_unpadded.Setup(torch.device("cpu"), None, "tiny", 4, 64)

    def met(gap):
        blocks = {"128": {"arms": {"unpadded": {}}, "heldout_loss_gap": gap}}
        return pretrain_unpadded.goals(blocks, setup)["met"]["heldout_loss_within_nats"]

    assert met(None) == "not measured: needs the padded arm and a packed one"
    assert met(0.01) is True and met(-0.03) is False


def test_pairs_kept_in_pairs_dir_are_reused_without_the_corpus_or_the_official_data(
    tmp_path, official_data, monkeypatch
):
    """A lent GPU machine has neither: the pairs made here travel, and the benchmark trains on them as they are."""
    from bench import biomedical_corpus, pretrain_unpadded

    official_data("HoC", "blurb", "train.tsv")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(itertools.islice(biomedical_corpus.documents(), 200)) + "\n", encoding="utf-8")
    kept = tmp_path / "pairs"
    config = pretrain_unpadded.Config(corpus=str(corpus), size="tiny", steps=2, batch_size=4, block_sizes=("128",),
                                      warm_steps=1, eval_blocks=4, matmul_size=64, device="cpu",
                                      pairs_dir=str(kept), arms=("padded",))  # fmt: skip
    first = pretrain_unpadded.run(config, tmp_path / "first")
    made = {path.name: path.read_bytes() for path in (kept / "pairs-128").iterdir()}
    assert "corpus.json" in made and first["blocks"]["128"]["train_instances"] > 0

    corpus.unlink()
    monkeypatch.setenv("BIOLM_DATA_DIR", str(tmp_path / "absent"))
    assert pretrain_unpadded.missing_data(config) is None
    again = pretrain_unpadded.run(config, tmp_path / "again")
    assert {path.name: path.read_bytes() for path in (kept / "pairs-128").iterdir()} == made
    assert again["blocks"]["128"]["train_instances"] == first["blocks"]["128"]["train_instances"]
    assert again["blocks"]["128"]["padding_share"] == first["blocks"]["128"]["padding_share"]


def test_the_unpadded_benchmark_is_marked_skipped_when_the_data_is_missing(tmp_path, monkeypatch):
    from bench import pretrain_unpadded

    monkeypatch.setenv("BIOLM_DATA_DIR", str(tmp_path / "absent"))
    result = pretrain_unpadded.run(pretrain_unpadded.Config(), tmp_path)
    assert result["skipped"].startswith(f"official data not found: {tmp_path / 'absent'}")
    assert json.loads((tmp_path / "pretrain_unpadded.json").read_text())["skipped"] == result["skipped"]
