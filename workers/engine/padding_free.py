"""Padding-free training steps for BERT token classifiers: the dense layers never see a padding token.

Length-grouped batches still pad each sentence to its batch's longest (and, for bf16 kernels, to a
multiple of 8): on BC5-chem's short sentences a sixth to a third of the positions a padded BERT
computes are padding. MosaicBERT (Portes et al. 2023) and ModernBERT (Warner et al. 2024) remove
them: the batch's real tokens are gathered into one ``(tokens, hidden)`` matrix, and every
position-wise part of the encoder -- embeddings, the Q/K/V and output projections, the
feed-forward layers, LayerNorm, dropout and the classifier -- runs on that matrix alone. Only
attention needs the sentences apart: the projected queries, keys and values are scattered back
into a padded ``(batch, heads, length, head_dim)`` block where each query sees its own sentence's
real keys and nothing else, and the result is gathered again. The loss is the same mean
cross-entropy over the labelled tokens as ``BertForTokenClassification``'s (padding carries
the ignore label there, so it never counted).

The mathematics is the model's own, with the model's own modules and parameters: logits equal
the padded forward's to rounding, and a saved model is the stock Hugging Face one. Dropout masks
are drawn for the real tokens only, so a run's random stream differs from the padded path's (as
any change of batch shape would). Attention runs through PyTorch's SDPA (FlashAttention or
memory-efficient kernels on GPUs), or on CPUs in training through :func:`cpu_kernels.attention`.
:func:`supports` says which models take this path; others keep their padded forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import BertForTokenClassification

from workers.engine import cpu_kernels

Step = Callable[[dict[str, torch.Tensor]], torch.Tensor]


def supports(model: torch.nn.Module) -> bool:
    """True for a BERT token classifier with absolute positions and plain self-attention (no decoder, no chunks)."""
    if type(model) is not BertForTokenClassification:
        return False
    config = model.config
    return (
        not config.is_decoder
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and not getattr(config, "chunk_size_feed_forward", 0)
    )


@dataclass(frozen=True)
class Packing:
    """Where a padded batch's real tokens are: their flat indices in ``(batch * length)``, and the key mask."""

    index: torch.Tensor  # (tokens,) positions of real tokens in the flattened padded batch
    batch: int
    length: int
    keys: torch.Tensor  # (batch, 1, 1, length) True where a key is a real token

    @classmethod
    def of(cls, attention_mask: torch.Tensor) -> Packing:
        mask = attention_mask.bool()
        batch, length = mask.shape
        return cls(mask.reshape(-1).nonzero().squeeze(1), batch, length, mask[:, None, None, :])

    def unpad(self, padded: torch.Tensor) -> torch.Tensor:
        """``(batch, length, ...)`` -> ``(tokens, ...)``."""
        return padded.reshape(self.batch * self.length, *padded.shape[2:]).index_select(0, self.index)

    def pad(self, packed: torch.Tensor) -> torch.Tensor:
        """``(tokens, ...)`` -> ``(batch, length, ...)``, zeros at padding."""
        flat = packed.new_zeros(self.batch * self.length, *packed.shape[1:]).index_copy(0, self.index, packed)
        return flat.view(self.batch, self.length, *packed.shape[1:])


def embed(bert: torch.nn.Module, batch: dict[str, torch.Tensor], packing: Packing) -> torch.Tensor:
    """BertEmbeddings on the real tokens: word + token type + absolute position, LayerNorm, dropout."""
    ids = packing.unpad(batch["input_ids"])
    positions = torch.arange(packing.length, device=ids.device).expand(packing.batch, -1)
    positions = packing.unpad(positions)
    types = batch.get("token_type_ids")
    types = packing.unpad(types) if types is not None else torch.zeros_like(ids)
    embeddings = bert.embeddings
    hidden = embeddings.word_embeddings(ids) + embeddings.token_type_embeddings(types)
    hidden = hidden + embeddings.position_embeddings(positions)
    return embeddings.dropout(embeddings.LayerNorm(hidden))


def self_attention(module: torch.nn.Module, hidden: torch.Tensor, packing: Packing) -> torch.Tensor:
    """BertSelfAttention on packed tokens: projections packed, attention per sentence, result packed."""
    heads, size = module.num_attention_heads, module.attention_head_size
    projections = (module.query, module.key, module.value)
    # One (hidden -> 3 hidden) product instead of three, and one scatter into the padded block.
    weight = torch.cat([projection.weight for projection in projections])
    bias = torch.cat([projection.bias for projection in projections])
    padded = packing.pad(F.linear(hidden, weight, bias)).view(packing.batch, packing.length, 3, heads, size)
    query, key, value = padded.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, length, size)
    dropout = module.dropout.p if module.training else 0.0
    if dropout and query.device.type == "cpu":
        output, _ = cpu_kernels.attention(module, query, key, value, packing.keys, dropout, module.scaling)
    else:
        output = F.scaled_dot_product_attention(
            query, key, value, attn_mask=packing.keys, dropout_p=dropout, scale=module.scaling
        ).transpose(1, 2)
    return packing.unpad(output.reshape(packing.batch, packing.length, heads * size))


def encode(bert: torch.nn.Module, batch: dict[str, torch.Tensor], packing: Packing) -> torch.Tensor:
    """The encoder's last hidden states of the real tokens, ``(tokens, hidden)``."""
    hidden = embed(bert, batch, packing)
    for layer in bert.encoder.layer:
        attended = layer.attention.output(self_attention(layer.attention.self, hidden, packing), hidden)
        hidden = layer.output(layer.intermediate(attended), attended)
    return hidden


def token_logits(model: BertForTokenClassification, batch: dict[str, torch.Tensor], packing: Packing) -> torch.Tensor:
    """The classifier's logits of the real tokens, ``(tokens, labels)``."""
    return model.classifier(model.dropout(encode(model.bert, batch, packing)))


def token_classification_loss(model: BertForTokenClassification, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The padded model's loss (mean cross-entropy over labelled tokens), computed without padding."""
    packing = Packing.of(batch["attention_mask"])
    logits = token_logits(model, batch, packing)
    return F.cross_entropy(logits.float(), packing.unpad(batch["labels"]), ignore_index=-100)


def padded_token_logits(model: BertForTokenClassification, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Logits in the padded model's ``(batch, length, labels)`` shape, zeros at padding (to compare the paths)."""
    packing = Packing.of(batch["attention_mask"])
    return packing.pad(token_logits(model, batch, packing))


def loss_step(model: torch.nn.Module, padding_free: bool = True) -> tuple[Step, bool]:
    """The batch-to-loss function a training step calls, and whether it is padding-free (where :func:`supports`)."""
    if padding_free and supports(model):
        return (lambda batch: token_classification_loss(model, batch)), True
    return (lambda batch: model(**batch).loss), False
