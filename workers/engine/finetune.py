"""Fine-tune and evaluate one model on one dataset by the protocol, and write a results JSON.

The spec in, results out: no Django, no database. The Celery layer (later) sends a
:class:`~workers.engine.spec.FinetuneSpec` as JSON and records the returned results; the CLI
builds the same spec from the command line. The dataset's task type (a plugin contribution)
names the formulation, the protocol defaults and the metrics.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

import biolm
from biolm.dataset_io import LoadedDataset, load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine import efficiency, preflight
from workers.engine.architectures import build_config, count_parameters, parse_architecture
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import Formulation, ModelSource, formulation_for
from workers.engine.protocol import Summary, grid
from workers.engine.run_store import RunStore, checkpoint_identity
from workers.engine.spec import FinetuneSpec
from workers.engine.task import Task
from workers.engine.tokenization import load_tokenizer, train_wordpiece
from workers.engine.training import (
    Hyperparameters,
    ProgressCallback,
    TrainingContext,
    predict,
    seed_everything,
    train,
)

logger = logging.getLogger("biolm.engine")

__all__ = ["FinetuneSpec", "Prepared", "RunResult", "finetune", "prepare", "run_once"]


@dataclass
class Prepared:
    task: Task
    data: LoadedDataset
    labels: LabelSpace
    features: dict[str, list]
    tokenizer: object
    formulation: Formulation
    source: ModelSource
    plugins: dict[str, str] = field(default_factory=dict)  # plugin name -> version, for the provenance


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def resolve_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """bf16 autocast where the hardware runs it natively (AMX/AVX512-BF16 CPUs, Ampere+ GPUs)."""
    if precision == "fp32":
        return None
    if precision == "bf16":
        return torch.bfloat16
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    return torch.bfloat16 if efficiency.cpu_has_native_bf16() else None


def prepare(spec: FinetuneSpec) -> Prepared:
    preflight.check_output_directory(spec.protocol.out)
    if spec.model.model is not None:
        preflight.check_checkpoint(spec.model.model)
    manager = get_plugin_manager(load_entrypoints=spec.load_entrypoints)
    contributions = collect_contributions(manager)
    task = Task.of(contributions, spec.data.dataset)
    dataset = task.dataset
    if dataset.adapter is None:
        raise ValueError(f"dataset {dataset.slug!r} has no adapter to read its files")
    directory = spec.data.data_dir or _default_directory(dataset.adapter.default_path)
    data = _first_examples(load_dataset_files(dataset, directory), spec)
    if "train" not in data.splits:
        raise ValueError(f"{directory}: dataset {dataset.slug!r} has no train split here, so it cannot be fine-tuned")
    labels = _label_space(task, data)
    if spec.model.model is not None:
        tokenizer = load_tokenizer(spec.model.model)
    else:
        vocab_size = int(build_config(*parse_architecture(spec.model.architecture)).vocab_size)
        tokenizer = train_wordpiece(task.schema.texts(data.splits["train"]), vocab_size)
        logger.info("trained a %d-entry WordPiece vocabulary on %s's training text", vocab_size, dataset.slug)
    source = ModelSource(spec.model.model, spec.model.architecture, len(tokenizer))
    formulation = formulation_for(task, labels, tokenizer, spec.task, spec.data.max_length, source)
    features = {split: formulation.encode(rows) for split, rows in data.splits.items()}
    plugins = efficiency.plugin_versions(manager)
    return Prepared(task, data, labels, features, tokenizer, formulation, source, plugins)


def _first_examples(data: LoadedDataset, spec: FinetuneSpec) -> LoadedDataset:
    """The data cut to ``max_train_examples`` / ``max_eval_examples``, with a note saying so in the results."""
    limits = {
        "train": spec.data.max_train_examples,
        "dev": spec.data.max_eval_examples,
        "test": spec.data.max_eval_examples,
    }
    cut = {
        split: limits[split] for split, rows in data.splits.items() if limits.get(split) and len(rows) > limits[split]
    }
    if not cut:
        return data
    splits = {split: rows[: cut.get(split, len(rows))] for split, rows in data.splits.items()}
    notes = [*data.notes, "only the first examples were used: " + ", ".join(f"{s} {n}" for s, n in cut.items())]
    return dataclasses.replace(data, splits=splits, notes=notes)


def _default_directory(default_path: str) -> Path:
    path = Path(default_path)
    if path.is_absolute():
        return path
    root = Path(os.environ.get("BIOLM_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
    return root / path


def _label_space(task: Task, data: LoadedDataset) -> LabelSpace:
    if task.task_type.schema == "regression":
        return LabelSpace(("score",), "regression")
    names = tuple(task.dataset.labels) or tuple(data.label_set)
    if task.task_type.schema == "token-tagging" and "O" in names:
        names = ("O", *(n for n in names if n != "O"))  # so a word with no prediction defaults to O
    return LabelSpace(names, "multi" if task.dataset.adapter.multi_label else "single")


@dataclass
class RunResult:
    hyperparameters: dict
    seed: int
    metrics: dict[str, dict[str, float]]  # split -> metric -> value
    train: dict
    inference: dict
    predictions: dict[str, list] = field(default_factory=dict)


def run_once(
    prepared: Prepared,
    hp: Hyperparameters,
    seed: int,
    splits: tuple[str, ...],
    context: TrainingContext,
    progress: ProgressCallback | None = None,
) -> RunResult:
    seed_everything(seed)  # the classifier head's initialisation is part of the seed's run
    formulation = prepared.formulation
    model = formulation.build_model(prepared.source)
    stats = train(model, prepared.features["train"], hp, seed, context, progress)
    metrics, predictions, inference = {}, {}, {}
    for split in splits:
        if split not in prepared.features:
            continue
        features = prepared.features[split]
        logits, seconds = predict(model, features, context)
        rows = prepared.data.splits[split]
        predicted = formulation.decode(features, logits, rows, model)
        metrics[split] = formulation.score(rows, predicted, logits)
        predictions[split] = predicted
        tokens = sum(len(f) for f in features)
        inference[split] = {
            "seconds": seconds,
            "tokens_per_second": tokens / seconds if seconds else None,
            "latency_ms_per_example": 1000 * seconds / len(rows),
        }
    return RunResult(
        hyperparameters=asdict(hp),
        seed=seed,
        metrics=metrics,
        train={
            "steps": stats.steps,
            "seconds": stats.seconds,
            "real_tokens": stats.real_tokens,
            "padded_tokens": stats.padded_tokens,
            "tokens_per_second": stats.tokens_per_second,
            "final_loss": stats.final_loss,
        },
        inference=inference,
        predictions=predictions,
    )


def parameter_count(formulation: Formulation, source: ModelSource) -> int:
    """Parameters of the model the formulation trains, head included, counted on the meta device.

    Tensors there have shapes and no storage, so this costs neither memory nor a second real build.
    """
    with torch.device("meta"):
        return count_parameters(formulation.build_model(source))


def finetune(spec: FinetuneSpec, progress_factory: Callable[[str], ProgressCallback] | None = None) -> dict:
    """Grid on dev, then seeds on test at the chosen point; returns (and writes) the results."""
    protocol = spec.protocol
    device = resolve_device(protocol.device)
    dtype = resolve_dtype(protocol.precision, device)
    prepared = prepare(spec)
    task = prepared.task
    metric = task.dataset.metric
    points = grid(protocol.grid, protocol.epochs or task.epochs)
    if protocol.learning_rate or protocol.batch_size:
        points = [
            Hyperparameters(protocol.learning_rate or p.learning_rate, protocol.batch_size or p.batch_size, p.epochs)
            for p in points[:1]
        ]
    seeds = [protocol.first_seed + i for i in range(protocol.seeds or task.seeds)]
    efficiency.reset_peak_memory(device)
    context = TrainingContext.for_formulation(prepared.formulation, device, dtype, protocol.eval_batch_size)

    def progress(label: str) -> ProgressCallback | None:
        return progress_factory(label) if progress_factory else None

    store = RunStore(protocol.out / "runs", run_identity(spec, prepared, device, dtype))

    def run(hp: Hyperparameters, seed: int, label: str) -> RunResult:
        stored = None if protocol.fresh else store.load(hp, seed)
        if stored is not None:
            logger.info("%s: reusing the finished run stored under %s", label, store.directory)
            return RunResult(**stored)
        result = run_once(prepared, hp, seed, ("dev", "test"), context, progress(label))
        store.save(hp, seed, asdict(result))
        return result

    search = [run(hp, seeds[0], f"dev {hp.key()}") for hp in points]
    with_dev = [r for r in search if "dev" in r.metrics]
    best = max(with_dev, key=lambda r: _finite(r.metrics["dev"][metric])) if with_dev else search[0]
    chosen = Hyperparameters(**best.hyperparameters)
    runs = [best]
    runs += [run(chosen, seed, f"seed {seed}") for seed in seeds[1:]]

    test_values = [r.metrics["test"][metric] for r in runs if r.metrics.get("test", {}).get(metric) is not None]
    results = {
        "dataset": task.dataset.slug,
        "metric": metric,
        "task_type": task.task_type.slug,
        "model": spec.model.name,
        "spec": spec.to_dict(),
        "formulation": prepared.formulation.describe(),
        "chosen_hyperparameters": asdict(chosen),
        "selection": [{"hyperparameters": r.hyperparameters, "dev": r.metrics.get("dev", {})} for r in search],
        "test": asdict(Summary.of(test_values)) if test_values else None,
        "runs": [
            {
                "seed": r.seed,
                "hyperparameters": r.hyperparameters,
                "metrics": r.metrics,
                "train": r.train,
                "inference": r.inference,
            }
            for r in runs
        ],
        "predictions": {str(r.seed): r.predictions.get("test") for r in runs},
        "data": {"fingerprint": prepared.data.fingerprint, "sizes": prepared.data.sizes, "notes": prepared.data.notes},
        "efficiency": efficiency.summary(runs, parameter_count(prepared.formulation, prepared.source), device),
        "provenance": {
            **efficiency.provenance(device, dtype, seeds, prepared.plugins),
            "reused_runs": store.reused,
        },
    }
    protocol.out.mkdir(parents=True, exist_ok=True)
    (protocol.out / "results.json").write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    return results


def run_identity(spec: FinetuneSpec, prepared: Prepared, device: torch.device, dtype: torch.dtype | None) -> dict:
    """Everything besides hyperparameters and seed that decides a run's outcome (see :mod:`run_store`)."""
    vocabulary = json.dumps(sorted(prepared.tokenizer.get_vocab().items()))
    return {
        "dataset": spec.data.dataset,
        "data_fingerprint": prepared.data.fingerprint,
        "data_sizes": prepared.data.sizes,
        "model_dir": str(spec.model.model) if spec.model.model else None,
        "checkpoint_files": checkpoint_identity(spec.model.model),
        "architecture": spec.model.architecture,
        "vocabulary": hashlib.sha256(vocabulary.encode("utf-8")).hexdigest(),
        "formulation": prepared.formulation.describe(),
        "task_options": asdict(spec.task),
        "max_length": spec.data.max_length,
        "eval_batch_size": spec.protocol.eval_batch_size,
        "dtype": str(dtype),
        "device": device.type,
        "code": {"biolm": biolm.__version__, "git_commit": efficiency.git_commit()},
    }


def _finite(value: float) -> float:
    return value if isinstance(value, float | int) and math.isfinite(value) else float("-inf")
