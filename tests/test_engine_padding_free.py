"""Padding-free training steps compute what the padded BERT token classifier computes.

A real (tiny, randomly initialised) ``BertForTokenClassification`` runs a batch of sentences of
different lengths, with token types, both ways: padded through its own forward, and packed
through :mod:`workers.engine.padding_free`. Logits, loss and gradients must agree to rounding.
"""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertForTokenClassification

from workers.engine.cpu_kernels import cpu_training_kernels
from workers.engine.padding_free import loss_step, padded_token_logits, supports, token_classification_loss

LENGTHS = (7, 3, 16, 5, 11)


def tiny_tagger(dropout: float = 0.0) -> BertForTokenClassification:
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        num_labels=5, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
    )  # fmt: skip
    return BertForTokenClassification(config)


def batch_of(lengths: tuple[int, ...] = LENGTHS, width: int = 16) -> dict[str, torch.Tensor]:
    """Padded like the engine's collate: ids, mask, token types (a pair's second half is type 1), ignored labels."""
    generator = torch.Generator().manual_seed(1)
    shape = (len(lengths), width)
    ids, mask = torch.zeros(shape, dtype=torch.long), torch.zeros(shape, dtype=torch.long)
    types, labels = torch.zeros(shape, dtype=torch.long), torch.full(shape, -100)
    for row, length in enumerate(lengths):
        ids[row, :length] = torch.randint(1, 120, (length,), generator=generator)
        mask[row, :length] = 1
        types[row, length // 2 : length] = 1
        labels[row, 1:length] = torch.randint(0, 5, (length - 1,), generator=generator)  # [CLS] unlabelled
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "labels": labels}


def test_packed_logits_equal_the_padded_models_at_every_real_token():
    model, batch = tiny_tagger().eval(), batch_of()
    with torch.no_grad():
        padded = model(**batch).logits
        packed = padded_token_logits(model, batch)
    for row, length in enumerate(LENGTHS):
        torch.testing.assert_close(packed[row, :length], padded[row, :length], rtol=1e-5, atol=1e-5)
    assert not packed[0, LENGTHS[0] :].any()  # padding positions were never computed


def test_the_packed_loss_and_its_gradients_equal_the_padded_models():
    padded_model, packed_model = tiny_tagger().train(), tiny_tagger().train()  # dropout 0: deterministic
    batch = batch_of()
    padded_loss = padded_model(**batch).loss
    packed_loss = token_classification_loss(packed_model, batch)
    torch.testing.assert_close(packed_loss, padded_loss, rtol=1e-5, atol=1e-6)
    padded_loss.backward()
    packed_loss.backward()
    pairs = zip(padded_model.named_parameters(), packed_model.named_parameters(), strict=True)
    for (name, padded), (_, packed) in pairs:
        if padded.grad is None:
            assert packed.grad is None or not packed.grad.any(), name
            continue
        torch.testing.assert_close(packed.grad, padded.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_with_dropout_on_the_cpu_kernels_the_packed_step_is_reproducible_and_trains():
    model, batch = tiny_tagger(dropout=0.1).train(), batch_of()
    step, padding_free = loss_step(model)
    assert padding_free
    with cpu_training_kernels(model, torch.device("cpu")):
        torch.manual_seed(3)
        first = step(batch)
        torch.manual_seed(3)
        again = step(batch)
        torch.manual_seed(4)
        other = step(batch)
    assert torch.equal(first, again) and not torch.equal(first, other)  # the seeded dropout masks decide
    first.backward()
    assert model.bert.embeddings.word_embeddings.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("change", ["sequence classifier", "relative positions", "decoder"])
def test_other_models_keep_their_own_padded_forward(change):
    if change == "sequence classifier":
        model: torch.nn.Module = BertForSequenceClassification(tiny_tagger().config)
    else:
        model = tiny_tagger()
        if change == "relative positions":
            model.config.position_embedding_type = "relative_key"
        else:
            model.config.is_decoder = True
    assert not supports(model)
    assert loss_step(model)[1] is False
    assert supports(tiny_tagger()) and loss_step(tiny_tagger(), padding_free=False)[1] is False
