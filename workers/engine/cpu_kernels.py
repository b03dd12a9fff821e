"""Faster dropout and attention for fine-tuning on CPUs, with the same mathematics.

Profiling a BERT fine-tuning step on a CPU (MiniLM-L6 on BC5-chem, bf16 autocast) showed a
sixth of the time in ``bernoulli_`` drawing dropout masks, and another sixth in
scaled-dot-product attention's "math" path (the only CPU path that supports dropout), whose
fully-masked-row guards (``isneginf``, ``where``, ``all``) cost as much as its softmax. GPUs do
not pay either: their dropout draws from a counter-based generator inside the fused kernel, and
their flash kernels take dropout. So on CPUs, and only there, training swaps in:

* :class:`FastDropout` (:func:`inverted_dropout`): the same inverted dropout (keep with probability ``1 - p``, scale by
  ``1 / (1 - p)``), but the keep mask compares 32-bit integers, two per 64-bit draw of PyTorch's
  seeded generator, with ``p`` quantised to ``2**-32`` -- finer than ``bernoulli_``'s float
  comparison. About twice as fast, and as reproducible (same seed, same masks).
* :func:`attention`, registered with transformers as ``"biolm_sdpa"``: in training with dropout
  it computes softmax(QK^T * scale + mask) in float32, applies :func:`inverted_dropout`, and multiplies by
  V; without dropout (evaluation) it is transformers' own SDPA function. Padding masks come from
  transformers' SDPA mask builder, so which keys a query sees is unchanged; a query always sees
  at least its own sequence's [CLS], so the fully-masked-row guard is not needed.

:func:`cpu_training_kernels` applies both for the duration of a training loop and restores the
model afterwards, so a saved or evaluated model is the stock Hugging Face one.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from workers.engine.attention_switch import sdpa_replaced_by

ATTENTION_NAME = "biolm_sdpa"
_INT32_SPAN = 2**32


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, device: torch.device) -> torch.Tensor:
    """A boolean mask, True with probability ``1 - p`` (to within ``2**-32``), from the seeded generator."""
    n = math.prod(shape)
    draws = torch.empty((n + 1) // 2, dtype=torch.int64, device=device).random_(-(2**63), None)
    lanes = draws.view(torch.int32)[:n]  # each 64-bit draw is two independent uniform 32-bit lanes
    threshold = -(2**31) + round(p * _INT32_SPAN)
    return (lanes >= threshold).view(shape)


def inverted_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Inverted dropout in training mode: zero with probability ``p``, scale the rest by ``1 / (1 - p)``."""
    if p <= 0.0:
        return x
    if p >= 1.0:
        return torch.zeros_like(x)
    return torch.where(keep_mask(x.shape, p, x.device), x * (1.0 / (1.0 - p)), x.new_zeros(()))


class FastDropout(torch.nn.Dropout):
    """``nn.Dropout`` with :func:`dropout`'s cheaper mask; a subclass, so ``isinstance`` checks still hold."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        return inverted_dropout(x, self.p)


def attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Bidirectional attention for encoders; SDPA itself whenever no dropout applies."""
    if not module.training:
        dropout = 0.0  # as every transformers attention module passes it; SDPA itself would still drop
    if dropout == 0.0 or is_causal or query.shape[1] != key.shape[1]:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    # Scale the (length x dim) query rather than the (length x length) scores, and the dropout's
    # 1 / (1 - p) on the output rather than the weights: the same products on smaller tensors.
    scores = torch.matmul(query * scale, key.transpose(-1, -2))
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask.to(scores.dtype)
    probabilities = torch.softmax(scores, dim=-1)  # accumulates in float32 for bf16 inputs
    kept = torch.where(keep_mask(probabilities.shape, dropout, probabilities.device), probabilities, 0.0)
    output = torch.matmul(kept, value) * (1.0 / (1.0 - dropout))
    return output.transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION_NAME, attention)
AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)


@contextlib.contextmanager
def cpu_training_kernels(model: torch.nn.Module, device: torch.device) -> Iterator[None]:
    """Use :class:`FastDropout` and :func:`attention` in ``model`` while training on a CPU; restore afterwards.

    Models that do not run SDPA attention (Longformer, BigBird, Megatron-BERT run "eager") keep
    their attention and only get the faster dropout. On other devices nothing changes.
    """
    if device.type != "cpu":
        yield
        return
    swapped: list[tuple[torch.nn.Module, str, torch.nn.Dropout]] = []
    for parent in model.modules():
        for name, child in parent.named_children():
            if type(child) is torch.nn.Dropout:
                swapped.append((parent, name, child))
                setattr(parent, name, FastDropout(child.p, child.inplace))
    try:
        with sdpa_replaced_by(model, ATTENTION_NAME):
            yield
    finally:
        for parent, name, child in swapped:
            setattr(parent, name, child)
