"""The pretraining loop: AdamW, warm-up and linear decay, accumulation, bf16, checkpoints, exact resume.

The optimiser is the one Lewis et al. 2020 and Gu et al. 2021 use for pretraining: AdamW with betas (0.9, 0.98),
eps 1e-6 and weight decay 0.01, a linear warm-up then linear decay to zero, gradient clipping at
1.0, and bf16 autocast where the hardware runs it natively.

**Exact resume.** Every ``checkpoint_every`` optimiser steps the loop writes, atomically, the
model, optimiser and scheduler states, the global RNG states (dropout draws from them) and the
step. Everything else is a function of (seed, step): the order of blocks in an epoch is a
permutation seeded by (seed, epoch), the masks of a step come from a generator seeded by
(seed, step). So a run killed at any point and resumed from its last checkpoint ends with the
same weights as one that was never interrupted, bit for bit on the same machine.

Losses are appended to ``loss.json`` (training loss every step, held-out loss every
``eval_every`` steps) for plotting; the log is rewritten at each checkpoint and cut back to the
checkpoint's step on resume, so a resumed run's curve has no duplicated steps.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import get_linear_schedule_with_warmup

from workers.engine import varlen_attention
from workers.engine.pretrain.adversarial import Adversarial
from workers.engine.pretrain.distillation import Distillation
from workers.engine.pretrain.masking import IGNORE, mask_tokens, masking_generator, scheduled_rate
from workers.engine.pretrain.mlm import masked_lm_loss
from workers.engine.pretrain.packing import check_packable, pack

OPTIMIZER_KERNELS = ("auto", "fused", "foreach", "default")
ProgressCallback = Callable[[int, int, float | None, float | None], None]  # step, total, loss, tokens/s
CHECKPOINT = "checkpoint"


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

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.accumulation < 1:
            raise ValueError("steps, batch size and accumulation must be positive")
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

    def __call__(self, data: dict, index, rate: float, generator: torch.Generator, whole: bool) -> dict:
        input_ids = torch.from_numpy(np.ascontiguousarray(data["ids"][index], dtype=np.int64))
        special = torch.isin(input_ids, torch.tensor(self.special_ids))
        word_ids = torch.from_numpy(np.ascontiguousarray(data["words"][index], dtype=np.int64)) if whole else None
        inputs, labels = mask_tokens(
            input_ids, special, rate=rate, mask_id=self.mask_id, vocab_size=self.vocab_size,
            generator=generator, word_ids=word_ids,
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


@torch.inference_mode()
def heldout_loss(model, blocks, masker: Masker, settings: LoopSettings, device, dtype) -> float | None:
    """Mean MLM loss over up to ``eval_blocks`` held-out blocks, with fixed masks (comparable across steps)."""
    count = min(len(blocks["ids"]), settings.eval_blocks)
    if count == 0:
        return None
    was_training = model.training
    model.eval()
    generator = masking_generator(settings.seed, -1)
    total = tokens = 0.0
    for start in range(0, count, settings.micro_batch):
        rows = np.arange(start, min(start + settings.micro_batch, count))
        batch = masker(blocks, rows, settings.mask_rate, generator, settings.whole_word)
        if settings.unpadded:
            batch = pack(batch, model, masker.pad_id)
        batch = {k: v.to(device) for k, v in batch.items()}
        masked = int((batch["labels"] != IGNORE).sum())
        total += float(masked_lm_loss(model, batch, 1, device, dtype, pair_weight=0.0))  # the MLM part only
        tokens += masked
    model.train(was_training)
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
) -> dict:
    """Train ``model`` for ``settings.steps`` optimiser steps; returns the run's summary.

    With ``distillation`` the step's loss is the distillation loss of Lewis et al. 2020 from its teacher (and the
    projection it learns is trained and checkpointed with the model); with ``adversarial`` it is
    ALUM's (MLM plus the adversarial term). Held-out loss stays MLM's.
    """
    n_blocks = len(train_blocks["ids"])
    if n_blocks < settings.micro_batch:
        raise ValueError(
            f"the corpus gives {n_blocks} training blocks, fewer than one micro-batch of {settings.micro_batch}"
        )
    _check_fast_paths(model, settings, distillation, adversarial, device, dtype)
    model.to(device)
    model.train()
    if settings.compile:
        model.base_model.compile()  # in place: the state dict's names (checkpoints) stay the model's own
    trained: list[torch.nn.Module] = [model]
    if distillation is not None:
        distillation.to(device)
        trained.append(distillation.projection)
    optimizer, scheduler = _optimizer_and_schedule(trained, settings)
    rank, world = distributed_rank_and_world()
    step, log = _resume_or_seed(out, resume, model, optimizer, scheduler, device, rank, trained[1:], settings.seed)
    start, real_tokens, seconds_before = time.perf_counter(), 0, log[-1]["seconds"] if log else 0.0
    if progress is not None:
        progress(step, settings.steps, None, None)
    with attention_for(model, settings):
        while step < settings.steps:
            rate = scheduled_rate(step, settings.steps) if settings.rate_schedule else settings.mask_rate
            micro_batches = step_micro_batches(train_blocks, masker, settings, step, rate)
            loss_sum, step_tokens = _accumulate_gradients(
                model, micro_batches, step, settings, device, dtype, rank, world, distillation, adversarial,
                masker.pad_id,
            )  # fmt: skip
            real_tokens += step_tokens
            if world > 1:
                loss_sum = all_reduce_gradients(trained, loss_sum, device)
            torch.nn.utils.clip_grad_norm_([p for module in trained for p in module.parameters()], 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            elapsed = seconds_before + time.perf_counter() - start
            entry = {"step": step, "loss": loss_sum, "mask_rate": rate, "seconds": elapsed}
            if rank == 0 and (step % settings.eval_every == 0 or step == settings.steps):
                entry["heldout_loss"] = heldout_loss(model, heldout_blocks, masker, settings, device, dtype)
            log.append(entry)
            if progress is not None and rank == 0:
                progress(step, settings.steps, loss_sum, real_tokens * world / (time.perf_counter() - start))
            if step % settings.checkpoint_every == 0 or step == settings.steps:
                save_checkpoint(out / CHECKPOINT, model, optimizer, scheduler, step, log, rank, world, trained[1:])
                if rank == 0:
                    write_log(out, log)
    if rank == 0:
        write_log(out, log)
    return _run_summary(step, log, real_tokens, world, time.perf_counter() - start, settings)


def _optimizer_and_schedule(trained: list[torch.nn.Module], settings: LoopSettings):
    """AdamW over every trained module (a distillation projection too) with warm-up then linear decay.

    One optimiser for all of them, so a checkpoint's single optimiser state resumes them all.
    """
    groups = [group for module in trained for group in parameter_groups(module, settings.weight_decay)]
    kernel = optimizer_kernel(settings.optimizer_kernel, next(trained[0].parameters()).device)
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
    out: Path, resume: bool, model, optimizer, scheduler, device, rank: int, extra: list[torch.nn.Module], seed: int
) -> tuple[int, list[dict]]:
    """The step and loss log to continue from: a checkpoint's (with its RNG states) or, fresh, step 0 seeded.

    Seeding only on a fresh start is what makes resume exact: a resumed run takes the RNG states
    the checkpoint saved, so dropout draws what the uninterrupted run would have drawn.
    """
    if resume and (out / CHECKPOINT).is_dir():
        return load_checkpoint(out / CHECKPOINT, model, optimizer, scheduler, device, rank, extra)
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    return 0, []


def step_micro_batches(train_blocks: dict, masker: Masker, settings: LoopSettings, step: int, rate: float) -> list:
    """The masked micro-batches of optimiser step ``step``, all of them, whatever this process trains on.

    Every process draws the masks of the whole step (cheap), so the masks do not depend on the
    number of processes; each then trains on its share of the rows.
    """
    n_blocks = len(train_blocks["ids"])
    generator = masking_generator(settings.seed, step)
    micro_batches = []
    for micro in range(settings.accumulation):
        chosen = micro_batch_indices(n_blocks, settings, step, micro)
        micro_batches.append(masker(train_blocks, chosen, rate, generator, settings.whole_word))
        micro_batches[-1]["block"] = torch.from_numpy(chosen)  # seeds per-row randomness (adversarial noise)
    return micro_batches


def _accumulate_gradients(
    model, micro_batches: list[dict], step: int, settings: LoopSettings, device, dtype, rank: int, world: int,
    distillation: Distillation | None, adversarial: Adversarial | None, pad_id: int,
) -> tuple[float, int]:  # fmt: skip
    """Backward this process's share of every micro-batch; (its summed loss, the real tokens it ran).

    Each loss is divided by the whole step's masked (and real) token counts, not the share's, so
    the gradients summed over micro-batches and processes are exactly one big batch's. With
    ``unpadded`` each share is packed (after the split, so every process packs only its rows).
    """
    masked = max(sum(int((batch["labels"] != IGNORE).sum()) for batch in micro_batches), 1)
    tokens = max(sum(int(batch["attention_mask"].sum()) for batch in micro_batches), 1)
    loss_sum, real_tokens = 0.0, 0
    for batch in micro_batches:
        share = {k: v[rank::world] for k, v in batch.items()}
        real_tokens += int(share["attention_mask"].sum())
        if settings.unpadded:
            share = pack(share, model, pad_id)
        share = {k: v.to(device, non_blocking=True) for k, v in share.items()}
        if distillation is not None:
            loss = distillation.loss(model, share, masked, tokens, device, dtype)
        elif adversarial is not None:
            loss = adversarial.loss(model, share, step, masked, device, dtype, rows=settings.batch_size)
        else:
            loss = masked_lm_loss(model, share, masked, device, dtype, rows=settings.batch_size)
        loss.backward()
        loss_sum += float(loss.detach())
    return loss_sum, real_tokens


def _run_summary(
    step: int, log: list[dict], real_tokens: int, world: int, train_seconds: float, settings: LoopSettings
) -> dict:
    """What ``pretrain_loop`` returns: the last losses, this session's speed and the settings it ran."""
    return {
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


def all_reduce_gradients(modules: list[torch.nn.Module], loss: float, device) -> float:
    """Sum every gradient (and the logged loss) across processes, in one flat buffer."""
    import torch.distributed as dist

    grads = [p.grad for module in modules for p in module.parameters() if p.grad is not None]
    flat = torch.cat(
        [g.reshape(-1) for g in grads] + [torch.tensor([loss], device=grads[0].device, dtype=grads[0].dtype)]
    )
    dist.all_reduce(flat)
    offset = 0
    for grad in grads:
        grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
        offset += grad.numel()
    return float(flat[-1])


def _barrier(world: int) -> None:
    if world > 1:
        import torch.distributed as dist

        dist.barrier()


def write_log(out: Path, log: list[dict]) -> None:
    _atomic_write(out / "loss.json", json.dumps(log))


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def rng_states() -> dict:
    kind, keys, position, has_gauss, cached = np.random.get_state()
    # Plain lists and numbers, not a numpy array: the checkpoint then loads with weights_only=True.
    numpy_state = [kind, keys.tolist(), int(position), int(has_gauss), float(cached)]
    states = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def save_checkpoint(
    directory: Path,
    model,
    optimizer,
    scheduler,
    step: int,
    log: list[dict],
    rank: int = 0,
    world: int = 1,
    extra: list[torch.nn.Module] = (),
) -> None:
    """Write the resumable state to a fresh directory, then swap it in: a kill never leaves half a checkpoint.

    Every process holds the same weights and optimiser state (gradients are summed across them),
    so process 0 writes those; each process writes its own RNG states, which dropout draws from.
    """
    staging = directory.with_name(directory.name + ".tmp")
    if rank == 0:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    _barrier(world)
    torch.save(rng_states(), staging / f"rng-{rank}.pt")
    if rank == 0:
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "step": step,
                "processes": world,
                "extra": [module.state_dict() for module in extra],  # a distillation projection
            },
            staging / "state.pt",
        )
        (staging / "loss.json").write_text(json.dumps(log), encoding="utf-8")
    _barrier(world)
    if rank == 0:
        previous = directory.with_name(directory.name + ".old")
        shutil.rmtree(previous, ignore_errors=True)
        if directory.exists():
            os.replace(directory, previous)
        os.replace(staging, directory)
        shutil.rmtree(previous, ignore_errors=True)
    _barrier(world)


def _load_tensors(path: Path, **kwargs):
    """``torch.load`` of tensors, containers and numbers only: a file with anything else is refused unrun."""
    try:
        return torch.load(path, weights_only=True, **kwargs)
    except pickle.UnpicklingError as exc:
        raise ValueError(
            f"{path.name}: holds objects other than tensors and numbers, which biolm does not unpickle "
            f"(a checkpoint of an older biolm, or not biolm's): start the run again without --resume ({exc})"
        ) from None


def load_checkpoint(
    directory: Path, model, optimizer, scheduler, device: torch.device, rank: int = 0, extra=()
) -> tuple[int, list[dict]]:
    # weights_only: a checkpoint comes back through the platform, and unpickling anything else could run code.
    state = _load_tensors(directory / "state.pt", map_location=device)
    model.load_state_dict(state["model"])
    for module, saved in zip(extra, state.get("extra", []), strict=True):
        module.load_state_dict(saved)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    rng_path = directory / f"rng-{rank}.pt"
    if not rng_path.exists():
        raise ValueError(
            f"{directory}: written by {state.get('processes', 1)} process(es); resume with the same number"
        )
    rng = _load_tensors(rng_path)
    random.setstate(rng["python"])
    kind, keys, position, has_gauss, cached = rng["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), position, has_gauss, cached))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    log = json.loads((directory / "loss.json").read_text(encoding="utf-8"))
    return int(state["step"]), [entry for entry in log if entry["step"] <= state["step"]]


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
