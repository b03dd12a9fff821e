"""A fine-tuning job's dataset value on each bootstrap resample of the test examples, scored by the real metric.

Honest ranks (:mod:`biolm.significance`) compare models on the same resamples of each dataset's
test examples. This module turns one job's stored per-example test predictions (its
``results.json``) into that job's vector: on resample ``r``, every run's predictions are scored
on the resampled rows by the formulation's own ``score`` (rebuilt exactly as the platform
rebuilds it to score withheld predictions, :func:`workers.engine.withheld.gold_scoring`), and the
runs are combined as :mod:`jobs.recording` combines them into the recorded value. So resample
``r`` is "what the leaderboard would show had the test set been resample ``r``", with no second
implementation of any metric to drift from the first.

Combining the runs, per resample, is the recorded value's own computation,
:func:`biolm.protocols.combine` with the protocol's statistic: seeds within a fold, then folds. A
run whose metric is undefined on a resample (its ``ValueError``: AUC with one class drawn, Pearson
of constant gold) is left out of that resample, as the recording leaves out a run without a
value; a resample on which no run has a value is NaN, which the ranking counts as evidence for no
one.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from biolm.contract import ResultsDocument, parse_run_key
from biolm.dataset_io import LoadedDataset
from biolm.protocols import STATISTICS, RunValue, combine
from biolm.significance import RESAMPLES, resample_indices
from workers.engine.formulations.extractive_qa import ExtractiveQA, question_key
from workers.engine.withheld import GoldScoring, gold_scoring

Data = LoadedDataset | Mapping[int, LoadedDataset]


def resampled_values(
    results: ResultsDocument,
    tokenizer_dir: Path,
    withheld: Data,
    gold: Data,
    metric: str,
    dataset_key: str,
    resamples: int = RESAMPLES,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """The job's ``metric`` on each of the dataset's shared test resamples: ``(resamples,)``, NaN where undefined.

    ``withheld`` is the copy of the data the worker read (the gold copy itself when the job saw
    the gold), ``gold`` the same examples with their real labels: both as for
    :func:`~workers.engine.withheld.score_withheld`. Under cross-validation (``results.on_folds``)
    each reported fold has its own test examples, so both are mappings
    ``{fold number: that fold's data}``, and fold ``k`` is resampled under the key
    ``f"{dataset_key}/fold{k}"``. ``dataset_key`` names the dataset's test split for
    :func:`~biolm.significance.resample_indices`: every model scored under the same key is scored
    on the same resamples. The unit resampled is what the metric averages over: a test row, except
    for BioASQ-style factoid QA, which scores questions, where a question's snippets are drawn
    together. ``progress(done, total)`` is called after each resample of each fold.
    """
    statistic = results.statistic
    if statistic not in STATISTICS:
        raise ValueError(f"the protocol's statistic {statistic!r} is not one of {', '.join(STATISTICS)}")
    predictions = results.predictions
    if not predictions:
        raise ValueError("the results hold no test predictions to resample")
    parts = split_parts(results, predictions, withheld, gold, dataset_key)
    total, done = resamples * len(parts), 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    keys: list[str] = []
    values: list[np.ndarray] = []
    for key, withheld_copy, gold_copy, run_keys in parts:
        scoring = _scoring_only(gold_scoring(results, tokenizer_dir, withheld_copy, gold_copy), metric)
        values.append(_resampled_runs(scoring, results, run_keys, metric, key, resamples, tick))
        keys += run_keys
    return _combine(keys, np.concatenate(values), statistic, resamples)


def split_parts(
    results: ResultsDocument, predictions: Mapping[str, object], withheld: Data, gold: Data, dataset_key: str
) -> list[tuple[str, LoadedDataset, LoadedDataset, list[str]]]:
    """``(resampling key, withheld copy, gold copy, run keys)`` per test split the runs predicted."""
    if not results.on_folds:
        if isinstance(withheld, Mapping) or isinstance(gold, Mapping):
            raise ValueError("without cross-validation, give one copy of the data, not one per fold")
        return [(dataset_key, withheld, gold, sorted(predictions))]
    if not isinstance(withheld, Mapping) or not isinstance(gold, Mapping):
        raise ValueError("under cross-validation, give the data as {fold number: that fold's data}")
    folds: dict[int, list[str]] = {}
    for key in predictions:
        fold, _ = parse_run_key(key)
        if fold is None:
            raise ValueError(f"the cross-validation run {key!r} is not keyed fold<k>-seed<s>")
        folds.setdefault(fold, []).append(key)
    missing = sorted(fold for fold in folds if fold not in withheld or fold not in gold)
    if missing:
        raise ValueError(f"no data given for fold(s) {', '.join(map(str, missing))}, which the runs predicted")
    return [
        (f"{dataset_key}/fold{fold}", withheld[fold], gold[fold], sorted(keys)) for fold, keys in sorted(folds.items())
    ]


def _scoring_only(scoring: GoldScoring, metric: str) -> GoldScoring:
    """The same scoring computing ``metric`` alone (and the dataset's own metric, which always comes first).

    A formulation scores the dataset's metric and its companions; each is computed independently
    of the others, so leaving the companions out changes no value and saves most of the time a
    thousand resamples take. The formulation is copied, never changed.
    """
    task = scoring.formulation.task
    if metric not in task.metric_slugs:
        raise ValueError(f"the job scored {', '.join(task.metric_slugs)}, not {metric!r}")
    dataset = task.dataset
    only = dataclasses.replace(dataset, companion_metrics=() if metric == dataset.metric else (metric,))
    formulation = copy.copy(scoring.formulation)
    formulation.task = dataclasses.replace(task, dataset=only)
    return dataclasses.replace(scoring, formulation=formulation)


def _resampled_runs(
    scoring: GoldScoring,
    results: ResultsDocument,
    run_keys: list[str],
    metric: str,
    key: str,
    resamples: int,
    tick: Callable[[], None],
) -> np.ndarray:
    """``(runs, resamples)``: each run's ``metric`` on each resample of ``scoring``'s rows, NaN where undefined."""
    inputs = [scoring.run_inputs(results, run) for run in run_keys]
    units = _units(scoring)
    values = np.full((len(run_keys), resamples), np.nan)
    count = len(scoring.rows) if units is None else len(units)
    for r, drawn in enumerate(resample_indices(key, count, resamples)):
        picked, rows = _drawn(scoring.rows, units, drawn)
        for n, (predicted, logits) in enumerate(inputs):
            scored = scoring.formulation.score(
                rows, [predicted[i] for i in picked], [logits[i] for i in picked] if logits else []
            )
            if scored[metric] is not None:
                values[n, r] = scored[metric]
        tick()
    return values


def _units(scoring: GoldScoring) -> list[list[int]] | None:
    """Row indices per resampled unit: None when each row is one (all but factoid QA, which scores questions)."""
    formulation = scoring.formulation
    if not (isinstance(formulation, ExtractiveQA) and formulation.factoid):
        return None
    questions: dict[str, list[int]] = {}
    for index, row in enumerate(scoring.rows):
        questions.setdefault(question_key(row["id"]), []).append(index)
    return list(questions.values())


def _drawn(rows: list[dict], units: list[list[int]] | None, drawn: np.ndarray) -> tuple[list[int], list[dict]]:
    """The row indices and rows of one resample.

    A question drawn twice must count twice, but factoid scoring merges rows by question id, so
    each draw of a question gets its own id (``<question>~<draw>`` keeps its snippet suffix).
    """
    if units is None:
        picked = drawn.tolist()
        return picked, [rows[i] for i in picked]
    picked, chosen = [], []
    for draw, unit in enumerate(drawn.tolist()):
        for index in units[unit]:
            row = rows[index]
            question = question_key(row["id"])
            picked.append(index)
            chosen.append({**row, "id": f"{question}~{draw}{row['id'][len(question) :]}"})
    return picked, chosen


def _combine(keys: list[str], values: np.ndarray, statistic: str, resamples: int) -> np.ndarray:
    """Per resample, the runs' defined values combined as the recorded value is (:func:`biolm.protocols.combine`)."""
    runs = [parse_run_key(key) for key in keys]
    combined = np.full(resamples, np.nan)
    for r in range(resamples):
        defined = [RunValue(fold, seed, float(v)) for (fold, seed), v in zip(runs, values[:, r], strict=True)]
        summary = combine([run for run in defined if not math.isnan(run.value)], statistic)
        if summary is not None:
            combined[r] = summary.value
    return combined
