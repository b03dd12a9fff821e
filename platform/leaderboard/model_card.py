"""A language model's card on its page: what it is, how it was pretrained, its contamination report, its jobs,
and its pretraining loss curve.

The card shows what the platform holds about the model (architecture, size, vocabulary, corpus
fingerprint, recipe and settings, facets) and never a server path. A model pretrained here has a
contamination report (the corpus's 13-gram overlap with the registered test sets) and a loss curve,
read from the pretraining job's loss log in the artefact store and thinned for the page.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from jobs.models import Job
from leaderboard import charts
from leaderboard.artefact_summaries import artefact_summary, finite
from registry.models import Dataset, LanguageModel

MAX_CURVE_POINTS = 400
"""Points per loss curve on the page: a million-step run logs a million losses, which no reader needs."""


CORPUS_FIELDS = ("fingerprint", "documents", "train_tokens", "heldout_tokens")
"""What the card shows of the pretraining report's corpus statistics (never its path)."""


def card(model: LanguageModel, report: dict) -> dict:
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
        "recipe_settings": [(key, plain(value)) for key, value in sorted((settings or {}).items())],
        "training": {
            key: training[key] for key in ("steps", "final_loss", "heldout_loss") if training.get(key) is not None
        },
        "unigram_baseline_loss": report.get("unigram_baseline_loss"),
        "pretrained_here": bool(report),
    }


def plain(value: Any) -> str:
    """A setting as written on a command line: 3e-05, not the template's 0.00003."""
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value)


def contamination(report: dict) -> dict | None:
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


def job_row(job: Job) -> dict:
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


def loss_chart(model: LanguageModel, jobs: list[Job]) -> charts.Chart | None:
    name = loss_log_name(model, jobs)
    curves = artefact_summary(name, _loss_curves) if name else None
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
        if not isinstance(entry, dict) or not finite(entry.get("step")):
            continue
        step = int(entry["step"])
        if finite(entry.get("loss")):
            train.append((step, float(entry["loss"])))
        if finite(entry.get("heldout_loss")):
            heldout.append((step, float(entry["heldout_loss"])))
    return {"train": _window_means(train), "held-out": _thinned(heldout)}


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
