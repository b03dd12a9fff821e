"""Published results and score recomputation, when the registry has synced the plugin contributions.

Connected to ``registry.signals`` in :class:`leaderboard.apps.LeaderboardConfig`, so the
registry never imports the leaderboard. A benchmark whose aggregation or entries changed gets
every stored score recomputed; otherwise only the reported models whose transcribed numbers
changed. Runs inside the sync's transaction.
"""

from __future__ import annotations

from biolm.specs import BenchmarkSpec, PublishedModelSpec
from leaderboard.models import Result
from leaderboard.score_aggregation import recompute_scores, recompute_stale_scores
from registry.models import Benchmark, LanguageModel
from registry.signals import BenchmarkSynced
from registry.sync import SyncReport, upsert


def record_published_results(sender: object, synced: BenchmarkSynced, report: SyncReport, **kwargs: object) -> None:
    benchmark = synced.benchmark
    changed = [
        model
        for model, published in synced.published
        if _upsert_results(benchmark, synced.spec, model, published, report)
    ]
    changed += _drop_departed(benchmark, [model for model, _ in synced.published])
    if synced.definition_changed:
        report.rescored += recompute_scores(benchmark)
    elif changed:
        report.rescored += recompute_scores(benchmark, changed)


def recompute_stale(sender: object, report: SyncReport, **kwargs: object) -> None:
    report.rescored += recompute_stale_scores()


def _upsert_results(
    benchmark: Benchmark, spec: BenchmarkSpec, model: LanguageModel, published: PublishedModelSpec, report: SyncReport
) -> bool:
    """Write one published row's results; return whether any number changed."""
    rows = {e.key: e for e in benchmark.entries.all()}
    variants = {e.key: e.variant for e in spec.entries}
    source = (published.source or spec.published_source or spec.source_paper)[:300]
    changed = False
    wanted = set()
    for key, value in published.scores.items():
        lookup = {"dataset_id": rows[key].dataset_id, "metric_id": rows[key].metric_id, "variant": variants[key]}
        wanted.add(tuple(lookup.values()))
        _, result_changed = upsert(
            Result,
            report,
            "results",
            {"language_model": model, "scope": spec.slug, **lookup},
            {"value": float(value), "source": source},
        )
        changed |= result_changed
    for result in Result.objects.filter(language_model=model, scope=spec.slug):
        if (result.dataset_id, result.metric_id, result.variant) not in wanted:
            result.delete()
            changed = True
    return changed


def _drop_departed(benchmark: Benchmark, listed: list[LanguageModel]) -> list[LanguageModel]:
    """Reported models this benchmark's table no longer lists lose its numbers (their other papers' stay);
    returns them, for their score on this benchmark to be recomputed, which removes it."""
    departed = list(
        LanguageModel.objects.filter(origin=LanguageModel.Origin.REPORTED, results__scope=benchmark.slug)
        .exclude(pk__in=[model.pk for model in listed])
        .distinct()
    )
    Result.objects.filter(language_model__in=departed, scope=benchmark.slug).delete()
    return departed
