"""Pretraining past one process on this CPU (gloo): DDP against the flat all-reduce it replaced, FSDP's memory
per rank against DDP's, and the host time each rank spends on its masks.

* ``exchange`` -- two processes train the same BERT for ``steps`` optimiser steps of ``accumulation``
  micro-batches, twice: through the engine's loop (DDP: bucketed, overlapped with the backward, one
  exchange per step under ``no_sync``), and through the exchange biolm had before (every gradient
  concatenated into one flat buffer after the whole backward, one blocking ``all_reduce``; kept here,
  and only here, as the baseline). The median step time of each, and the two runs' losses, which must
  agree.
* ``memory`` -- the bytes of parameters, gradients and AdamW states each rank holds after a backward,
  counted from its tensors, for ``ddp`` and ``fsdp`` at 2 and 4 processes (a Megatron-BERT).
* ``masks`` -- the host time one rank spends drawing its rows' masks for a step of the PubMedBERT
  recipe's batch (8,192 sequences of 128 tokens, whole-word masking; Gu et al. 2021), at 1, 2 and 4
  ranks. Each rank draws only its rows now; before, every rank drew the whole step's masks.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import common

NAME = "distributed_pretraining"


@dataclass(frozen=True)
class Config:
    steps: int = 12
    batch_size: int = 32
    accumulation: int = 4
    hidden: int = 256
    layers: int = 4
    mask_rows: int = 8192
    mask_width: int = 128
    mask_repeats: int = 3


def _model(config: Config, family: str = "bert"):
    import torch
    from transformers import AutoModelForMaskedLM

    from workers.engine.architectures import build_config

    built = build_config(
        f"{family}:tiny", vocab_size=4096, hidden_size=config.hidden, num_hidden_layers=config.layers,
        num_attention_heads=4, intermediate_size=4 * config.hidden, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, max_position_embeddings=130,
    )  # fmt: skip
    torch.manual_seed(0)
    return AutoModelForMaskedLM.from_config(built)


def _blocks(rows: int, width: int, vocab: int = 4096, seed: int = 0) -> dict:
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(4, vocab, (rows, width)).astype(np.int32)
    ids[:, 0], ids[:, -1] = 1, 2
    words = np.cumsum(rng.random((rows, width)) < 0.7, axis=1).astype(np.int32)
    words[:, 0] = words[:, -1] = -1
    return {"ids": ids, "words": words}


def _masker():
    from workers.engine.pretrain.loop import Masker

    return Masker(3, 4096, (0, 1, 2), 0)


def flat_all_reduce(modules, loss: float) -> float:
    """The exchange biolm had before DDP: one flat buffer of every gradient, one blocking all-reduce (baseline)."""
    import torch
    import torch.distributed as dist

    grads = [p.grad for module in modules for p in module.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads] + [torch.tensor([loss], dtype=grads[0].dtype)])
    dist.all_reduce(flat)
    offset = 0
    for grad in grads:
        grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
        offset += grad.numel()
    return float(flat[-1])


def _flat_loop(model, blocks, settings, rank: int, world: int) -> tuple[list[float], list[float]]:
    """The old loop's step: each rank's rows, backward without any exchange, then the flat all-reduce."""
    import torch

    from workers.engine.pretrain.loop import optimizer_and_schedule, step_micro_batches
    from workers.engine.pretrain.masking import IGNORE
    from workers.engine.pretrain.mlm import masked_lm_loss
    from workers.engine.pretrain.parallel import StepModule, all_reduce_sum

    cpu = torch.device("cpu")
    step_module = StepModule(model)
    optimizer, scheduler = optimizer_and_schedule(step_module, settings)
    losses, times = [], []
    for step in range(settings.steps):
        start = time.perf_counter()
        batches = step_micro_batches(blocks, _masker(), settings, step, settings.mask_rate, rank, world)
        counts = [sum(int((b["labels"] != IGNORE).sum()) for b in batches)]
        masked = int(all_reduce_sum(counts, cpu, world)[0])
        loss_sum = 0.0
        for batch in batches:
            loss = masked_lm_loss(model, batch, masked, cpu, None, rows=settings.batch_size)
            loss.backward()
            loss_sum += float(loss.detach())
        loss_sum = flat_all_reduce([model], loss_sum)
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
        losses.append(loss_sum)
    return losses, times


def _exchange_process(rank: int, world: int, port: int, out: str, config: dict) -> None:
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})  # fmt: skip
    import torch
    import torch.distributed as dist

    from workers.engine.pretrain.loop import LoopSettings, pretrain_loop

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    bench = Config(**config)
    settings = LoopSettings(steps=bench.steps, batch_size=bench.batch_size, accumulation=bench.accumulation,
                            checkpoint_every=10**9, eval_every=10**9, eval_blocks=0, parallelism="ddp",
                            optimizer_kernel="foreach")  # fmt: skip
    blocks = _blocks(256, 128)
    flat_losses, flat_times = _flat_loop(_model(bench), blocks, settings, rank, world)
    times: list[float] = []
    started = [time.perf_counter()]

    def progress(step, total, loss, speed):
        if step:
            times.append(time.perf_counter() - started[0])
        started[0] = time.perf_counter()

    run_dir = Path(out).parent / "ddp-run"  # one folder for both ranks, as torchrun's processes share --out
    no_heldout = {"ids": blocks["ids"][:0], "words": blocks["words"][:0]}
    pretrain_loop(_model(bench), blocks, no_heldout, _masker(), settings, run_dir, device=torch.device("cpu"),
                  dtype=None, progress=progress)  # fmt: skip
    if rank == 0:
        log = json.loads((run_dir / "loss.json").read_text())
        result = {"flat": {"losses": flat_losses, "step_seconds": flat_times},
                  "ddp": {"losses": [e["loss"] for e in log], "step_seconds": times}}  # fmt: skip
        Path(out).write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


def _spawn(function, world: int, *args) -> None:
    import torch.multiprocessing as mp

    from bench.harness import free_port

    mp.spawn(function, args=(world, free_port(), *args), nprocs=world, join=True)


def exchange(config: Config) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "exchange.json"
        _spawn(_exchange_process, 2, str(out), asdict(config))
        measured = json.loads(out.read_text())
    arms = {}
    for arm, values in measured.items():
        steady = values["step_seconds"][2:] or values["step_seconds"]  # the first steps warm the allocator up
        arms[arm] = {"median_step_seconds": statistics.median(steady), "final_loss": values["losses"][-1]}
    gap = max(abs(a - b) for a, b in zip(measured["ddp"]["losses"], measured["flat"]["losses"], strict=True))
    ratio = arms["ddp"]["median_step_seconds"] / arms["flat"]["median_step_seconds"]
    return {"processes": 2, "arms": arms, "largest_loss_gap": gap, "ddp_over_flat_step_time": ratio}


def _memory_process(rank: int, world: int, port: int, out: str, config: dict, parallelism: str) -> None:
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})  # fmt: skip
    import torch
    import torch.distributed as dist

    from workers.engine.pretrain import loop, parallel

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    bench = Config(**config)
    settings = loop.LoopSettings(steps=1, batch_size=8 * world, accumulation=1, parallelism=parallelism,
                                 optimizer_kernel="foreach")  # fmt: skip
    cpu = torch.device("cpu")
    step_module = parallel.StepModule(_model(bench, "megatron-bert"))
    wrapped = parallel.wrap(step_module, parallelism, world, cpu, None)
    optimizer, _ = loop.optimizer_and_schedule(step_module, settings)
    batch = loop.step_micro_batches(_blocks(64, 128), _masker(), settings, 0, 0.15, rank, world)[0]
    wrapped(batch, 0, 100, 100, settings.batch_size, cpu, None).backward()
    optimizer.step()

    def local(tensor):
        return tensor.to_local() if hasattr(tensor, "to_local") else tensor

    def size(tensors):
        return sum(local(t).numel() * local(t).element_size() for t in tensors)

    parameters = list(step_module.parameters())
    counted = {
        "parameters": size(parameters),
        "gradients": size(p.grad for p in parameters if p.grad is not None),
        "optimizer": size(v for state in optimizer.state.values() for v in state.values() if v.ndim > 0),
    }
    Path(f"{out}-{rank}.json").write_text(json.dumps(counted))
    dist.barrier()
    dist.destroy_process_group()


def memory(config: Config) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for world in (2, 4):
            for parallelism in ("ddp", "fsdp"):
                prefix = str(Path(scratch) / f"{parallelism}-{world}")
                _spawn(_memory_process, world, prefix, asdict(config), parallelism)
                ranks = [json.loads(Path(f"{prefix}-{rank}.json").read_text()) for rank in range(world)]
                results[f"{parallelism}@{world}"] = {"largest_rank_bytes": max(sum(r.values()) for r in ranks),
                                                     "rank0": ranks[0]}  # fmt: skip
    for world in (2, 4):
        results[f"fsdp_over_ddp@{world}"] = (
            results[f"fsdp@{world}"]["largest_rank_bytes"] / results[f"ddp@{world}"]["largest_rank_bytes"]
        )
    return results


def masks(config: Config) -> dict:
    from workers.engine.pretrain.loop import LoopSettings, step_micro_batches

    data = _blocks(config.mask_rows, config.mask_width)
    settings = LoopSettings(steps=1, batch_size=config.mask_rows, accumulation=1, whole_word=True)
    seconds = {}
    for world in (1, 2, 4):
        timings = []
        for _ in range(config.mask_repeats):
            start = time.perf_counter()
            step_micro_batches(data, _masker(), settings, 0, 0.15, 0, world)
            timings.append(time.perf_counter() - start)
        seconds[world] = min(timings)
    return {"rows": config.mask_rows, "tokens_per_row": config.mask_width,
            "seconds_per_step_per_rank": seconds, "speedup_at_4": seconds[1] / seconds[4]}  # fmt: skip


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    result = {"exchange": exchange(config), "memory": memory(config), "masks": masks(config)}
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def summary(result: dict) -> str:
    exchange, memory, masks = result["exchange"], result["memory"], result["masks"]
    arms = exchange["arms"]
    lines = [
        f"exchange at 2 processes: DDP {arms['ddp']['median_step_seconds'] * 1000:.0f} ms/step, flat all-reduce "
        f"{arms['flat']['median_step_seconds'] * 1000:.0f} ms/step "
        f"(DDP/flat {exchange['ddp_over_flat_step_time']:.2f}); largest loss gap {exchange['largest_loss_gap']:.1e}",
        f"memory per rank, FSDP / DDP: {memory['fsdp_over_ddp@2']:.2f} at 2, {memory['fsdp_over_ddp@4']:.2f} at 4",
        "mask host time per rank and step: "
        + ", ".join(f"{w} rank(s) {s * 1000:.0f} ms" for w, s in masks["seconds_per_step_per_rank"].items()),
    ]
    return "\n".join(lines)
