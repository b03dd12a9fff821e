"""A score job's two documents: the inputs the platform hands the engine, and the scores it answers.

Scoring needs torch (the formulations decode predictions with the model's tokenizer), and the
platform's Django processes never load it. So a score job runs ``python -m workers.engine score
--spec FILE --out DIR`` as a process of its own, as fine-tuning runs the engine: the platform
writes :class:`ScoreInputs` (the fine-tuning job's results, its tokenizer, and both copies of the
data, the one the worker read and the one with the gold, as files), and the engine writes
:class:`ScoresDocument` (``scores.json``): each run's test metrics where the gold was withheld, the
value on each shared bootstrap resample, and the per-class figures. ``leaderboard.recording``
validates it with :meth:`ScoresDocument.from_json` and writes rows. Both are versioned; another
version, or a field this biolm does not know, is refused rather than misread.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from biolm.contract.errors import ContractError
from biolm.contract.runs import parse_run_key

SCORE_INPUTS_VERSION = 1
SCORES_VERSION = 1
SCORES_FILE = "scores.json"


def _checked(data: object, what: str, version: int, fields: tuple[str, ...]) -> Mapping:
    if not isinstance(data, Mapping):
        raise ContractError(f"{what} must be a JSON object")
    if data.get("version") != version:
        raise ContractError(f"this biolm reads {what} version {version}, not {data.get('version')!r}", "version")
    unknown = sorted(set(data) - {"version", *fields})
    if unknown:
        raise ContractError(f"{what}: unknown field(s) {', '.join(unknown)}", unknown[0])
    missing = sorted(set(fields) - set(data))
    if missing:
        raise ContractError(f"{what}: missing field(s) {', '.join(missing)}", missing[0])
    return data


@dataclass(frozen=True)
class DataCopy:
    """One copy of a dataset's examples on disk: ``{split}.jsonl`` under ``directory``, and what the import
    kept beside them (the label set as the worker's engine saw it, the import's notes, typed test gold)."""

    directory: str
    label_set: list[str]
    notes: list[str] = field(default_factory=list)
    test_types: dict[str, list[str]] | None = None

    def to_json(self) -> dict:
        return {
            "directory": self.directory,
            "label_set": self.label_set,
            "notes": self.notes,
            "test_types": self.test_types,
        }

    @classmethod
    def from_json(cls, data: object) -> DataCopy:
        if not isinstance(data, Mapping) or not isinstance(data.get("directory"), str):
            raise ContractError("a data copy must be a JSON object with a directory", "parts")
        return cls(str(data["directory"]), [str(label) for label in data.get("label_set") or []],
                   [str(note) for note in data.get("notes") or []], data.get("test_types"))  # fmt: skip


@dataclass(frozen=True)
class ScoringPart:
    """The data one part of the job's runs is scored on: the whole test split, or one fold's (``fold``)."""

    fold: int | None
    seen: DataCopy  # what the worker read: test gold withheld, unless the job saw it
    gold: DataCopy

    def to_json(self) -> dict:
        return {"fold": self.fold, "seen": self.seen.to_json(), "gold": self.gold.to_json()}

    @classmethod
    def from_json(cls, data: object) -> ScoringPart:
        if not isinstance(data, Mapping):
            raise ContractError("a scoring part must be a JSON object", "parts")
        fold = data.get("fold")
        if fold is not None and (not isinstance(fold, int) or isinstance(fold, bool)):
            raise ContractError(f"a scoring part's fold must be a whole number, not {fold!r}", "parts")
        return cls(fold, DataCopy.from_json(data.get("seen")), DataCopy.from_json(data.get("gold")))


@dataclass(frozen=True)
class ScoreInputs:
    """What the engine scores: the results document's file, the model's tokenizer, the data by part."""

    results: str  # results.json as the fine-tuning job uploaded it
    tokenizer: str  # a directory with the model's config and tokenizer (no weights)
    dataset: str  # the dataset's slug, the key of its shared bootstrap resamples
    metric: str  # the benchmark entry's metric, resampled
    parts: list[ScoringPart]
    load_entrypoints: bool = True  # installed plugins too, as the platform's own processes load them

    FIELDS = ("results", "tokenizer", "dataset", "metric", "parts", "load_entrypoints")

    def part(self, fold: int | None) -> ScoringPart:
        for candidate in self.parts:
            if candidate.fold == fold:
                return candidate
        where = f"fold {fold}" if fold is not None else "the test split"
        raise ContractError(f"score inputs: no data for {where}", "parts")

    def to_json(self) -> dict:
        return {"version": SCORE_INPUTS_VERSION, "results": self.results, "tokenizer": self.tokenizer,
                "dataset": self.dataset, "metric": self.metric, "parts": [part.to_json() for part in self.parts],
                "load_entrypoints": self.load_entrypoints}  # fmt: skip

    @classmethod
    def from_json(cls, data: object) -> ScoreInputs:
        data = _checked(data, "score inputs", SCORE_INPUTS_VERSION, cls.FIELDS)
        if not isinstance(data["parts"], list):  # empty: a data holder's worker scores on its own copy
            raise ContractError("score inputs: parts must be a list", "parts")
        text = {name: str(data[name]) for name in cls.FIELDS[:4]}
        parts = [ScoringPart.from_json(part) for part in data["parts"]]
        return cls(**text, parts=parts, load_entrypoints=bool(data["load_entrypoints"]))


@dataclass(frozen=True)
class ScoresDocument:
    """What the engine scored: each withheld run's test metrics, the resample vector, the per-class figures.

    ``test_metrics`` is keyed by run (:func:`~biolm.contract.runs.run_key`) and empty when the worker saw
    the test gold and scored it itself. ``resamples`` holds the metric on each shared resample, NaN where
    it is undefined (``null`` in JSON); None without predictions. ``per_class`` is
    ``ClassBreakdown.to_json()``; None when the metric has no classes to break down.
    """

    test_metrics: dict[str, dict[str, Any]]
    resamples: list[float] | None
    per_class: dict | None

    FIELDS = ("test_metrics", "resamples", "per_class")

    def to_json(self) -> dict:
        resamples = None if self.resamples is None else [None if math.isnan(v) else v for v in self.resamples]
        return {"version": SCORES_VERSION, "test_metrics": self.test_metrics, "resamples": resamples,
                "per_class": self.per_class}  # fmt: skip

    @classmethod
    def from_json(cls, data: object) -> ScoresDocument:
        data = _checked(data, "scores", SCORES_VERSION, cls.FIELDS)
        return cls(_test_metrics(data["test_metrics"]), _resamples(data["resamples"]), _per_class(data["per_class"]))


def _test_metrics(data: object) -> dict[str, dict[str, Any]]:
    if not isinstance(data, Mapping):
        raise ContractError("scores: test_metrics must be a JSON object keyed by run", "test_metrics")
    metrics: dict[str, dict[str, Any]] = {}
    for key, values in data.items():
        parse_run_key(key)
        if not isinstance(values, Mapping):
            raise ContractError(f"scores: run {key}'s test metrics must be a JSON object", "test_metrics")
        metrics[key] = dict(values)  # as the run's formulation scored them: recording judges the metric's value
    return metrics


def _resamples(data: object) -> list[float] | None:
    if data is None:
        return None
    if not isinstance(data, list) or not data:
        raise ContractError("scores: resamples must be a non-empty list of numbers or nulls", "resamples")
    values = [_number_or_none(value, "a resample's value") for value in data]
    return [math.nan if value is None else value for value in values]


def _per_class(data: object) -> dict | None:
    if data is not None and not isinstance(data, Mapping):
        raise ContractError("scores: per_class must be a JSON object or null", "per_class")
    return None if data is None else dict(data)


def _number_or_none(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ContractError(f"scores: {what} is {value!r}, not a finite number or null", "scores")
    return float(value)
