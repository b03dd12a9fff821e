"""A protocol's slices (:mod:`workers.engine.protocol`): each one's runs, and the documents that carry them.

A slice's document holds its runs as the unsliced job holds them in memory, with the setting they
were trained under (the formulation, the parameter count, the data's record, the provenance) and a
digest of the job's spec, so that a slice of another job, or of an edited one, is refused rather
than mixed in. The selection and the gather read documents only: they need neither the model nor the
data, and train nothing.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from biolm.contract import SLICE_FILE, Slice
from biolm.contract.slices import planned
from biolm.protocols import Hyperparameters
from workers.engine.protocol import (
    Context,
    Folds,
    Setting,
    choose_on_dev,
    choose_on_first_fold,
    cross_validation_body,
    data_record,
    dev_then_test_body,
    fold_record,
    fold_runs,
    point_on_dev,
    point_on_first_fold,
    results_document,
    seed_on_test,
    selecting_fold,
    setting_of,
)
from workers.engine.runs import Runner, RunResult, prepare

SLICE_VERSION = 1


def job_digest(context: Context) -> str:
    """What the slices of one job share: its spec less the slice, not where its files are on a host."""
    return context.spec.job.whole_digest()


def planned_slices(context: Context) -> list[Slice]:
    """Every slice of the job's protocol, in an order that runs each after those it reads."""
    folds = list(Folds.of(context).directories) if context.plan.cross_validation else []
    return planned(len(context.plan.points), len(context.seeds), folds)


def run_slice(context: Context, runner: Runner, part: Slice, slices: Path | None) -> tuple[dict, str]:
    """Run ``part``: its document and the file name it goes under in ``--out``."""
    if part.part != "point" and slices is None:
        raise ValueError(f"--slice {part} reads the earlier slices' documents: give their folder with --slices")
    if part.part == "point":
        return _point(context, runner, part.index), SLICE_FILE
    if part.part == "select":
        return _select(context, slices), SLICE_FILE
    if part.part == "seed":
        return _seed(context, runner, part.index, slices), SLICE_FILE
    if part.part == "fold":
        return _fold(context, runner, part.index, slices), SLICE_FILE
    return gather(context, slices), "results.json"


def slice_document(context: Context, part: Slice, setting: Setting, runs: list[RunResult]) -> dict:
    return {"version": SLICE_VERSION, "slice": str(part), "job": job_digest(context), "setting": asdict(setting),
            "runs": [asdict(run) for run in runs]}  # fmt: skip


def read(context: Context, slices: Path, part: Slice) -> dict:
    """The document of ``part`` in ``slices``, refused when it is missing, unreadable or another job's."""
    path = slices / f"{part.name}.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: run --slice {part} first and put its slice.json there") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable slice document: {exc}") from None
    if not isinstance(document, dict) or document.get("version") != SLICE_VERSION:
        raise ValueError(f"{path}: not a slice document of version {SLICE_VERSION}")
    if document.get("slice") != str(part):
        raise ValueError(f"{path}: holds slice {document.get('slice')!r}, not {part}")
    if document.get("job") != job_digest(context):
        raise ValueError(f"{path}: made for another job's spec than this one")
    return document


def _runs(document: dict) -> list[RunResult]:
    return [RunResult(**run) for run in document["runs"]]


def _index(part: Slice, low: int, high: int) -> int:
    if not low <= part.index < high:
        raise ValueError(f"--slice {part}: this job's protocol has {part.part} {low} to {high - 1}")
    return part.index


def _point(context: Context, runner: Runner, index: int) -> dict:
    part = Slice("point", index)
    _index(part, 0, len(context.plan.points))
    runner.planned = 1
    if context.plan.cross_validation:
        folds = Folds.of(context)
        selecting = selecting_fold(context, runner, folds)
        run = point_on_first_fold(context, runner, selecting, folds, index)
        data = {"notes": list(selecting.data.notes), "root": str(folds.root),
                "directories": {str(fold): str(path) for fold, path in folds.directories.items()},
                "fold": fold_record(selecting, folds.directories[folds.first], "selection")}  # fmt: skip
        return slice_document(context, part, setting_of(context, selecting, runner, data), [run])
    prepared = prepare(context.spec, weights=runner.weights)
    run = point_on_dev(context, runner, prepared, index)
    return slice_document(context, part, setting_of(context, prepared, runner, data_record(prepared)), [run])


def _search(context: Context, slices: Path) -> tuple[list[dict], list[RunResult]]:
    points = [read(context, slices, Slice("point", index)) for index in range(len(context.plan.points))]
    return points, [_runs(point)[0] for point in points]


def _select(context: Context, slices: Path) -> dict:
    """The chosen point, by the same function the unsliced job chooses with."""
    _, search = _search(context, slices)
    if context.plan.cross_validation:
        index, chosen = choose_on_first_fold(search, context.metric)
    else:
        index = choose_on_dev(search, context.metric)
        chosen = Hyperparameters(**search[index].hyperparameters)
    return {"version": SLICE_VERSION, "slice": "select", "job": job_digest(context), "point": index,
            "hyperparameters": asdict(chosen)}  # fmt: skip


def _chosen(context: Context, slices: Path) -> tuple[int, Hyperparameters]:
    selection = read(context, slices, Slice("select"))
    return selection["point"], Hyperparameters(**selection["hyperparameters"])


def _seed(context: Context, runner: Runner, index: int, slices: Path) -> dict:
    part = Slice("seed", index)
    _index(part, 1, len(context.seeds))
    _, chosen = _chosen(context, slices)
    runner.planned = 1
    prepared = prepare(context.spec, weights=runner.weights)
    run = seed_on_test(context, runner, prepared, chosen, context.seeds[index])
    return slice_document(context, part, setting_of(context, prepared, runner, data_record(prepared)), [run])


def _fold(context: Context, runner: Runner, fold: int, slices: Path) -> dict:
    part, folds = Slice("fold", fold), Folds.of(context)
    if fold not in folds.others:
        raise ValueError(f"--slice {part}: this job reports folds {', '.join(map(str, folds.others))}")
    _, fixed = _chosen(context, slices)
    runner.planned = len(context.seeds)
    prepared = prepare(context.spec, fold=folds.directories[fold], weights=runner.weights)
    runs = fold_runs(context, runner, prepared, fixed, fold)
    data = {"fold": fold_record(prepared, folds.directories[fold], "reported")}
    return slice_document(context, part, setting_of(context, prepared, runner, data), runs)


def _merged(first: dict, documents: list[dict], formulation_from: dict) -> Setting:
    """One setting for the gathered runs: the first slice's provenance, the largest peak, every reuse counted."""
    setting = Setting(**formulation_from["setting"])
    setting.provenance = first["setting"]["provenance"]
    setting.peak_memory_bytes = max(document["setting"]["peak_memory_bytes"] for document in documents)
    setting.reused = sum(document["setting"]["reused"] for document in documents)
    return setting


def gather(context: Context, slices: Path) -> dict:
    """The results document from every slice, built by the functions the unsliced job builds it with."""
    points, search = _search(context, slices)
    chosen_index, chosen = _chosen(context, slices)
    if context.plan.cross_validation:
        return _gather_folds(context, slices, points, search, chosen)
    seeds = [read(context, slices, Slice("seed", index)) for index in range(1, len(context.seeds))]
    runs = [search[chosen_index], *(run for document in seeds for run in _runs(document))]
    setting = _merged(points[0], [*points, *seeds], points[0])
    setting.data = points[0]["setting"]["data"]
    body = dev_then_test_body(context, setting, search, runs)
    return results_document(context, setting, body, [*search, *runs[1:]])


def _gather_folds(context: Context, slices: Path, points: list[dict], search: list[RunResult], fixed) -> dict:
    data = points[0]["setting"]["data"]
    folds = Folds(Path(data["root"]), {int(fold): Path(path) for fold, path in data["directories"].items()})
    reported = [read(context, slices, Slice("fold", fold)) for fold in folds.others]
    runs = [run for document in reported for run in _runs(document)]
    records = {folds.first: data["fold"]}
    for fold, document in zip(folds.others, reported, strict=True):
        records[fold] = document["setting"]["data"]["fold"]
    setting = _merged(points[0], [*points, *reported], reported[-1] if reported else points[0])
    body = cross_validation_body(context, folds, search, fixed, runs, records, list(data["notes"]))
    return results_document(context, setting, body, [*search, *runs])
