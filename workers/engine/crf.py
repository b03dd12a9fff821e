"""A linear-chain conditional random field over per-word emission scores (Lafferty et al. 2001).

Gu et al. 2021 (section 5) list the CRF as an alternative classification layer for NER and PICO
(linear layer is BLURB's default). The CRF here scores a tag sequence as the sum of the
encoder's linear-head emissions, start and end scores and tag-to-tag transition scores; the
loss is the negative log-likelihood (forward algorithm), decoding is Viterbi with the trained
transitions. Both run on the words' labelled positions only (the first sub-token of each word,
packed to the left by :func:`pack_labelled`), so sub-word continuations never enter the chain.

Written here (about 100 lines, vectorised over the batch) rather than taken from pytorch-crf
0.7.2: that package has had no release since 2019, has no way to forbid transitions, and
needs the same packing anyway. Everything is computed in float32 with autocast turned off, so
bf16 emissions under ``torch.autocast`` do not lose the log-sum-exp's precision.

Forbidden transitions (``allowed[i, j]`` False) get a score of -10000, which keeps a
constrained path's probability at about exp(-10000) = 0 while avoiding ``inf - inf`` NaNs.
Start and end scores are never constrained: windows of long sentences may begin or end inside
an entity (:func:`workers.engine.encoding.encode_token_tagging`), so ``I-X`` first is legal.
"""

from __future__ import annotations

import torch
from torch import nn

FORBIDDEN = -10000.0


class LinearChainCRF(nn.Module):
    """Start, end and transition scores for ``num_tags`` tags; ``allowed`` masks transitions."""

    def __init__(self, num_tags: int, allowed: torch.Tensor | None = None) -> None:
        super().__init__()
        if num_tags < 1:
            raise ValueError(f"a CRF needs at least one tag, got {num_tags}")
        self.num_tags = num_tags
        # Small random starting scores, as pytorch-crf: zeros would make every path tie.
        self.start = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))
        if allowed is None:
            allowed = torch.ones(num_tags, num_tags, dtype=torch.bool)
        if allowed.shape != (num_tags, num_tags):
            raise ValueError(f"allowed transitions must be {num_tags} x {num_tags}, got {tuple(allowed.shape)}")
        self.register_buffer("penalty", torch.where(allowed.bool(), 0.0, FORBIDDEN), persistent=False)

    def transition_scores(self) -> torch.Tensor:
        """``(from, to)`` scores with forbidden transitions penalised: what training and Viterbi use."""
        return self.transitions.float() + self.penalty

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """log Z per sequence by the forward algorithm; ``mask`` marks a left-aligned prefix."""
        emissions, mask = _checked(emissions, mask, self.num_tags)
        with torch.autocast(device_type=emissions.device.type, enabled=False):
            transitions = self.transition_scores()
            alpha = self.start.float() + emissions[:, 0]
            for t in range(1, emissions.shape[1]):
                step = torch.logsumexp(alpha.unsqueeze(2) + transitions + emissions[:, t].unsqueeze(1), dim=1)
                alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)
            return torch.logsumexp(alpha + self.end.float(), dim=1)

    def path_score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The unnormalised log score of ``tags`` per sequence (positions outside ``mask`` ignored)."""
        emissions, mask = _checked(emissions, mask, self.num_tags)
        with torch.autocast(device_type=emissions.device.type, enabled=False):
            tags = tags.long().masked_fill(~mask, 0)
            transitions = self.transition_scores()
            scores = self.start.float()[tags[:, 0]]
            scores = scores + (emissions.gather(2, tags.unsqueeze(2)).squeeze(2) * mask).sum(1)
            pairs = transitions[tags[:, :-1], tags[:, 1:]] * mask[:, 1:]
            last = tags.gather(1, (mask.sum(1) - 1).unsqueeze(1)).squeeze(1)
            return scores + pairs.sum(1) + self.end.float()[last]

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Negative log-likelihood per sequence: log Z - score(gold path)."""
        return self.log_partition(emissions, mask) - self.path_score(emissions, tags, mask)

    @torch.no_grad()
    def viterbi(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        """The highest-scoring tag sequence of each sequence (its masked length)."""
        emissions, mask = _checked(emissions, mask, self.num_tags)
        with torch.autocast(device_type=emissions.device.type, enabled=False):
            transitions = self.transition_scores()
            best = self.start.float() + emissions[:, 0]
            pointers = []
            for t in range(1, emissions.shape[1]):
                step, pointer = (best.unsqueeze(2) + transitions).max(dim=1)
                best = torch.where(mask[:, t].unsqueeze(1), step + emissions[:, t], best)
                pointers.append(pointer)
            best = best + self.end.float()
            lengths = mask.sum(1).tolist()
            last = best.argmax(dim=1).tolist()
            back = torch.stack(pointers, dim=1).tolist() if pointers else []
        paths = []
        for row, (length, tag) in enumerate(zip(lengths, last, strict=True)):
            path = [tag]
            for t in range(length - 1, 0, -1):
                tag = back[row][t - 1][tag]
                path.append(tag)
            paths.append(path[::-1])
        return paths


def _checked(emissions: torch.Tensor, mask: torch.Tensor, num_tags: int) -> tuple[torch.Tensor, torch.Tensor]:
    if emissions.ndim != 3 or emissions.shape[2] != num_tags:
        raise ValueError(f"emissions must be (batch, length, {num_tags}), got {tuple(emissions.shape)}")
    if mask.shape != emissions.shape[:2]:
        raise ValueError(f"mask {tuple(mask.shape)} does not match emissions {tuple(emissions.shape[:2])}")
    mask = mask.bool()
    if emissions.shape[1] == 0 or not bool(mask[:, 0].all()):
        raise ValueError("every sequence needs at least one position, and the mask must start on")
    if bool((mask[:, 1:] & ~mask[:, :-1]).any()):
        raise ValueError("the mask must be a left-aligned prefix (pack the labelled positions first)")
    return emissions.float(), mask


def pack_labelled(
    scores: torch.Tensor, labels: torch.Tensor, ignore: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Move each row's labelled positions (``labels != ignore``) to the left, in order.

    Returns ``(packed scores (batch, words, ...), packed labels (batch, words), mask)``, where
    ``words`` is the most labelled positions in a row: the per-word chain the CRF runs on.
    """
    labelled = labels != ignore
    counts = labelled.sum(1)
    if bool((counts == 0).any()):
        raise ValueError("a sequence has no labelled position; a CRF needs at least one word")
    width = int(counts.max())
    order = torch.argsort((~labelled).to(torch.int8), dim=1, stable=True)[:, :width]
    index = order.view(*order.shape, *([1] * (scores.ndim - 2))).expand(-1, -1, *scores.shape[2:])
    mask = torch.arange(width, device=labels.device).unsqueeze(0) < counts.unsqueeze(1)
    return scores.gather(1, index), labels.gather(1, order).masked_fill(~mask, 0), mask
