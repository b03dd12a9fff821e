"""A language model's results on its page: one row per result with everything needed to judge and rerun it,
its scores on every benchmark, and the charts of its results.

Per dataset: the hyperparameters the protocol chose and the dev score that chose them, every
seed's (or fold's) test value, the settings the submitter changed ("custom settings"), the
versions it ran with and the engine command rendered from the job's spec. Reporting the spread
over seeds and how a point was chosen is what makes a fine-tuning number comparable (Mosbach et al.
2021; Dodge et al. 2020 on seed variance); a bare mean is not. A quick preview's result and score
(one grid point, one seed) say so wherever they appear.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.urls import reverse

from biolm.contract import ContractError, FinetuneJob, ResultsDocument, parse_run_key
from jobs.models import Job, Run
from jobs.results import results_name
from leaderboard import charts
from leaderboard.artefact_summaries import artefact_summary, finite
from leaderboard.model_card import plain
from leaderboard.models import Result, Score
from leaderboard.score_aggregation import aggregation_from_json
from registry.models import Dataset, LanguageModel


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
    dev_examples: list[tuple[str, str]] = field(default_factory=list)  # (run, link to its dev examples)
    dev_missing: str = ""  # why there are none to show

    @property
    def restricted(self) -> bool:
        """Its dataset is under a data use agreement: per-example predictions for staff only."""
        return self.result.dataset.access == Dataset.Access.RESTRICTED

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


@dataclass
class SharedDataset:
    """One dataset (and metric) that several papers report for the model: each value beside its source."""

    label: str
    results: list[Result]

    @property
    def agree(self) -> bool:
        return len({round(result.value, 2) for result in self.results}) == 1


def reported_by_several(results: list[Result]) -> list[SharedDataset]:
    """The datasets on which two or more papers (benchmarks' tables) report the model, in dataset order.

    Papers fine-tune under their own protocols, so their numbers for one checkpoint differ (BioBERT on
    BC5-chem: 92.85 in Gu et al. 2021, Table 7, and another in Fang et al. 2023); the page shows each.
    """
    grouped: dict[tuple[int, int, str], list[Result]] = {}
    for result in results:
        if result.scope:
            grouped.setdefault((result.dataset_id, result.metric_id, result.variant), []).append(result)
    shared = []
    for rows in grouped.values():
        if len({row.scope for row in rows}) > 1:
            first = rows[0]
            variant = f" ({first.variant})" if first.variant else ""
            shared.append(SharedDataset(f"{first.dataset.name}: {first.metric.name}{variant}", rows))
    return sorted(shared, key=lambda s: s.label.casefold())


def version_links(model: LanguageModel) -> list[LanguageModel]:
    """The public models linked to ``model`` as versions: the one it is a version of, that one's other
    versions, and its own versions (BioBERT-Base v1.1 and BioBERT-Large v1.1 link each other)."""
    root = model.version_of_id or model.pk
    linked = LanguageModel.objects.public().filter(Q(pk=root) | Q(version_of_id=root) | Q(version_of_id=model.pk))
    return list(linked.exclude(pk=model.pk).order_by("name"))


def datasets_with_several_results(results: list[Result]) -> set[tuple[str, int]]:
    seen: dict[tuple[str, int], int] = {}
    for result in results:
        key = (result.scope, result.dataset_id)
        seen[key] = seen.get(key, 0) + 1
    return {key for key, n in seen.items() if n > 1}


def result_row(model: LanguageModel, result: Result, several: set[tuple[str, int]]) -> ResultRow:
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
                row.predictions_url = reverse("leaderboard:predictions", args=[*model.address_parts, result.pk])
            _dev_examples(row, model, result, summary.get("dev_runs"))
        if row.selection and row.selection.get("chosen_hyperparameters"):
            row.chosen = dict(row.selection["chosen_hyperparameters"])
        if row.selection:
            chose_by = row.selection.get("metric") or ""
            row.selection_metric = result.metric.name if chose_by == result.metric.slug else chose_by
        spec = _finetune_spec(job)
        if spec is not None:
            row.command = engine_command(model, spec)
            row.custom_settings = "" if spec.preview else _settings_text(spec)
    row.chosen = {key: plain(value) for key, value in row.chosen.items() if value is not None and value is not False}
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
    these flags build that spec again (:func:`biolm.job_contracts.finetune_job`), and the model's files
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


def primary_label(aggregation: dict) -> str:
    spec = aggregation_from_json(aggregation)
    names = {s.slug: s.name for s in spec.summaries} | {g.slug: g.name for g in spec.groups}
    return names.get(spec.primary, "score")


def radar(model: LanguageModel, score: Score) -> charts.Chart | None:
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


def seed_chart(rows: list[ResultRow]) -> charts.Chart | None:
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


def _dev_examples(row: ResultRow, model, result, runs: list[str] | None) -> None:
    """A link per run to its dev examples (:mod:`leaderboard.dev_example_views`), or why there are none."""
    if runs is None:  # a version 1 results document, or a summary made before they were kept
        row.dev_missing = "no dev predictions (recorded before they were kept)"
        return
    page = reverse("leaderboard:dev-examples", args=[*model.address_parts, result.pk])
    for key in runs:
        fold, seed = parse_run_key(key)
        label = f"fold {fold}, seed {seed}" if fold is not None else f"seed {seed}"
        row.dev_examples.append((label, f"{page}?run={key}"))
    if not runs:
        row.dev_missing = "this protocol predicted no dev split"


def _results_summary(job_id: int) -> dict | None:
    return artefact_summary(
        results_name(job_id), _summarise_results_document
    )  # named anew when its fields change: the cache keys by name


def _summarise_results_document(data: Any) -> dict | None:
    """What the page needs of a (possibly large) results file: the selection, its notes, whether it predicted."""
    try:
        results = ResultsDocument.from_json(data)
    except ContractError:
        return None
    return {
        "selection": selection_summary(results),
        "notes": [str(note) for note in results.data.get("notes") or []],
        "has_predictions": any(v for v in results.predictions.values()),
        "dev_runs": None
        if results.dev_predictions is None
        else [key for key, rows in results.dev_predictions.items() if rows],
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
        if isinstance(record, dict) and finite(value := (record.get(split) or {}).get(metric))
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
