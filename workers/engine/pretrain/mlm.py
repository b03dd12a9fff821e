"""Masked language modelling's forward pass and loss, the base every pretraining objective builds on.

The loop (plain MLM and held-out loss), ALUM's adversarial term (:mod:`.adversarial`) and
distillation (:mod:`.distillation`) all need the model's pretraining head, the masked
positions' logits and the MLM (+ NSP/SOP) cross-entropy. They live here, below all three, so
the objectives never import the loop that drives them: the dependency runs one way, loop ->
objectives -> mlm.
"""

from __future__ import annotations

import torch

from workers.engine.pretrain.masking import IGNORE
from workers.engine.pretrain.packing import PACKED_KEY, attention_inputs


def autocast(device: torch.device, dtype: torch.dtype | None):
    """bf16 (or fp16) autocast on ``device``; disabled when ``dtype`` is None (fp32)."""
    if dtype is None:
        return torch.autocast(device_type=device.type, enabled=False)
    return torch.autocast(device_type=device.type, dtype=dtype)


def output_head(model: torch.nn.Module) -> torch.nn.Module:
    """The model's pretraining head: its child that is not the encoder (``cls``, ``lm_head``)."""
    base = model.base_model
    return next(module for _, module in model.named_children() if module is not base)


def has_pair_head(model: torch.nn.Module) -> bool:
    """Whether the model predicts a sentence-pair label (BERT's ``seq_relationship``) beside MLM."""
    return hasattr(output_head(model), "seq_relationship")


def masked_lm_loss(
    model, batch: dict, total_masked: int, device, dtype, *, rows: int = 1, pair_weight: float = 1.0
) -> torch.Tensor:
    """MLM cross-entropy over this share's masked positions divided by the whole step's count, plus
    the sentence-pair loss (NSP or SOP) summed over this share's rows divided by the step's rows.

    Summed across micro-batches and processes, the gradients are exactly those of one big batch.
    """
    logits, pair_logits = mlm_forward(model, batch, device, dtype, pairs=bool(pair_weight))
    return mlm_loss_from_logits(logits, pair_logits, batch, total_masked, rows=rows, pair_weight=pair_weight)


def mlm_forward(model, batch: dict, device, dtype, *, pairs: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The vocabulary logits at the masked positions, and the sentence-pair logits when the batch has pairs.

    The vocabulary projection runs on the masked positions only (15% of them), which saves most
    of its cost (MosaicBERT, Portes et al. 2023); the encoder runs on everything. A packed batch
    (:mod:`.packing`) runs with its block-diagonal mask (or its sequences' offsets, for packed
    attention) and per-sequence positions, and the
    sentence-pair head reads each packed sequence's own [CLS].
    """
    selected = batch["labels"] != IGNORE
    head = output_head(model)
    packed = PACKED_KEY in batch
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "position_ids") if k in batch}
    if packed:
        inputs.update(attention_inputs(model, batch))
    with autocast(device, dtype):
        outputs = model.base_model(**inputs)
        # BERT-family heads hold the MLM part as ``predictions`` (beside ``seq_relationship`` when pretraining)
        logits = getattr(head, "predictions", head)(outputs[0][selected])
        pair_logits = None
        if pairs and "next_sentence_label" in batch:
            pooled = _packed_pooled(model, outputs[0], batch[PACKED_KEY]) if packed else outputs[1]
            pair_logits = head.seq_relationship(pooled)
    return logits, pair_logits


def _packed_pooled(model, hidden: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """The pooler's output for each packed sequence: it reads the first token given, here that sequence's [CLS]."""
    first = hidden.reshape(-1, hidden.shape[-1])[starts]
    return model.base_model.pooler(first.unsqueeze(1))


def mlm_loss_from_logits(
    logits: torch.Tensor, pair_logits: torch.Tensor | None, batch: dict, total_masked: int, *, rows: int,
    pair_weight: float = 1.0,
) -> torch.Tensor:  # fmt: skip
    """The loss of :func:`masked_lm_loss` from logits already computed (ALUM reuses the clean pass's)."""
    labels = batch["labels"]
    loss = torch.nn.functional.cross_entropy(logits.float(), labels[labels != IGNORE], reduction="sum") / total_masked
    if pair_logits is not None and pair_weight:
        pair = torch.nn.functional.cross_entropy(pair_logits.float(), batch["next_sentence_label"], reduction="sum")
        loss = loss + pair_weight * pair / rows
    return loss
