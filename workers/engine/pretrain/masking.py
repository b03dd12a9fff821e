"""Masked-language-model inputs: BERT's 80/10/10 masking, whole words, dynamic, on a schedule.

* **MLM** (BERT): ``rate`` of the maskable positions (not special tokens, not padding) are
  chosen; of those, 80% become the mask token, 10% a random token, 10% stay; the loss is taken
  on the chosen positions only (labels -100 elsewhere).
* **Whole-word masking** (PubMedBERT, Bioformer): a word is chosen or not as a unit, so all
  its pieces are masked together. Words are the tokenizer's pre-tokenization words
  (``word_ids``), which come from offsets, not from ``##``: the same code serves WordPiece
  and byte-level BPE, where a word's first piece carries the space (``Ġlymph``, ``oma``).
  Each word is chosen with probability ``rate``, so on average ``rate`` of the pieces are masked.
* **Dynamic masking** (RoBERTa, Lewis et al. 2020): the mask is drawn when a batch is made, from a
  generator seeded by (seed, step), so every epoch sees a new mask and a resumed run draws
  exactly the masks the uninterrupted one would have.
* **Schedule** (Gu et al. 2021, section 2.3): the rate rises from 5% to 25%, by 5 points every 20% of
  training (:func:`scheduled_rate`).
"""

from __future__ import annotations

import torch

IGNORE = -100


def masking_generator(seed: int, step: int) -> torch.Generator:
    """The generator of step ``step``'s masks: a function of the seed and step only (exact resume)."""
    generator = torch.Generator()
    generator.manual_seed((seed * 1_000_003 + step) % (2**63 - 1))
    return generator


def scheduled_rate(step: int, total_steps: int, start: float = 0.05, end: float = 0.25, stages: int = 5) -> float:
    """The masking-rate schedule of Gu et al. 2021: ``start`` rising by equal steps to ``end`` over ``stages`` parts."""
    if total_steps <= 0:
        return end
    stage = min(stages - 1, int(stages * step / total_steps))
    return start + (end - start) * stage / (stages - 1)


def mask_tokens(
    input_ids: torch.Tensor,
    special: torch.Tensor,
    *,
    rate: float,
    mask_id: int,
    vocab_size: int,
    generator: torch.Generator,
    word_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inputs, labels)`` for MLM; ``special`` marks positions never masked (specials, padding).

    With ``word_ids`` (per position, -1 for specials; one id per word within a row) whole words
    are chosen.
    """
    if not 0 < rate < 1:
        raise ValueError(f"the masking rate must be between 0 and 1, not {rate}")
    maskable = ~special
    if word_ids is None:
        chosen = (torch.rand(input_ids.shape, generator=generator) < rate) & maskable
    else:
        chosen = _whole_words(word_ids, maskable, rate, generator)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    inputs = input_ids.clone()
    draw = torch.rand(input_ids.shape, generator=generator)
    to_mask = chosen & (draw < 0.8)
    to_random = chosen & (draw >= 0.8) & (draw < 0.9)
    inputs[to_mask] = mask_id
    random_tokens = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    inputs[to_random] = random_tokens[to_random]
    return inputs, labels


def _whole_words(word_ids: torch.Tensor, maskable: torch.Tensor, rate: float, generator: torch.Generator):
    """Choose each word (all its pieces) with probability ``rate``."""
    words = torch.where(maskable, word_ids, torch.full_like(word_ids, -1))
    rows = words.shape[0]
    top = int(words.max().item()) + 1 if words.numel() and words.max() >= 0 else 0
    if top == 0:
        return torch.zeros_like(maskable)
    chosen_word = torch.rand((rows, top), generator=generator) < rate
    index = words.clamp(min=0)
    return torch.gather(chosen_word, 1, index) & (words >= 0)
