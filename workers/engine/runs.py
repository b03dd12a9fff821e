"""One fine-tuning run and what it is built from: the job's data, tokenizer and formulation prepared once,
each run trained and scored, finished runs kept for the next invocation (:class:`Runner`).

The protocol's order of runs (grid, selection, seeds or folds) is :mod:`workers.engine.protocol`'s;
:func:`workers.engine.finetune.finetune` runs a job by it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import biolm
from biolm import contract
from biolm.cross_validation import load_fold
from biolm.dataset_io import LoadedDataset, load_canonical_files, load_dataset_files
from biolm.plugins import Contributions, collect_contributions, get_plugin_manager
from biolm.protocols import Hyperparameters, Plan, plan_for, protocol_named
from workers.engine import efficiency, preflight
from workers.engine.architectures import build_config, count_parameters, parse_architecture
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import Formulation, ModelSource, formulation_for
from workers.engine.formulations.base import PristineWeights
from workers.engine.run_settings import FinetuneSpec
from workers.engine.run_store import RunStore, checkpoint_identity
from workers.engine.task import Task
from workers.engine.tokenization import load_tokenizer, train_wordpiece
from workers.engine.training import ProgressCallback, TrainingContext, predict, seed_everything, train

logger = logging.getLogger("biolm.engine")

__all__ = [
    "FinetuneSpec",
    "Prepared",
    "RunResult",
    "first_examples",
    "label_space",
    "load_task",
    "prepare",
    "run_once",
]


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
    test_gold_withheld: bool = False


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


def load_task(spec: FinetuneSpec) -> tuple[Any, Contributions, Task]:
    """The plugin manager, the contributions and the task of ``spec``'s dataset."""
    manager = get_plugin_manager(load_entrypoints=spec.load_entrypoints, extra_plugins=spec.extra_plugins)
    contributions = collect_contributions(manager)
    task = Task.of(contributions, spec.dataset)
    if task.dataset.adapter is None:
        raise ValueError(f"dataset {task.dataset.slug!r} has no adapter to read its files")
    return manager, contributions, task


def check_code(spec: FinetuneSpec) -> None:
    """Refuse to run other code than the job pins: a plugin of another version or content is not it."""
    contract.check(spec.job.code).require()


def prepare(spec: FinetuneSpec, *, fold: Path | None = None, weights: PristineWeights | None = None) -> Prepared:
    """Data, tokenizer, formulation and features for ``spec``; ``fold``: one cross-validation fold's directory.

    ``weights``: the job's checkpoint weights held in memory, so that every run's model is built
    from them rather than read from disk again (:class:`PristineWeights`). Refused, it leaves no
    ``--out`` directory that it created (:func:`preflight.output_directory`).
    """
    with preflight.output_directory(spec.out):
        return _prepare(spec, fold, weights)


def _prepare(spec: FinetuneSpec, fold: Path | None, weights: PristineWeights | None = None) -> Prepared:
    if spec.model.model is not None:
        preflight.check_checkpoint(spec.model.model)
    manager, _, task = load_task(spec)
    dataset = task.dataset
    if fold is not None:
        directory = fold
        data = first_examples(load_fold(dataset, fold, canonical=spec.data.data_format == "canonical"), spec)
    else:
        directory = spec.data.data_dir or data_directory(dataset.adapter.default_path)
        load = load_canonical_files if spec.data.data_format == "canonical" else load_dataset_files
        data = first_examples(load(dataset, directory), spec)
    if "train" not in data.splits:
        raise ValueError(f"{directory}: dataset {dataset.slug!r} has no train split here, so it cannot be fine-tuned")
    labels = label_space(task, data)
    if spec.model.model is not None:
        tokenizer = load_tokenizer(spec.model.model)
    else:
        vocab_size = int(build_config(*parse_architecture(spec.model.architecture)).vocab_size)
        tokenizer = train_wordpiece(task.schema.texts(data.splits["train"]), vocab_size)
        logger.info("trained a %d-entry WordPiece vocabulary on %s's training text", vocab_size, dataset.slug)
    source = ModelSource(spec.model.model, spec.model.architecture, len(tokenizer), weights=weights)
    formulation = formulation_for(task, labels, tokenizer, spec.job.task_options, spec.max_length, source)
    features = {split: formulation.encode(rows) for split, rows in data.splits.items()}
    plugins = efficiency.plugin_versions(manager)
    return Prepared(task, data, labels, features, tokenizer, formulation, source, plugins, spec.data.test_gold_withheld)


def first_examples(data: LoadedDataset, spec: FinetuneSpec) -> LoadedDataset:
    """The data cut to ``max_train_examples`` / ``max_eval_examples``, with a note saying so in the results."""
    overrides = spec.overrides
    limits = {
        "train": overrides.max_train_examples,
        "dev": overrides.max_eval_examples,
        "test": overrides.max_eval_examples,
    }
    cut = {
        split: limits[split] for split, rows in data.splits.items() if limits.get(split) and len(rows) > limits[split]
    }
    if not cut:
        return data
    splits = {split: rows[: cut.get(split, len(rows))] for split, rows in data.splits.items()}
    notes = [*data.notes, "only the first examples were used: " + ", ".join(f"{s} {n}" for s, n in cut.items())]
    return dataclasses.replace(data, splits=splits, notes=notes)


def data_directory(default_path: str) -> Path:
    """A dataset's default folder: its adapter's path, under ``BIOLM_DATA_DIR`` when relative."""
    path = Path(default_path)
    if path.is_absolute():
        return path
    root = Path(os.environ.get("BIOLM_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
    return root / path


def label_space(task: Task, data: LoadedDataset) -> LabelSpace:
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
    fold: int | None = None  # the cross-validation fold, when the protocol runs on folds
    scores: dict[str, list] = field(default_factory=dict)  # split -> per-example model scores, when withheld


def run_once(
    prepared: Prepared,
    hp: Hyperparameters,
    seed: int,
    splits: tuple[str, ...],
    context: TrainingContext,
    progress: ProgressCallback | None = None,
    select: tuple[str, str] | None = None,
) -> RunResult:
    """Train once and score ``splits``; ``select`` = (split, metric) chooses the checkpoint when ``hp`` asks."""
    seed_everything(seed)  # the classifier head's initialisation is part of the seed's run
    formulation = prepared.formulation
    model = formulation.build_model(prepared.source)
    evaluate = None
    if hp.selects_checkpoint and select is not None and select[0] in prepared.features:
        evaluate = _dev_score(prepared, *select, context)
    stats = train(model, prepared.features["train"], hp, seed, context, progress, evaluate)
    metrics, predictions, inference, scores = {}, {}, {}, {}
    for split in splits:
        if split not in prepared.features:
            continue
        features = prepared.features[split]
        logits, seconds = predict(model, features, context)
        rows = prepared.data.splits[split]
        predicted = formulation.decode(features, logits, rows, model)
        if split == "test" and prepared.test_gold_withheld:  # the platform scores it; these are placeholders
            scores[split] = sequence_scores(logits)
        else:
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
            "evaluation_seconds": stats.evaluation_seconds,
            "evaluations": stats.evaluations,
            "best_step": stats.best_step,
            "stopped_early": stats.stopped_early,
        },
        inference=inference,
        predictions=predictions,
        scores=scores,
    )


def sequence_scores(logits: list) -> list | None:
    """Per-example score vectors of a sequence-level task (what ROC AUC reads), as JSON; None for per-token outputs."""
    if not logits or np.ndim(logits[0]) != 1:
        return None
    return [np.asarray(row, dtype=float).round(6).tolist() for row in logits]


def _dev_score(prepared: Prepared, split: str, metric: str, context: TrainingContext) -> Callable:
    """A checkpoint's score on ``split`` by ``metric``, as the in-loop evaluation of :func:`train` needs."""
    features, rows = prepared.features[split], prepared.data.splits[split]
    formulation = prepared.formulation

    def evaluate(model: torch.nn.Module) -> float:
        logits, _ = predict(model, features, context)
        value = formulation.score(rows, formulation.decode(features, logits, rows, model), logits).get(metric)
        return score_or_lowest(value)

    return evaluate


def parameter_count(formulation: Formulation, source: ModelSource) -> int:
    """Parameters of the model the formulation trains, head included, counted on the meta device.

    Tensors there have shapes and no storage, so this costs neither memory nor a second real build.
    """
    with torch.device("meta"):
        return count_parameters(formulation.build_model(source))


class Runner:
    """Runs of one invocation: each finished run stored in ``--out/runs`` and reused by the next invocation.

    ``weights`` are the checkpoint's, read once for all the job's runs (None: each run reads them).
    """

    def __init__(
        self,
        spec: FinetuneSpec,
        device: torch.device,
        dtype: torch.dtype | None,
        progress_factory,
        weights: PristineWeights | None = None,
    ) -> None:
        self.spec, self.device, self.dtype, self.progress_factory = spec, device, dtype, progress_factory
        self.weights = weights
        # Each prepared dataset's store and context, found by the object itself. An ``id()`` alone
        # is not enough: a fold's data freed by the next fold leaves its address to a later one,
        # which would then be handed the earlier fold's finished runs. The weak reference proves
        # the entry is still the same object without keeping every fold's features alive.
        self.live: dict[int, tuple[weakref.ref, RunStore, TrainingContext]] = {}
        self.stores: list[RunStore] = []
        # Which run of how many this invocation is at, for its progress report (a reused run counts too).
        self.planned, self.started = 0, 0

    def _store(self, prepared: Prepared) -> tuple[RunStore, TrainingContext]:
        entry = self.live.get(id(prepared))
        if entry is None or entry[0]() is not prepared:
            context = TrainingContext.for_formulation(
                prepared.formulation, self.device, self.dtype, self.spec.run.eval_batch_size
            )
            identity = run_identity(self.spec, prepared, self.device, self.dtype, context.cuda_graphs)
            store = RunStore(self.spec.out / "runs", identity)
            self.stores.append(store)
            self.live = {key: kept for key, kept in self.live.items() if kept[0]() is not None}
            entry = self.live[id(prepared)] = (weakref.ref(prepared), store, context)
        return entry[1], entry[2]

    @property
    def reused(self) -> int:
        return sum(store.reused for store in self.stores)

    def run(
        self,
        prepared: Prepared,
        hp: Hyperparameters,
        seed: int,
        label: str,
        select: tuple[str, str],
        splits: tuple[str, ...] = ("dev", "test"),
    ) -> RunResult:
        store, context = self._store(prepared)
        self.started += 1
        variant = {"select": list(select) if hp.selects_checkpoint else None, "splits": list(splits)}
        stored = None if self.spec.run.fresh else store.load(hp, seed, variant)
        if stored is not None:
            logger.info("%s: reusing the finished run stored under %s", label, store.directory)
            return RunResult(**stored)
        runs = max(self.planned, self.started)
        progress = self.progress_factory(label, self.started, runs) if self.progress_factory else None
        result = run_once(prepared, hp, seed, splits, context, progress, select)
        store.save(hp, seed, asdict(result), variant)
        return result


def job_plan(spec: FinetuneSpec, contributions: Contributions, task: Task) -> Plan:
    """The job's protocol's plan for its dataset, with its overrides; checked against what the job says of it."""
    job = spec.job
    if job.metric not in task.metric_slugs:
        raise ValueError(f"the job scores {job.dataset!r} by {job.metric!r}, which its task does not compute")
    plan = plan_for(protocol_named(contributions.protocols, job.protocol), task.dataset, task.task_type, job.overrides)
    if plan.cross_validation != job.cross_validation:
        raise ValueError(
            f"the job says cross_validation={job.cross_validation}, but protocol {job.protocol} runs "
            f"{job.dataset} {'on' if plan.cross_validation else 'without'} folds here"
        )
    return plan


def run_identity(
    spec: FinetuneSpec, prepared: Prepared, device: torch.device, dtype: torch.dtype | None, cuda_graphs: bool = False
) -> dict:
    """Everything besides hyperparameters and seed that decides a run's outcome (see :mod:`run_store`).

    Graphed steps (:mod:`workers.engine.cuda_graphs`) draw other dropout masks than eager ones, so
    a run stored by one is not reused by the other.
    """
    vocabulary = json.dumps(sorted(prepared.tokenizer.get_vocab().items()))
    return {
        "dataset": spec.dataset,
        "data_fingerprint": prepared.data.fingerprint,
        "data_sizes": prepared.data.sizes,
        "model_dir": str(spec.model.model) if spec.model.model else None,
        "checkpoint_files": checkpoint_identity(spec.model.model),
        "architecture": spec.model.architecture,
        "vocabulary": hashlib.sha256(vocabulary.encode("utf-8")).hexdigest(),
        "formulation": prepared.formulation.describe(),
        "task_options": spec.job.task_options.as_dict(),
        "max_length": spec.max_length,
        "eval_batch_size": spec.run.eval_batch_size,
        "dtype": str(dtype),
        "device": device.type,
        "cuda_graphs": cuda_graphs,
        "code": {"biolm": biolm.__version__, "git_commit": efficiency.git_commit()},
    }


def score_or_lowest(value: float) -> float:
    return value if isinstance(value, float | int) and math.isfinite(value) else float("-inf")
