"""A dataset's page: what it is, how it is scored, its splits against its paper's, its terms, and its leaderboard.

The page is the registry's (``registry:dataset-detail``, ``/datasets/<slug>/``) but shows results,
and the registry may not import the leaderboard (an import-linter contract: the registry is the
lower layer, synced from plugins, and must not depend on what is computed from it). So the view
lives here, and the project's URLconf (:mod:`biolm_site.urls`) mounts it under the registry's
name, beside the registry's own list of datasets: the URL and every ``reverse()`` stay as they were.

The leaderboard lists every model the reader may see with a number on the dataset: our results
(mean ± standard deviation over seeds, scope "") and the numbers papers report, marked as such
with their source, since a transcribed number was obtained under that paper's protocol, not ours.
One table per metric (and variant), best first by the metric's direction. Examples and gold
labels are never shown; only sizes, the label set's size and the import's fingerprint.

A dataset whose plugin was uninstalled (inactive) keeps its page and its results as they were last
computed, under a notice that says so, without the way to import it (its reader is gone).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from leaderboard.models import Result
from registry.models import Dataset, LanguageModel, Metric


@dataclass
class Board:
    """The results on the dataset under one metric (and variant), best first."""

    metric: Metric
    variant: str
    results: list[Result]

    @property
    def groups(self) -> list[tuple[LanguageModel, list[Result]]]:
        """The results per model, best model first: a model several papers report (BioBERT in Gu et al. 2021
        and Fang et al. 2023) is one entry with each paper's value beside its source, not two models."""
        grouped: dict[int, tuple[LanguageModel, list[Result]]] = {}
        for result in self.results:
            grouped.setdefault(result.language_model_id, (result.language_model, []))[1].append(result)
        return list(grouped.values())

    @property
    def caption(self) -> str:
        variant = f" ({self.variant})" if self.variant else ""
        direction = "higher is better" if self.metric.higher_is_better else "lower is better"
        return f"{self.metric.name}{variant} on the test split, best first ({direction})"


def dataset_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dataset = get_object_or_404(
        Dataset.objects.select_related("task_type", "metric").prefetch_related("entries__benchmark"),
        slug=slug,  # inactive too: a dataset whose plugin was uninstalled keeps its page and results
    )
    latest = dataset.current_import
    return render(
        request,
        "registry/dataset_detail.html",
        {
            "dataset": dataset,
            "uninstalled": not dataset.active,
            "latest": latest,
            "splits": _splits(dataset, latest),
            "benchmarks": sorted({e.benchmark for e in dataset.entries.all()}, key=lambda b: b.name),
            "boards": boards(dataset, LanguageModel.objects.visible_to(request.user)),
        },
    )


def _splits(dataset: Dataset, latest) -> list[dict]:
    """Each split as the paper counts it and as imported, with whether the files differ from the paper."""
    differs = latest.differences_from_paper() if latest is not None else {}
    rows = []
    for split in dataset.splits:
        name = split["name"]
        rows.append({
            "name": name,
            "paper": split.get("size"),
            "unit": split.get("unit", ""),
            "files_in_paper_unit": (latest.paper_unit_sizes or {}).get(name) if latest else None,
            "examples": (latest.split_sizes or {}).get(name) if latest else None,
            "differs": name in differs,
        })  # fmt: skip
    return rows


def boards(dataset: Dataset, visible) -> list[Board]:
    """The visible models' results on ``dataset``, one board per metric and variant, the dataset's own metric first.

    One query whatever the number of models: results with their models and metrics joined.
    """
    results = (
        Result.objects.filter(dataset=dataset, language_model__in=visible)
        .select_related("language_model", "metric")
        .order_by("metric__name", "variant")
    )
    grouped: dict[tuple[int, str], list[Result]] = {}
    for result in results:
        grouped.setdefault((result.metric_id, result.variant), []).append(result)
    made = []
    for (_, variant), rows in grouped.items():
        metric = rows[0].metric
        sign = -1 if metric.higher_is_better else 1
        rows.sort(key=lambda r: (sign * r.value, bool(r.scope), r.language_model.name.casefold()))
        made.append(Board(metric, variant, rows))
    made.sort(key=lambda b: (b.metric.pk != dataset.metric_id, b.metric.name, b.variant))
    return made
