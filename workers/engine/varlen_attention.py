"""Attention over sequences laid end to end, with no padding and no mask: FlashAttention's varlen kernels.

Packed pretraining rows (:mod:`workers.engine.pretrain.packing`) hold several sequences each, so
today they carry a block-diagonal mask (``rows x width x width``) that keeps each sequence to
itself. PyTorch's SDPA has no FlashAttention kernel that takes a mask, so that path runs the
memory-efficient kernel and builds and reads the mask in every layer. FlashAttention's
variable-length kernels (Dao 2023; the path MosaicBERT, Portes et al. 2023, and ModernBERT,
Warner et al. 2024, train on) take the sequences' boundaries instead: the cumulative lengths of the
sequences laid end to end (``cu_seqlens``). Each query then sees its own sequence's keys and nothing
else, by construction.

torch 2.13 exposes these kernels as ``torch.nn.attention.varlen.varlen_attn``, but with attention
dropout fixed at 0. BERT's recipe (and every BLURB model's) drops attention probabilities at 0.1,
so :class:`FlashVarlen` calls the same ATen kernels, ``_flash_attention_forward`` and
``_flash_attention_backward``, with the dropout the model asks for. The forward returns the
kernel's random state, and the backward passes it back, so the backward regenerates the forward's
dropout mask. The draws come from torch's CUDA generator, so a seeded run is reproducible and a
resumed one continues its stream.

Only CUDA has these kernels, and only for fp16 and bf16 with a head size that is a multiple of 8,
up to 256 (:func:`available`). Callers keep their masked path everywhere else.
:func:`reference_attention` computes the same mathematics one sequence at a time through SDPA. The
tests run it on a CPU in the kernel's place, which checks every layout the callers build.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from workers.engine.attention_switch import sdpa_replaced_by

ATTENTION_NAME = "biolm_varlen"
FLASH_DTYPES = (torch.float16, torch.bfloat16)
MAX_HEAD_SIZE = 256

# (query, key, value, offsets, max_length, dropout, scale) -> output; each tensor (tokens, heads, head size)
Kernel = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int, float, float | None], torch.Tensor]


def cumulative_lengths(lengths: torch.Tensor) -> torch.Tensor:
    """The ``(n + 1,)`` int32 offsets of ``n`` sequences laid end to end (0, l0, l0 + l1, ...): cu_seqlens."""
    return F.pad(torch.cumsum(lengths, 0, dtype=torch.int32), (1, 0))


def available(device: torch.device, dtype: torch.dtype | None, head_size: int) -> bool:
    """Whether FlashAttention's varlen kernels run here: CUDA, fp16 or bf16, a head size a multiple of 8 up to 256."""
    return (
        device.type == "cuda"
        and dtype in FLASH_DTYPES
        and head_size % 8 == 0
        and head_size <= MAX_HEAD_SIZE
        and torch.backends.cuda.is_flash_attention_available()
        and torch.backends.cuda.flash_sdp_enabled()
    )


def unavailable_reason(device: torch.device, dtype: torch.dtype | None, head_size: int) -> str | None:
    """Why :func:`available` is false, in words a recipe's author can act on; None when it is true."""
    if available(device, dtype, head_size):
        return None
    if device.type != "cuda":
        return f"FlashAttention's varlen kernels run on CUDA only (this run is on {device.type})"
    if dtype not in FLASH_DTYPES:
        return f"FlashAttention needs bf16 or fp16 (this run is {dtype or 'fp32'})"
    if head_size % 8 or head_size > MAX_HEAD_SIZE:
        limit = f"a head size that is a multiple of 8, up to {MAX_HEAD_SIZE}"
        return f"FlashAttention needs {limit} (this model's is {head_size})"
    return (
        "this torch build has no FlashAttention kernels, or they are disabled (torch.backends.cuda.flash_sdp_enabled)"
    )


class FlashVarlen(torch.autograd.Function):
    """FlashAttention over sequences laid end to end, with attention dropout (which torch's ``varlen_attn`` lacks)."""

    @staticmethod
    def forward(ctx, query, key, value, offsets, max_length: int, dropout: float, scale: float | None):
        output, logsumexp, rng_state, unused, _ = torch.ops.aten._flash_attention_forward(
            query, key, value, offsets, offsets, max_length, max_length, dropout, False, False, scale=scale
        )
        ctx.save_for_backward(query, key, value, offsets, output, logsumexp, rng_state, unused)
        ctx.max_length, ctx.dropout, ctx.scale = max_length, dropout, scale
        return output

    @staticmethod
    def backward(ctx, grad_output):
        query, key, value, offsets, output, logsumexp, rng_state, unused = ctx.saved_tensors
        grad_query, grad_key, grad_value = torch.ops.aten._flash_attention_backward(
            grad_output.contiguous(), query, key, value, output, logsumexp, offsets, offsets,
            ctx.max_length, ctx.max_length, ctx.dropout, False, rng_state, unused, scale=ctx.scale,
        )  # fmt: skip
        return grad_query, grad_key, grad_value, None, None, None, None


def flash_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    offsets: torch.Tensor,
    max_length: int,
    dropout: float,
    scale: float | None,
) -> torch.Tensor:
    """Each of ``query``, ``key``, ``value`` is ``(tokens, heads, head size)``; ``offsets`` the int32 cu_seqlens on
    their device; ``max_length`` the longest sequence's length, or any bound on it (a bound only sizes the grid)."""
    return FlashVarlen.apply(query, key, value, offsets, max_length, dropout, scale)


def reference_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    offsets: torch.Tensor,
    max_length: int,
    dropout: float,
    scale: float | None,
) -> torch.Tensor:
    """:func:`flash_attention`'s mathematics, one sequence at a time through SDPA, on any device (slow; for tests)."""
    bounds = offsets.tolist()
    outputs = []
    for start, end in itertools.pairwise(bounds):
        if end - start > max_length:
            raise ValueError(f"a sequence of {end - start} tokens is longer than max_length {max_length}")
        q, k, v = (t[start:end].transpose(0, 1) for t in (query, key, value))  # (heads, length, size)
        outputs.append(F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, scale=scale).transpose(0, 1))
    return torch.cat(outputs)


def kernel_for(query: torch.Tensor) -> Kernel | None:
    """The varlen kernel for ``query``'s device, dtype (autocast's where it is on) and head size, or None."""
    dtype = torch.get_autocast_dtype(query.device.type) if torch.is_autocast_enabled(query.device.type) else query.dtype
    return flash_attention if available(query.device, dtype, query.shape[-1]) else None


def packed_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    cu_seq_lens_q: torch.Tensor | None = None,
    max_length_q: int | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """A transformers attention function: packed rows (``rows x heads x width x size``) whose sequences
    ``cu_seq_lens_q`` delimits, through the varlen kernel; anything else (no offsets) through SDPA with its mask."""
    kwargs.pop("cu_seq_lens_k", None)
    kwargs.pop("max_length_k", None)
    if cu_seq_lens_q is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    kernel = kernel_for(query)
    if kernel is None:
        reason = unavailable_reason(query.device, query.dtype, query.shape[-1])
        raise RuntimeError(f"packed attention was given sequence offsets, but {reason}")
    rows, heads, width, size = query.shape
    flat = [t.transpose(1, 2).reshape(rows * width, heads, size) for t in (query, key, value)]
    output = kernel(*flat, cu_seq_lens_q, max_length_q or width, dropout if module.training else 0.0, scaling)
    return output.view(rows, width, heads, size), None


AttentionInterface.register(ATTENTION_NAME, packed_attention)
AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)


def packed_attention_in(model: torch.nn.Module) -> contextlib.AbstractContextManager[None]:
    """Route ``model``'s SDPA attention through :func:`packed_attention` while the block runs; restore SDPA after.

    Batches without offsets still run SDPA with their mask, so only the callers that pass offsets
    change what runs. A saved checkpoint is the stock model (the switch is undone before the caller's
    final save, and a config never records the attention implementation).
    """
    return sdpa_replaced_by(model, ATTENTION_NAME)
