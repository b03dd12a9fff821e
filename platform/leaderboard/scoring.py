"""Materialise per-model per-benchmark scores from results.

Every score goes through :func:`biolm.aggregation.aggregate` with a spec rebuilt
from the database rows, so the leaderboard, the ``score`` command and the
tests that recompute the papers' summaries share one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from biolm.aggregation import aggregate
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec
from leaderboard.models import Result, Score
from registry.models import Benchmark, LanguageModel


def aggregation_from_json(data: dict) -> AggregationSpec:
    return AggregationSpec(
        version=data["version"],
        primary=data["primary"],
        groups=tuple(
            GroupSpec(slug=g["slug"], name=g["name"], members=tuple(g["members"])) for g in data.get("groups", [])
        ),
        summaries=tuple(
            SummarySpec(
                slug=s["slug"],
                name=s["name"],
                method=s["method"],
                members=tuple(s.get("members", ())),
                weights=tuple(s.get("weights", ())),
            )
            for s in data.get("summaries", [])
        ),
        show_group_scores=data.get("show_group_scores", True),
    )


def spec_for(benchmark: Benchmark) -> BenchmarkSpec:
    """The benchmark as a spec, rebuilt from its rows (entries and aggregation)."""
    entries = tuple(
        EntrySpec(key=e.key, dataset=e.dataset.slug, metric=e.metric.slug, label=e.label, variant=e.variant)
        for e in benchmark.entries.select_related("dataset", "metric")
    )
    return BenchmarkSpec(
        slug=benchmark.slug,
        name=benchmark.name,
        description=benchmark.description,
        entries=entries,
        aggregation=aggregation_from_json(benchmark.aggregation),
        precision=benchmark.precision,
    )


def entry_values(benchmark: Benchmark, model: LanguageModel) -> dict[str, float]:
    """The model's number for each entry: the paper's own for reported rows, ours otherwise."""
    scope = benchmark.slug if model.origin == LanguageModel.Origin.REPORTED else ""
    results = {
        (r.dataset_id, r.metric_id, r.variant): r.value
        for r in Result.objects.filter(language_model=model, scope=scope)
    }
    values = {}
    for entry in benchmark.entries.all():
        value = results.get((entry.dataset_id, entry.metric_id, entry.variant))
        if value is not None:
            values[entry.key] = value
    return values


def models_with_results(benchmark: Benchmark) -> Iterable[LanguageModel]:
    """Models that have at least one number this benchmark can use."""
    reported = LanguageModel.objects.filter(
        origin=LanguageModel.Origin.REPORTED, results__scope=benchmark.slug
    ).distinct()
    reproduced = LanguageModel.objects.filter(
        origin=LanguageModel.Origin.REPRODUCED, results__scope="", results__dataset__in=benchmark.datasets.all()
    ).distinct()
    return list(reported) + list(reproduced)


@transaction.atomic
def recompute_scores(benchmark: Benchmark, models: Iterable[LanguageModel] | None = None) -> int:
    """Recompute and store the scores of ``models`` (default: all with results). Returns how many."""
    spec = spec_for(benchmark)
    targets = list(models) if models is not None else list(models_with_results(benchmark))
    for model in targets:
        values = entry_values(benchmark, model)
        if not values:
            Score.objects.filter(language_model=model, benchmark=benchmark).delete()
            continue
        outcome = aggregate(spec, values)
        Score.objects.update_or_create(
            language_model=model,
            benchmark=benchmark,
            defaults={
                "score": outcome.score,
                "groups": outcome.groups,
                "summaries": outcome.summaries,
                "entries": values,
                "missing": list(outcome.missing),
                "aggregation_version": benchmark.aggregation_version,
            },
        )
    return len(targets)


def recompute_stale_scores() -> int:
    """Recompute every score whose aggregation version is no longer its benchmark's."""
    count = 0
    stale = Score.objects.stale().select_related("benchmark", "language_model")
    by_benchmark: dict[int, tuple[Benchmark, list[LanguageModel]]] = {}
    for score in stale:
        by_benchmark.setdefault(score.benchmark_id, (score.benchmark, []))[1].append(score.language_model)
    for benchmark, models in by_benchmark.values():
        count += recompute_scores(benchmark, models)
    return count
