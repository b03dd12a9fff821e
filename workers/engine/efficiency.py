"""Efficiency figures and provenance reported with every result (the speed comparison of Fang et al. 2023).

Throughput counts real (non-padding) tokens, so a faster padding strategy cannot inflate it.
Peak memory is the device allocator's peak on GPUs and the process's resident peak on CPUs.
"""

from __future__ import annotations

import importlib.metadata
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

import torch

import biolm
from biolm.plugin_identity import PluginIdentity

ROOT = Path(__file__).resolve().parents[2]


def cpu_has_native_bf16() -> bool:
    """True on CPUs with AMX or AVX512-BF16, where bf16 matmuls are faster than fp32."""
    checks = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux reports KiB


def summary(runs: list, parameters: int, peak_memory: int, trained: list | None = None) -> dict:
    """Figures of the reported ``runs``; ``trained`` (every run, the search's too) gives the protocol's cost.

    ``peak_memory``: :func:`peak_memory_bytes` of the process that trained them (of a sliced job, the largest).

    A run's seconds include its in-loop evaluations, so its tokens per second count what checkpoint
    selection costs; ``evaluation_share`` says how much of the training time that was.
    """
    train_rates = [r.train["tokens_per_second"] for r in runs]
    test = [r.inference["test"] for r in runs if "test" in r.inference]
    trained = trained or runs
    seconds = sum(r.train["seconds"] for r in trained)
    evaluating = sum(r.train.get("evaluation_seconds", 0.0) for r in trained)
    return {
        "protocol_training_seconds": seconds,
        "in_loop_evaluation_seconds": evaluating,
        "evaluation_share": evaluating / seconds if seconds else 0.0,
        "trainings": len(trained),
        "parameters": parameters,
        "finetune_tokens_per_second": statistics.median(train_rates),
        "inference_tokens_per_second": statistics.median(t["tokens_per_second"] for t in test) if test else None,
        "inference_latency_ms_per_example": statistics.median(t["latency_ms_per_example"] for t in test)
        if test
        else None,
        "padding_overhead": statistics.median(r.train["padded_tokens"] / r.train["real_tokens"] - 1 for r in runs),
        "peak_memory_bytes": peak_memory,
    }


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def plugin_versions(manager) -> dict[str, str]:
    """Each registered plugin's name and version: its distribution's for installed plugins, biolm's for built-ins.

    A result depends on the adapter that read the data and the architecture that built the model,
    so a plugin upgrade must be visible in the provenance. Read from the manager's own record of
    where each plugin came from (pluggy's distinfo is only filled by its own entry-point loader).
    """
    described = {
        "builtin": lambda info: f"built-in (biolm {biolm.__version__})",
        "entrypoint": lambda info: (
            PluginIdentity(info.name, info.distribution, info.version).release if info.distribution else "installed"
        ),
        "extra": lambda info: "registered in this process",
    }
    return {info.name: described[info.source](info) for info in sorted(manager.infos, key=lambda i: i.name)}


def provenance(
    device: torch.device, dtype: torch.dtype | None, seeds: list[int], plugins: dict[str, str] | None = None
) -> dict:
    return {
        "versions": {
            "biolm": biolm.__version__,
            **{name: _version(name) for name in ("torch", "transformers", "datasets", "tokenizers", "pluggy")},
        },
        "plugins": plugins or {},
        "python": sys.version.split()[0],
        "git_commit": git_commit(),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "threads": torch.get_num_threads(),
        "dtype": str(dtype or torch.float32).replace("torch.", ""),
        "seeds": seeds,
    }
