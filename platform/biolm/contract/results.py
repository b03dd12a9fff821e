"""The results document: what a fine-tuning job answers, versioned, parsed in one place.

The engine writes it as ``results.json`` (:func:`workers.engine.finetune.finetune`); the platform
reads it back with :meth:`ResultsDocument.from_json` only (``jobs.results``). It carries the job's
spec exactly as the engine ran it, the protocol's plan, every run (with its fold as a field), the
hyperparameters chosen on dev and the scores behind the choice, the test summary the protocol's
statistic gives (:func:`biolm.protocols.combine`), the test predictions keyed by run
(:func:`~biolm.contract.runs.run_key`), the dev predictions of the same runs (version 2; a reader's
viewer shows them beside the dev gold, :mod:`leaderboard.dev_examples`) and the provenance. Version 1
documents, recorded before dev predictions were kept, are still read (``dev_predictions`` None). A
document of another version, or with fields its version does not have, is refused rather than misread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from biolm.contract.errors import ContractError
from biolm.contract.jobs import FinetuneJob
from biolm.contract.runs import parse_run_key, run_key

RESULTS_VERSION = 2  # 2 added dev_predictions
READ_VERSIONS = (1, RESULTS_VERSION)
RUN_FIELDS = ("seed", "fold", "hyperparameters", "metrics", "train", "inference")


@dataclass
class RunRecord:
    """One training run: its seed, its fold (None without cross-validation) and what it measured."""

    seed: int
    fold: int | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, dict[str, float | None]] = field(default_factory=dict)  # split -> metric -> value
    train: dict[str, Any] = field(default_factory=dict)
    inference: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return run_key(self.fold, self.seed)

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in RUN_FIELDS}

    @classmethod
    def from_json(cls, data: object) -> RunRecord:
        if not isinstance(data, Mapping):
            raise ContractError(f"a run must be a JSON object, not {type(data).__name__}", "runs")
        unknown = sorted(set(data) - set(RUN_FIELDS))
        if unknown:
            raise ContractError(f"run: unknown field(s) {', '.join(unknown)}", "runs")
        seed, fold = data.get("seed"), data.get("fold")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ContractError(f"a run's seed must be a whole number, not {seed!r}", "runs")
        if fold is not None and (isinstance(fold, bool) or not isinstance(fold, int) or fold < 1):
            raise ContractError(f"a run's fold must be a whole number from 1, or null, not {fold!r}", "runs")
        parts = {name: data.get(name) or {} for name in ("hyperparameters", "metrics", "train", "inference")}
        if not all(isinstance(value, Mapping) for value in parts.values()):
            raise ContractError("a run's hyperparameters, metrics, train and inference are JSON objects", "runs")
        return cls(seed=seed, fold=fold, **{name: dict(value) for name, value in parts.items()})


OPTIONAL = ("cross_validation", "test_scores", "dev_predictions")
FIELDS = (
    "version", "spec", "dataset", "metric", "task_type", "model", "benchmark", "protocol", "formulation",
    "chosen_hyperparameters", "selection", "test", "reported", "runs", "predictions", "data", "efficiency",
    "provenance", *OPTIONAL,
)  # fmt: skip


@dataclass
class ResultsDocument:
    """A fine-tuning job's results; ``to_json`` is ``results.json``."""

    spec: FinetuneJob
    dataset: str
    metric: str
    task_type: str
    model: str
    protocol: dict[str, Any]  # the plan the engine followed (biolm.protocols.Plan.describe)
    runs: list[RunRecord]
    predictions: dict[str, list | None]  # run key -> test predictions
    benchmark: str | None = None
    formulation: dict[str, Any] = field(default_factory=dict)
    chosen_hyperparameters: dict[str, Any] = field(default_factory=dict)
    selection: list[dict] = field(default_factory=list)
    test: dict[str, Any] | None = None  # biolm.protocols.Summary, as JSON
    reported: dict[str, Any] = field(default_factory=dict)  # {"statistic", "value"}
    data: dict[str, Any] = field(default_factory=dict)
    efficiency: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    cross_validation: dict[str, Any] | None = None  # folds, selection_fold, reported_folds, per_fold
    test_scores: dict[str, list | None] | None = None  # run key -> per-example scores, when test gold was withheld
    # run key -> that run's dev predictions (None for a run without a dev split); None: a version 1 document,
    # recorded before they were kept
    dev_predictions: dict[str, list | None] | None = None

    @property
    def on_folds(self) -> bool:
        return self.cross_validation is not None

    @property
    def statistic(self) -> str:
        return str(self.protocol.get("statistic", "mean"))

    @property
    def test_gold_withheld(self) -> bool:
        """Whether the worker predicted a test split whose gold the platform kept (its data says so)."""
        return bool(self.data.get("test_gold_withheld"))

    def reported_folds(self) -> list[int]:
        return [int(fold) for fold in (self.cross_validation or {}).get("reported_folds", [])]

    def to_json(self) -> dict:
        data: dict[str, Any] = {"version": RESULTS_VERSION}
        for name in FIELDS[1:]:
            value = getattr(self, name)
            if name in OPTIONAL and value is None:
                continue
            if name == "spec":
                value = value.to_json()
            elif name == "runs":
                value = [run.to_json() for run in value]
            data[name] = value
        return data

    @classmethod
    def from_json(cls, data: object) -> ResultsDocument:
        """The document ``to_json`` wrote; another version, an unknown field or a malformed part is refused."""
        if not isinstance(data, Mapping):
            raise ContractError("a results document must be a JSON object")
        version = data.get("version")
        if version not in READ_VERSIONS or isinstance(version, bool):
            readable = " or ".join(str(v) for v in READ_VERSIONS)
            raise ContractError(f"this biolm reads results version {readable}, not {version!r}", "version")
        fields = set(FIELDS) - ({"dev_predictions"} if version == 1 else set())
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ContractError(f"results: unknown field(s) {', '.join(unknown)}", unknown[0])
        missing = sorted({"spec", "dataset", "metric", "runs", "predictions"} - set(data))
        if missing:
            raise ContractError(f"results: missing field(s) {', '.join(missing)}", missing[0])
        runs = data["runs"]
        if not isinstance(runs, list):
            raise ContractError("results: runs must be a list", "runs")
        predictions = data["predictions"]
        if not isinstance(predictions, Mapping):
            raise ContractError("results: predictions must be a JSON object keyed by run", "predictions")
        for key in predictions:
            parse_run_key(key)
        dev = data.get("dev_predictions")
        if dev is not None and not isinstance(dev, Mapping):
            raise ContractError("results: dev_predictions must be a JSON object keyed by run", "dev_predictions")
        for key in dev or {}:
            parse_run_key(key)
        values = {name: data[name] for name in FIELDS[1:] if name in data}
        values.update(
            spec=FinetuneJob.from_json(data["spec"]),
            runs=[RunRecord.from_json(run) for run in runs],
            predictions=dict(predictions),
            task_type=str(data.get("task_type", "")),
            model=str(data.get("model", "")),
            protocol=dict(data.get("protocol") or {}),
        )
        return cls(**values)
