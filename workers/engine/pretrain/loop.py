"""The pretraining loop: AdamW, warm-up and linear decay, accumulation, bf16, checkpoints, exact resume.

The optimiser is the one Lewis et al. 2020 and Gu et al. 2021 use for pretraining: AdamW with betas (0.9, 0.98),
eps 1e-6 and weight decay 0.01, a linear warm-up then linear decay to zero, gradient clipping at
1.0, and bf16 autocast where the hardware runs it natively.

**Past one process** the loop runs on torch's engines (:mod:`.parallel`): DDP, or FSDP2 for a model
that does not fit replicated. Each process draws, masks and trains on its own rows of every
micro-batch (``rank::world``), prepared on a thread ahead of the step; the step's token counts are
an all-reduce of the processes' counts.

**Exact resume.** Every ``checkpoint_every`` optimiser steps every process writes its shard of the
model and optimiser, and its RNG states (dropout draws from them), with
``torch.distributed.checkpoint`` (:mod:`.checkpoints`). Everything else is a function of (seed,
step): the order of blocks in an epoch is a permutation seeded by (seed, epoch), the masks of a
step a hash of (seed, step, row). So a run killed at any point and resumed from its last checkpoint
ends with the same weights as one that was never interrupted, bit for bit on the same machine and
number of processes; at another number of processes it continues the same curve.

Losses are appended to ``loss.json`` (training loss every step, held-out loss every
``eval_every`` steps) for plotting; the log is rewritten at each checkpoint and cut back to the
checkpoint's step on resume, so a resumed run's curve has no duplicated steps.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import get_linear_schedule_with_warmup

from workers.engine import varlen_attention
from workers.engine.pretrain import parallel
from workers.engine.pretrain.adversarial import Adversarial
from workers.engine.pretrain.checkpoints import CHECKPOINT, load_checkpoint, save_checkpoint, seed_everything
from workers.engine.pretrain.distillation import Distillation
from workers.engine.pretrain.masking import (
    IGNORE,
    MASKING_SCHEME,
    RowRandom,
    mask_tokens,
    masking_random,
    scheduled_rate,
)
from workers.engine.pretrain.packing import check_packable, pack

logger = logging.getLogger("biolm.pretrain")

OPTIMIZER_KERNELS = ("auto", "fused", "foreach", "default")
ProgressCallback = Callable[[int, int, float | None, float | None], None]  # step, total, loss, tokens/s
__all__ = ["CHECKPOINT", "LoopSettings", "Masker", "heldout_loss", "pretrain_loop"]


@dataclass(frozen=True)
class LoopSettings:
    steps: int
    batch_size: int = 32  # sequences per optimiser step (micro-batch x accumulation)
    accumulation: int = 1
    learning_rate: float = 5e-4
    warmup_ratio: float = 0.06
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-6
    mask_rate: float = 0.15
    whole_word: bool = False
    rate_schedule: bool = False  # Gu et al. 2021, section 2.3: 5% to 25%
    seed: int = 42
    checkpoint_every: int = 100
    eval_every: int = 50
    eval_blocks: int = 256
    unpadded: bool = False  # pack padded sequences without padding (packing.py); MLM and NSP/SOP only
    compile: bool = False  # torch.compile the encoder (opt-in: on a CPU its compilation outweighs short runs)
    varlen_attention: bool = False  # unpadded rows through FlashAttention's varlen kernels, no mask (CUDA, bf16/fp16)
    optimizer_kernel: str = "auto"  # AdamW's kernel: fused where the device has one, else foreach; "default": torch's
    parallelism: str = "auto"  # past one process: ddp, fsdp, or auto (the memory plan's choice; ddp without one)
    activation_checkpointing: bool = False  # recompute each encoder layer in the backward instead of storing it

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.accumulation < 1:
            raise ValueError("steps, batch size and accumulation must be positive")
        parallel.resolve(self.parallelism)  # refuses an unknown one
        if self.optimizer_kernel not in OPTIMIZER_KERNELS:
            known = ", ".join(OPTIMIZER_KERNELS)
            raise ValueError(f"optimizer_kernel {self.optimizer_kernel!r}: expected one of {known}")
        if self.batch_size % self.accumulation:
            raise ValueError(f"batch size {self.batch_size} is not a multiple of accumulation {self.accumulation}")

    @property
    def micro_batch(self) -> int:
        return self.batch_size // self.accumulation


@dataclass
class Masker:
    """Turns the rows ``index`` of a corpus's arrays into MLM inputs (and sentence-pair labels) for one step."""

    mask_id: int
    vocab_size: int
    special_ids: tuple[int, ...]
    pad_id: int

    def __call__(self, data: dict, index, rate: float, random: RowRandom, whole: bool) -> dict:
        input_ids = torch.from_numpy(np.ascontiguousarray(data["ids"][index], dtype=np.int64))
        special = torch.isin(input_ids, torch.tensor(self.special_ids))
        word_ids = torch.from_numpy(np.ascontiguousarray(data["words"][index], dtype=np.int64)) if whole else None
        inputs, labels = mask_tokens(
            input_ids, special, rate=rate, mask_id=self.mask_id, vocab_size=self.vocab_size,
            random=random, word_ids=word_ids,
        )  # fmt: skip
        batch = {"input_ids": inputs, "attention_mask": (input_ids != self.pad_id).long(), "labels": labels}
        if "labels" in data:  # sentence pairs: segment ids and the NSP / SOP label
            batch["token_type_ids"] = torch.from_numpy(np.ascontiguousarray(data["types"][index], dtype=np.int64))
            batch["next_sentence_label"] = torch.from_numpy(np.ascontiguousarray(data["labels"][index], dtype=np.int64))
        return batch


def block_order(n_blocks: int, seed: int, epoch: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(n_blocks)


def micro_batch_indices(n_blocks: int, settings: LoopSettings, step: int, micro: int) -> np.ndarray:
    """The blocks of micro-batch ``micro`` of optimiser step ``step`` (0-based): a function of the seed only."""
    size = settings.micro_batch
    per_epoch = max(1, n_blocks // size)
    index = step * settings.accumulation + micro
    epoch, position = divmod(index, per_epoch)
    order = block_order(n_blocks, settings.seed, epoch)
    return np.sort(order[position * size : (position + 1) * size])


def parameter_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        (no_decay if parameter.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


@torch.no_grad()  # not inference_mode: FSDP's gathered parameters must stay usable by the next training step
def heldout_loss(
    module, blocks, masker: Masker, settings: LoopSettings, device, dtype, rank: int = 0, world: int = 1
) -> float | None:
    """Mean MLM loss over up to ``eval_blocks`` held-out blocks, with fixed masks (comparable across steps).

    ``module`` is a model, or the loop's step module under DDP or FSDP. Every process scores its rows of
    each chunk (all run the same number of forwards, which a sharded model's gathers need) and the
    sums are reduced: the same loss as one process's, whatever their number.
    """
    count = min(len(blocks["ids"]), settings.eval_blocks)
    if count == 0:
        return None
    if hasattr(module, "base_model"):  # a bare model
        module = parallel.StepModule(module)
    was_training = module.training
    module.eval()
    total = tokens = 0.0
    for start in range(0, count, settings.micro_batch):
        rows = np.arange(start, min(start + settings.micro_batch, count))
        mine, weight = rows[rank::world], 1.0
        if not len(mine):  # fewer rows than processes: run one row for the gathers, count none
            mine, weight = rows[:1], 0.0
        batch = masker(blocks, mine, settings.mask_rate, masking_random(settings.seed, -1, mine), settings.whole_word)
        inner = getattr(module, "module", module).model
        if settings.unpadded:
            batch = pack(batch, inner, masker.pad_id)
        batch = {k: v.to(device) for k, v in batch.items()}
        masked = int((batch["labels"] != IGNORE).sum())
        total += weight * float(module(batch, -1, 1, 1, 1, device, dtype, heldout=True))  # the MLM part only
        tokens += weight * masked
    module.train(was_training)
    total, tokens = parallel.all_reduce_sum([total, tokens], device, world)
    return total / tokens if tokens else None


def pretrain_loop(
    model: torch.nn.Module,
    train_blocks: dict[str, np.ndarray],
    heldout_blocks: dict[str, np.ndarray],
    masker: Masker,
    settings: LoopSettings,
    out: Path,
    *,
    device: torch.device,
    dtype: torch.dtype | None,
    resume: bool = False,
    progress: ProgressCallback | None = None,
    distillation: Distillation | None = None,
    adversarial: Adversarial | None = None,
    planned_parallelism: str | None = None,
) -> dict:
    """Train ``model`` for ``settings.steps`` optimiser steps; returns the run's summary.

    With ``distillation`` the step's loss is the distillation loss of Lewis et al. 2020 from its teacher (and the
    projection it learns is trained and checkpointed with the model); with ``adversarial`` it is
    ALUM's (MLM plus the adversarial term). Held-out loss stays MLM's. ``planned_parallelism`` is the
    memory plan's choice, which ``parallelism: auto`` takes. Under FSDP ``model`` is sharded in place
    when this returns: :func:`workers.engine.pretrain.checkpoints.full_model_state` gathers it.
    """
    n_blocks = len(train_blocks["ids"])
    if n_blocks < settings.micro_batch:
        raise ValueError(
            f"the corpus gives {n_blocks} training blocks, fewer than one micro-batch of {settings.micro_batch}"
        )
    rank, world = distributed_rank_and_world()
    _check_fast_paths(model, settings, distillation, adversarial, device, dtype)
    how, step_module, wrapped = _engine(model, settings, device, dtype, world, distillation or adversarial,
                                        planned_parallelism)  # fmt: skip
    optimizer, scheduler = optimizer_and_schedule(step_module, settings)  # after wrapping: FSDP's shards
    step, log = _resume_or_seed(out, resume, wrapped, optimizer, scheduler, rank, world, settings.seed)
    start, real_tokens, seconds_before = time.perf_counter(), 0, log[-1]["seconds"] if log else 0.0
    if progress is not None and rank == 0:  # one writer of the job's progress file, which every node may share
        progress(step, settings.steps, None, None)

    def prepare(at: int) -> tuple[float, list[dict]]:
        rate = scheduled_rate(at, settings.steps) if settings.rate_schedule else settings.mask_rate
        pin = device.type == "cuda"
        return rate, step_micro_batches(train_blocks, masker, settings, at, rate, rank, world, pin=pin)

    with attention_for(model, settings), BatchPrefetcher(prepare, step, settings.steps) as batches:
        while step < settings.steps:
            rate, micro_batches = batches.take(step)
            loss_sum, step_tokens = _accumulate_gradients(
                wrapped, micro_batches, step, settings, device, dtype, world, masker.pad_id
            )
            real_tokens += step_tokens
            torch.nn.utils.clip_grad_norm_(list(step_module.parameters()), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            elapsed = seconds_before + time.perf_counter() - start
            entry = {"step": step, "loss": loss_sum, "mask_rate": rate, "seconds": elapsed}
            if step % settings.eval_every == 0 or step == settings.steps:
                entry["heldout_loss"] = heldout_loss(wrapped, heldout_blocks, masker, settings, device, dtype, rank,
                                                     world)  # fmt: skip
            log.append(entry)
            if progress is not None and rank == 0:
                progress(step, settings.steps, loss_sum, real_tokens / (time.perf_counter() - start))
            if step % settings.checkpoint_every == 0 or step == settings.steps:
                save_checkpoint(out / CHECKPOINT, wrapped, optimizer, scheduler, step, log, rank=rank, world=world,
                                parallelism=how)  # fmt: skip
                if rank == 0:
                    write_log(out, log)
    if rank == 0:
        write_log(out, log)
    return _run_summary(step, log, real_tokens, world, time.perf_counter() - start, settings, how)


def _engine(model, settings: LoopSettings, device, dtype, world: int, objective, planned: str | None):
    """The model on its device, inside its step module, under DDP or FSDP2: (parallelism, step module, wrapped)."""
    check_split(settings, world)
    how = parallel.resolve(settings.parallelism, planned) if world > 1 else "single"
    if how == "single":
        model.to(device)  # under DDP or FSDP, parallel.wrap places it (a rank but 0 built it empty, on meta)
    model.train()
    if settings.compile:
        model.base_model.compile()  # in place: the state dict's names (checkpoints) stay the model's own
    if isinstance(objective, Distillation):
        objective.to(device)
    step_module = parallel.StepModule(model, objective)
    wrapped = parallel.wrap(step_module, how, world, device, dtype,
                            activation_checkpointing=settings.activation_checkpointing)  # fmt: skip
    return how, step_module, wrapped


def check_split(settings: LoopSettings, world: int) -> None:
    """Refuse a micro-batch with fewer rows than processes: under DDP or FSDP a rank with no row has no forward
    to join, and every other rank would wait for it."""
    if settings.micro_batch < world:
        raise ValueError(
            f"a micro-batch of {settings.micro_batch} sequences (batch size {settings.batch_size} / accumulation "
            f"{settings.accumulation}) cannot give each of {world} processes a row: lower the accumulation"
        )


class BatchPrefetcher:
    """Prepares step ``n + 1``'s micro-batches on a thread while step ``n`` trains.

    Masking is NumPy and torch work on the host that releases the GIL; on a GPU it would otherwise
    stand between two steps while the device waits. One step ahead is enough: a step takes longer than
    its masks.
    """

    def __init__(self, prepare: Callable[[int], tuple[float, list[dict]]], first: int, last: int) -> None:
        self.prepare, self.last = prepare, last
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="biolm-batches")
        self.pending: dict[int, Future] = {}
        self._schedule(first)

    def _schedule(self, step: int) -> None:
        if step < self.last and step not in self.pending:
            self.pending[step] = self.pool.submit(self.prepare, step)

    def take(self, step: int) -> tuple[float, list[dict]]:
        self._schedule(step)
        result = self.pending.pop(step).result()
        self._schedule(step + 1)
        return result

    def __enter__(self) -> BatchPrefetcher:
        return self

    def __exit__(self, *_exc) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def optimizer_and_schedule(
    step_module: torch.nn.Module, settings: LoopSettings
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW over the step's parameters (a distillation projection's too) with warm-up then linear decay.

    One optimiser for all of them, so a checkpoint's single optimiser state resumes them all. Under
    FSDP the parameters are this process's shards, and so are AdamW's states.
    """
    groups = parameter_groups(step_module, settings.weight_decay)
    kernel = optimizer_kernel(settings.optimizer_kernel, next(step_module.parameters()).device)
    optimizer = torch.optim.AdamW(groups, lr=settings.learning_rate, betas=settings.betas, eps=settings.eps, **kernel)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * settings.steps), settings.steps)
    return optimizer, scheduler


def optimizer_kernel(choice: str, device: torch.device) -> dict:
    """AdamW's keyword for ``choice``: ``fused`` (one kernel for every parameter) where ``device`` has it, else
    ``foreach`` (a few batched kernels); ``default`` leaves torch's choice (a loop over parameters on a CPU).

    The kernels compute the same update up to the order of floating-point operations.
    """
    if choice == "default":
        return {}
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices

        fused_devices = set(_get_fused_kernels_supported_devices())
    except ImportError:  # a torch that moved it: the devices fused AdamW has run on since 2.4
        fused_devices = {"cuda", "cpu"}
    if choice == "fused" and device.type not in fused_devices:
        raise ValueError(f"optimizer_kernel fused: torch has no fused AdamW on {device.type}")
    if choice in ("auto", "fused") and device.type in fused_devices:
        return {"fused": True}
    return {"foreach": True}


def _check_fast_paths(model, settings: LoopSettings, distillation, adversarial, device, dtype) -> None:
    """Refuse ``unpadded`` or ``varlen_attention`` where it cannot apply, rather than train otherwise than it says."""
    if settings.varlen_attention and not settings.unpadded:
        raise ValueError(
            "varlen_attention runs packed rows: set unpadded to true as well, or varlen_attention to false"
        )
    if not settings.unpadded:
        return
    if distillation is not None or adversarial is not None:
        raise ValueError("unpadded pretraining serves MLM (with NSP/SOP); distillation and ALUM run padded")
    check_packable(model)
    if settings.varlen_attention:
        config = model.config
        if getattr(config, "_attn_implementation", None) != "sdpa":
            raise ValueError(f"varlen_attention replaces SDPA attention; this {config.model_type} runs "
                             f"{config._attn_implementation}: set varlen_attention to false")  # fmt: skip
        reason = varlen_attention.unavailable_reason(device, dtype, config.hidden_size // config.num_attention_heads)
        if reason:
            raise ValueError(f"varlen_attention: {reason}; set varlen_attention to false")


def attention_for(model: torch.nn.Module, settings: LoopSettings):
    """While the loop runs, the model's attention takes packed batches' offsets (``varlen_attention``)."""
    return varlen_attention.packed_attention_in(model) if settings.varlen_attention else contextlib.nullcontext()


def _resume_or_seed(
    out: Path, resume: bool, wrapped, optimizer, scheduler, rank: int, world: int, seed: int
) -> tuple[int, list[dict]]:
    """The step and loss log to continue from: a checkpoint's (with its RNG states) or, fresh, step 0 seeded.

    Seeding only on a fresh start is what makes resume exact: a resumed run takes the RNG states
    the checkpoint saved, so dropout draws what the uninterrupted run would have drawn.
    """
    if resume and (out / CHECKPOINT).is_dir():
        step, log, written_by = load_checkpoint(
            out / CHECKPOINT, wrapped, optimizer, scheduler, rank=rank, world=world, seed=seed
        )
        if rank == 0 and written_by != world:
            logger.warning("resuming at step %d on %d processes from a checkpoint %d wrote: the masks and data order "
                           "are the same; dropout draws anew", step, world, written_by)  # fmt: skip
        elif rank == 0:
            logger.info("resuming at step %d from %s", step, out / CHECKPOINT)
        return step, log
    seed_everything(seed)
    return 0, []


def step_micro_batches(
    train_blocks: dict, masker: Masker, settings: LoopSettings, step: int, rate: float, rank: int = 0,
    world: int = 1, *, pin: bool = False,
) -> list:  # fmt: skip
    """This process's rows (``rank::world``) of every micro-batch of optimiser step ``step``, masked.

    A row's masks are drawn from (seed, step, its position in the step) alone, so each process draws
    its own rows only and the masks do not depend on the number of processes. ``pin``: in page-locked
    memory, for non-blocking copies to a GPU.
    """
    n_blocks = len(train_blocks["ids"])
    micro_batches = []
    for micro in range(settings.accumulation):
        chosen = micro_batch_indices(n_blocks, settings, step, micro)
        positions = micro * settings.micro_batch + np.arange(len(chosen))
        mine, where = chosen[rank::world], positions[rank::world]
        batch = masker(train_blocks, mine, rate, masking_random(settings.seed, step, where), settings.whole_word)
        batch["block"] = torch.from_numpy(mine)  # seeds per-row randomness (adversarial noise)
        micro_batches.append({k: v.pin_memory() for k, v in batch.items()} if pin else batch)
    return micro_batches


def _accumulate_gradients(
    wrapped, micro_batches: list[dict], step: int, settings: LoopSettings, device, dtype, world: int, pad_id: int
) -> tuple[float, int]:
    """Backward this process's share of every micro-batch; (the step's summed loss, the real tokens run here).

    Each loss is divided by the whole step's masked (and real) token counts, an all-reduce of the
    processes' counts, so the gradients summed over micro-batches and processes (DDP's and FSDP's
    sum reductions) are exactly one big batch's. With ``unpadded`` each share is packed.
    """
    counts = [
        sum(int((batch["labels"] != IGNORE).sum()) for batch in micro_batches),
        sum(int(batch["attention_mask"].sum()) for batch in micro_batches),
    ]
    masked, tokens = (max(int(count), 1) for count in parallel.all_reduce_sum(counts, device, world))
    model = getattr(wrapped, "module", wrapped).model
    loss_sum, real_tokens = 0.0, 0
    for index, share in enumerate(micro_batches):
        real_tokens += int(share["attention_mask"].sum())
        if settings.unpadded:
            share = pack(share, model, pad_id)
        share = {k: v.to(device, non_blocking=True) for k, v in share.items()}
        with parallel.gradient_sync(wrapped, last=index == len(micro_batches) - 1):
            loss = wrapped(share, step, masked, tokens, settings.batch_size, device, dtype)
            loss.backward()
        loss_sum += float(loss.detach())
    return parallel.all_reduce_sum([loss_sum], device, world)[0], real_tokens


def _run_summary(
    step: int, log: list[dict], real_tokens: int, world: int, train_seconds: float, settings: LoopSettings, how: str
) -> dict:
    """What ``pretrain_loop`` returns: the last losses, this session's speed and the settings it ran."""
    return {
        "parallelism": how,
        "masking_scheme": MASKING_SCHEME,
        "steps": step,
        "final_loss": log[-1]["loss"] if log else None,
        "heldout_loss": next((e["heldout_loss"] for e in reversed(log) if e.get("heldout_loss") is not None), None),
        "tokens_per_second_this_session": real_tokens * world / train_seconds if train_seconds else None,
        "processes": world,
        "settings": {**asdict(settings), "betas": list(settings.betas)},
    }


def distributed_rank_and_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def write_log(out: Path, log: list[dict]) -> None:
    _atomic_write(out / "loss.json", json.dumps(log))


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def unigram_baseline(train_ids: np.ndarray, heldout: dict[str, np.ndarray], special_ids, rows: int) -> float:
    """Cross-entropy (nats) of predicting held-out tokens from the training tokens' unigram frequencies.

    The loss a model that ignores context would reach on masked tokens: the bar a pretrained
    model must be well below. Add-one smoothing keeps unseen tokens finite.
    """
    # Count about a million tokens at a time: the memory-mapped ids may be far larger than memory.
    counts = np.zeros(1, dtype=np.float64)
    chunk_rows = max(1, 2**20 // max(1, np.asarray(train_ids[:1]).size))
    for start in range(0, len(train_ids), chunk_rows):
        chunk = np.bincount(np.asarray(train_ids[start : start + chunk_rows]).reshape(-1))
        counts = np.pad(counts, (0, max(0, len(chunk) - len(counts))))
        counts[: len(chunk)] += chunk
    for token in special_ids:
        if token < len(counts):
            counts[token] = 0
    ids = np.asarray(heldout["ids"][:rows]).reshape(-1)
    ids = ids[~np.isin(ids, special_ids)]
    size = max(len(counts), int(ids.max()) + 1 if len(ids) else 0)
    counts = np.pad(counts, (0, size - len(counts))) + 1.0
    probabilities = counts / counts.sum()
    return float(-np.log(probabilities[ids]).mean()) if len(ids) else math.nan
