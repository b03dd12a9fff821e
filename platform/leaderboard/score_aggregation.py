"""Materialise per-model per-benchmark scores from results.

Every score goes through :func:`biolm.aggregation.aggregate` with a spec rebuilt
from the database rows, so the leaderboard, the ``score`` command and the
tests that recompute the papers' summaries share one implementation.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from django.db import transaction

from biolm.aggregation import aggregate
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec
from leaderboard.models import Result, Score
from leaderboard.ranking import rank_benchmark
from leaderboard.resamples import store_score_resamples
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


def entry_results(benchmark: Benchmark, model: LanguageModel) -> dict[str, Result]:
    """The model's result for each entry: the paper's own for reported rows, ours otherwise."""
    scope = benchmark.slug if model.origin == LanguageModel.Origin.REPORTED else ""
    results = {
        (r.dataset_id, r.metric_id, r.variant): r for r in Result.objects.filter(language_model=model, scope=scope)
    }
    found = {}
    for entry in benchmark.entries.all():
        result = results.get((entry.dataset_id, entry.metric_id, entry.variant))
        if result is not None:
            found[entry.key] = result
    return found


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
        results = entry_results(benchmark, model)
        if not results:
            Score.objects.filter(language_model=model, benchmark=benchmark).delete()
            continue
        values = {key: result.value for key, result in results.items()}
        outcome = aggregate(spec, values)
        throughputs = [r.inference_per_s for r in results.values() if r.inference_per_s is not None]
        score, _ = Score.objects.update_or_create(
            language_model=model,
            benchmark=benchmark,
            defaults={
                "score": outcome.score,
                "groups": outcome.groups,
                "summaries": outcome.summaries,
                "entries": values,
                "missing": list(outcome.missing),
                "aggregation_version": benchmark.aggregation_version,
                "entry_spread": {
                    key: {"std": r.std, "n": r.n_seeds} for key, r in results.items() if r.n_seeds is not None
                },
                "inference_per_s": statistics.median(throughputs) if throughputs else None,
                # One quick-preview number makes the whole score a preview: never ranked (leaderboard.ranking).
                "preview": any(r.preview for r in results.values()),
            },
        )
        store_score_resamples(spec, score, results)
    rank_benchmark(benchmark)  # any changed score can move every rank
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
