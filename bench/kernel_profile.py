"""Where a training step's time goes, by kind of work: matmuls, attention, normalisation, dropout, the update.

An MFU figure says how far a step is from the matmul peak, not why. The H200 run of 2026-11-28 put
BERT-base pretraining at 25% MFU with no profile taken, and a 10-minute lease leaves no time for a
second run to take one. So the benchmarks that train on a GPU profile a few of their own steps
as they go (:class:`StepProfile`) and record, per step, the device's busy time and its split
into kinds of work. That split is what picks the next lever: fused elementwise kernels if
normalisation, dropout and the rest dominate, FlashAttention if attention does, larger matmuls
if the matmuls run far under the peak.

On a GPU the figures are the kernels' own device time. On a CPU they are the operators' self
time, so the same benchmark's tests exercise the same code.
"""

from __future__ import annotations

import re

import torch
from torch.profiler import ProfilerActivity, profile

# Matched in this order against lower-cased kernel (or operator) names; the first match wins.
KINDS = (
    ("attention", r"flash|fmha|attention|sdpa|_efficient|bmm"),
    ("matmul", r"gemm|cutlass|xmma|nvjet|cublas|aten::mm\b|aten::addmm|aten::matmul|aten::linear"),
    ("optimizer", r"adam|multi_tensor|foreach"),
    ("normalisation", r"layer_norm|layernorm"),
    ("dropout", r"dropout|bernoulli|philox|random"),
    ("softmax_and_loss", r"softmax|nll|cross_entropy|logsumexp"),
    ("copies", r"copy|cat\b|cat_|index|gather|scatter|fill|zero"),
)
OTHER = "elementwise_and_other"


def kind_of(name: str) -> str:
    """The kind of work a kernel or operator does, from its name (:data:`KINDS`; the rest is elementwise and other)."""
    lowered = name.lower()
    for kind, pattern in KINDS:
        if re.search(pattern, lowered):
            return kind
    return OTHER


def ms_per_step(events, device: torch.device, steps: int) -> dict[str, float]:
    """Each kernel's (on a GPU) or operator's (on a CPU, self time) ms per step, from a profiler's ``key_averages``."""
    on_device = device.type == "cuda"
    times: dict[str, float] = {}
    for event in events:
        if on_device and event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        microseconds = event.self_device_time_total if on_device else event.self_cpu_time_total
        if microseconds > 0:
            times[event.key] = times.get(event.key, 0.0) + microseconds / 1000 / steps
    return times


def by_kind(times: dict[str, float]) -> dict[str, float]:
    """:func:`ms_per_step`'s figures summed by :func:`kind_of`, largest first."""
    kinds: dict[str, float] = {}
    for name, ms in times.items():
        kinds[kind_of(name)] = kinds.get(kind_of(name), 0.0) + ms
    return dict(sorted(kinds.items(), key=lambda item: -item[1]))


class StepProfile:
    """A profiler started and stopped between steps (a loop's progress callback does both), read per step."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        self._profiler = profile(activities=activities)
        self.steps = 0

    def start(self) -> None:
        self._synchronize()
        self._profiler.start()

    def stop(self, steps: int) -> None:
        self._synchronize()
        self._profiler.stop()
        self.steps = steps

    def _synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def summary(self, top: int = 12) -> dict:
        """Busy ms per step, ms per step by kind of work, and the ``top`` kernels (or operators) by time."""
        if not self.steps:
            raise ValueError("the profile was never stopped")
        times = ms_per_step(self._profiler.key_averages(), self.device, self.steps)
        busy = sum(times.values())
        kinds = by_kind(times)
        ranked = sorted(times.items(), key=lambda item: -item[1])[:top]
        return {
            "measured_on": "device kernels" if self.device.type == "cuda" else "CPU operators (self time)",
            "profiled_steps": self.steps,
            "busy_ms_per_step": busy,
            "ms_per_step_by_kind": kinds,
            "share_by_kind": {kind: ms / busy for kind, ms in kinds.items()} if busy else {},
            "top": [{"name": name[:120], "kind": kind_of(name), "ms_per_step": ms} for name, ms in ranked],
        }
