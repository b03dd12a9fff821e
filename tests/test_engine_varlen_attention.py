"""Packed attention through FlashAttention's varlen kernels: offsets, layouts and the loop's setting.

A CPU has no FlashAttention kernel, so most tests put :func:`varlen_attention.reference_attention`
(the same mathematics one sequence at a time through SDPA) in the kernel's place. They check what
the callers build, which is where such a path breaks: the offsets of packed rows, the flattening of
the encoder's query, key and value, the output's layout, the dropout handed down, the loop's
switch and its refusals. The kernel itself is checked against the reference on CUDA only.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForPreTraining, BertConfig, BertForPreTraining

from workers.engine import varlen_attention
from workers.engine.pretrain.loop import LoopSettings, Masker, pretrain_loop
from workers.engine.pretrain.masking import IGNORE, masking_random
from workers.engine.pretrain.mlm import masked_lm_loss, mlm_forward
from workers.engine.pretrain.packing import OFFSETS_KEY, SEGMENTS_KEY, block_diagonal_mask, pack

PAD, CLS, SEP, MASK, VOCAB, WIDTH = 0, 1, 2, 3, 64, 24
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="FlashAttention's varlen kernels need CUDA")


def tiny_bert(dropout: float = 0.0) -> BertForPreTraining:
    config = BertConfig(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=WIDTH, pad_token_id=PAD, hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )  # fmt: skip
    torch.manual_seed(0)
    return AutoModelForPreTraining.from_config(config, attn_implementation="sdpa")


def padded_blocks(count: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Sentence-pair-like blocks of ``WIDTH``: [CLS] A [SEP] B [SEP] and padding, of random real lengths."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, WIDTH + 1, count)
    ids = np.full((count, WIDTH), PAD, dtype=np.int32)
    types = np.zeros((count, WIDTH), dtype=np.int8)
    for row, length in enumerate(lengths):
        middle = int(rng.integers(2, length - 2))
        ids[row, :length] = rng.integers(4, VOCAB, length)
        ids[row, [0, middle, length - 1]] = (CLS, SEP, SEP)
        types[row, middle + 1 : length] = 1
    return {"ids": ids, "types": types, "labels": rng.integers(0, 2, count).astype(np.int8)}


def masker() -> Masker:
    return Masker(MASK, VOCAB, (PAD, CLS, SEP), PAD)


def masked_batch(count: int, seed: int = 0) -> dict:
    return masker()(padded_blocks(count, seed), np.arange(count), 0.3, masking_random(seed, 0, range(count)), False)


@pytest.fixture
def reference_kernel(monkeypatch):
    """The reference in FlashAttention's place, and the loop's availability check satisfied, on this CPU."""
    calls: list[dict] = []

    def kernel(query, key, value, offsets, max_length, dropout, scale):
        calls.append({"shape": tuple(query.shape), "offsets": offsets.tolist(), "max_length": max_length,
                      "dropout": dropout, "contiguous": query.is_contiguous()})  # fmt: skip
        return varlen_attention.reference_attention(query, key, value, offsets, max_length, dropout, scale)

    monkeypatch.setattr(varlen_attention, "kernel_for", lambda query: kernel)
    monkeypatch.setattr(varlen_attention, "unavailable_reason", lambda device, dtype, head_size: None)
    return calls


def test_cumulative_lengths_are_the_kernels_int32_offsets():
    offsets = varlen_attention.cumulative_lengths(torch.tensor([4, 2, 5, 1]))
    assert offsets.dtype == torch.int32
    assert offsets.tolist() == [0, 4, 6, 11, 12]


def test_a_packed_batchs_offsets_are_its_sequences_and_each_rows_leftover_run():
    batch = masked_batch(16)
    packed = pack(batch, tiny_bert(), PAD)
    offsets = packed[OFFSETS_KEY]
    assert offsets.dtype == torch.int32
    segments = packed[SEGMENTS_KEY].reshape(-1)
    bounds = offsets.tolist()
    assert bounds[0] == 0 and bounds[-1] == segments.numel()
    runs = list(itertools.pairwise(bounds))
    for start, end in runs:  # one segment per run, and no run crosses a row
        assert torch.all(segments[start:end] == segments[start])
        assert start // WIDTH == (end - 1) // WIDTH
    assert len({int(segments[start]) for start, _ in runs}) == len(runs)
    lengths = batch["attention_mask"].sum(dim=1)
    sequences = [end - start for start, end in runs if int(segments[start]) < len(lengths)]
    assert sorted(sequences) == sorted(lengths.tolist())  # every sequence is a run of its own length


def test_the_reference_is_attention_under_the_block_diagonal_mask():
    torch.manual_seed(0)
    rows, heads, size = 3, 2, 8
    segments = torch.tensor([[0] * 10 + [1] * 8 + [2] * 6, [3] * 20 + [6] * 4, [4] * 12 + [5] * 12])
    query, key, value = (torch.randn(rows, heads, WIDTH, size) for _ in range(3))
    expected = F.scaled_dot_product_attention(
        query, key, value, attn_mask=block_diagonal_mask(segments, additive=False)
    )
    offsets = pack_offsets(segments)
    flat = [t.transpose(1, 2).reshape(rows * WIDTH, heads, size) for t in (query, key, value)]
    found = varlen_attention.reference_attention(*flat, offsets, WIDTH, 0.0, None)
    torch.testing.assert_close(found.view(rows, WIDTH, heads, size).transpose(1, 2), expected, rtol=1e-5, atol=1e-6)


def pack_offsets(segments: torch.Tensor) -> torch.Tensor:
    from workers.engine.pretrain.packing import sequence_offsets

    return sequence_offsets(segments)


def test_packed_attention_gives_the_masked_paths_logits_and_gradients(reference_kernel, tmp_path):
    model = tiny_bert()
    batch = masked_batch(24)
    packed = pack(batch, model, PAD)
    assert packed["input_ids"].shape[0] < 24  # rows hold several sequences
    cpu, total = torch.device("cpu"), int((batch["labels"] != IGNORE).sum())
    masked_loss = masked_lm_loss(model, packed, total, cpu, None, rows=24)
    masked_loss.backward()
    masked_gradients = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    with varlen_attention.packed_attention_in(model):
        assert model.config._attn_implementation == varlen_attention.ATTENTION_NAME
        packed_loss = masked_lm_loss(model, packed, total, cpu, None, rows=24)
        packed_loss.backward()
        with torch.no_grad():
            logits, pair_logits = mlm_forward(model.eval(), packed, cpu, None)
        model.save_pretrained(tmp_path)  # a model saved meanwhile is the stock one
    assert varlen_attention.ATTENTION_NAME not in (tmp_path / "config.json").read_text()
    assert model.config._attn_implementation == "sdpa"  # restored
    assert reference_kernel, "the packed path ran the varlen kernel"
    call = reference_kernel[0]
    rows = packed["input_ids"].shape[0]
    assert call["shape"] == (rows * WIDTH, 2, 8) and call["contiguous"]  # flattened without a copy
    assert call["offsets"] == packed[OFFSETS_KEY].tolist() and call["max_length"] == WIDTH
    torch.testing.assert_close(packed_loss, masked_loss, rtol=1e-5, atol=1e-6)
    for parameter, expected in zip(model.parameters(), masked_gradients, strict=True):
        torch.testing.assert_close(parameter.grad, expected, rtol=1e-4, atol=1e-6)
    with torch.no_grad():
        expected_logits, expected_pairs = mlm_forward(model, packed, cpu, None)
    torch.testing.assert_close(logits, expected_logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(pair_logits, expected_pairs, rtol=1e-5, atol=1e-5)


def test_the_kernel_is_given_the_models_attention_dropout_in_training_and_none_in_evaluation(reference_kernel):
    model = tiny_bert(dropout=0.1)
    packed = pack(masked_batch(8), model, PAD)
    cpu = torch.device("cpu")
    with varlen_attention.packed_attention_in(model):
        mlm_forward(model.train(), packed, cpu, None)
        trained = [call["dropout"] for call in reference_kernel]
        reference_kernel.clear()
        with torch.no_grad():
            mlm_forward(model.eval(), packed, cpu, None)
    assert trained == [0.1, 0.1]  # one call per layer
    assert [call["dropout"] for call in reference_kernel] == [0.0, 0.0]


def test_batches_without_offsets_keep_sdpa_under_packed_attention():
    """Full rows are not packed (no offsets), and evaluation may run padded: both take SDPA with their mask."""
    model = tiny_bert().eval()
    batch = masked_batch(6)
    cpu = torch.device("cpu")
    with torch.no_grad():
        expected, _ = mlm_forward(model, batch, cpu, None)
        with varlen_attention.packed_attention_in(model):
            found, _ = mlm_forward(model, batch, cpu, None)
    torch.testing.assert_close(found, expected)


def test_offsets_without_a_kernel_are_refused_with_the_reason():
    model = tiny_bert()
    packed = pack(masked_batch(8), model, PAD)
    with varlen_attention.packed_attention_in(model), pytest.raises(RuntimeError, match="CUDA only"):
        mlm_forward(model, packed, torch.device("cpu"), None)


def loop_settings(**changes) -> LoopSettings:
    values = {"steps": 4, "batch_size": 8, "learning_rate": 1e-3, "checkpoint_every": 4, "eval_every": 4,
              "eval_blocks": 8, "unpadded": True}  # fmt: skip
    return LoopSettings(**{**values, **changes})


def test_the_loop_refuses_varlen_attention_where_it_cannot_run(tmp_path):
    blocks, cpu = padded_blocks(32), torch.device("cpu")
    cases = [
        (loop_settings(unpadded=False, varlen_attention=True), tiny_bert(), "set unpadded to true"),
        (loop_settings(varlen_attention=True), tiny_bert(), "CUDA only .* set varlen_attention to false"),
    ]
    eager = AutoModelForPreTraining.from_config(tiny_bert().config, attn_implementation="eager")
    cases.append((loop_settings(varlen_attention=True), eager, "replaces SDPA attention; this bert runs eager"))
    for settings, model, message in cases:
        with pytest.raises(ValueError, match=message):
            pretrain_loop(model, blocks, blocks, masker(), settings, tmp_path, device=cpu, dtype=None)
    assert varlen_attention.unavailable_reason(cpu, torch.bfloat16, 64).startswith("FlashAttention's varlen")
    cuda_device = torch.device("cuda")
    assert "bf16 or fp16" in varlen_attention.unavailable_reason(cuda_device, None, 64)
    assert "multiple of 8" in varlen_attention.unavailable_reason(cuda_device, torch.bfloat16, 20)


def test_the_loop_with_varlen_attention_trains_what_the_masked_loop_trains(reference_kernel, tmp_path):
    """Without dropout the two paths compute the same losses step by step, and the model leaves with SDPA."""
    blocks, heldout, cpu = padded_blocks(48), padded_blocks(16, seed=1), torch.device("cpu")
    logs = {}
    for varlen in (False, True):
        model = tiny_bert()
        settings = loop_settings(varlen_attention=varlen)
        pretrain_loop(model, blocks, heldout, masker(), settings, tmp_path / str(varlen), device=cpu, dtype=None)
        logs[varlen] = json.loads((tmp_path / str(varlen) / "loss.json").read_text())
        assert model.config._attn_implementation == "sdpa"
    assert len(reference_kernel) == 4 * 2 + 1 * 2  # 4 steps x 2 layers, and the held-out loss's batch x 2 layers
    for masked, packed in zip(logs[False], logs[True], strict=True):
        assert packed["loss"] == pytest.approx(masked["loss"], abs=1e-5)
    assert logs[True][-1]["heldout_loss"] == pytest.approx(logs[False][-1]["heldout_loss"], abs=1e-5)


@cuda
def test_flash_varlen_matches_the_reference_forward_and_backward_on_cuda():
    torch.manual_seed(0)
    lengths = torch.tensor([37, 5, 128, 64, 1, 90])
    offsets = varlen_attention.cumulative_lengths(lengths).cuda()
    tokens, heads, size = int(lengths.sum()), 12, 64
    inputs = [
        torch.randn(tokens, heads, size, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)
    ]
    grad = torch.randn(tokens, heads, size, device="cuda", dtype=torch.bfloat16)
    found = varlen_attention.flash_attention(*inputs, offsets, 128, 0.0, None)
    found_grads = torch.autograd.grad(found, inputs, grad)
    expected = varlen_attention.reference_attention(*inputs, offsets, 128, 0.0, None)
    expected_grads = torch.autograd.grad(expected, inputs, grad)
    torch.testing.assert_close(found, expected, rtol=2e-2, atol=2e-2)
    for a, b in zip(found_grads, expected_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=5e-2, atol=5e-2)


@cuda
def test_flash_varlen_dropout_is_seeded_and_its_backward_uses_the_forwards_mask():
    lengths = torch.tensor([50, 70])
    offsets = varlen_attention.cumulative_lengths(lengths).cuda()
    shape = (120, 4, 64)
    inputs = [torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]

    def run(seed: int, draw_between: bool):
        torch.manual_seed(seed)
        output = varlen_attention.flash_attention(*inputs, offsets, 70, 0.1, None)
        if draw_between:  # the generator moves on: a backward that drew again would drop other weights
            torch.rand(1 << 20, device="cuda")
        return output, torch.autograd.grad(output.float().sum(), inputs)

    first, again, other = run(1, False), run(1, True), run(2, False)
    torch.testing.assert_close(first[0], again[0], rtol=0, atol=0)  # same seed, same masks
    for a, b in zip(first[1], again[1], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.equal(first[0], other[0])  # another seed, other masks
    without = varlen_attention.flash_attention(*inputs, offsets, 70, 0.0, None)
    assert not torch.equal(first[0], without)  # dropout was applied


@cuda
def test_the_loop_with_varlen_attention_on_cuda_learns_as_the_masked_loop_does(tmp_path):
    blocks, heldout, device = padded_blocks(256), padded_blocks(32, seed=1), torch.device("cuda")
    final = {}
    for varlen in (False, True):
        model = tiny_bert(dropout=0.1)  # a head size of 8, which FlashAttention takes
        settings = loop_settings(steps=60, batch_size=32, eval_blocks=32, checkpoint_every=60, eval_every=60,
                                 varlen_attention=varlen)  # fmt: skip
        pretrain_loop(model, blocks, heldout, masker(), settings, tmp_path / str(varlen), device=device,
                      dtype=torch.bfloat16)  # fmt: skip
        final[varlen] = json.loads((tmp_path / str(varlen) / "loss.json").read_text())[-1]["heldout_loss"]
    assert abs(final[True] - final[False]) < 0.05
