"""Long-sequence models from short ones, as Li et al. 2022 (section 3.2) build Clinical-Longformer and -BigBird.

A RoBERTa checkpoint becomes a Longformer (and a BERT checkpoint a BigBird) of ``max_length``
tokens by copying every weight across and extending the position embeddings: the learned 512
positions are repeated until the new length is filled (Beltagy et al.'s recipe, which the
Clinical-Longformer authors follow). Longformer's global-attention projections
(``query_global``, ``key_global``, ``value_global``) start as copies of the local ones. Pretraining
then continues with MLM at the new length (the ``clinical-longformer`` recipe with ``--model``).

A converted model computes exactly what its source did on an input that fits one attention
window: the test compares their MLM logits.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from transformers import (
    AutoModelForMaskedLM,
    BigBirdConfig,
    BigBirdForMaskedLM,
    LongformerConfig,
    LongformerForMaskedLM,
)

from workers.engine.tokenization import load_tokenizer

TARGETS = {("roberta", "longformer"), ("bert", "big_bird")}
ROBERTA_OFFSET = 2  # RoBERTa and Longformer count positions from padding_idx + 1


def convert(source: Path, out: Path, target: str, max_length: int = 4096, attention_window: int = 512) -> Path:
    """Write ``target`` (``longformer`` or ``big_bird``) of ``max_length`` tokens converted from ``source``."""
    model = AutoModelForMaskedLM.from_pretrained(str(source), local_files_only=True, trust_remote_code=False)
    kind = model.config.model_type
    if (kind, target) not in TARGETS:
        pairs = ", ".join(f"{s} -> {t}" for s, t in sorted(TARGETS))
        raise ValueError(f"{source}: converting {kind} to {target} is not supported; supported: {pairs}")
    old = model.config.max_position_embeddings - (ROBERTA_OFFSET if kind == "roberta" else 0)
    if max_length <= old:
        raise ValueError(f"{source} already takes {old} tokens; the conversion is for longer inputs")
    base = model.config.to_dict()
    for key in ("architectures", "model_type", "transformers_version", "_name_or_path"):
        base.pop(key, None)
    state = model.state_dict()
    if target == "longformer":
        config = LongformerConfig(
            **{**base, "max_position_embeddings": max_length + ROBERTA_OFFSET},
            attention_window=[attention_window] * model.config.num_hidden_layers,
        )
        converted = LongformerForMaskedLM(config)
        weights = {re.sub(r"^roberta\.", "longformer.", k): v for k, v in state.items()}
        for name in list(weights):
            if ".attention.self." in name and re.search(r"\.(query|key|value)\.(weight|bias)$", name):
                weights[re.sub(r"\.(query|key|value)\.", r".\1_global.", name)] = weights[name].clone()
        position = "longformer.embeddings.position_embeddings.weight"
        weights[position] = _tiled(state["roberta.embeddings.position_embeddings.weight"], max_length, ROBERTA_OFFSET)
    else:
        config = BigBirdConfig(**{**base, "max_position_embeddings": max_length})
        converted = BigBirdForMaskedLM(config)
        weights = dict(state)
        position = "bert.embeddings.position_embeddings.weight"
        weights[position] = _tiled(state[position], max_length, 0)
    missing, unexpected = converted.load_state_dict(weights, strict=False)
    missing = [name for name in missing if not name.startswith("bert.pooler")]  # BigBird's pooler is new
    if missing or unexpected:
        raise RuntimeError(f"conversion left weights unmatched: missing {missing[:5]}, unexpected {unexpected[:5]}")
    converted.tie_weights()
    out.mkdir(parents=True, exist_ok=True)
    converted.save_pretrained(out)
    tokenizer = load_tokenizer(source)
    tokenizer.model_max_length = max_length
    tokenizer.save_pretrained(out)
    return out


def _tiled(table: torch.Tensor, length: int, offset: int) -> torch.Tensor:
    """Position embeddings for ``length`` positions: the learned ones repeated (after ``offset`` reserved rows)."""
    learned = table[offset:]
    rows = [table[:offset]] + [learned] * (length // len(learned) + 1)
    return torch.cat(rows)[: length + offset].clone()
