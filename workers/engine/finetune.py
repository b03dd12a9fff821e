"""Fine-tune and evaluate one model on one dataset by the protocol, and write a results JSON.

The spec in, results out: no Django, no database. The Celery layer (later) maps a Job row
to a :class:`FinetuneSpec` and records the returned results; the CLI does the same from
the command line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

import biolm
from biolm.dataset_io import LoadedDataset, load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import DatasetSpec
from workers.engine import efficiency
from workers.engine.architectures import build_config, count_parameters, parse_architecture
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import Formulation, ModelSource, TaskOptions, formulation_for
from workers.engine.protocol import Summary, default_seeds, grid
from workers.engine.run_store import RunStore, checkpoint_identity
from workers.engine.tokenization import load_tokenizer, train_wordpiece
from workers.engine.training import Hyperparameters, ProgressCallback, predict, seed_everything, train

logger = logging.getLogger("biolm.engine")


@dataclass
class FinetuneSpec:
    """Everything a fine-tuning job needs; immutable once a job is queued."""

    dataset: str
    out: Path
    model_dir: Path | None = None
    architecture: str | None = None  # "bert:tiny", "bioformer:8l", ...
    data_dir: Path | None = None
    seeds: int | None = None
    first_seed: int = 42
    grid: str = "blurb"
    epochs: int | None = None
    learning_rate: float | None = None
    batch_size: int | None = None
    max_length: int = 512
    # Quick runs on the first N examples, as run_ner.py's max_train_samples / max_eval_samples.
    max_train_examples: int | None = None
    max_eval_examples: int | None = None  # dev and test each
    eval_batch_size: int = 64
    fresh: bool = False  # retrain even the runs an earlier invocation stored under out/runs
    device: str = "auto"
    precision: str = "auto"  # "bf16", "fp32" or "auto" (bf16 where the hardware has it)
    task: TaskOptions = field(default_factory=TaskOptions)
    load_entrypoints: bool = True

    def __post_init__(self) -> None:
        if (self.model_dir is None) == (self.architecture is None):
            raise ValueError("give exactly one of --model (a checkpoint directory) or --architecture NAME[:preset]")
        if self.precision not in ("auto", "bf16", "fp32"):
            raise ValueError(f"--precision must be auto, bf16 or fp32, not {self.precision!r}")
        if self.max_length < 8:
            raise ValueError("--max-length must be at least 8")
        for name in ("max_train_examples", "max_eval_examples"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")


@dataclass
class Prepared:
    spec: DatasetSpec
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
    manager = get_plugin_manager(load_entrypoints=spec.load_entrypoints)
    contributions = collect_contributions(manager)
    dataset = contributions.datasets.get(spec.dataset)
    if dataset is None:
        raise ValueError(f"unknown dataset {spec.dataset!r}; known: {', '.join(sorted(contributions.datasets))}")
    if dataset.adapter is None:
        raise ValueError(f"dataset {spec.dataset!r} has no adapter to read its files")
    directory = spec.data_dir or _default_directory(dataset)
    data = _first_examples(load_dataset_files(dataset, directory), spec)
    if "train" not in data.splits:
        raise ValueError(f"{directory}: dataset {spec.dataset!r} has no train split here, so it cannot be fine-tuned")
    labels = _label_space(dataset, data)
    if spec.model_dir is not None:
        tokenizer = load_tokenizer(spec.model_dir)
    else:
        vocab_size = int(build_config(*parse_architecture(spec.architecture)).vocab_size)
        tokenizer = train_wordpiece(_texts(data.splits["train"]), vocab_size)
        logger.info("trained a %d-entry WordPiece vocabulary on %s's training text", vocab_size, spec.dataset)
    source = ModelSource(spec.model_dir, spec.architecture, len(tokenizer))
    formulation = formulation_for(dataset, labels, tokenizer, spec.task, spec.max_length, source)
    features = {split: formulation.encode(rows) for split, rows in data.splits.items()}
    plugins = efficiency.plugin_versions(manager)
    return Prepared(dataset, data, labels, features, tokenizer, formulation, source, plugins)


def _first_examples(data: LoadedDataset, spec: FinetuneSpec) -> LoadedDataset:
    """The data cut to ``max_train_examples`` / ``max_eval_examples``, with a note saying so in the results."""
    limits = {"train": spec.max_train_examples, "dev": spec.max_eval_examples, "test": spec.max_eval_examples}
    cut = {
        split: limits[split] for split, rows in data.splits.items() if limits.get(split) and len(rows) > limits[split]
    }
    if not cut:
        return data
    splits = {split: rows[: cut.get(split, len(rows))] for split, rows in data.splits.items()}
    notes = [*data.notes, "only the first examples were used: " + ", ".join(f"{s} {n}" for s, n in cut.items())]
    return dataclasses.replace(data, splits=splits, notes=notes)


def _default_directory(dataset: DatasetSpec) -> Path:
    import os

    path = Path(dataset.adapter.default_path)
    if path.is_absolute():
        return path
    root = Path(os.environ.get("BIOLM_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
    return root / path


def _texts(rows: list[dict]):
    contexts: set[str] = set()
    for row in rows:
        if "tokens" in row:
            yield " ".join(row["tokens"])
        elif "question" in row:  # extractive QA: each note once, however many questions it has
            yield row["question"]
            if row["context"] not in contexts:
                contexts.add(row["context"])
                yield row["context"]
        else:
            yield row.get("text", "")
            if row.get("text_pair"):
                yield row["text_pair"]


def _label_space(dataset: DatasetSpec, data: LoadedDataset) -> LabelSpace:
    schema = dataset.adapter.schema
    if schema == "regression":
        return LabelSpace(("score",), "regression")
    names = tuple(dataset.labels) or tuple(data.label_set)
    if schema == "token-tagging" and "O" in names:
        names = ("O", *(n for n in names if n != "O"))  # so a word with no prediction defaults to O
    return LabelSpace(names, "multi" if dataset.adapter.multi_label else "single")


@dataclass
class RunResult:
    hyperparameters: dict
    seed: int
    metrics: dict[str, dict[str, float]]  # split -> metric -> value
    train: dict
    inference: dict
    predictions: dict[str, list] = field(default_factory=dict)


def run_once(
    spec: FinetuneSpec,
    prepared: Prepared,
    hp: Hyperparameters,
    seed: int,
    splits: tuple[str, ...],
    device: torch.device,
    dtype: torch.dtype | None,
    progress: ProgressCallback | None,
) -> RunResult:
    seed_everything(seed)  # the classifier head's initialisation is part of the seed's run
    formulation = prepared.formulation
    model = formulation.build_model(prepared.source)
    pad_id = prepared.tokenizer.pad_token_id
    stats = train(
        model,
        prepared.features["train"],
        hp,
        seed,
        pad_id,
        device,
        dtype,
        progress,
        formulation.collate,
        formulation.computed_tokens,
    )
    metrics, predictions, inference = {}, {}, {}
    for split in splits:
        if split not in prepared.features:
            continue
        features = prepared.features[split]
        logits, seconds = predict(model, features, spec.eval_batch_size, pad_id, device, dtype, formulation.collate)
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


def finetune(spec: FinetuneSpec, progress_factory: Callable[[str], ProgressCallback] | None = None) -> dict:
    """Grid on dev, then seeds on test at the chosen point; returns (and writes) the results."""
    device = resolve_device(spec.device)
    dtype = resolve_dtype(spec.precision, device)
    prepared = prepare(spec)
    metric = prepared.spec.metric
    points = grid(spec.grid, prepared.spec.task_type, spec.epochs)
    if spec.learning_rate or spec.batch_size:
        points = [
            Hyperparameters(spec.learning_rate or p.learning_rate, spec.batch_size or p.batch_size, p.epochs)
            for p in points[:1]
        ]
    seeds = [spec.first_seed + i for i in range(spec.seeds or default_seeds(spec.dataset))]
    efficiency.reset_peak_memory(device)

    def progress(label: str) -> ProgressCallback | None:
        return progress_factory(label) if progress_factory else None

    store = RunStore(spec.out / "runs", run_identity(spec, prepared, device, dtype))

    def run(hp: Hyperparameters, seed: int, label: str) -> RunResult:
        stored = None if spec.fresh else store.load(hp, seed)
        if stored is not None:
            logger.info("%s: reusing the finished run stored under %s", label, store.directory)
            return RunResult(**stored)
        result = run_once(spec, prepared, hp, seed, ("dev", "test"), device, dtype, progress(label))
        store.save(hp, seed, asdict(result))
        return result

    search = [run(hp, seeds[0], f"dev {hp.key()}") for hp in points]
    with_dev = [r for r in search if "dev" in r.metrics]
    best = max(with_dev, key=lambda r: _finite(r.metrics["dev"][metric])) if with_dev else search[0]
    chosen = Hyperparameters(**best.hyperparameters)
    runs = [best]
    runs += [run(chosen, seed, f"seed {seed}") for seed in seeds[1:]]

    test_values = [r.metrics["test"][metric] for r in runs if r.metrics.get("test", {}).get(metric) is not None]
    model_for_count = prepared.formulation.build_model(prepared.source)
    results = {
        "dataset": spec.dataset,
        "metric": metric,
        "model": str(spec.model_dir) if spec.model_dir else spec.architecture,
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
        "efficiency": efficiency.summary(runs, count_parameters(model_for_count), device),
        "provenance": {
            **efficiency.provenance(device, dtype, seeds, prepared.plugins),
            "reused_runs": store.reused,
        },
    }
    spec.out.mkdir(parents=True, exist_ok=True)
    (spec.out / "results.json").write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    return results


def run_identity(spec: FinetuneSpec, prepared: Prepared, device: torch.device, dtype: torch.dtype | None) -> dict:
    """Everything besides hyperparameters and seed that decides a run's outcome (see :mod:`run_store`)."""
    vocabulary = json.dumps(sorted(prepared.tokenizer.get_vocab().items()))
    return {
        "dataset": spec.dataset,
        "data_fingerprint": prepared.data.fingerprint,
        "data_sizes": prepared.data.sizes,
        "model_dir": str(spec.model_dir) if spec.model_dir else None,
        "checkpoint_files": checkpoint_identity(spec.model_dir),
        "architecture": spec.architecture,
        "vocabulary": hashlib.sha256(vocabulary.encode("utf-8")).hexdigest(),
        "formulation": prepared.formulation.describe(),
        "task_options": asdict(spec.task),
        "max_length": spec.max_length,
        "eval_batch_size": spec.eval_batch_size,
        "dtype": str(dtype),
        "device": device.type,
        "code": {"biolm": biolm.__version__, "git_commit": efficiency.git_commit()},
    }


def _finite(value: float) -> float:
    return value if isinstance(value, float | int) and math.isfinite(value) else float("-inf")
