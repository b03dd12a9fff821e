"""BLURB on one GPU: the whole protocol's GPU-minutes, projected from each dataset's runs measured whole.

``bench protocol`` measures a model's trip to the leaderboard through the whole platform
(PostgreSQL, Redis, the web app, real workers); a lent GPU machine has none of those, only the
engine. This benchmark times what a GPU worker's fine-tuning job runs, the engine's own
:func:`workers.engine.finetune.finetune`, in one process, on each BLURB dataset's whole training,
dev and test sets, with a BERT-base-sized model (``model``: a checkpoint directory; by default
BERT-base built from its configuration with BERT's uncased vocabulary, whose speed is the
architecture's whatever its weights).

**Measured**, for each dataset, two jobs of the engine:

* ``bs32``: one training of ``measured_epochs`` at batch 32 (Gu et al. 2021's grid has 16 and 32),
  then its dev and test predictions;
* ``bs16``: the same at batch 16 with two seeds, i.e. two trainings, so that the cost of a run
  beyond its steps (building the model from the weights read once, moving it to the GPU) is the
  difference between the two jobs' other work;
* each job's wall time, its training and prediction seconds (the engine's own figures), and the
  rest, its other work (reading and tokenising the data, reading the checkpoint, building models);
* once: a fresh interpreter importing the engine and starting CUDA, which every job pays.

One small untimed job runs first, so that the process's first device work is not charged to the
first dataset.

**Projected**, per dataset and in total: the dataset's protocol (:func:`biolm.protocols.plan_for`,
as the platform plans it: the six points of learning rate {1e-5, 3e-5, 5e-5} x batch {16, 32} at
the task type's epochs, then the chosen point's other seeds) from those rates. The chosen point's
batch size is known only after the grid has run, so the seeds are projected at batch 16, the slower
one: an upper bound on that part. ``max_train_examples`` cuts a training set (the first N
examples) when the GPU time does not allow it whole; its epoch time is then scaled by examples,
and the JSON says which datasets were cut. Scoring (the bootstrap of the honest ranks) runs on the
CPU worker beside the next dataset's training, so it is not GPU time.

Without a GPU the benchmark is skipped (``device=cpu`` with ``model=bert:tiny`` runs the same
code on a CPU for its own tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from bench import common
from workers.engine.cuda_graphs import cuda_graphs_requested

NAME = "blurb_gpu"
GOAL_MINUTES = 30
BLURB_DATASETS = ("bc5-chem", "bc5-disease", "ncbi-disease", "bc2gm", "jnlpba", "ebm-pico", "chemprot", "ddi",
                  "gad", "biosses", "hoc", "pubmedqa", "bioasq")  # fmt: skip
# The order measured in: one dataset of each task type first, so that a run cut short by its budget
# still has every formulation's rates (NER, relation extraction, similarity, document classification, QA).
MEASURE_ORDER = ("bc5-chem", "chemprot", "biosses", "hoc", "pubmedqa", "bioasq", "gad", "ddi", "ncbi-disease",
                 "bc5-disease", "bc2gm", "jnlpba", "ebm-pico")  # fmt: skip
NOT_TRAINABLE = {"ebm-pico": "EBM PICO's train.tsv is missing from the official data (see its README)"}
PROJECTED_SEED_BATCH = 16  # the slower of the grid's batch sizes: the seeds' part is an upper bound


@dataclass
class Config:
    datasets: tuple[str, ...] = MEASURE_ORDER  # BLURB's 13, one of each task type first
    model: str = ""  # a checkpoint directory, or NAME:preset (bert:tiny) to build one; empty: BERT-base
    device: str = "auto"  # cuda when there is one; the benchmark is skipped on a CPU unless this says cpu
    measured_epochs: int = 1
    max_train_examples: int = 0  # 0: every training set whole
    max_eval_examples: int = 0  # 0: dev and test whole
    budget_seconds: float = 0  # 0: no limit; else datasets not started within it are listed as not measured
    benchmark: str = "blurb"


# --- the model --------------------------------------------------------------------------------


def model_source(config: Config, work: Path) -> dict:
    """The engine's model argument: ``model=DIR`` or ``architecture=NAME:preset``."""
    if not config.model:
        return {"model": common.bert_checkpoint(work / "bert-base")}
    if ":" in config.model and not Path(config.model).exists():
        return {"architecture": config.model}
    return {"model": Path(config.model)}


# --- measuring ------------------------------------------------------------------------------------


def engine_job(slug: str, source: dict, config: Config, work: Path, batch_size: int, seeds: int) -> dict:
    """One fine-tuning job of the engine (``seeds`` trainings at ``batch_size``): its seconds and sizes."""
    from workers.engine.finetune import finetune

    cuts = {"max_train_examples": config.max_train_examples, "max_eval_examples": config.max_eval_examples}
    spec = _spec(slug, config, work / f"{slug}-bs{batch_size}", source, device=config.device,
                 epochs=config.measured_epochs, seeds=seeds, batch_size=batch_size, learning_rate=5e-5, fresh=True,
                 **{k: v for k, v in cuts.items() if v})  # fmt: skip
    start = time.perf_counter()
    results = finetune(spec, None)
    wall = time.perf_counter() - start
    training = results["efficiency"]["protocol_training_seconds"]
    prediction = sum(split["seconds"] for run in results["runs"] for split in run["inference"].values())
    return {
        "batch_size": batch_size,
        "trainings": results["efficiency"]["trainings"],
        "epochs": config.measured_epochs,
        "wall_seconds": wall,
        "training_seconds": training,
        "prediction_seconds": prediction,
        "other_seconds": wall - training - prediction,
        "steps": sum(run["train"]["steps"] for run in results["runs"]),
        "real_tokens": sum(run["train"]["real_tokens"] for run in results["runs"]),
        "sizes": results["data"]["sizes"],
        "peak_memory_bytes": results["efficiency"]["peak_memory_bytes"],
        "test_metric": results["reported"]["value"],
    }


def _spec(slug: str, config: Config, out: Path, source: dict, **settings):
    from workers.engine.runs import FinetuneSpec

    return FinetuneSpec.build(dataset=slug, out=out, benchmark=config.benchmark, load_entrypoints=False, **source,
                              **settings)  # fmt: skip


def full_protocol(slug: str, source: dict, config: Config) -> dict:
    """The dataset's full protocol (no overrides) as the platform plans it: its grid, seeds and folds."""
    from workers.engine.runs import job_plan, load_task

    with tempfile.TemporaryDirectory(prefix="bench-blurb-gpu-") as folder:
        spec = _spec(slug, config, Path(folder), source)
        _, contributions, task = load_task(spec)
        plan = job_plan(spec, contributions, task)
    return {
        "points": [
            {"learning_rate": hp.learning_rate, "batch_size": hp.batch_size, "epochs": hp.epochs} for hp in plan.points
        ],
        "seeds": plan.seeds,
        "cross_validation": plan.cross_validation,
    }


def process_start_seconds(device: str) -> float:
    """A fresh interpreter importing the engine and starting the device: what each worker's job pays first."""
    root = Path(__file__).resolve().parents[1]
    code = f"import torch, workers.engine.runs as f; torch.zeros(1, device=f.resolve_device({device!r}))"
    path = os.pathsep.join([str(root / "platform"), str(root), os.environ.get("PYTHONPATH", "")])
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, env={**os.environ, "PYTHONPATH": path})
    return time.perf_counter() - start


def warm_up(config: Config, source: dict, work: Path) -> None:
    """One small untimed job first: the process's first device work (kernel selection, the allocator's growth,
    the engine's imports) would otherwise be charged to the first dataset (the H200 run of 2026-11-28 measured
    BC5-chem's epoch at 2.5x BC5-disease's, the same sizes)."""
    first = next((slug for slug in config.datasets if slug not in NOT_TRAINABLE), None)
    if first is not None:
        warm = Config(**{**vars(config), "max_train_examples": 64, "max_eval_examples": 64})
        engine_job(first, source, warm, work / "warm-up", 32, seeds=1)


def measure_dataset(slug: str, source: dict, config: Config, work: Path) -> dict:
    bs32 = engine_job(slug, source, config, work, 32, seeds=1)
    bs16 = engine_job(slug, source, config, work, 16, seeds=2)
    return {"bs32": bs32, "bs16": bs16, "protocol": full_protocol(slug, source, config)}


# --- projecting -------------------------------------------------------------------------------------


def rates(measured: dict, whole: dict[str, int] | None = None) -> dict:
    """Seconds per epoch at each batch size, per prediction (both scaled to the whole splits where they were
    cut, by examples), per run beyond its steps, and per job."""
    bs32, bs16 = measured["bs32"], measured["bs16"]
    used = bs32["sizes"]
    whole = whole or used
    scale = whole["train"] / used["train"]
    evaluated = sum(used.get(split, 0) for split in ("dev", "test"))
    eval_scale = sum(whole.get(split, 0) for split in ("dev", "test")) / evaluated if evaluated else 1.0
    per_run = max(0.0, bs16["other_seconds"] - bs32["other_seconds"])  # bs16 ran one training more
    return {
        "epoch_seconds": {
            32: scale * bs32["training_seconds"] / (bs32["trainings"] * bs32["epochs"]),
            16: scale * bs16["training_seconds"] / (bs16["trainings"] * bs16["epochs"]),
        },
        "prediction_seconds": eval_scale
        * (bs32["prediction_seconds"] + bs16["prediction_seconds"])
        / (bs32["trainings"] + bs16["trainings"]),
        "run_other_seconds": per_run,
        "job_other_seconds": max(0.0, bs32["other_seconds"] - per_run),
        "train_scale": scale,
        "eval_scale": eval_scale,
    }


def project_dataset(measured: dict, process_start: float, whole: dict[str, int] | None = None) -> dict:
    """The dataset's full protocol in GPU-seconds, from its measured rates (projected, not measured)."""
    rate = rates(measured, whole)
    protocol = measured["protocol"]
    if protocol["cross_validation"]:
        raise ValueError("the projection covers train/dev/test protocols; this dataset runs on folds")

    def training(batch_size: int, epochs: int) -> float:
        epoch = rate["epoch_seconds"].get(batch_size)
        if epoch is None:  # a batch size not measured: scale the nearest by steps
            near = min(rate["epoch_seconds"], key=lambda b: abs(b - batch_size))
            epoch = rate["epoch_seconds"][near] * near / batch_size
        return epochs * epoch + rate["prediction_seconds"] + rate["run_other_seconds"]

    grid = sum(training(p["batch_size"], p["epochs"]) for p in protocol["points"])
    epochs = max(p["epochs"] for p in protocol["points"])
    seeds = (protocol["seeds"] - 1) * training(PROJECTED_SEED_BATCH, epochs)
    fixed = process_start + rate["job_other_seconds"]
    return {
        "seconds": fixed + grid + seeds,
        "grid_seconds": grid,
        "seeds_seconds": seeds,
        "fixed_seconds": fixed,
        "trainings": len(protocol["points"]) + protocol["seeds"] - 1,
        "rates": {**rate, "epoch_seconds": {str(k): v for k, v in rate["epoch_seconds"].items()}},
    }


def projection(figures: dict, process_start: float, whole: dict[str, dict[str, int]]) -> dict:
    projected = {slug: project_dataset(f, process_start, whole.get(slug)) for slug, f in figures.items()}
    minutes = sum(p["seconds"] for p in projected.values()) / 60
    return {
        "measured": False,
        "per_dataset": projected,
        "projected_minutes": minutes,
        "goal_minutes": GOAL_MINUTES,
        "met": minutes < GOAL_MINUTES,
        "seeds_projected_at_batch": PROJECTED_SEED_BATCH,
    }


# --- the benchmark ------------------------------------------------------------------------------------


def skip_reason(config: Config) -> str | None:
    if config.device == "auto" and not torch.cuda.is_available():
        return "no GPU: the whole-BLURB projection is measured on a GPU (device=cpu runs it here for tests)"
    for slug in config.datasets:
        if slug in NOT_TRAINABLE:
            continue
        absent = common.missing_data(common.dataset_directory(slug))
        if absent:
            return absent
    return None


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    reason = skip_reason(config)
    if reason:
        return common.skipped(NAME, reason, config, out_dir)
    device = "cuda" if config.device == "auto" else config.device
    config.device = device
    started = time.perf_counter()
    figures, not_measured = {}, dict(NOT_TRAINABLE)
    with tempfile.TemporaryDirectory(prefix="bench-blurb-gpu-") as folder:
        work = Path(folder)
        source = model_source(config, work)
        peak = common.cuda_matmul_peak(torch.bfloat16) if device.startswith("cuda") else None
        process_start = process_start_seconds(device)
        warm_up(config, source, work)
        for slug in config.datasets:
            if slug in not_measured:
                continue
            if config.budget_seconds and time.perf_counter() - started > config.budget_seconds:
                not_measured[slug] = f"not started: the run's budget of {config.budget_seconds:.0f} s was spent"
                continue
            figures[slug] = measure_dataset(slug, source, config, work)
            print(f"  {slug}: {_line(figures[slug])}", flush=True)
            common.write_partial(NAME, figures, config, out_dir)  # a run cut short keeps what it measured
        whole = _whole_sizes(figures, config)
    result = {
        "name": NAME,
        "device": torch.cuda.get_device_name(0) if device.startswith("cuda") else common.cpu_model(),
        "model": config.model or "BERT-base (random initialisation, BERT's uncased vocabulary)",
        "cuda_graphs": device.startswith("cuda") and cuda_graphs_requested(),  # BIOLM_CUDA_GRAPHS, as a worker's
        "process_start_seconds": process_start,
        "measured": figures,
        "not_measured": not_measured,
        "cut": {
            slug: {"measured": figures[slug]["bs32"]["sizes"], "whole": sizes}
            for slug, sizes in whole.items()
            if sizes != figures[slug]["bs32"]["sizes"]
        },
        "projection": projection(figures, process_start, whole),
        "matmul_peak": peak,
        "measured_seconds": time.perf_counter() - started,
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def _whole_sizes(figures: dict, config: Config) -> dict[str, dict[str, int]]:
    """Each cut dataset's whole split sizes (examples), read by its plugin's reader."""
    if not (config.max_train_examples or config.max_eval_examples):
        return {}
    from workers.engine.runs import data_directory, load_dataset_files, load_task

    sizes = {}
    for slug in figures:
        with tempfile.TemporaryDirectory(prefix="bench-blurb-gpu-") as folder:
            spec = _spec(slug, config, Path(folder), {"architecture": "bert:tiny"})
            _, _, task = load_task(spec)
        data = load_dataset_files(task.dataset, data_directory(task.dataset.adapter.default_path))
        sizes[slug] = {split: len(rows) for split, rows in data.splits.items()}
    return sizes


def _line(figure: dict) -> str:
    bs32, bs16 = figure["bs32"], figure["bs16"]
    return (
        f"train {bs32['sizes']['train']:,}: epoch at bs32 {bs32['training_seconds']:.1f} s, "
        f"at bs16 {bs16['training_seconds'] / bs16['trainings']:.1f} s; "
        f"prediction {bs32['prediction_seconds']:.1f} s; other {bs32['other_seconds']:.1f} s"
    )


def summary(result: dict) -> str:
    rows = []
    for slug, figure in result["measured"].items():
        projected = result["projection"]["per_dataset"][slug]
        rate = projected["rates"]
        rows.append([slug, figure["bs32"]["sizes"]["train"], rate["epoch_seconds"]["32"], rate["epoch_seconds"]["16"],
                     rate["prediction_seconds"], projected["trainings"], projected["seconds"] / 60])  # fmt: skip
    headers = ["dataset", "train", "epoch s bs32", "epoch s bs16", "predict s", "trainings", "projected min"]
    minutes = result["projection"]["projected_minutes"]
    lines = [
        common.table(headers, rows),
        f"  whole BLURB, projected: {minutes:.1f} GPU-minutes on {result['device']} "
        f"(goal under {GOAL_MINUTES}: {'met' if result['projection']['met'] else 'not met'}); "
        f"not measured: {', '.join(result['not_measured']) or 'none'}",
    ]
    return "\n".join(lines)
