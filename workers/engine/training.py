"""The fine-tuning loop: AdamW, linear warm-up and decay, bf16 autocast, length-grouped batches.

Written for throughput without giving up the papers' protocol (Gu et al. 2021, section 6.2):
AdamW with linear warm-up over the first 10% of steps and linear decay to zero, dropout
0.1 (set in the model config). Evaluation inside the loop happens only when the protocol asks
for it (Lewis et al. 2020 every 500 or 200 steps, Fang et al. 2023 and Li et al. 2022 every
epoch): the best checkpoint on dev is kept in memory and restored at the end, training stops early after ``patience``
evaluations without improvement, and the evaluations' time is part of the run's seconds, so
the efficiency figures count what checkpoint selection costs. BLURB's protocol keeps the final
checkpoint and evaluates nothing in the loop.
On CPUs the loop runs with :mod:`workers.engine.cpu_kernels`' dropout and attention, which
draw dropout masks about twice as fast as ``bernoulli_``. Host-side work per step is kept
small: the loss is read back only for the progress bar every few steps, and gradients are
zeroed by setting them to None. BERT token classifiers train and predict without padding
(:mod:`workers.engine.padding_free`): their dense layers see only the batch's real tokens.
On CUDA with ``cuda_graphs``, full batches replay captured graphs (:mod:`workers.engine.cuda_graphs`):
the same step without the host's cost per operator, which bounds a GPU step at small batches.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import get_linear_schedule_with_warmup

from biolm.protocols import Hyperparameters
from workers.engine.batching import Collate, collate, iterate, length_grouped_batches, sorted_batches
from workers.engine.batching import computed_tokens as padded_batch_tokens
from workers.engine.cpu_kernels import cpu_training_kernels
from workers.engine.cuda_graphs import GraphedSteps, cuda_graphs_requested, device_learning_rates, graphable
from workers.engine.encoding import Feature
from workers.engine.padding_free import loss_step, padded_token_logits, supports

ProgressCallback = Callable[[int, int, float | None], None]


Evaluate = Callable[[torch.nn.Module], float]


@dataclass
class TrainStats:
    steps: int
    seconds: float  # wall time of the loop, in-loop evaluations included
    real_tokens: int
    padded_tokens: int
    final_loss: float | None
    evaluations: list[tuple[int, float]] = field(default_factory=list)  # (step, dev score)
    evaluation_seconds: float = 0.0
    best_step: int | None = None  # the step whose checkpoint was kept (None: the final one)
    stopped_early: bool = False
    replayed_steps: int = 0  # steps replayed as CUDA graphs (:mod:`workers.engine.cuda_graphs`)

    @property
    def tokens_per_second(self) -> float:
        return self.real_tokens / self.seconds if self.seconds else 0.0


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


OWN_LEARNING_RATE = "own_learning_rate"


def parameter_groups(model: torch.nn.Module, hp: Hyperparameters) -> list[dict]:
    """AdamW groups: weight decay except on biases and LayerNorms, as BERT's recipe does.

    A module with an ``own_learning_rate`` attribute (the CRF's transitions: at BLURB's 1e-5 to
    5e-5 they would barely move from their initialisation) trains at that rate, without decay;
    the warm-up and decay schedule scales it like the others.
    """
    own: dict[int, float] = {}
    for module in model.modules():
        rate = getattr(module, OWN_LEARNING_RATE, None)
        if rate is not None:
            own.update((id(parameter), float(rate)) for parameter in module.parameters())
    decay, no_decay, by_rate = [], [], {}
    for name, parameter in model.named_parameters():
        if id(parameter) in own:
            by_rate.setdefault(own[id(parameter)], []).append(parameter)
        elif parameter.ndim < 2 or "LayerNorm" in name or "layer_norm" in name:
            no_decay.append(parameter)
        else:
            decay.append(parameter)
    groups = [{"params": decay, "weight_decay": hp.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    groups += [{"params": params, "weight_decay": 0.0, "lr": rate} for rate, params in by_rate.items()]
    return [group for group in groups if group["params"]]


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    if dtype is None or dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


@dataclass(frozen=True)
class TrainingContext:
    """Where and how the loops run, and how a formulation's features become batches.

    One object instead of the same six arguments to every loop: the device and autocast dtype,
    the tokenizer's padding id, the formulation's collate function and its count of the token
    positions a batch really costs, and the inference batch size.
    """

    device: torch.device
    dtype: torch.dtype | None = None
    pad_id: int = 0
    collate: Collate = collate
    computed_tokens: Callable[[dict[str, torch.Tensor]], int] = padded_batch_tokens
    eval_batch_size: int = 64
    padding_free: bool = True  # train BERT token classifiers without padding (:mod:`workers.engine.padding_free`)
    cuda_graphs: bool = False  # on CUDA, replay full batches as captured graphs (:mod:`workers.engine.cuda_graphs`)

    @classmethod
    def for_formulation(
        cls, formulation: object, device: torch.device, dtype: torch.dtype | None, eval_batch_size: int = 64
    ) -> TrainingContext:
        """The context for a formulation's features (its tokenizer's padding, its collate and token count)."""
        return cls(
            device=device,
            dtype=dtype,
            pad_id=formulation.tokenizer.pad_token_id,
            collate=formulation.collate,
            computed_tokens=formulation.computed_tokens,
            eval_batch_size=eval_batch_size,
            cuda_graphs=device.type == "cuda" and cuda_graphs_requested(),
        )


class CheckpointSelector:
    """Evaluations inside a run: keeps the best checkpoint's weights and says when to stop early.

    The best state is a copy on the training device (a BERT-base copy is 440 MB), restored at the
    end, so the run's test predictions come from the checkpoint its dev score chose.
    """

    def __init__(self, evaluate: Evaluate, patience: int | None) -> None:
        self.evaluate = evaluate
        self.patience = patience
        self.evaluations: list[tuple[int, float]] = []
        self.seconds = 0.0
        self.best_score = -math.inf
        self.best_step: int | None = None
        self.best_state: dict[str, torch.Tensor] | None = None
        self.since_best = 0

    def __call__(self, model: torch.nn.Module, step: int) -> bool:
        """Evaluate at ``step``; True when patience has run out."""
        start = time.perf_counter()
        score = float(self.evaluate(model))
        model.train()
        if not math.isfinite(score):
            score = -math.inf  # an undefined dev score never beats a defined one
        self.evaluations.append((step, score))
        if self.best_state is None or score > self.best_score:
            self.best_score, self.best_step, self.since_best = score, step, 0
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            self.since_best += 1
        self.seconds += time.perf_counter() - start
        return self.patience is not None and self.since_best >= self.patience

    def restore(self, model: torch.nn.Module, final_step: int) -> int | None:
        """Load the best checkpoint into ``model`` unless it is the final one; its step."""
        if self.best_state is None:
            return None
        if self.best_step != final_step:
            model.load_state_dict(self.best_state)
        self.best_state = None
        return self.best_step


def optimizer_step(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler, keep_gradients: bool = False
) -> None:
    """One optimisation step: gradients clipped to norm 1 (as BERT's recipe), then the update and the schedule.

    Gradients are set to None, which frees their memory until the next backward, unless
    ``keep_gradients`` (graphed steps write to the gradients' addresses, so they are zeroed in place).
    """
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=not keep_gradients)


class OptimisationSteps:
    """The loop's step, one batch to one update: AdamW and its schedule, eager or replayed as a CUDA graph.

    Graphed steps (:mod:`workers.engine.cuda_graphs`) need a capturable optimizer, learning rates
    on the device and gradients kept between steps; the eager step then keeps them too, because a
    run mixes both (each width's first steps, the epoch's last batch).
    """

    def __init__(self, model: torch.nn.Module, hp: Hyperparameters, total: int, context: TrainingContext) -> None:
        self.model, self.context = model, context
        device = context.device
        self.graphs = context.cuda_graphs and device.type == "cuda" and graphable(model)
        self.optimizer = torch.optim.AdamW(
            parameter_groups(model, hp),
            lr=hp.learning_rate,
            fused=True,  # one kernel for the whole update: the optimizer step was ~15% of a small model's step
            capturable=self.graphs,
        )
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, int(hp.warmup_ratio * total), total)
        if self.graphs:
            device_learning_rates(self.optimizer, device)
        self.step_loss, self.padding_free = loss_step(model, context.padding_free)
        self.graphed = None
        if self.graphs:
            self.graphed = GraphedSteps(model, self.optimizer, self.scheduler, self.eager, batch_size=hp.batch_size,
                                        pad_id=context.pad_id, dtype=context.dtype, device=device)  # fmt: skip

    def __call__(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """One optimisation step on a collated batch (on the host); its loss, on the device."""
        return self.graphed(batch) if self.graphed is not None else self.eager(batch)

    def eager(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        device = self.context.device
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        with autocast(device, self.context.dtype):
            loss = self.step_loss(batch)
        loss.backward()
        optimizer_step(self.model, self.optimizer, self.scheduler, keep_gradients=self.graphs)
        return loss

    def computed_tokens(self, batch: dict[str, torch.Tensor], real: int) -> int:
        """Token positions the last step computed: a graph's padded width, the real tokens without padding."""
        if self.graphed is not None and self.graphed.replayed_width:
            return batch["input_ids"].shape[0] * self.graphed.replayed_width
        return real if self.padding_free else self.context.computed_tokens(batch)


def train(
    model: torch.nn.Module,
    features: Sequence[Feature],
    hp: Hyperparameters,
    seed: int,
    context: TrainingContext,
    progress: ProgressCallback | None = None,
    evaluate: Evaluate | None = None,
) -> TrainStats:
    """Train ``model`` by ``hp``; with ``evaluate`` (a dev score) and ``hp.selects_checkpoint``, keep the best."""
    device = context.device
    seed_everything(seed)
    rng = np.random.default_rng(seed)
    lengths = [len(f) for f in features]
    steps_per_epoch = math.ceil(len(features) / hp.batch_size)
    total = steps_per_epoch * hp.epochs
    last = min(total, hp.max_steps) if hp.max_steps else total
    model.to(device)
    steps = OptimisationSteps(model, hp, total, context)
    selector = CheckpointSelector(evaluate, hp.patience) if evaluate is not None and hp.selects_checkpoint else None
    model.train()
    step = 0
    real = padded = 0
    loss_value = None
    stopped_early = False
    if progress is not None:
        progress(0, last, None)  # start the clock of the caller's progress bar before the first step
    start = time.perf_counter()
    with cpu_training_kernels(model, device):
        for _epoch in range(hp.epochs):
            batches = length_grouped_batches(lengths, hp.batch_size, rng)
            for batch_indices, batch in iterate(features, batches, context.pad_id, context.collate):
                loss = steps(batch)
                step += 1
                batch_real = sum(lengths[i] for i in batch_indices)
                real += batch_real
                padded += steps.computed_tokens(batch, batch_real)
                if progress is not None and (step % 10 == 0 or step == last):
                    loss_value = float(loss.detach())
                    progress(step, last, loss_value)
                if selector is not None and hp.evaluate_every_steps and step % hp.evaluate_every_steps == 0:
                    stopped_early = selector(model, step)
                if stopped_early or step == last:
                    break
            if stopped_early or step == last:
                break
            if selector is not None and hp.evaluate_each_epoch:
                stopped_early = selector(model, step)
                if stopped_early:
                    break
        if selector is not None and (not selector.evaluations or selector.evaluations[-1][0] != step):
            selector(model, step)  # the final checkpoint is a candidate too
    best_step = selector.restore(model, step) if selector is not None else None
    if stopped_early and progress is not None:
        progress(last, last, loss_value)  # close the caller's bar: the remaining steps will not run
    if loss_value is None and step:
        loss_value = float(loss.detach())
    return TrainStats(
        step,
        time.perf_counter() - start,
        real,
        padded,
        loss_value,
        evaluations=selector.evaluations if selector else [],
        evaluation_seconds=selector.seconds if selector else 0.0,
        best_step=best_step,
        stopped_early=stopped_early,
        replayed_steps=steps.graphed.replays if steps.graphed is not None else 0,
    )


@torch.inference_mode()
def predict(
    model: torch.nn.Module, features: Sequence[Feature], context: TrainingContext
) -> tuple[list[np.ndarray], float]:
    """Logits per feature (in input order, padding removed) and the seconds it took."""
    device, dtype = context.device, context.dtype
    model.to(device)
    model.eval()
    lengths = [len(f) for f in features]
    outputs: list[np.ndarray | None] = [None] * len(features)
    start = time.perf_counter()
    batches = sorted_batches(lengths, context.eval_batch_size)
    packed = context.padding_free and supports(model)
    for batch_indices, batch in iterate(features, batches, context.pad_id, context.collate):
        batch.pop("labels", None)
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast(device, dtype):
            logits = padded_token_logits(model, batch) if packed else model(**batch).logits
        logits = logits.float().cpu().numpy()
        for row, index in enumerate(batch_indices):
            outputs[index] = logits[row, : lengths[index]] if logits.ndim == 3 else logits[row]
    return outputs, time.perf_counter() - start  # type: ignore[return-value]
