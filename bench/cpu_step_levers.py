"""What the levers left on a CPU fine-tuning step are worth (``python -m bench.cpu_step_levers --out DIR``).

Issue 31's CPU goal is the engine at 2.0x the tuned Hugging Face Trainer; it stands at 1.4-1.6x.
This tool measures, on the engine's own step (padding-free loss, the CPU dropout and attention
kernels, bf16 autocast, fused AdamW) and on synthetic batches of 10-60-token sentences, the
figures that say where the rest of the time goes and what each remaining lever would buy:

* ``matmuls``: GFLOP/s of each matmul shape the step runs (a feed-forward product, its two
  gradients, the fused Q/K/V product) against a 1,024-cube matmul: whether the matmuls are
  already at the machine's peak;
* ``phases``: ms per step in the forward, the backward and the update, and the step's model
  FLOPs at the cube's rate, which is what the step would take if only its matmuls cost time;
* ``profile``: ``torch.profiler``'s CPU self time per step by kind of work (:mod:`bench.kernel_profile`:
  matmuls, elementwise, copies, dropout, attention, softmax and loss, optimizer, normalisation) and
  the operators that take the most of it: what is left once the matmuls run at the peak;
* ``variants``: ms per step and minor page faults per step of the step as it is (``base``), with
  the word embeddings frozen (what their dense gradient and update cost), and with large
  allocations served from the heap instead of fresh mappings (``heap``, glibc's ``mallopt``; what
  the page faults cost). The variants alternate in one process, ``rounds`` times, and each
  figure is the median: on a shared machine, ratios within a run are what hold.

``--compile`` adds ``torch.compile`` of the loss (dynamic shapes): its compile seconds and ms per step.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import resource
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch

from bench.step_profile import EngineStep, synthetic_batch, tagger

MINILM = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536}
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's mallopt parameters
VARIANTS = ("base", "frozen_word_embeddings", "heap")


def _rate(work, flops: float, repeats: int = 10) -> float:
    for _ in range(2):
        work()
    start = time.perf_counter()
    for _ in range(repeats):
        work()
    return flops * repeats / (time.perf_counter() - start) / 1e9


def matmuls(shape: dict, tokens: int) -> dict:
    """GFLOP/s of the step's matmul shapes in bf16, and of a 1,024-cube for comparison."""
    bf16, hidden, inner = torch.bfloat16, shape["hidden_size"], shape["intermediate_size"]
    x, grad = torch.randn(tokens, hidden, dtype=bf16), torch.randn(tokens, inner, dtype=bf16)
    w_in, qkv = torch.randn(inner, hidden, dtype=bf16), torch.randn(3 * hidden, hidden, dtype=bf16)
    cube = torch.randn(1024, 1024, dtype=bf16)
    product = 2 * tokens * hidden * inner
    return {
        "cube_1024": _rate(lambda: cube @ cube, 2 * 1024**3),
        "feed_forward": _rate(lambda: torch.nn.functional.linear(x, w_in), product),
        "input_gradient": _rate(lambda: grad @ w_in, product),
        "weight_gradient": _rate(lambda: grad.t() @ x, product),
        "qkv": _rate(lambda: torch.nn.functional.linear(x, qkv), 2 * tokens * hidden * 3 * hidden),
    }


class Step:
    """The engine's training step (:class:`EngineStep`, with fused AdamW as in the engine), timed by phase."""

    def __init__(self, shape: dict, compiled: bool = False) -> None:
        cpu = torch.device("cpu")
        self.engine_step = EngineStep(tagger(cpu, shape), cpu, fused=True, compile_loss=compiled)
        self.model = self.engine_step.model
        self.seconds = {"forward": 0.0, "backward": 0.0, "update": 0.0}
        self._phase, self._since = "forward", 0.0

    def _enter(self, phase: str) -> None:
        now = time.perf_counter()
        if self._since:
            self.seconds[self._phase] += now - self._since
        self._phase, self._since = phase, now

    def __call__(self, batch: dict[str, torch.Tensor]) -> None:
        self._since = 0.0
        self.engine_step(batch, phase=self._enter)
        self._enter("forward")  # closes the update


def _allocations(heap: bool) -> None:
    libc = ctypes.CDLL("libc.so.6")
    if heap:
        libc.mallopt(M_MMAP_MAX, 0)
        libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)
    else:  # glibc's defaults, and the heap given back
        libc.mallopt(M_MMAP_MAX, 65536)
        libc.mallopt(M_TRIM_THRESHOLD, 128 * 1024)
        libc.malloc_trim(0)


@contextlib.contextmanager
def warm_step(shape: dict, batch: int, steps: int) -> Iterator[tuple[Step, list[dict[str, torch.Tensor]]]]:
    """A seeded step and ``steps`` synthetic batches, under the engine's CPU kernels, after three warm-up steps.

    Every measurement starts from the same state, so their figures describe the same step.
    """
    from workers.engine.cpu_kernels import cpu_training_kernels

    torch.manual_seed(0)
    step = Step(shape)
    batches = [synthetic_batch(batch, torch.device("cpu")) for _ in range(steps)]
    with cpu_training_kernels(step.model, torch.device("cpu")):
        for each in batches[:3]:
            step(each)
        yield step, batches


def profile(shape: dict, batch: int, steps: int) -> dict:
    """The step's CPU self time by kind of work, from ``torch.profiler`` over ``steps`` steps after a warm-up."""
    from bench.kernel_profile import StepProfile

    profiler = StepProfile(torch.device("cpu"))
    with warm_step(shape, batch, steps) as (step, batches):
        profiler.start()
        for each in batches:
            step(each)
        profiler.stop(steps)
    return profiler.summary(top=8)


def variants(shape: dict, batch: int, steps: int, rounds: int) -> dict:
    """Median ms and minor faults per step of each variant, alternating in one process."""
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    faults: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with warm_step(shape, batch, steps) as (step, batches):
        words = step.model.bert.embeddings.word_embeddings.weight
        for _ in range(rounds):
            for name in VARIANTS:
                words.requires_grad_(name != "frozen_word_embeddings")
                _allocations(heap=name == "heap")
                step(batches[0])
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                start = time.perf_counter()
                for each in batches:
                    step(each)
                times[name].append(1000 * (time.perf_counter() - start) / steps)
                faults[name].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / steps)
        words.requires_grad_(True)
        _allocations(heap=False)
    base = statistics.median(times["base"])
    return {
        name: {
            "ms_per_step": statistics.median(times[name]),
            "faults_per_step": statistics.median(faults[name]),
            "ratio_to_base": statistics.median(times[name]) / base,
            "rounds_ms": times[name],
        }
        for name in VARIANTS
    }


def phases(shape: dict, batch: int, steps: int, cube_gflops: float) -> dict:
    """ms per step by phase, against the model FLOPs' time at the cube's rate."""
    with warm_step(shape, batch, steps) as (step, batches):
        step.seconds = dict.fromkeys(step.seconds, 0.0)
        for each in batches:
            step(each)
    tokens = sum(int(b["attention_mask"].sum()) for b in batches) / steps
    layer = 4 * shape["hidden_size"] ** 2 + 2 * shape["hidden_size"] * shape["intermediate_size"]
    flops = 6 * layer * shape["num_hidden_layers"] * tokens
    return {
        **{name: 1000 * seconds / steps for name, seconds in step.seconds.items()},
        "real_tokens_per_step": tokens,
        "matmul_only_ms": 1000 * flops / (cube_gflops * 1e9),
    }


def compiled(shape: dict, batch: int, steps: int) -> dict:
    """``torch.compile`` of the padding-free loss: compile seconds (the first steps) and ms per step after."""
    from workers.engine.cpu_kernels import cpu_training_kernels

    torch.manual_seed(0)
    results = {}
    for name, compile_it in (("eager", False), ("compiled", True)):
        step = Step(shape, compiled=compile_it)
        batches = [synthetic_batch(batch, torch.device("cpu")) for _ in range(steps)]
        with cpu_training_kernels(step.model, torch.device("cpu")):
            start = time.perf_counter()
            for each in batches[:3]:
                step(each)
            warm = time.perf_counter() - start
            start = time.perf_counter()
            for each in batches:
                step(each)
        results[name] = {"first_three_steps_s": warm, "ms_per_step": 1000 * (time.perf_counter() - start) / steps}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_step_levers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for cpu_step_levers.json")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--compile", action="store_true", help="also time torch.compile (about a minute)")
    parser.add_argument("--tiny", action="store_true", help="a one-layer BERT instead of MiniLM-L6 (for tests)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    shape = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    shape = shape if args.tiny else MINILM
    rates = matmuls(shape, tokens=args.batch * 35)
    result = {
        "shape": shape,
        "batch": args.batch,
        "matmul_gflops": rates,
        "phases_ms": phases(shape, args.batch, args.steps, rates["cube_1024"]),
        "profile": profile(shape, args.batch, args.steps),
        "variants": variants(shape, args.batch, args.steps, args.rounds),
    }
    if args.compile:
        result["torch_compile"] = compiled(shape, args.batch, args.steps)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cpu_step_levers.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("matmul GFLOP/s: " + ", ".join(f"{name} {value:.0f}" for name, value in rates.items()))
    times = result["phases_ms"]
    print(f"ms per step: forward {times['forward']:.1f}, backward {times['backward']:.1f}, "
          f"update {times['update']:.1f}; its matmuls alone at the cube's rate "
          f"{times['matmul_only_ms']:.1f}")  # fmt: skip
    shares = result["profile"]["share_by_kind"]
    print("CPU self time by kind: " + ", ".join(f"{kind} {share:.0%}" for kind, share in shares.items()))
    for name, figure in result["variants"].items():
        print(f"{name}: {figure['ms_per_step']:.1f} ms per step ({figure['ratio_to_base']:.3f}x base), "
              f"{figure['faults_per_step']:.0f} minor faults per step")  # fmt: skip
    for name, figure in result.get("torch_compile", {}).items():
        first = figure["first_three_steps_s"]
        print(f"{name}: first three steps {first:.1f} s, then {figure['ms_per_step']:.1f} ms per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
