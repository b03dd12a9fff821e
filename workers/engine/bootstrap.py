"""A fine-tuning job's dataset value on each bootstrap resample of the test examples, scored by the real metric.

Honest ranks (:mod:`biolm.significance`) compare models on the same resamples of each dataset's
test examples. This module turns one job's stored per-example test predictions (its
``results.json``) into that job's vector: on resample ``r``, every run's predictions are scored
as the formulation's own ``score`` would score the resampled rows (rebuilt exactly as the
platform rebuilds it to score withheld predictions, :func:`workers.engine.withheld.gold_scoring`),
and the runs are combined as the recorded value combines them (:func:`biolm.protocols.combine`). So
resample ``r`` is "what the leaderboard would show had the test set been resample ``r``", with no
second implementation of any metric to drift from the first.

Scoring a thousand resamples by calling ``score`` a thousand times costs minutes on a real test
set (BC5-chem: 4,797 sentences, about 9 CPU-minutes per 5-seed result), so each run is scored
once, on all its rows, with the metric spec's implementation wrapped to see exactly the gold,
predictions and options the formulation hands it. Then:

* a metric that decomposes (entity, relation and micro F1, precision, recall, accuracy, macro and
  token macro F1, HoC's micro F1, exact match, SQuAD F1, BioASQ's strict and lenient accuracy and
  MRR; marked with :func:`workers.engine.metrics.common.decomposes`) returns its per-example (per
  factoid question) sufficient statistics, computed by the metric module's own counting function,
  the one whose summed rows give the metric's value. Resample ``r`` drawing example ``i``
  ``counts[r, i]`` times scores ``value(counts @ statistics)``: the same formula on the same sums,
  so the same number (exactly, for counts; to rounding, 1e-12, where question scores are fractions
  or macro F1 averages the classes a resample saw);
* a metric that does not (Pearson, ROC AUC; marked with
  :func:`~workers.engine.metrics.common.vectorised`) is computed on all resamples at once by its
  module's row-wise form, undefined exactly where the metric raises;
* anything else (a plugin's metric, BLUE's HoC F1, a formulation whose metric inputs are not one
  item per resampled unit) is scored resample by resample with ``score``, as before.

Each fast run is first checked against ``score`` on a small resample of its own (64 units); a
mismatch falls back to the exact path for that run (and is logged), so a formulation whose
metric inputs the shortcut misreads cannot change a rank. ``exact=True`` forces the exact path:
the reference the fast path is tested against.

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
import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from biolm.contract import ResultsDocument, parse_run_key
from biolm.dataset_io import LoadedDataset
from biolm.protocols import STATISTICS, RunValue, combine
from biolm.significance import RESAMPLES, resample_indices
from workers.engine.formulations.extractive_qa import ExtractiveQA, question_key
from workers.engine.metrics.common import Sufficient
from workers.engine.withheld import GoldScoring, gold_scoring

Data = LoadedDataset | Mapping[int, LoadedDataset]
logger = logging.getLogger(__name__)


def resampled_values(
    results: ResultsDocument,
    tokenizer_dir: Path,
    withheld: Data,
    gold: Data,
    metric: str,
    dataset_key: str,
    resamples: int = RESAMPLES,
    progress: Callable[[int, int], None] | None = None,
    exact: bool = False,
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
    together. ``progress(done, total)`` is called after each resample of each fold. ``exact``
    scores every resample with the formulation's ``score`` (the reference path; see the module).
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
        values.append(_resampled_runs(scoring, results, run_keys, metric, key, resamples, tick, exact))
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
    exact: bool = False,
) -> np.ndarray:
    """``(runs, resamples)``: each run's ``metric`` on each resample of ``scoring``'s rows, NaN where undefined.

    Runs the fast paths can score are scored all at once; the others resample by resample.
    """
    inputs = [scoring.run_inputs(results, run) for run in run_keys]
    units = _units(scoring)
    count = len(scoring.rows) if units is None else len(units)
    indices = resample_indices(key, count, resamples)
    values = np.full((len(run_keys), resamples), np.nan)
    plans = [None] * len(run_keys) if exact else [_fast_plan(scoring, metric, *run, indices, units) for run in inputs]
    slow = [n for n, plan in enumerate(plans) if plan is None]
    for n, plan in enumerate(plans):
        if isinstance(plan, np.ndarray):
            values[n] = plan
    _sum_statistics(values, indices, {n: plan for n, plan in enumerate(plans) if isinstance(plan, Sufficient)})
    for r, drawn in enumerate(indices):
        for n in slow:
            values[n, r] = _score_resample(scoring, metric, *inputs[n], units, drawn)
        tick()
    return values


def _score_resample(
    scoring: GoldScoring, metric: str, predicted: list, logits: list, units: list[list[int]] | None, drawn: np.ndarray
) -> float:
    """One run's ``metric`` on one resample, by the formulation's ``score`` on the resampled rows; NaN if undefined."""
    picked, rows = _drawn(scoring.rows, units, drawn)
    scored = scoring.formulation.score(
        rows, [predicted[i] for i in picked], [logits[i] for i in picked] if logits else []
    )
    return np.nan if scored[metric] is None else scored[metric]


class _Capture:
    """A metric's implementation that records the inputs ``score`` hands it, and its statistics when it decomposes."""

    def __init__(self, function: Callable[..., float]) -> None:
        self.function = function
        self.inputs: tuple[Any, Any, dict, Sufficient | None] | None = None

    def __call__(self, gold: Any, pred: Any, **options: Any) -> float:
        self.inputs = (gold, pred, options, None)
        statistics = getattr(self.function, "sufficient_statistics", None)
        sufficient = statistics(gold, pred, **options) if statistics is not None else None
        if sufficient is None:
            return self.function(gold, pred, **options)
        self.inputs = (gold, pred, options, sufficient)
        return sufficient.total()  # the metric's own value, computed as the metric computes it


def _capture(scoring: GoldScoring, metric: str, predicted: list, logits: list) -> _Capture | None:
    """``score`` all rows once with ``metric``'s implementation wrapped; None when ``score`` never reached it.

    The formulation is copied with its task's metric spec replaced, never changed.
    """
    formulation = scoring.formulation
    task = formulation.task
    spec = task.metric(metric)
    capture = _Capture(spec.resolve())
    wrapped = copy.copy(formulation)
    metrics = {**task.metrics, metric: dataclasses.replace(spec, implementation=capture)}
    wrapped.task = dataclasses.replace(task, metrics=metrics)
    try:
        wrapped.score(scoring.rows, predicted, logits)
    except ValueError:  # a formulation that refuses the whole split: the exact path says what it does per resample
        return None
    return capture if capture.inputs is not None else None


def _fast_plan(
    scoring: GoldScoring,
    metric: str,
    predicted: list,
    logits: list,
    indices: np.ndarray,
    units: list[list[int]] | None,
) -> Sufficient | np.ndarray | None:
    """How to score one run without ``score`` per resample: its statistics, its values, or None (no shortcut).

    A decomposable metric gives its :class:`Sufficient` (summed over the draws by
    :func:`_sum_statistics`); a vectorised one its ``(resamples,)`` values at once. The metric's
    inputs must be one item per resampled unit (row, or factoid question) for the draws to index
    them: :func:`_checked` makes sure of it first.
    """
    capture = _capture(scoring, metric, predicted, logits)
    if capture is None:
        return None
    gold, pred, options, sufficient = capture.inputs
    if len(gold) != indices.shape[1] or (sufficient is None and not hasattr(capture.function, "resampled")):
        return None

    def values(drawn: np.ndarray, drawn_counts: np.ndarray) -> np.ndarray:
        if sufficient is not None:
            return sufficient.resampled(drawn_counts)
        return np.asarray(capture.function.resampled(gold, pred, drawn, **options), dtype=np.float64)

    try:
        if not _checked(scoring, metric, predicted, logits, units, values):
            return None
        return sufficient if sufficient is not None else values(indices, np.empty(0))
    except ValueError:  # undefined for all the examples in a way the metric decides per resample: score each
        return None


COUNT_BLOCK = 128  # resamples whose draw counts are held at once: 128 x test examples floats


def _sum_statistics(values: np.ndarray, indices: np.ndarray, statistics: dict[int, Sufficient]) -> None:
    """Fill ``values[n]`` with run ``n``'s metric on every resample, from its summed statistics.

    The draw counts are built a block of resamples at a time and shared by every run, so memory
    stays ``COUNT_BLOCK x examples`` however large the test set.
    """
    if not statistics:
        return
    for start in range(0, indices.shape[0], COUNT_BLOCK):
        block = _draw_counts(indices[start : start + COUNT_BLOCK])
        for n, sufficient in statistics.items():
            values[n, start : start + len(block)] = sufficient.resampled(block)


CHECK_UNITS = 64  # units of the check resample: a shortcut that reads other inputs than score() shows up at once


def _checked(
    scoring: GoldScoring,
    metric: str,
    predicted: list,
    logits: list,
    units: list[list[int]] | None,
    values: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> bool:
    """Whether the shortcut gives ``score``'s value on a small resample of its own (drawn with a fixed seed).

    A formulation whose metric inputs are not one item per unit in unit order (a plugin's, say)
    would disagree here, and its run is then scored resample by resample instead (logged).
    """
    count = len(scoring.rows) if units is None else len(units)
    drawn = resample_indices("bootstrap-check", count, 1)[:, :CHECK_UNITS]
    fast = float(values(drawn, np.bincount(drawn[0], minlength=count)[None].astype(np.float64))[0])
    exact = _score_resample(scoring, metric, predicted, logits, units, drawn[0])
    if _agree(fast, exact):
        return True
    logger.warning("metric %s: the fast bootstrap gives %r where score() gives %r; scoring each resample", metric,
                   fast, exact)  # fmt: skip
    return False


def _draw_counts(indices: np.ndarray) -> np.ndarray:
    """``(resamples, units)`` float64: how many times each resample drew each unit (``np.bincount`` per row)."""
    resamples, units = indices.shape
    offsets = (np.arange(resamples, dtype=np.int64) * units)[:, None]
    counts = np.bincount((indices + offsets).ravel(), minlength=resamples * units)
    return counts.reshape(resamples, units).astype(np.float64)


def _agree(fast: float, exact: float) -> bool:
    """Both undefined, or equal to rounding (1e-9 on the 0-100 scale)."""
    if math.isnan(fast) or math.isnan(exact):
        return math.isnan(fast) and math.isnan(exact)
    return abs(fast - exact) <= 1e-9


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
