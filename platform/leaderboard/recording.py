"""A score job: a fine-tuning job's results become its runs and the model's ``Result``, once, in one transaction.

The score job reads the results document its fine-tuning job uploaded (:func:`jobs.results.load_results`),
scores the test predictions against the gold only the platform holds, and writes, in one
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

import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.db import transaction

from biolm.contract import ResultsDocument, RunRecord, ScoreJob
from biolm.protocols import RunValue, Summary, combine
from jobs import costs, exports
from jobs.handlers import JobRefused
from jobs.models import Job, Run, canonical_key
from jobs.results import ResultsError, load_results, model_files
from leaderboard.models import Result, ResultClasses, ResultResamples
from leaderboard.resamples import store_result_resamples
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
    if results.test_gold_withheld:
        _score_on_platform(finetune, results)
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
        resampled=_resampled(finetune, results, spec.metric),
        classes=_per_class(finetune, results),
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
        standing = Result.objects.select_for_update().filter(**entry).first()
        if spec.preview and standing is not None and not standing.preview:
            logger.info("job #%s: quick preview not recorded; the full-protocol result %s stands",
                        finetune.pk, standing)  # fmt: skip
            return standing
        values = _result_values(scored.summary, finetune, scored.results, scored.test_runs, scored.provenance,
                                spec.preview)  # fmt: skip
        result, _ = Result.objects.update_or_create(**entry, defaults=values)
        if scored.resampled is not None:
            store_result_resamples(result, *scored.resampled)
        else:  # new predictions that cannot be resampled must not leave an old vector standing in for them
            ResultResamples.objects.filter(result=result).delete()
        if scored.classes is not None:
            ResultClasses.objects.update_or_create(result=result, defaults={"figures": scored.classes})
        else:  # nor old per-class figures standing in for predictions that have none
            ResultClasses.objects.filter(result=result).delete()
    return result


def _result_values(summary: Summary, finetune: Job, results: ResultsDocument, test_runs: list[RunRecord],
                   provenance: dict, preview: bool) -> dict:  # fmt: skip
    unit = "folds" if results.on_folds else "test runs"
    cost = costs.of_jobs([finetune.pk])
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


def _resampled(finetune: Job, results: ResultsDocument, metric: str) -> tuple[str, np.ndarray] | None:
    """The result's value on each shared bootstrap resample of the test examples, for honest ranks.

    Scored from the stored per-example predictions with the dataset's real metric
    (:mod:`workers.engine.bootstrap`). Without predictions there is nothing to resample: the
    result is then ranked by its point score, and says so.
    """
    if not any(results.predictions.values()):
        return None
    from workers.engine.bootstrap import resampled_values  # torch: only on the worker that records

    dataset = finetune.dataset
    seen, gold = _copies(finetune, results, results.reported_folds())
    started = time.perf_counter()
    with model_files(finetune) as tokenizer_dir:
        try:
            vector = resampled_values(results, tokenizer_dir, seen, gold, metric, dataset.slug)
        except ValueError as exc:
            raise RecordingError(f"job #{finetune.pk}: its test predictions cannot be resampled: {exc}") from None
    logger.info("job #%s: %d bootstrap resamples of %s in %.1f s", finetune.pk, len(vector), dataset.slug,
                time.perf_counter() - started)  # fmt: skip
    return dataset.slug, vector


def _per_class(finetune: Job, results: ResultsDocument) -> dict | None:
    """The result's per-class test figures (:mod:`workers.engine.per_class`), as stored; None without classes.

    Aggregates only, for classes with enough test examples: what the model and dataset pages show.
    """
    if not any(results.predictions.values()):
        return None
    from workers.engine.per_class import per_class_figures  # torch: only on the worker that records

    seen, gold = _copies(finetune, results, results.reported_folds())
    with model_files(finetune) as tokenizer_dir:
        try:
            breakdown = per_class_figures(results, tokenizer_dir, seen, gold)
        except ValueError as exc:
            raise RecordingError(f"job #{finetune.pk}: its per-class figures cannot be computed: {exc}") from None
    return breakdown.to_json() if breakdown is not None else None


def _copies(finetune: Job, results: ResultsDocument, folds: list[int]) -> tuple:
    """The data the worker saw and the same examples with their gold: one copy, or one per fold."""
    dataset = finetune.dataset
    spec = load_contributions().datasets[dataset.slug]
    if results.on_folds:
        gold = {fold: exports.loaded_fold(dataset, spec, fold, withheld=False) for fold in folds}
        seen = {fold: exports.loaded_fold(dataset, spec, fold, withheld=True) for fold in folds}
        return (seen if results.test_gold_withheld else gold), gold
    gold = exports.loaded(dataset, spec, withheld=False)
    return (exports.loaded(dataset, spec, withheld=True) if results.test_gold_withheld else gold), gold


def _values(test_runs: list[RunRecord], job_id: int, metric: str) -> list[RunValue]:
    """Each run's test value of ``metric``, as :func:`biolm.protocols.combine` reads them (a non-number refused)."""
    values = []
    for test_run in test_runs:
        value = _finite(test_run.metrics["test"].get(metric), job_id, metric)
        if value is not None:
            values.append(RunValue(test_run.fold, test_run.seed, value))
    return values


def _score_on_platform(finetune: Job, results: ResultsDocument) -> None:
    """Fill each run's test metrics by scoring its predictions against the gold only the platform holds."""
    from workers.engine.withheld import score_withheld  # torch: only on the worker that records

    folds = sorted({run.fold for run in results.runs if run.fold is not None})
    seen, gold = _copies(finetune, results, folds)
    parts = {fold: (seen[fold], gold[fold]) for fold in folds} if results.on_folds else {None: (seen, gold)}
    scored = {}
    with model_files(finetune) as tokenizer_dir:
        for fold, (withheld, gold_copy) in parts.items():
            keys = {run.key for run in results.runs if run.fold == fold} if fold is not None else None
            try:
                scored.update(score_withheld(results, tokenizer_dir, withheld, gold_copy, keys))
            except ValueError as exc:
                where = f" (fold {fold})" if fold is not None else ""
                raise RecordingError(
                    f"job #{finetune.pk}: its test predictions cannot be scored{where}: {exc}"
                ) from None
    for test_run in results.runs:
        if test_run.key in scored:
            test_run.metrics["test"] = scored[test_run.key]


def _finite(value, job_id: int, metric: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise RecordingError(f"job #{job_id}: test {metric} is {value!r}, not a finite number")
    return float(value)
