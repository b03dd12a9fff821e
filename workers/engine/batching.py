"""Length-grouped batches with dynamic padding: most of the speed of fine-tuning on short texts.

Biomedical sentences vary from 5 to 300 sub-tokens; padding every batch to the maximum
length wastes most of the compute. Like the Hugging Face LengthGroupedSampler we shuffle,
cut the order into mega-batches of ``group`` batches, and sort each mega-batch by length,
so batches hold similar lengths while the order stays random from epoch to epoch. Each
batch is padded only to its own longest member (rounded up to a multiple of 8, which
keeps matrix shapes friendly to bf16 kernels and limits the number of distinct shapes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch

from workers.engine.encoding import IGNORE, Feature


def length_grouped_batches(
    lengths: Sequence[int], batch_size: int, rng: np.random.Generator, group: int = 50
) -> list[list[int]]:
    order = rng.permutation(len(lengths))
    mega = batch_size * group
    batches = []
    for start in range(0, len(order), mega):
        chunk = sorted(order[start : start + mega], key=lambda i: -lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    # Visit batches in random order, so the longest ones do not all come first.
    return [batches[i] for i in rng.permutation(len(batches))]


def sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """For inference: batches of similar length, longest first (so memory peaks early)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


PAD_MULTIPLE = 8  # batches are padded to a multiple of 8 tokens (tensor-core friendly shapes)


def collate(features: Sequence[Feature], pad_id: int, multiple: int = PAD_MULTIPLE) -> dict[str, torch.Tensor]:
    longest = max(len(f) for f in features)
    width = -(-longest // multiple) * multiple
    input_ids = torch.full((len(features), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(features), width), dtype=torch.long)
    for row, feature in enumerate(features):
        input_ids[row, : len(feature)] = torch.tensor(feature.input_ids)
        attention[row, : len(feature)] = 1
    batch = {"input_ids": input_ids, "attention_mask": attention}
    if features[0].token_type_ids is not None:
        types = torch.zeros((len(features), width), dtype=torch.long)
        for row, feature in enumerate(features):
            types[row, : len(feature)] = torch.tensor(feature.token_type_ids)
        batch["token_type_ids"] = types
    first = features[0].labels
    if isinstance(first, list) and features[0].words:  # token task: pad labels with IGNORE
        labels = torch.full((len(features), width), IGNORE, dtype=torch.long)
        for row, feature in enumerate(features):
            labels[row, : len(feature)] = torch.tensor(feature.labels)
    else:
        labels = sequence_labels(features)
    batch["labels"] = labels
    return batch


def sequence_labels(features: Sequence[Feature]) -> torch.Tensor:
    """One target per feature: float rows for multi-label targets and regression scores, else class ids."""
    if isinstance(features[0].labels, list | float):
        return torch.tensor([f.labels for f in features], dtype=torch.float)
    return torch.tensor([f.labels for f in features], dtype=torch.long)


Collate = Callable[[Sequence[Feature], int], dict[str, torch.Tensor]]


def computed_tokens(batch: dict[str, torch.Tensor]) -> int:
    """Token positions a batch costs the encoder, padding included: the base of the padding overhead."""
    return batch["input_ids"].numel()


def iterate(
    features: Sequence[Feature],
    batches: Sequence[Sequence[int]],
    pad_id: int,
    collate_fn: Collate = collate,
) -> Iterator[tuple[list[int], dict[str, torch.Tensor]]]:
    for batch in batches:
        yield list(batch), collate_fn([features[i] for i in batch], pad_id)
