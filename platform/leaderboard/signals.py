"""Scores follow their results: a saved or deleted ``Result`` rescores its model when the transaction commits.

Whatever changed the result (a job recording its seeds, the admin, a sync) the leaderboard
stays true without the caller remembering to rescore. Changes are gathered per transaction, so
a job that writes twenty results rescores its model once.
"""

from __future__ import annotations

import threading

from django.db import transaction

_pending = threading.local()


def result_changed(sender, instance, **kwargs) -> None:
    """Gather the model for rescoring at commit: one callback per transaction, however many results change."""
    batch = getattr(_pending, "batch", None)
    connection = transaction.get_connection()
    # A rolled-back transaction drops its callbacks: start a new batch unless ours is still registered.
    if batch is None or not any(entry[1] == batch.flush for entry in connection.run_on_commit):
        batch = _pending.batch = _Batch()
        batch.models.add(instance.language_model_id)
        transaction.on_commit(batch.flush)  # runs at once outside a transaction
    else:
        batch.models.add(instance.language_model_id)


class _Batch:
    def __init__(self) -> None:
        self.models: set[int] = set()

    def flush(self) -> None:
        if getattr(_pending, "batch", None) is self:
            _pending.batch = None
        rescore(self.models)


def rescore(model_ids: set[int]) -> None:
    """Recompute the scores of these models on every benchmark their results (or old scores) touch."""
    from leaderboard.models import Score
    from leaderboard.score_aggregation import recompute_scores
    from registry.models import Benchmark, LanguageModel

    for model in LanguageModel.objects.filter(pk__in=model_ids):
        # Benchmarks with a dataset it has results on, and those it has a score on (its results may be gone).
        # Two small queries: one OR across both joins would join every result with every score (seconds
        # at 1,000 models, bench/leaderboard.py).
        datasets = model.results.values_list("dataset_id", flat=True)
        with_results = set(
            Benchmark.objects.filter(entries__dataset_id__in=datasets).values_list("pk", flat=True).distinct()
        )
        scored = set(Score.objects.filter(language_model=model).values_list("benchmark_id", flat=True))
        benchmarks = Benchmark.objects.filter(pk__in=with_results | scored).order_by("pk")
        for benchmark in benchmarks:
            if (
                model.origin == LanguageModel.Origin.REPORTED
                and benchmark.pk not in scored
                and not (model.results.filter(scope=benchmark.slug).exists())
            ):
                continue  # a paper's row belongs only to the benchmarks that print it
            recompute_scores(benchmark, [model])


def visibility_changed(sender, instance, created: bool = False, update_fields=None, **kwargs) -> None:
    """A model made public or private moves the public ranks: re-rank its benchmarks at commit.

    Ranks are computed over public models only (leaderboard.ranking), so without this a model made
    private would keep pushing public models down until the next result arrived.
    """
    if created or (update_fields is not None and "visibility" not in update_fields):
        return
    previous = getattr(instance, "_loaded_visibility", None)
    if previous is None or previous == instance.visibility:
        return
    instance._loaded_visibility = instance.visibility

    def rerank() -> None:
        from leaderboard.ranking import rank_benchmark
        from registry.models import Benchmark

        for benchmark in Benchmark.objects.filter(scores__language_model_id=instance.pk).distinct():
            rank_benchmark(benchmark)

    transaction.on_commit(rerank)


def remember_visibility(sender, instance, **kwargs) -> None:
    """The visibility a model had when it was read, so a save can tell whether it changed."""
    instance._loaded_visibility = instance.visibility
