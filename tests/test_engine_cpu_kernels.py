"""The CPU training kernels compute the same mathematics as PyTorch's dropout and SDPA attention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForTokenClassification

from workers.engine.architectures import build_config
from workers.engine.cpu_kernels import (
    FastDropout,
    attention,
    cpu_training_kernels,
    inverted_dropout,
    keep_mask,
)

CPU = torch.device("cpu")


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_the_keep_mask_keeps_with_probability_one_minus_p(p):
    torch.manual_seed(0)
    n = 1_000_000
    kept = keep_mask((n,), p, CPU).float().mean().item()
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs(kept - (1 - p)) < 5 * sigma


def test_mask_lanes_are_independent_of_their_neighbours():
    """Two lanes come from one 64-bit draw: neighbouring keep decisions must not be correlated."""
    torch.manual_seed(1)
    mask = keep_mask((1_000_000,), 0.5, CPU).float()
    both = (mask[0::2] * mask[1::2]).mean().item()
    assert abs(both - 0.25) < 5 * math.sqrt(0.25 * 0.75 / 500_000)


def test_inverted_dropout_zeroes_or_scales_and_keeps_the_expectation():
    torch.manual_seed(2)
    x = torch.rand(400_000) + 0.5
    y = inverted_dropout(x, 0.1)
    kept = y != 0
    assert torch.allclose(y[kept], x[kept] / 0.9)
    assert abs(y.mean().item() / x.mean().item() - 1) < 0.005
    assert torch.equal(inverted_dropout(x, 0.0), x)
    assert torch.count_nonzero(inverted_dropout(x, 1.0)) == 0


def test_the_same_seed_draws_the_same_masks():
    torch.manual_seed(3)
    first = keep_mask((1000,), 0.1, CPU)
    torch.manual_seed(3)
    assert torch.equal(first, keep_mask((1000,), 0.1, CPU))


class _Module(torch.nn.Module):
    is_causal = False  # an encoder's self-attention, as BERT's attention modules declare


def _qkv(batch=2, heads=4, length=9, dim=8, seed=4):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, length, dim, generator=generator) for _ in range(3)]


def test_training_attention_without_dropped_weights_equals_pytorch_sdpa():
    """A dropout probability below 2**-32 keeps every weight: the result must be SDPA's, padding mask included."""
    query, key, value = _qkv()
    mask = torch.ones(2, 1, 9, 9, dtype=torch.bool)
    mask[1, :, :, 6:] = False  # the second sequence has three padding positions
    module = _Module().train()
    ours, _ = attention(module, query, key, value, mask, dropout=1e-12, scaling=8**-0.5)
    reference = F.scaled_dot_product_attention(query, key, value, attn_mask=mask).transpose(1, 2)
    assert torch.allclose(ours, reference, atol=1e-5)


def test_training_attention_drops_attention_weights_as_the_mask_says():
    query, key, value = _qkv()
    module = _Module().train()
    torch.manual_seed(5)
    ours, _ = attention(module, query, key, value, None, dropout=0.3, scaling=8**-0.5)
    torch.manual_seed(5)
    keep = keep_mask((2, 4, 9, 9), 0.3, CPU)
    weights = torch.softmax(query @ key.transpose(-1, -2) * 8**-0.5, dim=-1) * keep / 0.7
    assert torch.allclose(ours, (weights @ value).transpose(1, 2), atol=1e-5)


def test_attention_in_evaluation_is_sdpa_itself():
    query, key, value = _qkv()
    module = _Module().eval()
    ours, _ = attention(module, query, key, value, None, dropout=0.1, scaling=8**-0.5)
    assert torch.equal(ours, F.scaled_dot_product_attention(query, key, value).transpose(1, 2).contiguous())


def _tiny_bert(dropout: float = 0.1):
    config = build_config("bert", "tiny", hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(6)
    return AutoModelForTokenClassification.from_config(config, attn_implementation="sdpa")


def test_a_model_without_dropout_gives_the_same_logits_and_gradients_with_the_kernels():
    model = _tiny_bert(dropout=0.0).train()
    inputs = {"input_ids": torch.randint(5, 100, (3, 20)), "attention_mask": torch.ones(3, 20, dtype=torch.long)}
    inputs["attention_mask"][2, 12:] = 0
    reference = model(**inputs).logits
    with cpu_training_kernels(model, CPU):
        assert model.config._attn_implementation == "biolm_sdpa"
        ours = model(**inputs).logits
    assert torch.allclose(ours, reference, atol=1e-5)


def test_the_model_is_restored_after_training():
    model = _tiny_bert()
    dropouts = [type(m) for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    with cpu_training_kernels(model, CPU):
        assert any(isinstance(m, FastDropout) for m in model.modules())
    assert [type(m) for m in model.modules() if isinstance(m, torch.nn.Dropout)] == dropouts
    assert model.config._attn_implementation == "sdpa"


def test_nothing_changes_off_the_cpu():
    model = _tiny_bert()
    with cpu_training_kernels(model, torch.device("meta")):
        assert not any(isinstance(m, FastDropout) for m in model.modules())
        assert model.config._attn_implementation == "sdpa"
