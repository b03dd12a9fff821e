"""Graphed fine-tuning steps: what makes them exact is checked on any device, the replay on CUDA.

The padding a graph's fixed width adds, the device-side learning rate and which models qualify
decide whether a graphed run trains the same model as an eager one; they run here on the CPU. The
capture and replay themselves need a CUDA device: those tests run on a GPU machine
(``bench/lent_gpu.sh`` runs this file there) and are skipped elsewhere.
"""

from __future__ import annotations

import pytest
import torch
from transformers import (
    BertConfig,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BigBirdConfig,
    BigBirdForTokenClassification,
    get_linear_schedule_with_warmup,
)

from biolm.protocols import Hyperparameters
from workers.engine.batching import collate
from workers.engine.cuda_graphs import (
    BUCKET_WIDTHS,
    WARMUP_STEPS,
    GraphedSteps,
    bucket_width,
    cuda_graphs_requested,
    device_learning_rates,
    graphable,
    pad_to_width,
)
from workers.engine.encoding import IGNORE, Feature
from workers.engine.training import TrainingContext, optimizer_step, parameter_groups, train

SMALL = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64}
PAD = 0


def small_config(**changes) -> BertConfig:
    settings = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "pad_token_id": PAD, **changes}
    return BertConfig(**SMALL, **settings)


def token_batch(lengths=(5, 9, 13), width: int = 13, seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    mask = (torch.arange(width)[None] < torch.tensor(lengths)[:, None]).long()
    ids = torch.randint(1, 64, (len(lengths), width), generator=generator) * mask
    labels = torch.randint(0, 3, (len(lengths), width), generator=generator).masked_fill(mask == 0, IGNORE)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids), "labels": labels}


def loss_and_gradients(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, list]:
    model.zero_grad(set_to_none=True)
    loss = model(**batch).loss
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_every_width_fits_the_smallest_bucket_that_holds_it():
    for width in range(1, 1100):
        bucket = bucket_width(width)
        assert bucket >= width
        smaller = [b for b in BUCKET_WIDTHS if b < bucket]
        assert not smaller or smaller[-1] < width
    assert bucket_width(513) == 640 and bucket_width(1024) == 1024


@pytest.mark.parametrize("head", ["token", "sequence", "multi_label", "regression"])
def test_a_batch_padded_to_its_bucket_keeps_its_loss_and_gradients(head):
    torch.manual_seed(0)
    batch = token_batch()
    rows = batch["input_ids"].shape[0]
    if head == "token":
        model = BertForTokenClassification(small_config(num_labels=3))
    elif head == "sequence":
        model = BertForSequenceClassification(small_config(num_labels=3))
        batch["labels"] = torch.tensor([0, 2, 1])
    elif head == "multi_label":
        model = BertForSequenceClassification(small_config(num_labels=4, problem_type="multi_label_classification"))
        batch["labels"] = torch.tensor([[1.0, 0, 1, 0], [0, 0, 0, 1], [1, 1, 0, 0]])
    else:
        model = BertForSequenceClassification(small_config(num_labels=1))
        batch["labels"] = torch.tensor([0.5, 3.25, 1.0])
    padded = pad_to_width(batch, bucket_width(13), PAD)
    assert padded["input_ids"].shape == (rows, 16)
    assert torch.equal(padded["labels"], batch["labels"]) or head == "token"
    if head == "token":
        assert (padded["labels"][:, 13:] == IGNORE).all() and (padded["attention_mask"][:, 13:] == 0).all()
    loss, gradients = loss_and_gradients(model, batch)
    padded_loss, padded_gradients = loss_and_gradients(model, padded)
    torch.testing.assert_close(padded_loss, loss, rtol=1e-5, atol=1e-6)
    assert len(padded_gradients) == len(gradients)
    for mine, theirs in zip(padded_gradients, gradients, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-6)


def test_batches_whose_padding_could_change_the_loss_are_left_to_the_eager_step():
    batch = token_batch()
    assert pad_to_width({**batch, "start_positions": torch.zeros(3, dtype=torch.long)}, 16, PAD) is None
    assert pad_to_width({**batch, "labels": batch["labels"].float()}, 16, PAD) is None  # token-shaped, not ids
    assert pad_to_width(batch, 8, PAD) is None  # narrower than the batch
    assert pad_to_width({"input_ids": batch["input_ids"]}, 16, PAD) is None  # no mask: padding would be attended


def test_only_classifiers_of_full_attention_encoders_are_graphed():
    assert graphable(BertForTokenClassification(small_config(num_labels=3)))
    assert graphable(BertForSequenceClassification(small_config(num_labels=3)))
    assert not graphable(BertForQuestionAnswering(small_config()))
    bigbird = BigBirdConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                            intermediate_size=64, num_labels=3)  # fmt: skip
    assert not graphable(BigBirdForTokenClassification(bigbird))

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = BertForTokenClassification(small_config(num_labels=3))

    assert not graphable(Wrapped())


def test_device_learning_rates_follow_the_schedule_and_train_the_same_weights():
    def trained(on_device: bool) -> tuple[list[torch.Tensor], list[float]]:
        torch.manual_seed(0)
        model = BertForTokenClassification(small_config(num_labels=3))
        optimizer = torch.optim.AdamW(
            [{"params": [p for n, p in model.named_parameters() if "bias" not in n], "weight_decay": 0.01},
             {"params": [p for n, p in model.named_parameters() if "bias" in n], "weight_decay": 0.0}],
            lr=5e-3, fused=True,
        )  # fmt: skip
        schedule = get_linear_schedule_with_warmup(optimizer, 2, 6)
        if on_device:
            device_learning_rates(optimizer, torch.device("cpu"))
        rates = []
        for step in range(6):
            model(**token_batch(seed=step)).loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=False)
            rates.append(float(optimizer.param_groups[0]["lr"]))
            if on_device:
                assert isinstance(optimizer.param_groups[0]["lr"], torch.Tensor)
        return [p.detach().clone() for p in model.parameters()], rates

    weights, rates = trained(on_device=False)
    device_weights, device_rates = trained(on_device=True)
    assert device_rates == pytest.approx(rates) and rates[1] > rates[-1]
    for mine, theirs in zip(device_weights, weights, strict=True):
        torch.testing.assert_close(mine, theirs)


def test_the_environment_turns_graphed_steps_on(monkeypatch):
    monkeypatch.delenv("BIOLM_CUDA_GRAPHS", raising=False)
    assert not cuda_graphs_requested()
    for value, expected in (("1", True), ("true", True), ("0", False), ("", False)):
        monkeypatch.setenv("BIOLM_CUDA_GRAPHS", value)
        assert cuda_graphs_requested() is expected


def features(count: int = 96, seed: int = 0) -> list[Feature]:
    generator = torch.Generator().manual_seed(seed)
    out = []
    for index in range(count):
        length = int(torch.randint(6, 40, (1,), generator=generator))
        ids = torch.randint(1, 64, (length,), generator=generator).tolist()
        labels = [IGNORE, *torch.randint(0, 3, (length - 2,), generator=generator).tolist(), IGNORE]
        out.append(Feature(ids, [0] * length, labels, index, words=list(range(length - 2))))
    return out


def test_on_a_cpu_asking_for_graphs_trains_exactly_as_the_eager_loop():
    hp = Hyperparameters(learning_rate=5e-3, batch_size=16, epochs=1)

    def trained(cuda_graphs: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = BertForTokenClassification(small_config(num_labels=3))
        train(model, features(), hp, 0, TrainingContext(torch.device("cpu"), None, PAD, cuda_graphs=cuda_graphs))
        return [p.detach().clone() for p in model.parameters()]

    for mine, theirs in zip(trained(True), trained(False), strict=True):
        assert torch.equal(mine, theirs)


class EagerReplays:
    """A CPU stand-in for CUDA graphs: capturing keeps the step and its static inputs, replaying runs it
    on them and writes its loss into one tensor, as a replayed graph overwrites its captured output."""

    def __init__(self) -> None:
        self.captures = 0

    def warm_up(self, work):
        return work()

    def capture(self, step, inputs):
        self.captures += 1
        loss = torch.zeros(())
        return (lambda: loss.copy_(step(inputs))), loss


def test_graphed_steps_warm_up_capture_replay_and_train_what_the_eager_loop_trains():
    """The flow around the graphs (warm-ups, static inputs, the schedule, eager fallbacks), on a CPU."""
    hp = Hyperparameters(learning_rate=5e-3, batch_size=16, epochs=2)
    data = features(88)  # five full batches and one of 8 per epoch
    batches = [[i for i in range(start, min(start + 16, 88))] for start in range(0, 88, 16)] * 2

    def trained(graphed: bool):
        torch.manual_seed(0)
        model = BertForTokenClassification(small_config(num_labels=3)).train()
        optimizer = torch.optim.AdamW(parameter_groups(model, hp), lr=hp.learning_rate, fused=True)
        schedule = get_linear_schedule_with_warmup(optimizer, 2, len(batches))
        if graphed:
            device_learning_rates(optimizer, torch.device("cpu"))

        def eager(batch):
            loss = model(**batch).loss
            loss.backward()
            optimizer_step(model, optimizer, schedule, keep_gradients=graphed)
            return loss

        stand_in = EagerReplays()
        step = GraphedSteps(model, optimizer, schedule, eager, batch_size=16, pad_id=PAD, dtype=None,
                            device=torch.device("cpu"), graphs=stand_in) if graphed else eager  # fmt: skip
        losses = [float(step(collate([data[i] for i in rows], PAD)).detach()) for rows in batches]
        return model, losses, step, stand_in

    model, losses, steps, stand_in = trained(graphed=True)
    eager_model, eager_losses, _, _ = trained(graphed=False)
    widths = {bucket_width(collate([data[i] for i in rows], PAD)["input_ids"].shape[1]) for rows in batches[:5]}
    assert stand_in.captures == len(steps.captured) == len(widths)
    assert steps.replays == 10 - WARMUP_STEPS * len(widths)  # two epochs' full batches, less the warm-ups
    assert losses == pytest.approx(eager_losses, rel=1e-4)
    assert optimizer_lr(steps) == pytest.approx(0.0, abs=1e-12)  # the schedule ran to its end
    for mine, theirs in zip(model.parameters(), eager_model.parameters(), strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)


class FailingCaptures(EagerReplays):
    """A capture that fails, as one of an operator CUDA graphs cannot record would."""

    def capture(self, step, inputs):
        raise RuntimeError("operation not permitted when stream is capturing")


def test_a_failed_capture_leaves_the_run_to_the_eager_step_and_says_why(caplog):
    torch.manual_seed(0)
    model = BertForTokenClassification(small_config(num_labels=3)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    schedule = get_linear_schedule_with_warmup(optimizer, 0, 10)
    eager_batches = []

    def eager(batch):
        eager_batches.append(batch["input_ids"].shape)
        loss = model(**batch).loss
        loss.backward()
        optimizer_step(model, optimizer, schedule, keep_gradients=True)
        return loss

    steps = GraphedSteps(model, optimizer, schedule, eager, batch_size=3, pad_id=PAD, dtype=None,
                         device=torch.device("cpu"), graphs=FailingCaptures())  # fmt: skip
    with caplog.at_level("WARNING", logger="biolm.engine"):
        for seed in range(6):
            steps(token_batch(seed=seed))
    assert steps.replays == 0 and len(eager_batches) == 6
    assert steps.failure == "capture failed at width 16: operation not permitted when stream is capturing"
    assert eager_batches[WARMUP_STEPS:] == [(3, 13)] * (6 - WARMUP_STEPS)  # unpadded once graphs are given up
    assert "the run continues eagerly" in caplog.text


def optimizer_lr(steps: GraphedSteps) -> float:
    return float(steps.optimizer.param_groups[0]["lr"])


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")


def graphed_run(cuda_graphs: bool, dropout: float, seed: int = 0):
    torch.manual_seed(seed)
    config = small_config(num_labels=3, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    model = BertForTokenClassification(config)
    hp = Hyperparameters(learning_rate=5e-3, batch_size=16, epochs=3)
    context = TrainingContext(torch.device("cuda"), torch.bfloat16, PAD, cuda_graphs=cuda_graphs)
    return model, train(model, features(), hp, seed, context)


@cuda
def test_graphed_steps_replay_and_train_the_model_the_eager_loop_trains():
    model, stats = graphed_run(cuda_graphs=True, dropout=0.0)
    eager_model, eager_stats = graphed_run(cuda_graphs=False, dropout=0.0)
    # 96 sentences of 6 to 39 tokens in batches of 16: widths 16 to 48, two eager steps each first
    assert stats.replayed_steps >= stats.steps - 3 * 2 - 3 and eager_stats.replayed_steps == 0
    assert stats.steps == eager_stats.steps
    assert stats.final_loss == pytest.approx(eager_stats.final_loss, rel=0.05, abs=0.02)
    for mine, theirs in zip(model.parameters(), eager_model.parameters(), strict=True):
        torch.testing.assert_close(mine, theirs, rtol=0.05, atol=0.02)  # bf16 on other shapes: rounding apart


@cuda
def test_graphed_steps_with_dropout_are_reproducible_and_learn():
    first, stats = graphed_run(cuda_graphs=True, dropout=0.1)
    second, again = graphed_run(cuda_graphs=True, dropout=0.1)
    assert stats.replayed_steps > 0
    assert stats.final_loss == again.final_loss
    for mine, theirs in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(mine, theirs)
    assert stats.final_loss < 1.0  # from ln 3 = 1.10 at the start
