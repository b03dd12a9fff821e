"""One dated file of every public result: JSON Lines in a fixed, flat layout anyone can load.

A reader who wants every number at once (to plot, to re-rank, to cite) should not scrape pages or page
through the API. ``manage.py export_results`` and a daily beat task write ``exports/results-<date>.jsonl``
to the artefact store, and the site serves it at ``/exports/results-<date>.jsonl`` (the latest at
``/exports/results.jsonl``); each benchmark's snapshot pages link the one of their date.

One line per result and benchmark entry it stands in (a result of ours on a dataset counts in every
benchmark that scores that dataset under that metric; a paper's number only in its paper's benchmark). The
columns are :data:`COLUMNS`, flat and typed, always all present, so ``datasets.load_dataset("json", ...)``
reads it with no type errors; the nested plugin pins are one JSON string column. Only what anyone may see is
written: public models' published results (none of a private model, none awaiting a data holder's approval).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.core.files.base import ContentFile
from django.db.models import Prefetch

from biolm.name_patterns import HUB_ID_RE
from jobs import artefacts
from jobs.models import Run
from leaderboard.models import Result
from registry.models import BenchmarkEntry, LanguageModel

LAYOUT_VERSION = 1
PREFIX = "exports"
COLUMNS: dict[str, str] = {
    "layout_version": "int: this layout's version (1)",
    "dump_date": "string: the date the file was written, YYYY-MM-DD (UTC)",
    "model": "string: the model's biolm address, namespace/name",
    "model_name": "string: its display name",
    "origin": 'string: "reproduced" (evaluated on biolm) or "reported" (transcribed from a paper)',
    "hub_id": 'string: its Hugging Face Hub id, org/name ("" when it has none)',
    "hub_commit": 'string: the Hub commit it was evaluated at ("" when not known)',
    "benchmark": "string: the benchmark's slug",
    "benchmark_plugin": "string: the plugin that contributes the benchmark",
    "aggregation_version": "string: the benchmark's aggregation version when the file was written",
    "entry": "string: the benchmark entry's key (a column of its leaderboard)",
    "dataset": "string: the dataset's slug",
    "metric": "string: the metric's slug",
    "variant": 'string: the metric\'s variant ("" for none)',
    "value": "float: the result, on the 0-100 scale",
    "std": "float: its standard deviation over the runs (0.0 for a single run or a paper's number)",
    "n_runs": "int: the seeds or folds it combines (0 for a paper's number)",
    "statistic": 'string: how the runs combine ("mean", "median", ...; "reported" for a paper\'s number)',
    "run_values": "list<float>: each seed's (or fold's) test value, in seed and fold order ([] for a paper's)",
    "preview": "bool: a quick preview (one grid point, one seed), never ranked",
    "source": "string: where the number comes from (a job, or a paper's table)",
    "plugin_pins": "string: JSON list of the plugin code the result was produced with ({name, version, ...})",
    "recorded_at": "string: when the result was last recorded, ISO 8601 UTC",
}


@dataclass(frozen=True)
class Dump:
    """A written dump: its artefact name, its date and its line count."""

    name: str
    date: dt.date
    lines: int


def dump_name(date: dt.date) -> str:
    return f"{PREFIX}/results-{date.isoformat()}.jsonl"


def write_dump(date: dt.date | None = None) -> Dump:
    """Write every public result to the artefact store as ``exports/results-<date>.jsonl``; the dump written.

    The lines are built first and stored whole, so a reader never gets half a file; a second dump on the same
    day replaces the first (results change during the day, the file says as of when).
    """
    date = date or dt.datetime.now(dt.UTC).date()
    lines = [json.dumps(row, ensure_ascii=False, sort_keys=True) for row in rows(date)]
    data = ("\n".join(lines) + "\n" if lines else "").encode("utf-8")
    store, name = artefacts.storage(), dump_name(date)
    if store.exists(name):
        store.delete(name)
    store.save(name, ContentFile(data))
    return Dump(name, date, len(lines))


def latest_dump() -> dt.date | None:
    """The date of the newest dump in the store, or None."""
    try:
        _, files = artefacts.storage().listdir(PREFIX)
    except FileNotFoundError:
        return None
    dates = []
    for file in files:
        stem = file.removeprefix("results-").removesuffix(".jsonl")
        try:
            dates.append(dt.date.fromisoformat(stem))
        except ValueError:
            continue
    return max(dates, default=None)


def rows(date: dt.date) -> Iterator[dict]:
    """The dump's rows for ``date``, model by model (see :data:`COLUMNS`)."""
    by_key = entries_by_score()
    results = (
        Result.objects.filter(language_model__in=LanguageModel.objects.public())
        .select_related("language_model", "dataset", "metric", "job")
        .prefetch_related(Prefetch("job__runs", queryset=Run.objects.filter(split=Run.Split.TEST), to_attr="tests"))
        .order_by(
            "language_model__namespace", "language_model__address_name", "dataset__slug", "metric__slug", "variant"
        )
    )
    for result in results:
        for entry in by_key.get((result.dataset_id, result.metric_id, result.variant), []):
            if result.scope and result.scope != entry.benchmark.slug:  # a paper's number counts in its paper's table
                continue
            yield _row(result, entry, date)


def entries_by_score(datasets: Iterable[int] | None = None) -> dict[tuple[int, int, str], list[BenchmarkEntry]]:
    """The benchmark entries a result counts in, keyed as a result is: ``(dataset, metric, variant)``, each list in
    benchmark and column order; only those of ``datasets`` (ids) when given."""
    entries = BenchmarkEntry.objects.select_related("benchmark", "dataset", "metric")
    if datasets is not None:
        entries = entries.filter(dataset__in=set(datasets))
    by_key: dict[tuple[int, int, str], list[BenchmarkEntry]] = {}
    for entry in entries.order_by("benchmark__slug", "position"):
        by_key.setdefault((entry.dataset_id, entry.metric_id, entry.variant), []).append(entry)
    return by_key


def _row(result: Result, entry: BenchmarkEntry, date: dt.date) -> dict:
    model, job = result.language_model, result.job
    ours = job is not None
    tests = sorted(getattr(job, "tests", []) if ours else [], key=lambda run: (run.fold, run.seed))
    values = [float(run.metrics[result.metric.slug]) for run in tests if _number(run.metrics.get(result.metric.slug))]
    protocol = (result.provenance or {}).get("protocol") or {}
    return {
        "layout_version": LAYOUT_VERSION,
        "dump_date": date.isoformat(),
        "model": model.address,
        "model_name": model.name,
        "origin": model.origin,
        "hub_id": model.hub_id or hub_id(model.checkpoint),
        "hub_commit": model.hub_commit,
        "benchmark": entry.benchmark.slug,
        "benchmark_plugin": entry.benchmark.plugin,
        "aggregation_version": entry.benchmark.aggregation_version,
        "entry": entry.key,
        "dataset": result.dataset.slug,
        "metric": result.metric.slug,
        "variant": result.variant,
        "value": float(result.value),
        "std": float(result.std or 0.0),
        "n_runs": int(result.n_seeds or 0) if ours else 0,
        "statistic": str(protocol.get("statistic") or "mean") if ours else "reported",
        "run_values": values,
        "preview": bool(result.preview),
        "source": result.source,
        "plugin_pins": json.dumps((job.spec or {}).get("code", []) if ours else [], sort_keys=True),
        "recorded_at": result.updated_at.astimezone(dt.UTC).isoformat(),
    }


def hub_id(checkpoint: str) -> str:
    """``checkpoint`` when it is a Hugging Face Hub id (``org/name``), not a local path or an artefact's URL."""
    return checkpoint if HUB_ID_RE.match(checkpoint or "") else ""


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value
