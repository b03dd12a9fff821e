"""A fine-tuning job's outputs become its runs and the model's ``Result``, once, in one transaction.

The aggregate job reads the results file its fine-tuning job uploaded to the artefact store and
writes, in one transaction keyed by the fine-tuning job, one :class:`Run` per seed (or fold) on
test and the model's :class:`Result` for the benchmark entry: the protocol's statistic (mean or
median) as its value, with std, median, the number of seeds or folds, and the runs' provenance.
A redelivered aggregate finds the runs already there (their unique constraint) and the result
already equal, so nothing counts twice. The leaderboard's signals rescore the model at commit.

A quick preview's aggregate (``"preview": true`` in its spec: one grid point, one seed) records a
result marked ``preview``, which the leaderboard shows apart and never ranks. A full-protocol
result replaces a preview of the same entry; a preview never replaces a full result: its runs are
kept, the full result stands, and the job still succeeds (:func:`outcome` says so in its log).
"""

from __future__ import annotations

import json
import logging
import math
import statistics
import time

import numpy as np
from django.db import transaction

from jobs import artefacts, completion, exports
from jobs.models import Job, Run, canonical_key
from leaderboard.models import Result, ResultResamples
from leaderboard.resamples import store_result_resamples
from registry.models import Metric

logger = logging.getLogger(__name__)


class RecordingError(ValueError):
    """The fine-tuning job's outputs cannot be recorded; the message says what is wrong with them."""


def results_name(job_id: int) -> str:
    """Where a fine-tuning job's results file is kept in the artefact store."""
    return f"jobs/{job_id}/results.json"


def load_results(job_id: int) -> dict:
    name = results_name(job_id)
    store = artefacts.storage()
    if not store.exists(name):
        raise RecordingError(f"job #{job_id} uploaded no results ({name} is missing from the artefact store)")
    with store.open(name, "rb") as handle:
        try:
            results = json.loads(handle.read())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RecordingError(f"job #{job_id}: {name} is not JSON: {exc}") from None
    if not isinstance(results, dict) or not isinstance(results.get("runs"), list):
        raise RecordingError(f"job #{job_id}: {name} has no list of runs")
    return results


def record(aggregate: Job) -> Result | None:
    """Record the results of ``aggregate``'s fine-tuning job; None if the metric is undefined on test."""
    finetune = Job.objects.get(pk=aggregate.spec["finetune_job"])
    results = load_results(finetune.pk)
    metric_slug = aggregate.spec["metric"]
    metric = Metric.objects.get(slug=metric_slug)
    if ((results.get("spec") or {}).get("data") or {}).get("test_gold_withheld"):
        _score_on_platform(finetune, results)
    statistic = (results.get("protocol") or {}).get("statistic", "mean")
    resampled = _resampled(finetune, results, metric_slug)
    test_runs = [run for run in results["runs"] if (run.get("metrics") or {}).get("test")]
    values = _values(test_runs, finetune.pk, metric_slug)
    unit = "folds" if "cross_validation" in results else "test runs"
    provenance = {**(results.get("provenance") or {}), "job": finetune.pk, "protocol": results.get("protocol")}
    preview = bool(aggregate.spec.get("preview"))
    with transaction.atomic():
        for run in test_runs:
            hyperparameters = run.get("hyperparameters") or {}
            seed = int(run.get("fold", 0)) * 1000 + int(run["seed"]) if "fold" in run else int(run["seed"])
            Run.objects.get_or_create(
                job=finetune,
                hyperparameters_key=canonical_key(hyperparameters),
                seed=seed,
                split=Run.Split.TEST,
                defaults={
                    "language_model": aggregate.language_model,
                    "dataset": aggregate.dataset,
                    "hyperparameters": hyperparameters,
                    "metrics": run["metrics"]["test"],
                    "efficiency": {"train": run.get("train"), "inference": run.get("inference")},
                    "provenance": provenance,
                },
            )
        if not values:
            return None
        entry = {
            "language_model": aggregate.language_model,
            "dataset": aggregate.dataset,
            "metric": metric,
            "variant": aggregate.spec.get("variant") or "",
            "scope": "",
        }
        # Locked: a full result recorded by another aggregate at the same moment is seen here or waits.
        standing = Result.objects.select_for_update().filter(**entry).first()
        if preview and standing is not None and not standing.preview:
            logger.info("job #%s: quick preview not recorded; the full-protocol result %s stands",
                        finetune.pk, standing)  # fmt: skip
            return standing
        value = statistics.median(values) if statistic == "median" else statistics.fmean(values)
        result, _ = Result.objects.update_or_create(
            **entry,
            defaults={
                "value": value,
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "median": statistics.median(values),
                "n_seeds": len(values),
                "source": f"job #{finetune.pk} ({statistic} of {len(values)} {unit})",
                "job": finetune,
                "provenance": provenance,
                "inference_per_s": _inference_per_s(test_runs),
                "preview": preview,
            },
        )
        if resampled is not None:
            store_result_resamples(result, *resampled)
        else:  # new predictions that cannot be resampled must not leave an old vector standing in for them
            ResultResamples.objects.filter(result=result).delete()
    return result


def outcome(aggregate: Job, result: Result | None) -> str:
    """What :func:`record` did, in words, for the aggregate job's log."""
    if result is None:
        return "recorded no result (metric undefined)"
    if aggregate.spec.get("preview") and not result.preview:
        return f"quick preview not recorded: the full-protocol result {result} stands (a preview never replaces it)"
    return f"recorded {result}" + (" (quick preview: one grid point, one seed; not ranked)" if result.preview else "")


def _inference_per_s(test_runs: list[dict]) -> float | None:
    """Median test-set throughput of the runs, examples per second (from each run's latency per example)."""
    rates = []
    for run in test_runs:
        latency = ((run.get("inference") or {}).get("test") or {}).get("latency_ms_per_example")
        if isinstance(latency, int | float) and latency > 0:
            rates.append(1000.0 / latency)
    return statistics.median(rates) if rates else None


def _resampled(finetune: Job, results: dict, metric: str) -> tuple[str, np.ndarray] | None:
    """The result's value on each shared bootstrap resample of the test examples, for honest ranks.

    Scored from the stored per-example predictions with the dataset's real metric
    (:mod:`workers.engine.bootstrap`). Without predictions there is nothing to resample: the
    result is then ranked by its point score, and says so.
    """
    if not results.get("predictions"):
        return None
    from registry.sync import load_contributions
    from workers.engine.bootstrap import resampled_values  # torch: only on the worker that records

    dataset = finetune.dataset
    spec = load_contributions().datasets[dataset.slug]
    withheld_gold = bool(((results.get("spec") or {}).get("data") or {}).get("test_gold_withheld"))
    if "cross_validation" in results:
        folds = [int(fold) for fold in results["cross_validation"].get("reported_folds", [])]
        gold = {fold: exports.loaded_fold(dataset, spec, fold, withheld=False) for fold in folds}
        seen = (
            {fold: exports.loaded_fold(dataset, spec, fold, withheld=True) for fold in folds} if withheld_gold else gold
        )
    else:
        gold = exports.loaded(dataset, spec, withheld=False)
        seen = exports.loaded(dataset, spec, withheld=True) if withheld_gold else gold
    started = time.perf_counter()
    with completion.model_files(finetune) as tokenizer_dir:
        try:
            vector = resampled_values(results, tokenizer_dir, seen, gold, metric, dataset.slug)
        except ValueError as exc:
            raise RecordingError(f"job #{finetune.pk}: its test predictions cannot be resampled: {exc}") from None
    logger.info("job #%s: %d bootstrap resamples of %s in %.1f s", finetune.pk, len(vector), dataset.slug,
                time.perf_counter() - started)  # fmt: skip
    return dataset.slug, vector


def _values(test_runs: list[dict], job_id: int, metric: str) -> list[float]:
    """One value per seed, or under cross-validation one per fold: the median of its seeds, as the engine reports."""
    by_fold: dict[object, list[float]] = {}
    for run in test_runs:
        value = _finite(run["metrics"]["test"].get(metric), job_id, metric)
        if value is not None:
            by_fold.setdefault(run.get("fold", ("seed", run["seed"])), []).append(value)
    return [statistics.median(values) for values in by_fold.values()]


def _score_on_platform(finetune: Job, results: dict) -> None:
    """Fill each run's test metrics by scoring its predictions against the gold only the platform holds."""
    from registry.sync import load_contributions
    from workers.engine.finetune import fold_run_key  # torch: only on the worker that records
    from workers.engine.withheld import score_withheld

    spec = load_contributions().datasets[finetune.dataset.slug]
    if "cross_validation" in results:
        folds = sorted({int(run["fold"]) for run in results["runs"] if "fold" in run})
        copies = {
            fold: (
                exports.loaded_fold(finetune.dataset, spec, fold, withheld=True),
                exports.loaded_fold(finetune.dataset, spec, fold, withheld=False),
                {fold_run_key(fold, run["seed"]) for run in results["runs"] if run.get("fold") == fold},
            )
            for fold in folds
        }
    else:
        copies = {None: (exports.loaded(finetune.dataset, spec, withheld=True),
                         exports.loaded(finetune.dataset, spec, withheld=False), None)}  # fmt: skip
    scored = {}
    with completion.model_files(finetune) as tokenizer_dir:
        for fold, (withheld, gold, keys) in copies.items():
            try:
                scored.update(score_withheld(results, tokenizer_dir, withheld, gold, keys))
            except ValueError as exc:
                where = f" (fold {fold})" if fold is not None else ""
                raise RecordingError(
                    f"job #{finetune.pk}: its test predictions cannot be scored{where}: {exc}"
                ) from None
    for run in results["runs"]:
        key = fold_run_key(run["fold"], run["seed"]) if "fold" in run else str(run["seed"])
        if key in scored:
            run.setdefault("metrics", {})["test"] = scored[key]


def _finite(value, job_id: int, metric: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise RecordingError(f"job #{job_id}: test {metric} is {value!r}, not a finite number")
    return float(value)
