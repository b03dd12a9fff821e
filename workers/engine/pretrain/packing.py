"""Unpadded MLM: a micro-batch's padded sequences packed into fewer rows, attention kept inside each sequence.

Sentence-pair instances (NSP, SOP: :class:`~workers.engine.pretrain.data.PairWriter`) are padded to
the block's width; the padding is work the encoder does for nothing. MosaicBERT (Portes et al.
2023) and ModernBERT (Warner et al. 2024) remove it. Here the real tokens of a micro-batch are
packed, first-fit by decreasing length, into rows of the block's width, and each packed row gets:

* a **block-diagonal attention mask** (4D, ``rows x 1 x width x width``): a token attends to the
  tokens of its own sequence only, so no sequence sees another. The leftover slots at the end of
  a row form a group of their own (they attend to each other): a query that may attend to
  nothing would give NaN under SDPA, and a NaN activation poisons the weight gradients even where
  the loss never reads it;
* **position ids** that restart at each sequence: each token keeps the position it had in its
  padded row (RoBERTa-style models number from ``padding_idx + 1``; the position the model itself
  would have given is what is carried);
* the **index of each sequence's first token** ([CLS]), in the original order, so the pooler and
  the NSP/SOP head read each sequence's own [CLS] and the sentence-pair labels keep their order.

The mask is boolean for SDPA (which PyTorch routes to its fused kernels) and additive (0 or the
float minimum) for the eager attention of models without SDPA (Megatron-BERT); both are handed to
the model as a ready 4D mask, which transformers 5 passes to the attention function unchanged.
A model whose attention runs :mod:`workers.engine.varlen_attention`'s packed attention (the loop's
``varlen_attention`` setting, on CUDA) gets no mask at all: each packed batch also carries its
sequences' offsets over the flattened rows (the leftover slots of a row count as one sequence, as
in the mask), and FlashAttention's varlen kernels keep each sequence to itself.

Per sequence the packed forward computes exactly what the padded one does (the same tokens,
positions, segments and attendable keys); only the order of floating-point sums in a row's
matmuls may differ. A batch with no padding (RoBERTa-style full blocks) is returned unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from workers.engine import varlen_attention
from workers.engine.pretrain.masking import IGNORE

# Families whose encoder takes position ids and a ready 4D attention mask (sdpa or eager) unchanged.
PACKABLE_MODEL_TYPES = frozenset({"bert", "roberta", "xlm-roberta", "megatron-bert", "electra"})
PACKED_KEY = "sequence_starts"  # present in a packed batch: the flat index of each sequence's [CLS]
SEGMENTS_KEY = "segments"  # a packed batch's sequence number per slot, from which its mask is built
OFFSETS_KEY = "sequence_offsets"  # a packed batch's cu_seqlens over its flattened rows (int32), for varlen kernels


@dataclass(frozen=True)
class Layout:
    """Where each sequence of a padded batch goes: its packed row and the column it starts at."""

    lengths: torch.Tensor  # (sequences,) real tokens of each
    row: torch.Tensor  # (sequences,)
    start: torch.Tensor  # (sequences,)
    rows: int
    width: int


def check_packable(model: torch.nn.Module) -> None:
    """Refuse, by name, a model whose attention the packed path cannot restrict to one sequence."""
    config = model.config
    implementation = getattr(config, "_attn_implementation", None) or "eager"
    if config.model_type not in PACKABLE_MODEL_TYPES or implementation not in ("sdpa", "eager"):
        raise ValueError(
            f"unpadded pretraining needs an encoder that takes position ids and a 4D mask with sdpa or eager "
            f"attention ({', '.join(sorted(PACKABLE_MODEL_TYPES))}); {config.model_type} with "
            f"{implementation} attention is not one: set unpadded to false"
        )


def first_fit_layout(lengths: torch.Tensor, width: int) -> Layout:
    """Sequences into rows of ``width``, longest first, each into the first row with room (deterministic).

    It runs on the host before every micro-batch, so it works on plain arrays: indexing a tensor
    element by element made packing 256 sequences take 18 ms, a fifth of a BERT-base step on an H200.
    """
    sizes = lengths.numpy().astype(np.int64)
    order = np.lexsort((np.arange(len(sizes)), -sizes))  # longest first, ties by position
    free = np.empty(len(sizes), dtype=np.int64)  # room left in each opened row
    rows = 0
    row = np.empty(len(sizes), dtype=np.int64)
    start = np.empty(len(sizes), dtype=np.int64)
    for index in order.tolist():
        length = int(sizes[index])
        fits = np.flatnonzero(free[:rows] >= length)
        if len(fits):
            target = int(fits[0])
        else:
            target, rows = rows, rows + 1
            free[target] = width
        row[index], start[index] = target, width - free[target]
        free[target] -= length
    return Layout(lengths.clone(), torch.from_numpy(row), torch.from_numpy(start), rows, width)


def position_ids(model: torch.nn.Module, attention_mask: torch.Tensor) -> torch.Tensor:
    """The position ids the model gives its padded rows: from 0 (BERT) or ``padding_idx + 1`` (RoBERTa)."""
    padding_idx = getattr(model.base_model.embeddings, "padding_idx", None)
    if padding_idx is None:
        return torch.arange(attention_mask.shape[1]).expand_as(attention_mask)
    return torch.cumsum(attention_mask, dim=1) * attention_mask + padding_idx


def pack(batch: dict, model: torch.nn.Module, pad_id: int) -> dict:
    """The padded ``batch`` packed (see the module docstring); unchanged when it has no padding.

    The packed batch carries each slot's segment (``rows x width``), not the 4D mask: the mask is
    ``width`` times larger, so it is built where the model runs (:func:`attention_mask`).
    """
    mask = batch["attention_mask"]
    lengths = mask.sum(dim=1)
    if bool((lengths == mask.shape[1]).all()):
        return batch
    if not torch.equal(mask, (torch.arange(mask.shape[1]) < lengths[:, None]).to(mask.dtype)):
        raise ValueError("unpadded pretraining packs rows padded at their end only")
    layout = first_fit_layout(lengths, mask.shape[1])
    source, segment = _slot_sources(layout)
    packed = {
        "input_ids": _gather(batch["input_ids"], source, pad_id),
        "labels": _gather(batch["labels"], source, IGNORE),
        "position_ids": _gather(position_ids(model, mask), source, 0),
        PACKED_KEY: layout.row * layout.width + layout.start,
    }
    if "token_type_ids" in batch:
        packed["token_type_ids"] = _gather(batch["token_type_ids"], source, 0)
    for key in ("next_sentence_label", "block"):  # per sequence: their order is kept
        if key in batch:
            packed[key] = batch[key]
    packed[SEGMENTS_KEY] = segment  # the mask is built from these on the model's device (mlm.py)
    packed[OFFSETS_KEY] = sequence_offsets(segment)
    return packed


def sequence_offsets(segments: torch.Tensor) -> torch.Tensor:
    """The int32 cu_seqlens of the flattened rows: where each run of one segment starts, then the slot count.

    A sequence never crosses a row and neighbouring runs never share a segment (a row's leftover
    slots take a segment of their own), so the runs are exactly the sequences the mask separates.
    """
    flat = segments.reshape(-1).numpy()
    starts = np.flatnonzero(np.diff(flat)) + 1
    return torch.from_numpy(np.concatenate(([0], starts, [len(flat)])).astype(np.int32))


def _slot_sources(layout: Layout) -> tuple[torch.Tensor, torch.Tensor]:
    """For every packed slot, the flat index of its padded token (-1: leftover) and its segment.

    Segments number the sequences 0..n-1; a row's leftover slots take segment n + row.
    """
    count, width = len(layout.lengths), layout.width
    lengths = layout.lengths.numpy().astype(np.int64)
    sequence = np.repeat(np.arange(count), lengths)  # each real token's sequence
    offset = np.arange(len(sequence)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # its column in its row
    slot = (layout.row.numpy()[sequence] * width + layout.start.numpy()[sequence]) + offset
    source = np.full(layout.rows * width, -1, dtype=np.int64)
    source[slot] = sequence * width + offset
    segment = np.repeat(count + np.arange(layout.rows), width)
    segment[slot] = sequence
    shape = (layout.rows, width)
    return torch.from_numpy(source).view(shape), torch.from_numpy(segment).view(shape)


def _gather(values: torch.Tensor, source: torch.Tensor, fill: int) -> torch.Tensor:
    flat = values.reshape(-1)
    out = flat[source.clamp(min=0)]
    return torch.where(source >= 0, out, torch.full_like(out, fill))


def block_diagonal_mask(segment: torch.Tensor, *, additive: bool) -> torch.Tensor:
    """``rows x 1 x width x width``: True (or 0.0) where query and key share a segment, else False (or -inf-ish)."""
    allowed = (segment[:, :, None] == segment[:, None, :]).unsqueeze(1)
    if not additive:
        return allowed
    zero = torch.zeros((), device=segment.device)
    return torch.where(allowed, zero, torch.full((), torch.finfo(torch.float32).min, device=segment.device))


def attention_mask(model: torch.nn.Module, segments: torch.Tensor) -> torch.Tensor:
    """The 4D mask of a packed batch for ``model``'s attention: boolean for SDPA, additive for eager."""
    return block_diagonal_mask(segments, additive=getattr(model.config, "_attn_implementation", None) != "sdpa")


def attention_inputs(model: torch.nn.Module, packed: dict) -> dict:
    """What keeps a packed batch's sequences apart in ``model``'s forward: its offsets for packed attention
    (:func:`workers.engine.varlen_attention.packed_attention_in`), else its 4D mask."""
    if getattr(model.config, "_attn_implementation", None) != varlen_attention.ATTENTION_NAME:
        return {"attention_mask": attention_mask(model, packed[SEGMENTS_KEY])}
    offsets, width = packed[OFFSETS_KEY], packed["input_ids"].shape[1]  # the row width bounds every sequence
    return {"cu_seq_lens_q": offsets, "cu_seq_lens_k": offsets, "max_length_q": width, "max_length_k": width}
