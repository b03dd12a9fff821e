"""Swapping a model's SDPA attention for a registered attention function for the length of a block.

The engine runs its own attention functions (``cpu_kernels``' dropout attention on CPUs,
``varlen_attention``'s packed attention on GPUs) only while it trains, so that a model saved or
evaluated afterwards is the stock Hugging Face one. Both switch the same way, here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from transformers import PreTrainedModel


@contextlib.contextmanager
def sdpa_replaced_by(model: torch.nn.Module, name: str) -> Iterator[None]:
    """Every Hugging Face model inside ``model`` that runs SDPA runs the attention registered as ``name``; SDPA after.

    Formulations may wrap a Hugging Face model (CRF, marker and snippet heads), so every one inside
    is switched; models with other attention (eager Megatron-BERT, Longformer, BigBird) are left as they are.
    """
    encoders = [
        m for m in model.modules() if isinstance(m, PreTrainedModel) and m.config._attn_implementation == "sdpa"
    ]
    for encoder in encoders:
        encoder.set_attn_implementation(name)
    try:
        yield
    finally:
        for encoder in encoders:
            encoder.set_attn_implementation("sdpa")
