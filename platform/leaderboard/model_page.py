"""A language model's page, and its test predictions as JSON Lines.

The page gathers what the platform holds about one model: its card (architecture, size,
vocabulary, pretraining corpus and recipe, facets), the contamination report of a model
pretrained here, its score on every benchmark, and per dataset the result with everything
needed to judge and rerun it: the hyperparameters the protocol chose and the dev score that
chose them, every seed's test value, the versions it ran with and the engine command. Reporting
the spread over seeds and how a point was chosen is what makes a fine-tuning number comparable
(Mosbach et al. 2021; Dodge et al. 2020 on seed variance); a bare mean is not. For the same
reason a quick preview's result and score (one grid point, one seed) say so wherever they appear:
"quick preview (not ranked)".

A private model is a 404 for everyone but its owner and staff, the same 404 as a model that
does not exist, so a URL does not reveal that a private model is there. Whatever the number of
results, the page costs a fixed handful of queries (runs and jobs are prefetched); what the
database does not hold (how hyperparameters were chosen, the pretraining loss curve) is read
from the job's files in the artefact store, and kept in the cache keyed by the file's size and
modification time, because those files are written once and can be megabytes.

The predictions download gives, for every seed, each test example's id and the model's
prediction, never the gold: the ids come from the test split as the platform exported it to
workers, gold already withheld (:mod:`jobs.exports`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from django.core.cache import cache
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from biolm.contract import ContractError, FinetuneJob, ResultsDocument, parse_run_key
from jobs import artefacts, exports
from jobs.models import Job, Run
from jobs.results import ResultsError, load_results, results_name
from leaderboard import charts
from leaderboard.models import Result, Score
from leaderboard.scoring import aggregation_from_json
from registry.models import Dataset, LanguageModel

MAX_CURVE_POINTS = 400
"""Points per loss curve on the page: a million-step run logs a million losses, which no reader needs."""

CORPUS_FIELDS = ("fingerprint", "documents", "train_tokens", "heldout_tokens")
"""What the card shows of the pretraining report's corpus statistics (never its path)."""

ARTEFACT_CACHE_S = 24 * 3600
"""How long a summary of a job's file stays cached; the key changes anyway if the file does."""


def _visible_model(request: HttpRequest, slug: str) -> LanguageModel:
    """The model if ``request.user`` may see it; one 404 for missing and private alike."""
    return get_object_or_404(
        LanguageModel.objects.visible_to(request.user).select_related("architecture", "recipe", "reported_in"),
        slug=slug,
    )


def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    model = _visible_model(request, slug)
    return render(request, "leaderboard/model.html", model_context(model))


# --- the page's data ------------------------------------------------------------------------------------


@dataclass
class ResultRow:
    """One result on the page: its numbers, and for one of ours how it was obtained."""

    result: Result
    label: str  # the dataset, with the metric (and variant) when the dataset has several
    seeds: list[tuple[str, float | None]] = field(default_factory=list)  # (seed, test value)
    selection: dict | None = None  # selection_summary of the job's results file
    selection_metric: str = ""  # the metric the protocol selected by, by name where it is the result's
    chosen: dict[str, Any] = field(default_factory=dict)
    provenance: list[tuple[str, str]] = field(default_factory=list)
    command: str = ""
    predictions_url: str = ""
    notes: list[str] = field(default_factory=list)
    custom_settings: str = ""  # the protocol's settings the submitter changed, as JSON; "" for the protocol's own

    @property
    def reported(self) -> bool:
        return bool(self.result.scope)

    @property
    def anchor(self) -> str:
        return f"result-{self.result.pk}"

    @property
    def seed_values(self) -> list[float]:
        return [value for _, value in self.seeds if value is not None]


@dataclass
class ScoreRow:
    score: Score
    label: str  # the benchmark's primary summary, e.g. "BLURB score"
    url: str

    @property
    def preview(self) -> bool:
        return self.score.preview

    @property
    def rank(self) -> str:
        """The stored rank, "=" marking one shared with the model above (their difference is not significant)."""
        if self.score.rank is None or self.score.preview:
            return ""
        return f"={self.score.rank}" if self.score.rank_tied else str(self.score.rank)


def model_context(model: LanguageModel) -> dict:
    """Everything the model page shows; a fixed number of queries whatever the number of results."""
    report = model.pretraining if isinstance(model.pretraining, dict) else {}
    results = list(
        Result.objects.filter(language_model=model)
        .select_related("dataset", "metric", "job")
        .defer("job__log", "job__token")
        .prefetch_related(
            Prefetch(
                "job__runs", queryset=Run.objects.filter(split=Run.Split.TEST).order_by("fold", "seed"), to_attr="tests"
            )
        )
        .order_by("scope", "dataset__name", "metric__name", "variant")
    )
    scores = list(
        Score.objects.filter(language_model=model, benchmark__active=True)
        .select_related("benchmark")
        .order_by("benchmark__name")
    )
    jobs = list(
        Job.objects.filter(language_model=model)
        .select_related("dataset", "benchmark")
        .defer("log", "token")
        .order_by("-created_at", "-pk")
    )
    several = _datasets_with_several_results(results)
    rows = [_result_row(model, result, several) for result in results]
    score_rows = [ScoreRow(s, _primary_label(s.benchmark.aggregation), s.benchmark.get_absolute_url()) for s in scores]
    loss = _loss_chart(model, jobs) if report or model.checkpoint.startswith("artefacts:") else None
    return {
        "model": model,
        "card": _card(model, report),
        "contamination": _contamination(report),
        "scores": score_rows,
        "radars": [chart for chart in (_radar(model, s) for s in scores) if chart is not None],
        "reproduced": [row for row in rows if not row.reported],
        "reported": [row for row in rows if row.reported],
        "seed_chart": _seed_chart(rows),
        "loss_chart": loss,
        "jobs": [_job_row(job) for job in jobs],
    }


def _datasets_with_several_results(results: list[Result]) -> set[tuple[str, int]]:
    seen: dict[tuple[str, int], int] = {}
    for result in results:
        key = (result.scope, result.dataset_id)
        seen[key] = seen.get(key, 0) + 1
    return {key for key, n in seen.items() if n > 1}


def _result_row(model: LanguageModel, result: Result, several: set[tuple[str, int]]) -> ResultRow:
    label = result.dataset.name
    if (result.scope, result.dataset_id) in several:
        label += f" ({result.metric.name}{', ' + result.variant if result.variant else ''})"
    row = ResultRow(result, label)
    if row.reported:
        return row
    job = result.job
    for run in getattr(job, "tests", []) if job is not None else []:
        value = run.metrics.get(result.metric.slug)
        number = float(value) if isinstance(value, int | float) and math.isfinite(value) else None
        row.seeds.append((_seed_label(run), number))
        if not row.chosen:
            row.chosen = dict(run.hyperparameters)
    row.provenance = _provenance(result.provenance)
    if job is not None and job.kind == Job.Kind.FINETUNE:
        summary = _results_summary(job.pk)
        if summary is not None:
            row.selection = summary["selection"]
            row.notes = summary["notes"]
            if summary["has_predictions"]:
                row.predictions_url = reverse("leaderboard:predictions", args=[model.slug, result.pk])
        if row.selection and row.selection.get("chosen_hyperparameters"):
            row.chosen = dict(row.selection["chosen_hyperparameters"])
        if row.selection:
            chose_by = row.selection.get("metric") or ""
            row.selection_metric = result.metric.name if chose_by == result.metric.slug else chose_by
        spec = _finetune_spec(job)
        if spec is not None:
            row.command = engine_command(model, spec)
            row.custom_settings = "" if spec.preview else _settings_text(spec)
    row.chosen = {key: _plain(value) for key, value in row.chosen.items() if value is not None and value is not False}
    return row


def _seed_label(run: Run) -> str:
    return f"fold {run.fold}, seed {run.seed}" if run.fold else str(run.seed)


def _finetune_spec(job: Job) -> FinetuneJob | None:
    """The job's spec, or None for a job whose spec this biolm cannot read (it is shown without a command)."""
    try:
        return job.contract
    except ContractError:
        return None


def _settings_text(spec: FinetuneJob) -> str:
    changed = spec.overrides.to_json()
    return json.dumps(changed, sort_keys=True) if changed else ""


def _provenance(provenance: dict) -> list[tuple[str, str]]:
    """What a result ran with, as (what, value) lines: versions, plugins, commit, device, seeds."""
    lines = []
    versions = provenance.get("versions") or {}
    if versions:
        lines.append(("libraries", ", ".join(f"{name} {version}" for name, version in sorted(versions.items()))))
    plugins = provenance.get("plugins") or {}
    if plugins:
        lines.append(("plugins", ", ".join(f"{name} ({version})" for name, version in sorted(plugins.items()))))
    for key, label in (("python", "Python"), ("git_commit", "commit"), ("dtype", "precision")):
        if provenance.get(key):
            lines.append((label, str(provenance[key])))
    device = " ".join(str(provenance[k]) for k in ("device", "device_name") if provenance.get(k))
    if device:
        lines.append(("device", device))
    if provenance.get("seeds"):
        lines.append(("seeds", ", ".join(str(seed) for seed in provenance["seeds"])))
    protocol = provenance.get("protocol") or {}
    if protocol.get("name"):
        over = "folds" if protocol.get("cross_validation") else "seeds"
        lines.append(("protocol", f"{protocol['name']} ({protocol.get('statistic', 'mean')} over {over})"))
    if provenance.get("overrides"):
        lines.append(("custom settings", json.dumps(provenance["overrides"], sort_keys=True)))
    if provenance.get("job"):
        lines.append(("job", f"#{provenance['job']}"))
    return lines


def engine_command(model: LanguageModel, spec: FinetuneJob) -> str:
    """The fine-tuning command of a job, rendered from its spec, as one runs it on the dataset's official files.

    The worker ran the same spec (``--spec FILE``) on the platform's export of the data, test
    gold withheld (``--data_format canonical --test_gold_withheld``), which a reader does not have;
    these flags build that spec again (:func:`biolm.job_specs.finetune_job`), and the model's files
    go where ``--model`` says.
    """
    words = [
        "python",
        "-m",
        "workers.engine",
        "finetune",
        "--model",
        f"path/to/{model.slug}",
        "--dataset",
        spec.dataset,
    ]
    words += ["--benchmark", spec.benchmark] if spec.benchmark else ["--protocol", spec.protocol]
    for key, value in [*spec.overrides.to_json().items(), *spec.task_options.to_json().items()]:
        words += [f"--{key}", str(value).lower() if isinstance(value, bool) else str(value)]
    words += ["--out", f"runs/{model.slug}/{spec.dataset}"]
    return shlex.join(words)


def _primary_label(aggregation: dict) -> str:
    spec = aggregation_from_json(aggregation)
    names = {s.slug: s.name for s in spec.summaries} | {g.slug: g.name for g in spec.groups}
    return names.get(spec.primary, "score")


def _card(model: LanguageModel, report: dict) -> dict:
    """The card's derived values: the raw fields are printed by the template."""
    vocabulary = report.get("vocabulary") if isinstance(report.get("vocabulary"), dict) else {}
    # A continual run keeps its starting checkpoint's vocabulary ("base"); a run from scratch learns "new".
    kept = vocabulary.get("base" if "kept" in vocabulary else "new") or {}
    size = kept.get("vocabulary_size") if isinstance(kept, dict) else None
    corpus = report.get("corpus") if isinstance(report.get("corpus"), dict) else {}
    recipe = report.get("recipe") if isinstance(report.get("recipe"), dict) else {}
    settings = recipe.get("settings") if isinstance(recipe.get("settings"), dict) else None
    if settings is None and model.recipe is not None:
        settings = model.recipe.settings
    training = report.get("training") if isinstance(report.get("training"), dict) else {}
    return {
        # Said once: a registered checkpoint's vocabulary text already gives its config's size.
        "vocabulary_size": size if isinstance(size, int) and f"{size:,}" not in model.vocabulary else None,
        # The corpus file's name only: its path is the submitter's or the worker's disk.
        "corpus_file": PurePosixPath(str(corpus["path"]).replace("\\", "/")).name if corpus.get("path") else "",
        "corpus": {key: corpus[key] for key in CORPUS_FIELDS if corpus.get(key) is not None},
        "recipe_settings": [(key, _plain(value)) for key, value in sorted((settings or {}).items())],
        "training": {
            key: training[key] for key in ("steps", "final_loss", "heldout_loss") if training.get(key) is not None
        },
        "unigram_baseline_loss": report.get("unigram_baseline_loss"),
        "pretrained_here": bool(report),
    }


def _plain(value: Any) -> str:
    """A setting as written on a command line: 3e-05, not the template's 0.00003."""
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value)


def _contamination(report: dict) -> dict | None:
    """The pretraining report's 13-gram overlap with each test split, most contaminated first."""
    block = report.get("contamination")
    if not isinstance(block, dict) or not isinstance(block.get("datasets"), dict):
        return None
    reported = {slug: entry for slug, entry in block["datasets"].items() if isinstance(entry, dict)}
    slugs = [*reported, *(block.get("skipped") or {})]
    names = dict(Dataset.objects.filter(slug__in=slugs).values_list("slug", "name"))
    rows = []
    for slug, entry in reported.items():
        examples = entry.get("test_examples")
        too_short = entry.get("too_short_to_judge") or 0
        share = entry.get("share")
        rows.append({
            "slug": slug,
            "name": names.get(slug, slug),
            "known": slug in names,
            "test_examples": examples,
            "judged": examples - too_short if isinstance(examples, int) else None,
            "contaminated": entry.get("contaminated"),
            "share": 100 * share if isinstance(share, int | float) else None,
        })  # fmt: skip
    rows.sort(key=lambda r: (r["share"] is None, -(r["share"] or 0), r["name"]))
    skipped = [
        {"slug": slug, "name": names.get(slug, slug), "reason": _without_paths(str(reason))}
        for slug, reason in sorted((block.get("skipped") or {}).items())
    ]
    return {"n": block.get("n"), "rows": rows, "skipped": skipped}


def _without_paths(reason: str) -> str:
    """A skipped dataset's reason, cut before where it names the worker's files (``files not found at /...``)."""
    return reason.split(" at /")[0].split(":")[0].strip()


def _job_row(job: Job) -> dict:
    duration = job.finished_at - job.started_at if job.started_at and job.finished_at else None
    return {
        "job": job,
        "target": job.dataset.name if job.dataset_id else (job.benchmark.name if job.benchmark_id else ""),
        "duration": _duration(duration),
        "error": job.error.strip().splitlines()[0][:300] if job.error.strip() else "",
    }


def _duration(delta: timedelta | None) -> str:
    if delta is None:
        return ""
    seconds = max(int(delta.total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


# --- charts ---------------------------------------------------------------------------------------------


def _radar(model: LanguageModel, score: Score) -> charts.Chart | None:
    """The model's group scores on a benchmark; a radar needs three axes at least to be a shape."""
    groups = aggregation_from_json(score.benchmark.aggregation).groups
    if len(groups) < 3 or sum(score.groups.get(g.slug) is not None for g in groups) < 3:
        return None
    chart = charts.radar(
        f"{score.benchmark.name} by group",
        [g.name for g in groups],
        {model.name: [score.groups.get(g.slug) for g in groups]},
        chart_id=f"radar-{score.benchmark.slug}",
    )
    chart.figure["layout"]["showlegend"] = False  # one model: the page's title names it, a legend only takes room
    return chart


def _seed_chart(rows: list[ResultRow]) -> charts.Chart | None:
    per_dataset = {
        row.label + (" (quick preview)" if row.result.preview else ""): row.seed_values
        for row in rows
        if not row.reported and row.seed_values
    }
    if not per_dataset:
        return None
    return charts.seed_distribution(
        "Test score of every seed, per dataset", per_dataset, "test score (0-100)", chart_id="seed-distribution"
    )


def _loss_chart(model: LanguageModel, jobs: list[Job]) -> charts.Chart | None:
    name = loss_log_name(model, jobs)
    curves = _artefact_summary(name, _loss_curves) if name else None
    if not curves or not any(curves.values()):
        return None
    return charts.loss_curves(
        "Pretraining loss", {key: [tuple(point) for point in points] for key, points in curves.items() if points},
        chart_id="pretraining-loss",
    )  # fmt: skip


def loss_log_name(model: LanguageModel, jobs: list[Job]) -> str | None:
    """Where the model's ``loss.json`` is kept: beside the checkpoint its pretraining job produced.

    The worker's model.tar holds the run's output folder but its resumable state, so the log is
    stored with the model's files (:func:`jobs.completion._accept_model`), under the job's output.
    """
    for job in jobs:
        if job.kind == Job.Kind.PRETRAIN and job.status == Job.Status.SUCCEEDED and job.spec.get("output"):
            return f"{str(job.spec['output']).rstrip('/')}/loss.json"
    if model.checkpoint.startswith("artefacts:"):
        return f"{model.checkpoint.removeprefix('artefacts:').rstrip('/')}/loss.json"
    return None


def _loss_curves(log: Any) -> dict[str, list[list[float]]] | None:
    """``{"train": [[step, loss]...], "held-out": [...]}`` from a loss log, cut to :data:`MAX_CURVE_POINTS`.

    The training loss, logged every step, is averaged over windows (its trend is what shows; one
    step's loss is noise); the held-out loss, logged every few hundred steps, is thinned.
    """
    if not isinstance(log, list):
        return None
    train, heldout = [], []
    for entry in log:
        if not isinstance(entry, dict) or not _finite(entry.get("step")):
            continue
        step = int(entry["step"])
        if _finite(entry.get("loss")):
            train.append((step, float(entry["loss"])))
        if _finite(entry.get("heldout_loss")):
            heldout.append((step, float(entry["heldout_loss"])))
    return {"train": _window_means(train), "held-out": _thinned(heldout)}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _window_means(points: list[tuple[int, float]]) -> list[list[float]]:
    if len(points) <= MAX_CURVE_POINTS:
        return [[step, loss] for step, loss in points]
    size = math.ceil(len(points) / MAX_CURVE_POINTS)
    windows = [points[i : i + size] for i in range(0, len(points), size)]
    return [[window[-1][0], sum(loss for _, loss in window) / len(window)] for window in windows]


def _thinned(points: list[tuple[int, float]]) -> list[list[float]]:
    if len(points) <= MAX_CURVE_POINTS:
        return [[step, loss] for step, loss in points]
    every = math.ceil(len(points) / MAX_CURVE_POINTS)
    kept = points[::every]
    if kept[-1] != points[-1]:
        kept.append(points[-1])  # the last evaluation is the one a reader compares
    return [[step, loss] for step, loss in kept]


# --- files in the artefact store ------------------------------------------------------------------------


def _results_summary(job_id: int) -> dict | None:
    return _artefact_summary(results_name(job_id), _summarise_results)


def _summarise_results(data: Any) -> dict | None:
    """What the page needs of a (possibly large) results file: the selection, its notes, whether it predicted."""
    try:
        results = ResultsDocument.from_json(data)
    except ContractError:
        return None
    return {
        "selection": selection_summary(results),
        "notes": [str(note) for note in results.data.get("notes") or []],
        "has_predictions": any(v for v in results.predictions.values()),
    }


def selection_summary(results: ResultsDocument) -> dict | None:
    """How the protocol chose the hyperparameters of the reported runs, from a results file.

    The engine tries each point of the grid with the first seed and keeps the best on dev; under
    cross-validation the first fold's test plays dev (Lewis et al. 2020). The score behind the
    choice is the best of the ``selection`` records on the metric the engine selects by
    (``results["metric"]``). None when the file records no selection.
    """
    records = results.selection
    if not isinstance(records, list) or not records:
        return None
    metric = results.metric
    split = "test" if results.on_folds else "dev"
    values = [
        float(value)
        for record in records
        if isinstance(record, dict) and _finite(value := (record.get(split) or {}).get(metric))
    ]
    summary = {
        "metric": metric,
        "split": split,
        "points": len(records),
        "value": max(values) if values else None,
        "chosen_hyperparameters": results.chosen_hyperparameters or {},
    }
    if split == "test":
        summary["fold"] = (results.cross_validation or {}).get("selection_fold")
    return summary


def _artefact_summary(name: str, summarise: Callable[[Any], Any]) -> Any:
    """``summarise`` of the JSON file ``name`` in the artefact store; None when it is missing or unreadable.

    Cached under the file's name, size and modification time: a job's files are written once,
    and re-reading megabytes of predictions on every page view would make the page slow.
    """
    store = artefacts.storage()
    try:
        stamp = [store.size(name)]
    except (FileNotFoundError, OSError):
        return None
    with contextlib.suppress(NotImplementedError, OSError, AttributeError):  # a storage without times
        stamp.append(store.get_modified_time(name).timestamp())
    key = "model-page:" + hashlib.sha256(f"{summarise.__name__}:{name}:{stamp}".encode()).hexdigest()
    cached = cache.get(key)
    if cached is not None:
        return cached["value"]
    try:
        with store.open(name, "rb") as handle:
            value = summarise(json.loads(handle.read()))
    except (OSError, ValueError, RecursionError):
        value = None
    cache.set(key, {"value": value}, ARTEFACT_CACHE_S)
    return value


# --- the predictions download ---------------------------------------------------------------------------


def predictions(request: HttpRequest, slug: str, result_id: int) -> HttpResponse:
    """Every seed's test predictions of a result, one JSON line per example and seed, without gold.

    ``{"id": ..., "seed": 42, "prediction": ...}`` (with ``"fold"`` under cross-validation), in the
    test split's order. The ids are read from the copy of the test split the worker received, whose
    gold was already replaced by a placeholder, and only the id is taken from it.
    """
    model = _visible_model(request, slug)
    result = get_object_or_404(
        Result.objects.select_related("dataset", "job").defer("job__log", "job__token"),
        pk=result_id,
        language_model=model,
    )
    if result.job is None:
        raise Http404("this result was not computed here, so there are no predictions to download")
    try:
        results = load_results(result.job)
    except ResultsError:
        raise Http404("the job's results are not in the artefact store") from None
    predicted = {key: rows for key, rows in results.predictions.items() if rows}
    if not predicted:
        raise Http404("the job stored no test predictions")
    checked = _checked_predictions(result.dataset, predicted, results.spec.overrides.max_eval_examples)
    response = StreamingHttpResponse(_prediction_lines(checked), content_type="application/x-ndjson; charset=utf-8")
    filename = f"{model.slug}-{result.dataset.slug}-test-predictions.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


Checked = list[tuple[int | None, int | str, list[str], list]]


def _checked_predictions(dataset: Dataset, predicted: dict, limit: int | None) -> Checked:
    """(fold, seed, example ids, predictions) per run, every run's count checked against its test split
    before the response starts, so a mismatch is a 404 rather than half a file."""
    ids_of: dict[int | None, list[str]] = {}
    checked = []
    for key, rows in predicted.items():
        fold, seed = parse_run_key(key)  # the results document was checked when it was loaded
        if fold not in ids_of:
            ids_of[fold] = _test_ids(dataset, fold, limit)
        ids = ids_of[fold]
        if not isinstance(rows, list) or len(rows) != len(ids):
            raise Http404("the stored predictions no longer match the dataset's test split on this site")
        checked.append((fold, seed, ids, rows))
    return checked


def _prediction_lines(checked: Checked) -> Iterator[bytes]:
    for fold, seed, ids, rows in checked:
        where = {"fold": fold} if fold is not None else {}
        for example_id, prediction in zip(ids, rows, strict=True):
            line = {"id": example_id, **where, "seed": seed, "prediction": prediction}
            yield (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


def _test_ids(dataset: Dataset, fold: int | None, limit: int | None) -> list[str]:
    """The test examples' ids in the order the worker predicted them, from its gold-withheld export."""
    try:  # the export a job read exists already; these calls only write one for a dataset no job has used
        if fold is None:
            prefix, _ = exports.dataset_artefacts(dataset)
            name = f"{prefix}/test.jsonl"
        else:
            prefix, _ = exports.fold_artefacts(dataset)
            name = f"{prefix}/folds/{fold}/test.jsonl"
    except exports.ExportError:
        raise Http404("the dataset is not imported on this site") from None
    store = artefacts.storage()
    if not store.exists(name):
        raise Http404("the dataset's test split is not in the artefact store")
    with store.open(name, "rb") as handle:
        ids = [str(json.loads(line)["id"]) for line in handle.read().decode("utf-8").splitlines() if line.strip()]
    return ids[:limit] if limit else ids
