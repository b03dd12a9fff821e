"""Adversarial pretraining as Gu et al. 2021 use it (section 2.4): ALUM (Liu et al. 2020) on top of MLM.

Each step perturbs the word embeddings of the input by the ``delta`` that most changes the
model's predictions, within a small box, and trains the model to predict the same under it:

1. ``delta`` starts as Gaussian noise of standard deviation ``noise`` (1e-5);
2. ``steps`` (1) times: the gradient of the adversarial loss with respect to ``delta``, normalised
   by its largest entry per sequence (an l-infinity step), moves ``delta`` by ``step_size``
   (1e-3), and ``delta`` is projected back into ``[-epsilon, epsilon]`` (1e-5);
3. the loss is the MLM loss on the clean input plus ``alpha`` (10, ALUM's pretraining weight)
   times the adversarial loss at the final ``delta``.

The adversarial loss is the symmetric KL divergence between the vocabulary distributions
predicted with and without the perturbation, at the masked positions (the ones MLM scores; the
output head runs there only, as for MLM). The clean distribution is a fixed target (detached),
as in ALUM's reference implementation. The inner step's gradient reaches ``delta`` only; the
final term's reaches the model, word embeddings included.

The noise of a sequence is a function of (seed, step, block) only, drawn on the device that
trains: so gradient accumulation, data parallelism and resuming after a kill give the same
result as one uninterrupted big-batch run, as for the masks.

A note on precision: ALUM's box is tiny (1e-5 on embeddings of about 0.02-0.05 per entry). Under
bf16 autocast the matmuls see the perturbed embeddings rounded to 8 bits of mantissa, which
absorbs most of such a perturbation; the clean and perturbed passes then differ mainly by their
dropout. Use ``--precision fp32`` (or fp16 on GPUs, as ALUM did) where the exact effect matters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workers.engine.pretrain.masking import IGNORE
from workers.engine.pretrain.mlm import mlm_forward, mlm_loss_from_logits

SETTINGS = {  # recipe setting -> (field, ALUM's pretraining value)
    "adversarial_alpha": ("alpha", 10.0),
    "adversarial_epsilon": ("epsilon", 1e-5),
    "adversarial_step_size": ("step_size", 1e-3),
    "adversarial_noise": ("noise", 1e-5),
    "adversarial_steps": ("steps", 1),
}


@dataclass(frozen=True)
class Adversarial:
    alpha: float = 10.0
    epsilon: float = 1e-5
    step_size: float = 1e-3
    noise: float = 1e-5
    steps: int = 1
    seed: int = 42

    def __post_init__(self) -> None:
        if self.alpha < 0 or self.epsilon <= 0 or self.step_size <= 0 or self.noise < 0 or self.steps < 1:
            raise ValueError(
                "adversarial pretraining needs adversarial_alpha >= 0, adversarial_epsilon > 0, "
                f"adversarial_step_size > 0, adversarial_noise >= 0 and adversarial_steps >= 1; got {self}"
            )

    @classmethod
    def of(cls, settings: Mapping[str, object], seed: int) -> Adversarial:
        values = {field: type(default)(settings.get(key, default)) for key, (field, default) in SETTINGS.items()}
        return cls(**values, seed=seed)

    def initial_delta(self, blocks: torch.Tensor, step: int, shape: tuple[int, int], device) -> torch.Tensor:
        """Gaussian noise for each row, seeded by (seed, step, block): independent of how rows are split."""
        rows = []
        for block in blocks.tolist():
            generator = torch.Generator(device=device)
            generator.manual_seed((self.seed * 1_000_003 + step) * 10_000_019 + int(block) + 1)
            rows.append(torch.randn(shape, generator=generator, device=device))
        return torch.stack(rows) * self.noise

    def loss(
        self, model, batch: dict, step: int, total_masked: int, device, dtype, *, rows: int
    ) -> torch.Tensor:  # fmt: skip
        """MLM (+ NSP/SOP) on the clean input + alpha x the symmetric KL under the adversarial perturbation."""
        logits, pair_logits = mlm_forward(model, batch, device, dtype)
        loss = mlm_loss_from_logits(logits, pair_logits, batch, total_masked, rows=rows)
        if not int((batch["labels"] != IGNORE).sum()):
            return loss
        clean = logits.detach().float()
        delta = self.perturbation(model, batch, clean, step, device, dtype)
        perturbed = self._perturbed_logits(model, batch, delta, device, dtype, detach=False)
        return loss + self.alpha * symmetric_kl(perturbed, clean) / total_masked

    def perturbation(self, model, batch: dict, clean: torch.Tensor, step: int, device, dtype) -> torch.Tensor:
        """The ``delta`` in the box that (approximately) maximises the divergence from the ``clean`` logits."""
        embeddings = model.get_input_embeddings()
        shape = (batch["input_ids"].shape[1], embeddings.embedding_dim)
        delta = self.initial_delta(batch["block"], step, shape, device)
        for _ in range(self.steps):
            delta.requires_grad_(True)
            divergence = symmetric_kl(self._perturbed_logits(model, batch, delta, device, dtype, detach=True), clean)
            (gradient,) = torch.autograd.grad(divergence, delta)
            largest = gradient.abs().amax(dim=(1, 2), keepdim=True).clamp_min(1e-12)
            delta = (delta.detach() + self.step_size * gradient / largest).clamp(-self.epsilon, self.epsilon)
        return delta.detach()

    @staticmethod
    def _perturbed_logits(model, batch, delta, device, dtype, *, detach: bool) -> torch.Tensor:
        """The masked positions' logits with ``delta`` added to the word embeddings' output.

        A forward hook on the embedding table perturbs its output whatever the architecture adds
        after it (positions, segments, RoBERTa's padding-aware positions stay exactly as usual).
        ``detach`` keeps the inner maximisation's gradient off the embedding table.
        """

        def perturb(_module, _inputs, output):
            return (output.detach() if detach else output) + delta.to(output.dtype)

        handle = model.get_input_embeddings().register_forward_hook(perturb)
        try:
            logits, _ = mlm_forward(model, batch, device, dtype, pairs=False)
        finally:
            handle.remove()
        return logits.float()


def symmetric_kl(logits: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
    """KL(p||q) + KL(q||p) summed over positions, for the distributions these logits give."""
    log_p = F.log_softmax(logits, dim=-1)
    log_q = F.log_softmax(target_logits, dim=-1)
    return ((log_p.exp() - log_q.exp()) * (log_p - log_q)).sum()
