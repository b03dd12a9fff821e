"""A protocol's runs on one dataset, in one process or cut into slices that run apart on other workers.

Gu et al. 2021's protocol trains each grid point on dev with the first seed, then the other seeds at
the best point. Lewis et al. 2020's cross-validation chooses the point, and the stopping step, on the
first fold's test and reports the other folds. :func:`run_whole` runs all of it in one process, as a
job always did. Cut into slices (``--slice``), each grid point, each further seed and each reported
fold can run on a worker of its own:

* ``point:K``: grid point K with the first seed (on the selecting fold, with folds);
* ``select``: the point chosen from every point's slice, and with folds the stopping step;
* ``seed:K``: the chosen point with the K-th seed, K >= 1 (the first seed's run is the point's own);
* ``fold:F``: the chosen point on reported fold F, with every seed;
* ``gather``: the results document, from every slice.

Each slice writes ``slice.json`` to ``--out`` (the gather: ``results.json``) and reads the earlier
slices' documents from ``--slices DIR`` as ``point-K.json``, ``select.json``, ``seed-K.json`` and
``fold-F.json``. Both ways the same functions choose the point and build the document from the same
runs, so a sliced protocol's results are the unsliced one's: the same runs, the same selection, the
same :func:`biolm.protocols.combine`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from biolm.contract import ResultsDocument, RunRecord, run_key
from biolm.cross_validation import fold_directories
from biolm.protocols import Hyperparameters, Plan, RunValue, combine
from workers.engine import efficiency
from workers.engine.run_settings import FinetuneSpec
from workers.engine.runs import (
    Prepared,
    Runner,
    RunResult,
    data_directory,
    job_plan,
    load_task,
    parameter_count,
    prepare,
    resolve_device,
    resolve_dtype,
    score_or_lowest,
)
from workers.engine.task import Task


@dataclass
class Setting:
    """What a slice's runs were trained under, kept with them so that the gather needs neither model nor data."""

    model: str
    formulation: dict
    parameters: int
    provenance: dict
    run: dict  # the invocation's settings that the results name (batch size for predictions, data format)
    peak_memory_bytes: int
    data: dict  # the data's fingerprint, sizes and notes, and whether it has a dev split (or a fold's record)
    reused: int = 0


@dataclass
class Context:
    """The job's spec, task, plan and seeds, and the device its runs train on."""

    spec: FinetuneSpec
    task: Task
    plan: Plan
    seeds: list[int]
    device: torch.device
    dtype: torch.dtype | None

    @classmethod
    def of(cls, spec: FinetuneSpec) -> Context:
        device = resolve_device(spec.run.device)
        _, contributions, task = load_task(spec)
        plan = job_plan(spec, contributions, task)
        seeds = [spec.first_seed + i for i in range(plan.seeds)]
        return cls(spec, task, plan, seeds, device, resolve_dtype(spec.precision, device))

    @property
    def metric(self) -> str:
        return self.spec.job.metric


def run_whole(context: Context, runner: Runner) -> dict:
    """The whole protocol in this process: the results document, as JSON."""
    if context.plan.cross_validation:
        return _cross_validate(context, runner)
    return _dev_then_test(context, runner)


def setting_of(context: Context, prepared: Prepared, runner: Runner, data: dict) -> Setting:
    spec = context.spec
    return Setting(
        model=spec.model.name,
        formulation=prepared.formulation.describe(),
        parameters=parameter_count(prepared.formulation, prepared.source),
        provenance=efficiency.provenance(context.device, context.dtype, context.seeds, prepared.plugins),
        run={"eval_batch_size": spec.run.eval_batch_size, "data_format": spec.data.data_format},
        peak_memory_bytes=efficiency.peak_memory_bytes(context.device),
        data=data,
        reused=runner.reused,
    )


def data_record(prepared: Prepared) -> dict:
    data = prepared.data
    return {"fingerprint": data.fingerprint, "sizes": data.sizes, "notes": list(data.notes),
            "has_dev": "dev" in prepared.features}  # fmt: skip


def fold_record(prepared: Prepared, directory: Path, role: str) -> dict:
    data = prepared.data
    return {"directory": str(directory), "role": role, "fingerprint": data.fingerprint, "sizes": data.sizes}


# Gu et al. 2021: each point on dev with the first seed, then the other seeds at the best point.


def point_on_dev(context: Context, runner: Runner, prepared: Prepared, index: int) -> RunResult:
    hp = context.plan.points[index]
    return runner.run(prepared, hp, context.seeds[0], f"dev {hp.key()}", ("dev", context.metric))


def seed_on_test(context: Context, runner: Runner, prepared: Prepared, chosen: Hyperparameters, seed: int):
    return runner.run(prepared, chosen, seed, f"seed {seed}", ("dev", context.metric))


def choose_on_dev(search: list[RunResult], metric: str) -> int:
    """The index of the point whose dev score is best (the first point where no run has a dev split)."""
    scored = [index for index, run in enumerate(search) if "dev" in run.metrics]
    if not scored:
        return 0
    return max(scored, key=lambda index: score_or_lowest(search[index].metrics["dev"].get(metric)))


def _dev_then_test(context: Context, runner: Runner) -> dict:
    spec, plan, seeds = context.spec, context.plan, context.seeds
    prepared = prepare(spec, weights=runner.weights)
    runner.planned = len(plan.points) + len(seeds) - 1  # each point on dev, then the other seeds
    search = [point_on_dev(context, runner, prepared, index) for index in range(len(plan.points))]
    best = search[choose_on_dev(search, context.metric)]
    chosen = Hyperparameters(**best.hyperparameters)
    runs = [best, *(seed_on_test(context, runner, prepared, chosen, seed) for seed in seeds[1:])]
    setting = setting_of(context, prepared, runner, data_record(prepared))
    return results_document(context, setting, dev_then_test_body(context, setting, search, runs), [*search, *runs[1:]])


def dev_then_test_body(context: Context, setting: Setting, search: list[RunResult], runs: list[RunResult]) -> dict:
    """The document's protocol part: ``runs[0]`` is the chosen point's own run."""
    spec = context.spec
    chosen = Hyperparameters(**runs[0].hyperparameters)
    record = setting.data
    notes = list(record["notes"])
    if chosen.selects_checkpoint and not record["has_dev"]:
        notes.append("no dev split: each run keeps its final checkpoint")
    data = {"fingerprint": record["fingerprint"], "sizes": record["sizes"], "notes": notes}
    return {
        "chosen_hyperparameters": asdict(chosen),
        "selection": [_selection_record(r, "dev") for r in search],
        "runs": runs,
        **_predictions(spec, runs),
        "data": {**data, "test_gold_withheld": spec.data.test_gold_withheld},
    }


# Lewis et al. 2020: point and stopping step chosen on the first fold's test, reported on the others.


@dataclass
class Folds:
    """Where a job's folds are, and which one selects."""

    root: Path
    directories: dict[int, Path]

    @classmethod
    def of(cls, context: Context) -> Folds:
        spec = context.spec
        canonical = spec.data.data_format == "canonical"
        folds = context.task.dataset.adapter.cross_validation
        root = spec.data.data_dir / "folds" if canonical else spec.data.data_dir or data_directory(folds.default_path)
        return cls(root, fold_directories(context.task.dataset, root, canonical=canonical))

    @property
    def first(self) -> int:
        return next(iter(self.directories))

    @property
    def others(self) -> list[int]:
        return list(self.directories)[1:]


def selecting_fold(context: Context, runner: Runner, folds: Folds) -> Prepared:
    """The first fold, whose test plays dev: the platform sends its gold, so it is scored here."""
    prepared = prepare(context.spec, fold=folds.directories[folds.first], weights=runner.weights)
    return dataclasses.replace(prepared, test_gold_withheld=False)


def point_on_first_fold(context: Context, runner: Runner, selecting: Prepared, folds: Folds, index: int):
    hp = context.plan.points[index]
    label = f"fold {folds.first} {hp.key()}"
    return runner.run(selecting, hp, context.seeds[0], label, ("test", context.metric), ("test",))


def choose_on_first_fold(search: list[RunResult], metric: str) -> tuple[int, Hyperparameters]:
    """The best point's index, and its hyperparameters fixed at its best step for the reported folds."""
    index = max(range(len(search)), key=lambda i: score_or_lowest(search[i].metrics["test"].get(metric)))
    best = search[index]
    chosen = Hyperparameters(**best.hyperparameters)
    return index, chosen.without_selection(best.train["best_step"] if chosen.selects_checkpoint else None)


def fold_runs(context: Context, runner: Runner, prepared: Prepared, fixed: Hyperparameters, fold: int):
    select = ("test", context.metric)
    runs = [runner.run(prepared, fixed, seed, f"fold {fold} seed {seed}", select, ("test",)) for seed in context.seeds]
    for run in runs:
        run.fold = fold
    return runs


def _cross_validate(context: Context, runner: Runner) -> dict:
    """Every fold in turn, each fold's data freed before the next one's is read."""
    plan, folds = context.plan, Folds.of(context)
    runner.planned = len(plan.points) + len(folds.others) * len(context.seeds)
    selecting = selecting_fold(context, runner, folds)
    search = [point_on_first_fold(context, runner, selecting, folds, i) for i in range(len(plan.points))]
    _, fixed = choose_on_first_fold(search, context.metric)
    records = {folds.first: fold_record(selecting, folds.directories[folds.first], "selection")}
    notes, prepared, runs = list(selecting.data.notes), selecting, []
    for fold in folds.others:
        prepared = prepare(context.spec, fold=folds.directories[fold], weights=runner.weights)
        records[fold] = fold_record(prepared, folds.directories[fold], "reported")
        runs += fold_runs(context, runner, prepared, fixed, fold)
    setting = setting_of(context, prepared, runner, {"notes": notes})
    body = cross_validation_body(context, folds, search, fixed, runs, records, notes)
    return results_document(context, setting, body, [*search, *runs])


def cross_validation_body(context: Context, folds: Folds, search: list[RunResult], fixed: Hyperparameters,
                           runs: list[RunResult], records: dict[int, dict], notes: list[str]) -> dict:  # fmt: skip
    per_fold = {}
    for fold in folds.others:
        value = combine(_values([run for run in runs if run.fold == fold], context.metric), "median")
        per_fold[fold] = value.value if value else None
    spec = context.spec
    return {
        "chosen_hyperparameters": asdict(fixed),
        "selection": [{**_selection_record(r, "test"), "fold": folds.first} for r in search],
        "cross_validation": {
            "folds": len(folds.directories),
            "selection_fold": folds.first,
            "reported_folds": folds.others,
            "per_fold": {str(fold): value for fold, value in per_fold.items()},
            "root": str(folds.root),
        },
        "runs": runs,
        **_predictions(spec, runs),
        "data": {
            "folds": {str(fold): record for fold, record in records.items()},
            "notes": notes,
            "test_gold_withheld": spec.data.test_gold_withheld,
        },
    }


# The results document, from the runs and the setting they were trained under.


def results_document(context: Context, setting: Setting, body: dict, trained: list[RunResult]) -> dict:
    spec, plan = context.spec, context.plan
    runs: list[RunResult] = body.pop("runs")
    summary = combine(_values(runs, spec.job.metric), plan.statistic)
    document = ResultsDocument(
        spec=spec.job,
        dataset=context.task.dataset.slug,
        metric=spec.job.metric,
        task_type=context.task.task_type.slug,
        model=setting.model,
        benchmark=spec.job.benchmark,
        protocol=plan.describe(),
        formulation=setting.formulation,
        runs=[_run_record(run) for run in runs],
        test=summary.as_json() if summary else None,
        reported={"statistic": plan.statistic, "value": summary.value if summary else None},
        efficiency=efficiency.summary(runs, setting.parameters, setting.peak_memory_bytes, trained),
        provenance={
            **setting.provenance,
            "reused_runs": setting.reused,
            "run": setting.run,
        },
        **body,
    )
    return document.to_json()


def _values(runs: list[RunResult], metric: str) -> list[RunValue]:
    """Each run's test value of ``metric`` (runs without one left out), as :func:`biolm.protocols.combine` reads."""
    return [
        RunValue(run.fold, run.seed, run.metrics["test"][metric])
        for run in runs
        if run.metrics.get("test", {}).get(metric) is not None
    ]


def _predictions(spec: FinetuneSpec, runs: list[RunResult]) -> dict:
    """The runs' test and dev predictions keyed by run, and their per-example test scores when the test gold was
    withheld (the dev split's gold is never withheld: a reader compares the dev predictions with it)."""
    body: dict = {"predictions": {run_key(r.fold, r.seed): r.predictions.get("test") for r in runs},
                  "dev_predictions": {run_key(r.fold, r.seed): r.predictions.get("dev") for r in runs}}  # fmt: skip
    if spec.data.test_gold_withheld:
        body["test_scores"] = {run_key(r.fold, r.seed): r.scores.get("test") for r in runs}
    return body


def _selection_record(run: RunResult, split: str) -> dict:
    return {
        "hyperparameters": run.hyperparameters,
        split: run.metrics.get(split, {}),
        "evaluations": run.train.get("evaluations", []),
        "best_step": run.train.get("best_step"),
    }


def _run_record(run: RunResult) -> RunRecord:
    return RunRecord(seed=run.seed, fold=run.fold, hyperparameters=run.hyperparameters, metrics=run.metrics,
                     train=run.train, inference=run.inference)  # fmt: skip
