"""A score job: a fine-tuning job's results become its runs and the model's ``Result``, once, in one transaction.

The score job reads the results document its fine-tuning job uploaded (:func:`jobs.results.load_results`),
has the engine score the test predictions against the gold only the platform holds, in a process of its
own (:mod:`leaderboard.score_process`: this process never loads torch), validates the scores it answers
and writes, in one
transaction keyed by the fine-tuning job, one :class:`~jobs.models.Run` per seed and fold on test
and the model's :class:`Result` for the benchmark entry: the protocol's statistic over the runs
(:func:`biolm.protocols.combine`, the engine's and the bootstrap's own computation), with std,
median, and the number of seeds or folds, and the runs' provenance. A redelivered score job finds
the runs already there (their unique constraint) and the result already equal, so nothing counts
twice. The leaderboard's signals rescore the model at commit.

A quick preview's score job (``preview`` in its spec: one grid point, one seed) records a result
marked ``preview``, which the leaderboard shows apart and never ranks. A full-protocol result
replaces a preview of the same entry; a preview never replaces a full result: its runs are kept,
the full result stands, and the job still succeeds (:func:`outcome` says so in its log).
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.db import transaction

from biolm.contract import ContractError, ResultsDocument, RunRecord, ScoreJob
from biolm.contract.scores import SCORES_FILE, ScoresDocument
from biolm.placement import holder_of
from biolm.protocols import RunValue, Summary, combine
from jobs import artefacts, costs, exports
from jobs.completion import output_name
from jobs.handlers import JobRefused
from jobs.models import Job, Run, canonical_key
from jobs.results import ResultsError, load_results
from leaderboard.models import Result, ResultClasses, ResultResamples
from leaderboard.resamples import store_result_resamples
from leaderboard.score_process import score_in_engine
from registry.models import Metric
from registry.sync import load_contributions

logger = logging.getLogger(__name__)


class RecordingError(JobRefused):
    """The fine-tuning job's outputs cannot be recorded; the message says what is wrong with them."""


def run(score: Job) -> Callable[[], str]:
    """The score job's work, as :mod:`jobs.handlers` runs it.

    Reading and scoring happen here, outside any transaction; what is returned writes the runs and
    the result and says what it recorded, called in the transaction that marks the job succeeded.
    """
    scored = score_results(score)
    return lambda: outcome(score, write(scored))


def record(score: Job) -> Result | None:
    """Record the results of ``score``'s fine-tuning job; None if the metric is undefined on test."""
    return write(score_results(score))


@dataclass(frozen=True)
class Scored:
    """What a score job found, ready to be written: the test runs, their summary and the bootstrap."""

    score: Job
    finetune: Job
    results: ResultsDocument
    metric: Metric
    test_runs: list[RunRecord]
    summary: Summary | None
    resampled: tuple[str, np.ndarray] | None
    classes: dict | None
    provenance: dict


def score_results(score: Job) -> Scored:
    """Read the fine-tuning job's results and score them (the bootstrap and per-class figures included)."""
    spec: ScoreJob = score.contract
    finetune = Job.objects.get(pk=spec.finetune_job)
    try:
        results = load_results(finetune)
    except ResultsError as exc:
        raise RecordingError(str(exc)) from None
    metric = Metric.objects.get(slug=spec.metric)
    scores = _held_scores(score) if holder_of(score.queue) else _scores(finetune, results, spec.metric)
    for test_run in results.runs:  # the worker predicted a withheld test split: the engine scored it here
        if test_run.key in scores.test_metrics:
            test_run.metrics["test"] = scores.test_metrics[test_run.key]
    test_runs = [run for run in results.runs if run.metrics.get("test")]
    provenance = {**results.provenance, "job": finetune.pk, "protocol": results.protocol,
                  "overrides": results.spec.overrides.to_json()}  # fmt: skip
    return Scored(
        score=score,
        finetune=finetune,
        results=results,
        metric=metric,
        test_runs=test_runs,
        summary=combine(_values(test_runs, finetune.pk, spec.metric), results.statistic),
        resampled=None if scores.resamples is None else (finetune.dataset.slug, np.asarray(scores.resamples)),
        classes=scores.per_class,
        provenance=provenance,
    )


def write(scored: Scored) -> Result | None:
    """Write the runs and the result in one transaction (a savepoint inside the job's own)."""
    score, finetune, spec = scored.score, scored.finetune, scored.score.contract
    with transaction.atomic():
        _record_runs(finetune, score, scored.test_runs, scored.provenance)
        if scored.summary is None:
            return None
        entry = {
            "language_model": score.language_model, "dataset": score.dataset, "metric": scored.metric,
            "variant": spec.variant, "scope": "",
        }  # fmt: skip
        # Locked: a full result recorded by another score job at the same moment is seen here or waits.
        standing = Result.everything.select_for_update().filter(**entry).first()
        if spec.preview and standing is not None and not standing.preview:
            logger.info("job #%s: quick preview not recorded; the full-protocol result %s stands",
                        finetune.pk, standing)  # fmt: skip
            return standing
        values = _result_values(scored.summary, finetune, scored.results, scored.test_runs, scored.provenance,
                                spec.preview)  # fmt: skip
        result, _ = Result.everything.update_or_create(**entry, defaults={**values, **_approval(score)})
        if scored.resampled is not None:
            store_result_resamples(result, *scored.resampled)
        else:  # new predictions that cannot be resampled must not leave an old vector standing in for them
            ResultResamples.objects.filter(result=result).delete()
        if scored.classes is not None:
            ResultClasses.objects.update_or_create(result=result, defaults={"figures": scored.classes})
        else:  # nor old per-class figures standing in for predictions that have none
            ResultClasses.objects.filter(result=result).delete()
    return result


def _approval(score: Job) -> dict:
    """A held dataset's new figures await its holder's approval again (:mod:`leaderboard.approvals`)."""
    if score.dataset is None or score.dataset.held_by_id is None:
        return {"approval": Result.Approval.NOT_NEEDED}
    return {"approval": Result.Approval.PENDING, "approval_reason": "", "approved_by": None, "approval_at": None}


def _result_values(summary: Summary, finetune: Job, results: ResultsDocument, test_runs: list[RunRecord],
                   provenance: dict, preview: bool) -> dict:  # fmt: skip
    unit = "folds" if results.on_folds else "test runs"
    cost = costs.of_jobs([finetune.pk, *(job_id for _, job_id in finetune.contract.reads)])  # a gather: its slices
    return {
        "value": summary.value,
        "std": summary.std,
        "median": summary.median,
        "n_seeds": summary.n,
        "source": f"job #{finetune.pk} ({summary.statistic} of {summary.n} {unit})",
        "job": finetune,
        "provenance": provenance,
        "inference_per_s": _inference_per_s(test_runs),
        "preview": preview,
        "gpu_hours": cost.gpu_hours,
        "wall_s": cost.wall_s,
        "gpu_model": cost.gpu_model,
    }


def _record_runs(finetune: Job, score: Job, test_runs: list[RunRecord], provenance: dict) -> None:
    for test_run in test_runs:
        Run.objects.get_or_create(
            job=finetune,
            hyperparameters_key=canonical_key(test_run.hyperparameters),
            fold=test_run.fold or 0,
            seed=test_run.seed,
            split=Run.Split.TEST,
            defaults={
                "language_model": score.language_model,
                "dataset": score.dataset,
                "hyperparameters": test_run.hyperparameters,
                "metrics": test_run.metrics["test"],
                "provenance": provenance,
            },
        )


def outcome(score: Job, result: Result | None) -> str:
    """What :func:`record` did, in words, for the score job's log."""
    if result is None:
        return "recorded no result (metric undefined)"
    if result.approval == Result.Approval.PENDING:
        return f"recorded {result}, awaiting {score.dataset.held_by}'s approval before it is published"
    if score.contract.preview and not result.preview:
        return f"quick preview not recorded: the full-protocol result {result} stands (a preview never replaces it)"
    return f"recorded {result}" + (" (quick preview: one grid point, one seed; not ranked)" if result.preview else "")


def _inference_per_s(test_runs: list[RunRecord]) -> float | None:
    """Median test-set throughput of the runs, examples per second (from each run's latency per example)."""
    rates = []
    for test_run in test_runs:
        latency = (test_run.inference.get("test") or {}).get("latency_ms_per_example")
        if isinstance(latency, int | float) and latency > 0:
            rates.append(1000.0 / latency)
    return statistics.median(rates) if rates else None


def _scores(finetune: Job, results: ResultsDocument, metric: str) -> ScoresDocument:
    """The engine's scores (:mod:`leaderboard.score_process`); none to compute, and no process, when the worker
    scored its own test split and stored no predictions to resample."""
    if not results.test_gold_withheld and not any(results.predictions.values()):
        return ScoresDocument({}, None, None)
    return score_in_engine(finetune, results, metric, _copies(finetune, results))


def _held_scores(score: Job) -> ScoresDocument:
    """The scores a held dataset's holder's worker uploaded: it holds the gold, so the engine ran there."""
    name = output_name(score.pk, SCORES_FILE)
    try:
        with artefacts.storage().open(name, "rb") as handle:
            return ScoresDocument.from_json(json.loads(handle.read()))
    except FileNotFoundError:
        raise RecordingError(f"score job #{score.pk}: its worker uploaded no {SCORES_FILE}") from None
    except (ValueError, ContractError) as exc:
        raise RecordingError(f"score job #{score.pk}: {name} is not a scores document: {exc}") from None


def _copies(finetune: Job, results: ResultsDocument) -> dict:
    """``{fold or None: (the data the worker saw, the same examples with their gold)}``: the test split, or
    each fold the runs were trained on or reported (the engine scores each fold's runs on that fold's test)."""
    dataset = finetune.dataset
    spec = load_contributions().datasets[dataset.slug]
    withheld = results.test_gold_withheld
    if not results.on_folds:
        gold = exports.loaded(dataset, spec, withheld=False)
        return {None: (exports.loaded(dataset, spec, withheld=True) if withheld else gold, gold)}
    folds = sorted({run.fold for run in results.runs if run.fold is not None} | set(results.reported_folds()))
    copies = {}
    for fold in folds:
        gold = exports.loaded_fold(dataset, spec, fold, withheld=False)
        copies[fold] = (exports.loaded_fold(dataset, spec, fold, withheld=True) if withheld else gold, gold)
    return copies


def _values(test_runs: list[RunRecord], job_id: int, metric: str) -> list[RunValue]:
    """Each run's test value of ``metric``, as :func:`biolm.protocols.combine` reads them (a non-number refused)."""
    values = []
    for test_run in test_runs:
        value = _finite(test_run.metrics["test"].get(metric), job_id, metric)
        if value is not None:
            values.append(RunValue(test_run.fold, test_run.seed, value))
    return values


def _finite(value, job_id: int, metric: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise RecordingError(f"job #{job_id}: test {metric} is {value!r}, not a finite number")
    return float(value)
