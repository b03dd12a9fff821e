"""Real multi-process pretraining for the tests: N gloo processes run the engine's loop on a tiny model.

Each process is a fresh interpreter (``torch.multiprocessing`` spawn), joins a TCP rendezvous on a free
port as torchrun's would, and trains :func:`workers.engine.pretrain.loop.pretrain_loop` on synthetic
blocks. Rank 0 saves the whole trained weights (gathered from the shards under FSDP) and every rank its
share of the parameter, gradient and optimiser bytes, counted from the tensors it holds.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

PAD, CLS, SEP, MASK, VOCAB, WIDTH = 0, 1, 2, 3, 96, 32


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Stopped(Exception):
    """Raised by every rank right after the checkpoint of ``stop_at``: a run interrupted there."""


def tiny_model(family: str = "bert", seed: int = 0, dropout: float = 0.0) -> torch.nn.Module:
    """A two-layer model of ``family``, dropout off by default (processes cannot draw one process's dropout)."""
    from transformers import AutoModelForMaskedLM

    from workers.engine.architectures import build_config

    config = build_config(
        f"{family}:tiny", vocab_size=VOCAB, pad_token_id=PAD, hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout, max_position_embeddings=WIDTH + 2,
    )  # fmt: skip
    torch.manual_seed(seed)
    return AutoModelForMaskedLM.from_config(config)


def blocks(count: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Blocks of ``WIDTH`` tokens, [CLS] ... [SEP] and padding after random real lengths; words of 1-3 pieces."""
    rng = np.random.default_rng(seed)
    ids = np.full((count, WIDTH), PAD, dtype=np.int32)
    words = np.full((count, WIDTH), -1, dtype=np.int32)
    for row, length in enumerate(rng.integers(8, WIDTH + 1, count)):
        ids[row, :length] = rng.integers(4, VOCAB, length)
        ids[row, [0, length - 1]] = (CLS, SEP)
        words[row, 1 : length - 1] = np.cumsum(rng.random(length - 2) < 0.5)
    return {"ids": ids, "words": words}


def masker():
    from workers.engine.pretrain.loop import Masker

    return Masker(MASK, VOCAB, (PAD, CLS, SEP), PAD)


def tensor_bytes(module: torch.nn.Module, optimizer: torch.optim.Optimizer | None) -> dict[str, int]:
    """This process's bytes of parameters, gradients and optimiser states: local shards only."""

    def local(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to_local() if hasattr(tensor, "to_local") else tensor

    parameters = [local(p) for p in module.parameters()]
    gradients = [local(p.grad) for p in module.parameters() if p.grad is not None]
    states = [local(v) for s in (optimizer.state.values() if optimizer else ()) for v in s.values()]
    states = [v for v in states if isinstance(v, torch.Tensor) and v.ndim > 0]
    return {
        "parameters": sum(t.numel() * t.element_size() for t in parameters),
        "gradients": sum(t.numel() * t.element_size() for t in gradients),
        "optimizer": sum(t.numel() * t.element_size() for t in states),
    }


def objective(name: str | None, model: torch.nn.Module):
    """The distillation (from a tiny teacher of another seed) or ALUM objective ``name`` names, or None (MLM)."""
    from workers.engine.pretrain.adversarial import Adversarial
    from workers.engine.pretrain.distillation import Distillation

    if name == "distillation":
        return {"distillation": Distillation.of(tiny_model(seed=5), model.config.hidden_size, {})}
    if name == "alum":
        return {"adversarial": Adversarial(seed=3)}
    return {}


def train(rank: int, world: int, port: int, out: str, options: dict) -> None:
    """One process of a run: ``options`` holds the loop's settings, the family, the objective, whether to resume,
    and ``stop_at``, the step after whose checkpoint the run is interrupted."""
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})  # fmt: skip
    torch.set_num_threads(1)
    import torch.distributed as dist

    from workers.engine.pretrain import loop as pretrain
    from workers.engine.pretrain import parallel
    from workers.engine.pretrain.checkpoints import full_model_state

    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    seen: dict = {}
    original_optimizer, original_save = pretrain.optimizer_and_schedule, pretrain.save_checkpoint

    def remember(step_module, settings):  # the loop's own optimiser, to count its states' bytes
        optimizer, scheduler = original_optimizer(step_module, settings)
        seen["module"], seen["optimizer"] = step_module, optimizer
        return optimizer, scheduler

    def save_then_stop(directory, wrapped, optimizer, scheduler, step, log, **kwargs):
        original_save(directory, wrapped, optimizer, scheduler, step, log, **kwargs)
        if step == options.get("stop_at"):
            raise Stopped(step)

    pretrain.optimizer_and_schedule, pretrain.save_checkpoint = remember, save_then_stop
    with parallel.build_context(rank, world):  # as the engine builds it: on meta on every rank but 0
        model = tiny_model(options.get("family", "bert"), dropout=options.get("dropout", 0.0))
    settings = pretrain.LoopSettings(**options["settings"])
    cpu, train_blocks, masker_ = torch.device("cpu"), blocks(options.get("blocks", 64)), masker()
    reported: list = []  # the progress this rank reports (the engine writes it to the job's progress file)
    try:
        summary = pretrain.pretrain_loop(model, train_blocks, blocks(16, seed=1), masker_, settings, Path(out),
                                         device=cpu, dtype=None, resume=options.get("resume", False),
                                         progress=lambda *state: reported.append(state),
                                         **objective(options.get("objective"), model))  # fmt: skip
    except Stopped:
        summary = None
    (Path(out) / f"progress-{rank}.json").write_text(json.dumps(len(reported)))
    if summary is not None:
        _count_bytes(seen, train_blocks, masker_, settings, rank, world, Path(out))
        weights = full_model_state(model, world) if summary["parallelism"] == "fsdp" else model.state_dict()
        if rank == 0:
            torch.save({k: v.detach().clone() for k, v in weights.items()}, Path(out) / "weights.pt")
            (Path(out) / "summary.json").write_text(json.dumps(summary, default=str))
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def _count_bytes(seen: dict, train_blocks, masker_, settings, rank: int, world: int, out: Path) -> None:
    """One more forward and backward (gradients exist again, sharded where the run shards), then count."""
    from workers.engine.pretrain.loop import step_micro_batches

    batch = step_micro_batches(train_blocks, masker_, settings, 0, settings.mask_rate, rank, world)[0]
    cpu = torch.device("cpu")
    seen["module"](batch, 0, 100, 100, settings.batch_size, cpu, None).backward()
    (out / f"bytes-{rank}.json").write_text(json.dumps(tensor_bytes(seen["module"], seen["optimizer"])))


def run(world: int, out: Path, **options) -> dict:
    """Train with ``world`` processes into ``out``; (rank 0's summary, weights, every rank's counted bytes)."""
    import torch.multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    if world == 1:
        train(0, 1, 0, str(out), options)
    else:
        mp.spawn(train, args=(world, free_port(), str(out), options), nprocs=world, join=True)
    if options.get("stop_at"):
        return {"log": json.loads((out / "checkpoint" / "loss.json").read_text())}
    return {
        "summary": json.loads((out / "summary.json").read_text()),
        "weights": torch.load(out / "weights.pt", weights_only=True),
        "bytes": [json.loads((out / f"bytes-{rank}.json").read_text()) for rank in range(world)],
        "log": json.loads((out / "loss.json").read_text()),
        "progress_reports": [json.loads((out / f"progress-{rank}.json").read_text()) for rank in range(world)],
    }


def settings(**overrides) -> dict:
    from workers.engine.pretrain.loop import LoopSettings

    base = LoopSettings(steps=20, batch_size=16, accumulation=2, learning_rate=1e-3, warmup_ratio=0.1,
                        checkpoint_every=10, eval_every=10, eval_blocks=16, optimizer_kernel="foreach")  # fmt: skip
    values = {**asdict(base), **overrides}
    values["betas"] = tuple(values["betas"])
    return values
