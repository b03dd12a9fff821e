"""Fine-tuning steps replayed as CUDA graphs: the same step without the host's cost per operator.

On an NVIDIA H200 (2026-11-28) a BERT-base fine-tuning step at batch 32 took 42 ms, of which the
GPU was busy 6.7 ms: the host dispatching some 2,700 operators one at a time was the bottleneck,
whatever the batch size. The same step captured once as a CUDA graph and replayed took 9.3 ms
(``bench/step_profile.py``'s ``graph``). This module gives the training loop that step.

A graph replays fixed operations on fixed shapes at fixed addresses, so:

* a full batch is padded to one of a few widths (:func:`bucket_width`) and copied into that width's
  static input tensors; padded positions are masked keys with ignored labels, so the loss and its
  gradients are the batch's own (:func:`pad_to_width`). The epoch's last, smaller batch, and any
  batch this module cannot pad, runs eagerly;
* the captured step is forward (bf16 autocast, its weight-cast cache off as PyTorch's CUDA graph
  notes require), backward, gradient clipping, fused AdamW with ``capturable=True``, and zeroing
  the gradients in place: gradients stay allocated between steps, because a graph writes to the
  addresses it was captured with;
* the learning rate lives on the device (:func:`device_learning_rates`): the schedule fills it in
  place after each step, so every replay reads the current rate instead of the one captured;
* the first steps of each width run eagerly on a side stream, as PyTorch's capture recipe warms up
  (they are real training steps, so nothing is computed twice); the next one is captured and
  replayed. All widths share one memory pool: their steps never run at the same time.

Only models whose padded forward provably ignores padding take this path: Hugging Face token and
sequence classifiers of full-attention encoders (:func:`graphable`). The captured step runs the
padded forward, because the padding-free path (:mod:`workers.engine.padding_free`) gathers real
tokens with data-dependent shapes; its loss is the same mathematics. Dropout draws from the CUDA
generator's graph-safe Philox state, so a graphed run is reproducible on the same card, with
masks that differ from an eager run's (as any change of batch shape makes them differ).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from typing import Protocol

import torch
import torch.nn.functional as F

from workers.engine.encoding import IGNORE

logger = logging.getLogger("biolm.engine")

# Widths a batch is padded to: steps of 1.5x and 2x keep the padding a graph adds under a third,
# and the number of graphs (one per width used) at ten or fewer for BERT's 512 positions.
BUCKET_WIDTHS = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
# Hugging Face model types whose attention masks padded keys everywhere (no windows, no blocks).
FULL_ATTENTION_MODEL_TYPES = frozenset({"bert", "roberta", "xlm-roberta", "megatron-bert", "electra"})
GRAPHED_HEADS = ("ForTokenClassification", "ForSequenceClassification")
PADDABLE_KEYS = frozenset({"input_ids", "attention_mask", "token_type_ids", "labels"})
WARMUP_STEPS = 2  # eager steps per width before its capture (PyTorch's recipe warms up on a side stream)
ENVIRONMENT_VARIABLE = "BIOLM_CUDA_GRAPHS"  # "1" on a GPU worker: fine-tune with graphed steps

EagerStep = Callable[[dict[str, torch.Tensor]], torch.Tensor]


def cuda_graphs_requested() -> bool:
    """Whether the operator turned graphed steps on (``BIOLM_CUDA_GRAPHS=1``); off until measured on a card."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() in {"1", "true", "yes", "on"}


def bucket_width(width: int) -> int:
    """The smallest graph width that holds ``width`` tokens (beyond 512: the next multiple of 128)."""
    for bucket in BUCKET_WIDTHS:
        if width <= bucket:
            return bucket
    return -(-width // 128) * 128


def graphable(model: torch.nn.Module) -> bool:
    """True for a Hugging Face token or sequence classifier of a full-attention encoder."""
    config = getattr(model, "config", None)
    return (
        config is not None
        and type(model).__name__.endswith(GRAPHED_HEADS)
        and getattr(config, "model_type", None) in FULL_ATTENTION_MODEL_TYPES
        and not getattr(config, "is_decoder", False)
    )


def pad_to_width(batch: dict[str, torch.Tensor], width: int, pad_id: int) -> dict[str, torch.Tensor] | None:
    """``batch`` widened to ``width`` positions with masked padding, or None where that could change its loss.

    Input ids take the padding id, the attention mask and token types zeros, and token labels (the
    same shape as the ids) the ignored label; sequence labels are one per row and stay as they are.
    """
    if set(batch) - PADDABLE_KEYS or "input_ids" not in batch or "attention_mask" not in batch:
        return None
    ids = batch["input_ids"]
    extra = width - ids.shape[1]
    if extra < 0:
        return None
    fills = {"input_ids": pad_id, "attention_mask": 0, "token_type_ids": 0}
    labels = batch.get("labels")
    if labels is not None and labels.shape == ids.shape:
        if labels.dtype != torch.long:
            return None
        fills["labels"] = IGNORE
    return {key: F.pad(value, (0, extra), value=fills[key]) if key in fills else value for key, value in batch.items()}


def device_learning_rates(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    """Each group's learning rate as a tensor on ``device``, which a schedule then fills in place.

    Call it after the schedule is made, so that its base rates stay plain numbers: its updates are
    then ``fill_`` of a number, with no read back from the device.
    """
    for group in optimizer.param_groups:
        group["lr"] = torch.tensor(float(group["lr"]), dtype=torch.float32, device=device)


Replay = Callable[[], None]
GraphStep = Callable[[dict[str, torch.Tensor]], torch.Tensor]


class Graphs(Protocol):
    """What :class:`GraphedSteps` needs to warm up, capture and replay: :class:`CudaGraphs` on a GPU."""

    def warm_up(self, work: Callable[[], torch.Tensor]) -> torch.Tensor: ...

    def capture(self, step: GraphStep, inputs: dict[str, torch.Tensor]) -> tuple[Replay, torch.Tensor]: ...


class CudaGraphs:
    """Warm-up and capture on a CUDA device; all of one loop's graphs share a memory pool."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.pool = torch.cuda.graph_pool_handle()

    def warm_up(self, work: Callable[[], torch.Tensor]) -> torch.Tensor:
        """``work`` on a side stream, as PyTorch's capture recipe warms up."""
        current = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            result = work()
        current.wait_stream(side)
        return result

    def capture(self, step: GraphStep, inputs: dict[str, torch.Tensor]) -> tuple[Replay, torch.Tensor]:
        """Records ``step`` on ``inputs`` without running it: the replay, and the loss tensor each replay writes."""
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            loss = step(inputs)
        return graph.replay, loss


class GraphedSteps:
    """The training loop's step: replays a captured graph per batch width, eager where it cannot.

    ``eager`` is the loop's own step on a CPU batch (to the device, loss, backward, update, schedule,
    gradients zeroed in place); it runs the steps that are not replayed. ``graphs`` captures and
    replays (:class:`CudaGraphs` on the loop's device by default).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler,
        eager: EagerStep,
        *,
        batch_size: int,
        pad_id: int,
        dtype: torch.dtype | None,
        device: torch.device,
        graphs: Graphs | None = None,
    ) -> None:
        self.model, self.optimizer, self.scheduler, self.eager = model, optimizer, scheduler, eager
        self.batch_size, self.pad_id, self.dtype, self.device = batch_size, pad_id, dtype, device
        self.graphs = graphs or CudaGraphs(device)
        self.captured: dict[int, tuple[Replay, torch.Tensor, dict[str, torch.Tensor]]] = {}
        self.warmed: dict[int, int] = {}
        self.replays = 0
        self.replayed_width: int | None = None  # the last step's graph width (None: it ran eagerly)
        self.failure: str | None = None  # why graphs were given up (a failed capture), if they were

    def __call__(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        rows, width = batch["input_ids"].shape
        graphed = rows == self.batch_size and self.failure is None
        padded = pad_to_width(batch, bucket_width(width), self.pad_id) if graphed else None
        self.replayed_width = None
        if padded is None:
            return self.eager(batch)
        bucket = padded["input_ids"].shape[1]
        if bucket not in self.captured:
            if self.warmed.get(bucket, 0) < WARMUP_STEPS:
                self.warmed[bucket] = self.warmed.get(bucket, 0) + 1
                return self.graphs.warm_up(lambda: self.eager(padded))
            inputs = {key: value.to(self.device) for key, value in padded.items()}
            try:
                self.captured[bucket] = (*self.graphs.capture(self._step, inputs), inputs)
            except RuntimeError as error:
                # A capture records without running, so nothing was trained: this batch and the
                # run's others take the eager step, and the run is slower, not wrong.
                logger.warning("CUDA graph capture failed at width %d (%s); the run continues eagerly", bucket, error)
                self.failure = f"capture failed at width {bucket}: {error}"
                return self.eager(batch)
        replay, loss, inputs = self.captured[bucket]
        for key, value in padded.items():
            inputs[key].copy_(value, non_blocking=True)
        replay()  # a capture records without running: its own batch runs here too
        self.replays += 1
        self.replayed_width = bucket
        self.scheduler.step()
        return loss

    def _step(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The step a graph records: the schedule's step stays outside, on the host."""
        autocast = (
            torch.autocast(self.device.type, dtype=self.dtype, cache_enabled=False)
            if self.dtype not in (None, torch.float32)
            else contextlib.nullcontext()
        )
        with autocast:
            loss = self.model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, foreach=True)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=False)
        return loss.detach()
