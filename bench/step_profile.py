"""Where a fine-tuning step's time goes: the host or the device (``python -m bench.step_profile --out DIR``).

The H200 run of 2026-11-28 measured BERT-base fine-tuning at 1.6% MFU with a step of about 45 ms
whatever its batch size. This tool repeats the measurements that explained it, on any device,
so that a short GPU lease gets them in one call (``bench/lent_gpu.sh`` runs it):

* ``eager``: ms per step of the engine's padding-free loss and update (the functions the training
  loop calls), on batches of ``batch`` synthetic sentences of 10 to 60 tokens (BC5-chem's are
  about 36); and, from ``torch.profiler``, the device's busy time per step (on a GPU), the
  operators that take the most of it, and its split by kind of work (:mod:`bench.kernel_profile`);
* ``operators``: how many operators one step dispatches, in the forward, the backward and the
  update, and how many of them are not views (those launch kernels on a GPU): a host-bound step's
  time is roughly their count times the host's cost per operator, which is what a CUDA graph or
  fusion removes. Counted on any device, so the CPU gives the same counts as the GPU, except the
  update's (the GPU's AdamW is one fused kernel);
* ``graph`` (CUDA only): the same model's padded step captured as one CUDA graph on a static
  ``batch`` x 64 batch, replayed with a new batch copied in each time: the step without the host;
* ``side_by_side``: ``1, 4, 8`` processes each running the eager step for ``seconds``, started
  together: steps per second in all and per process (what ``BIOLM_WORKERS_PER_GPU`` buys).

Synthetic batches, not a dataset: the figures are about the step's shape and the host, and this
way the tool needs nothing but torch and transformers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench import common, kernel_profile
from bench.common import BERT_BASE


def tagger(device: torch.device, shape: dict) -> torch.nn.Module:
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    return BertForTokenClassification(BertConfig(num_labels=3, **shape)).to(device).train()


def synthetic_batch(size: int, device: torch.device, length: int | None = None) -> dict[str, torch.Tensor]:
    """``size`` sentences of 10 to 60 tokens (padded to the longest, or to ``length``), random ids and labels."""
    lengths = torch.randint(10, 60 if length is None else min(60, length), (size,))
    width = int(lengths.max()) if length is None else length
    mask = (torch.arange(width)[None] < lengths[:, None]).long()
    ids = torch.randint(1000, 20000, (size, width)) * mask
    labels = torch.randint(0, 3, (size, width)).masked_fill(mask == 0, -100)
    return {k: v.to(device) for k, v in {"input_ids": ids, "attention_mask": mask, "labels": labels}.items()}


class EngineStep:
    """One optimisation step as the engine's loop takes it: padding-free loss, backward, clip, AdamW, schedule."""

    def __init__(
        self, model: torch.nn.Module, device: torch.device, fused: bool | None = None, compile_loss: bool = False
    ) -> None:
        """``fused``: AdamW as one kernel (default on CUDA only, so a CPU counts the GPU's other operators)."""
        from workers.engine.padding_free import loss_step

        self.model, self.device = model, device
        self.loss, _ = loss_step(model)
        if compile_loss:
            self.loss = torch.compile(self.loss, dynamic=True)
        fused = device.type == "cuda" if fused is None else fused
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=fused, foreach=None if fused else True)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: 1.0)

    def __call__(self, batch: dict[str, torch.Tensor], phase: Callable[[str], None] | None = None) -> torch.Tensor:
        """One step; ``phase`` is told "forward", "backward" and "update" as each begins (to count by phase)."""
        from workers.engine.training import autocast, optimizer_step

        enter = phase or (lambda _: None)
        enter("forward")
        with autocast(self.device, torch.bfloat16):
            loss = self.loss(batch)
        enter("backward")
        loss.backward()
        enter("update")
        optimizer_step(self.model, self.optimizer, self.schedule)
        return loss


class OperatorCount(TorchDispatchMode):
    """Counts the ATen operators dispatched in each phase of a step, views apart."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "forward"
        self.counts: dict[str, dict[str, int]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        counts = self.counts.setdefault(self.phase, {"all": 0, "not_views": 0})
        counts["all"] += 1
        counts["not_views"] += not func.is_view
        return func(*args, **(kwargs or {}))


def operators(device: torch.device, shape: dict, batch: int) -> dict:
    """The operators one engine step dispatches, by phase (after a warm-up step, as in training)."""
    step = EngineStep(tagger(device, shape), device)
    step(synthetic_batch(batch, device))
    each = synthetic_batch(batch, device)
    with OperatorCount() as counter:
        step(each, phase=lambda name: setattr(counter, "phase", name))
    total = {kind: sum(phase[kind] for phase in counter.counts.values()) for kind in ("all", "not_views")}
    return {**counter.counts, "total": total}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def eager(device: torch.device, shape: dict, batch: int, steps: int) -> dict:
    """ms per step, and what the profiler attributes to the device and to the host."""
    from torch.profiler import ProfilerActivity, profile

    step = EngineStep(tagger(device, shape), device)
    batches = [synthetic_batch(batch, device) for _ in range(steps)]
    for warm in batches[:3]:
        step(warm)
    synchronize(device)
    start = time.perf_counter()
    for each in batches:
        step(each)
    synchronize(device)
    seconds = (time.perf_counter() - start) / steps
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    profiled = batches[: min(5, steps)]
    with profile(activities=activities) as profiler:
        for each in profiled:
            step(each)
        synchronize(device)
    events = profiler.key_averages()
    by_kind = kernel_profile.by_kind(kernel_profile.ms_per_step(events, device, len(profiled)))
    device_us = sum(getattr(e, "self_device_time_total", 0) for e in events)
    host_us = sum(e.self_cpu_time_total for e in events)
    sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    return {
        "ms_per_step": 1000 * seconds,
        "device_busy_ms_per_step": device_us / 1000 / len(profiled) if device.type == "cuda" else None,
        "host_ms_per_step_profiled": host_us / 1000 / len(profiled),
        "top_operators": events.table(sort_by=sort, row_limit=15, max_name_column_width=50),
        "ms_per_step_by_kind": by_kind,
    }


def graph(device: torch.device, shape: dict, batch: int, steps: int) -> dict:
    """The padded step as one CUDA graph (static ``batch`` x 64), replayed with each new batch copied in."""
    if device.type != "cuda":
        return {"measured": False, "reason": "CUDA graphs need a GPU"}
    model = tagger(device, shape)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True, capturable=True)

    def step(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.autocast("cuda", torch.bfloat16):
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        return loss

    static = synthetic_batch(batch, device, 64)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            step(static)
    torch.cuda.current_stream(device).wait_stream(side)
    captured = torch.cuda.CUDAGraph()
    with torch.cuda.graph(captured):
        step(static)
    fresh = [synthetic_batch(batch, device, 64) for _ in range(steps)]
    synchronize(device)
    start = time.perf_counter()
    for each in fresh:
        for key, value in static.items():
            value.copy_(each[key])
        captured.replay()
    synchronize(device)
    return {"measured": True, "ms_per_step": 1000 * (time.perf_counter() - start) / steps, "shape": [batch, 64]}


def side_by_side(device: torch.device, shape: dict, batch: int, counts: tuple[int, ...], seconds: float) -> dict:
    """Steps per second of ``n`` processes running the eager step on the same device at once."""
    out = {}
    for count in counts:
        with tempfile.TemporaryDirectory(prefix="step-profile-") as folder:
            go = Path(folder) / "go"
            command = [sys.executable, "-m", "bench.step_profile", "--child", str(device), json.dumps(shape),
                       str(batch), str(seconds), folder]  # fmt: skip
            children = [subprocess.Popen([*command, str(i)], stdout=subprocess.PIPE, text=True) for i in range(count)]
            deadline = time.monotonic() + 600
            while sum(1 for p in Path(folder).glob("ready-*")) < count:
                if time.monotonic() > deadline or any(c.poll() not in (None, 0) for c in children):
                    raise RuntimeError(f"{count} side-by-side processes did not all start")
                time.sleep(0.1)
            go.touch()
            rates = [float(child.communicate()[0].split()[-1]) for child in children]
        out[str(count)] = {"steps_per_second": sum(rates), "per_process": rates}
    one = out.get("1", {}).get("steps_per_second")
    for figure in out.values():
        figure["ratio_to_one"] = figure["steps_per_second"] / one if one else None
    return out


def _child(device: str, shape: str, batch: str, seconds: str, folder: str, index: str) -> None:
    """A side-by-side process: warm up, say so, wait for the others, then count steps for ``seconds``."""
    place = torch.device(device)
    step = EngineStep(tagger(place, json.loads(shape)), place)
    batches = [synthetic_batch(int(batch), place) for _ in range(8)]
    for each in batches[:3]:
        step(each)
    synchronize(place)
    Path(folder, f"ready-{index}").touch()
    while not Path(folder, "go").exists():
        time.sleep(0.01)
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < float(seconds):
        step(batches[count % len(batches)])
        count += 1
    synchronize(place)
    print(count / (time.perf_counter() - start), flush=True)


def profile_all(
    device: torch.device, shape: dict, batch: int, steps: int, counts: tuple[int, ...], seconds: float, out: Path
) -> dict:
    """Every part, ``out/step_profile.json`` rewritten after each: a run stopped at its time limit keeps the parts
    it finished (``unfinished`` names the rest)."""
    parts: dict[str, Callable[[], dict]] = {
        "eager": lambda: eager(device, shape, batch, steps),
        "operators": lambda: operators(device, shape, batch),
        "graph": lambda: graph(device, shape, batch, steps),
        "side_by_side": lambda: side_by_side(device, shape, batch, counts, seconds),
    }
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "shape": shape,
        "batch": batch,
        **common.provenance({"steps": steps, "processes": list(counts), "seconds": seconds}),
        "unfinished": list(parts),
    }
    for name, measure in parts.items():
        result[name] = measure()
        result["unfinished"].remove(name)
        common.write_json("step_profile", result, out)
    return result


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        _child(*argv[1:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.step_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for step_profile.json")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--processes", default="1,4,8", help="side-by-side process counts ('' for none)")
    parser.add_argument("--seconds", type=float, default=10.0, help="each side-by-side round's length")
    parser.add_argument("--tiny", action="store_true", help="a one-layer BERT instead of BERT-base (for tests)")
    args = parser.parse_args(argv)
    shape = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    counts = tuple(int(n) for n in args.processes.split(",") if n)
    result = profile_all(torch.device(args.device), shape if args.tiny else BERT_BASE, args.batch, args.steps, counts,
                         args.seconds, args.out)  # fmt: skip
    eager_figures, graphed = result["eager"], result["graph"]
    print(eager_figures["top_operators"])
    busy = eager_figures["device_busy_ms_per_step"]
    print(f"eager: {eager_figures['ms_per_step']:.1f} ms per step"
          + (f", the device busy {busy:.1f} ms of it" if busy is not None else ""))  # fmt: skip
    kinds = ", ".join(f"{kind} {ms:.1f}" for kind, ms in list(eager_figures["ms_per_step_by_kind"].items())[:6])
    print(f"ms per step by kind of work: {kinds}")
    counted = result["operators"]
    phases = ", ".join(f"{phase} {counted[phase]['all']}" for phase in ("forward", "backward", "update"))
    host_us = 1000 * eager_figures["ms_per_step"] / counted["total"]["all"]
    print(f"operators per step: {counted['total']['all']} ({phases}; {counted['total']['not_views']} not views), "
          f"{host_us:.1f} us of the step each")  # fmt: skip
    if graphed["measured"]:
        print(f"one CUDA graph: {graphed['ms_per_step']:.1f} ms per step")
    for count, figure in result["side_by_side"].items():
        ratio = figure["ratio_to_one"]
        against_one = f" ({ratio:.2f}x one process)" if ratio is not None else ""
        print(f"{count} side by side: {figure['steps_per_second']:.1f} steps/s in all{against_one}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
