"""Masked-language-model inputs: BERT's 80/10/10 masking, whole words, dynamic, on a schedule.

* **MLM** (BERT): ``rate`` of the maskable positions (not special tokens, not padding) are
  chosen; of those, 80% become the mask token, 10% a random token, 10% stay; the loss is taken
  on the chosen positions only (labels -100 elsewhere).
* **Whole-word masking** (PubMedBERT, Bioformer): a word is chosen or not as a unit, so all
  its pieces are masked together. Words are the tokenizer's pre-tokenization words
  (``word_ids``), which come from offsets, not from ``##``: the same code serves WordPiece
  and byte-level BPE, where a word's first piece carries the space (``Ġlymph``, ``oma``).
  Each word is chosen with probability ``rate``, so on average ``rate`` of the pieces are masked.
* **Dynamic masking** (RoBERTa, Lewis et al. 2020): the mask is drawn when a batch is made, so
  every epoch sees a new mask. Each draw is a counter-based hash of (seed, step, row of the step,
  stream, column) (:class:`RowRandom`): a resumed run draws exactly the masks the uninterrupted
  one would have, and a process that trains on some of a step's rows draws those rows' masks
  alone, the same masks whatever the number of processes.
* **Schedule** (Gu et al. 2021, section 2.3): the rate rises from 5% to 25%, by 5 points every 20% of
  training (:func:`scheduled_rate`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

IGNORE = -100

# The masks' random stream, recorded in each run's provenance: 1 drew a whole step's masks from one
# generator seeded by (seed, step), so a rank had to draw every rank's masks; 2 hashes (seed, step, row).
# The same seed gives other masks under each, so a checkpoint says which one trained it.
MASKING_SCHEME = 2

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1, _MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_CHOOSE, _KIND, _TOKEN = 0, 1, 2  # the streams: which positions (or words) are chosen; mask/random/keep; the token


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Steele et al. 2014's SplitMix64 finaliser: each input word to a well-mixed output word (wrapping uint64)."""
    x = (x ^ (x >> np.uint64(30))) * _MIX_1
    x = (x ^ (x >> np.uint64(27))) * _MIX_2
    return x ^ (x >> np.uint64(31))


class RowRandom:
    """Uniform draws for some rows of one step, each a pure function of (seed, step, row, stream, column).

    A counter-based generator (as Philox is; Salmon et al. 2011) instead of a stateful one: the value at
    (row, column) does not depend on which other rows are drawn, nor how wide the draw is, so each process
    draws only the rows it trains on, and the step's masks are the same for 1, 2 or 64 processes. ``rows``
    are the rows' positions in the whole step (micro-batch x micro-batch size + index), not block ids: a
    block drawn twice in one step (an epoch boundary) still gets two masks.
    """

    def __init__(self, seed: int, step: int, rows: Sequence[int] | np.ndarray) -> None:
        with np.errstate(over="ignore"):
            key = _splitmix64(np.asarray([seed % 2**64], dtype=np.uint64) * _GOLDEN + np.uint64(step % 2**64))
        self.key = key[0]
        self.rows = np.asarray(rows, dtype=np.uint64)

    def uniform(self, stream: int, width: int) -> torch.Tensor:
        """``(len(rows), width)`` float64 draws in [0, 1): 53 random bits each."""
        columns = np.arange(width, dtype=np.uint64)
        counter = (self.rows[:, None] << np.uint64(32)) | (columns[None, :] << np.uint64(2)) | np.uint64(stream)
        with np.errstate(over="ignore"):
            words = _splitmix64(counter * _GOLDEN + self.key)
        return torch.from_numpy((words >> np.uint64(11)).astype(np.float64) * 2.0**-53)


def masking_random(seed: int, step: int, rows: Sequence[int] | np.ndarray) -> RowRandom:
    """The draws of step ``step``'s masks for ``rows`` (a function of seed, step and row only: exact resume)."""
    return RowRandom(seed, step, rows)


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
    random: RowRandom,
    word_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inputs, labels)`` for MLM; ``special`` marks positions never masked (specials, padding).

    ``random`` draws for the rows of ``input_ids``, in order. With ``word_ids`` (per position, -1 for
    specials; one id per word within a row) whole words are chosen.
    """
    if not 0 < rate < 1:
        raise ValueError(f"the masking rate must be between 0 and 1, not {rate}")
    if len(random.rows) != input_ids.shape[0]:
        raise ValueError(f"{len(random.rows)} rows of draws for {input_ids.shape[0]} rows of tokens")
    maskable = ~special
    width = input_ids.shape[1]
    if word_ids is None:
        chosen = (random.uniform(_CHOOSE, width) < rate) & maskable
    else:
        chosen = _whole_words(word_ids, maskable, rate, random)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    inputs = input_ids.clone()
    draw = random.uniform(_KIND, width)
    to_mask = chosen & (draw < 0.8)
    to_random = chosen & (draw >= 0.8) & (draw < 0.9)
    inputs[to_mask] = mask_id
    random_tokens = (random.uniform(_TOKEN, width) * vocab_size).to(input_ids.dtype)
    inputs[to_random] = random_tokens[to_random]
    return inputs, labels


def _whole_words(word_ids: torch.Tensor, maskable: torch.Tensor, rate: float, random: RowRandom):
    """Choose each word (all its pieces) with probability ``rate``: one draw per (row, word id)."""
    words = torch.where(maskable, word_ids, torch.full_like(word_ids, -1))
    top = int(words.max().item()) + 1 if words.numel() and words.max() >= 0 else 0
    if top == 0:
        return torch.zeros_like(maskable)
    chosen_word = random.uniform(_CHOOSE, top) < rate
    index = words.clamp(min=0)
    return torch.gather(chosen_word, 1, index) & (words >= 0)
