"""Adversarial pretraining (Gu et al. 2021, section 2.4, ALUM): the perturbation, the loss and their determinism.

The models are tiny BERTs in fp32 without dropout, so that what the tests compare is the
perturbation's effect and not rounding or dropout noise.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from workers.engine.pretrain.adversarial import Adversarial, symmetric_kl
from workers.engine.pretrain.loop import Masker
from workers.engine.pretrain.masking import IGNORE, masking_random
from workers.engine.pretrain.mlm import masked_lm_loss, mlm_forward
from workers.engine.pretrain.objectives import masked_language_model

VOCAB, LENGTH, CLS, SEP, PAD, MASK = 200, 32, 1, 2, 0, 3
CPU = torch.device("cpu")


def tiny_bert(seed: int = 0) -> BertForMaskedLM:
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)  # fmt: skip
    return BertForMaskedLM(config)


def blocks(rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    ids = np.random.default_rng(seed).integers(5, VOCAB, size=(rows, LENGTH), dtype=np.int64)
    ids[:, 0], ids[:, -1] = CLS, SEP
    return {"ids": ids, "words": np.tile(np.arange(LENGTH), (rows, 1))}


MASKER = Masker(MASK, VOCAB, (PAD, CLS, SEP), PAD)


def masked_batch(rows: int = 4) -> dict[str, torch.Tensor]:
    data = blocks(rows)
    index = np.arange(rows)
    batch = MASKER(data, index, 0.15, masking_random(0, 0, index), False)
    batch["block"] = torch.from_numpy(index)
    assert int((batch["labels"] != IGNORE).sum()) > 0
    return batch


def test_the_perturbation_stays_in_its_box_and_raises_the_divergence_more_than_random_noise_of_its_size():
    model, batch = tiny_bert(), masked_batch()
    clean = mlm_forward(model, batch, CPU, None)[0].detach().float()

    def divergence(delta: torch.Tensor) -> float:
        with torch.no_grad():
            return float(
                symmetric_kl(Adversarial._perturbed_logits(model, batch, delta, CPU, None, detach=True), clean)
            )

    deltas = {
        steps: Adversarial(epsilon=1e-2, step_size=1.0, noise=1e-3, steps=steps).perturbation(
            model, batch, clean, step=0, device=CPU, dtype=None
        )
        for steps in (1, 3)
    }
    assert all(delta.abs().max() <= 1e-2 + 1e-9 for delta in deltas.values())
    signs = torch.randint(0, 2, deltas[1].shape, generator=torch.Generator().manual_seed(1)) * 2.0 - 1.0
    random = divergence(signs * 1e-2)  # a corner of the box: as large as it allows, in a random direction
    assert divergence(deltas[1]) > 1.8 * random > 0  # ALUM's single ascent step (2.2x here)
    assert divergence(deltas[3]) > 1.1 * divergence(deltas[1])  # more steps climb further (2.9x)


def test_without_its_weight_the_loss_is_mlms_and_with_it_the_adversarial_term_adds_and_trains_the_embeddings():
    model, batch = tiny_bert(), masked_batch()
    masked = int((batch["labels"] != IGNORE).sum())
    plain = masked_lm_loss(model, batch, masked, CPU, None)
    unweighted = Adversarial(alpha=0.0, epsilon=1e-2, step_size=1.0).loss(model, batch, 0, masked, CPU, None, rows=4)
    torch.testing.assert_close(unweighted, plain)
    weighted = Adversarial(alpha=10.0, epsilon=1e-2, step_size=1.0).loss(model, batch, 0, masked, CPU, None, rows=4)
    assert float(weighted.detach()) > float(plain.detach())
    (weighted - plain).backward()
    assert model.get_input_embeddings().weight.grad.abs().sum() > 0


def test_a_rows_noise_depends_on_seed_step_and_block_only():
    adversarial = Adversarial(seed=7)
    both = adversarial.initial_delta(torch.tensor([3, 9]), 5, (4, 8), CPU)
    alone = adversarial.initial_delta(torch.tensor([9]), 5, (4, 8), CPU)
    assert torch.equal(both[1], alone[0])
    assert not torch.equal(both[0], both[1])
    assert not torch.equal(adversarial.initial_delta(torch.tensor([9]), 6, (4, 8), CPU), alone)
    assert not torch.equal(Adversarial(seed=8).initial_delta(torch.tensor([9]), 5, (4, 8), CPU), alone)


def test_the_rows_of_a_step_split_across_processes_give_the_gradients_of_the_whole_batch():
    """Each process of a torchrun job trains on rows ``rank::world`` of every micro-batch; the noise is
    drawn per block, and every term is divided by the whole step's counts, so the summed gradients
    are the whole batch's (which the loop's 1-vs-2-process test relies on)."""
    batch = masked_batch(rows=8)
    masked = int((batch["labels"] != IGNORE).sum())
    adversarial = Adversarial(epsilon=1e-2, step_size=1.0, noise=1e-3)

    def gradients(shares: list[dict]) -> dict[str, torch.Tensor]:
        model = tiny_bert()
        for share in shares:
            adversarial.loss(model, share, 3, masked, CPU, None, rows=8).backward()
        return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    whole = gradients([batch])
    split = gradients([{k: v[rank::2] for k, v in batch.items()} for rank in range(2)])
    assert whole.keys() == split.keys()
    for name, gradient in whole.items():
        torch.testing.assert_close(split[name], gradient, rtol=1e-5, atol=1e-7, msg=name)


def test_bad_adversarial_settings_and_adversarial_distillation_are_refused():
    with pytest.raises(ValueError, match="adversarial_epsilon > 0"):
        Adversarial.of({"adversarial_epsilon": 0}, seed=1)
    with pytest.raises(ValueError, match="distils a teacher or trains adversarially"):
        masked_language_model({}, ("mlm", "distillation", "adversarial"))
    assert masked_language_model({}, ("mlm-whole-word", "nsp", "adversarial")).adversarial
    assert Adversarial.of({}, seed=1) == Adversarial(10.0, 1e-5, 1e-3, 1e-5, 1, seed=1)  # ALUM's pretraining values
