"""Per-dataset results and the materialised per-benchmark scores shown on the leaderboard.

A :class:`Result` is one number a model obtained on a dataset under a metric:
either transcribed from a paper's table (scope = that benchmark's slug, since
the same paper-model pair is only comparable within that table) or aggregated
here from seeds (scope = "", usable by every benchmark with that dataset and
metric). A :class:`Score` is derived from results by the benchmark's
aggregation and stores the aggregation version it was computed with, so a
changed aggregation can find and recompute stale scores.

A result from a quick preview (one grid point, one seed) is marked ``preview``, and so is every
score built on one: a number that skipped the hyperparameter search and the seed average is not
comparable with a full protocol's, so it is shown apart and never ranked (leaderboard.ranking).

A result on a held dataset (gated data kept on its holder's hosts, :class:`registry.models.DataHolder`) is
recorded ``pending`` and stays off every page, score and API until one of the holder's approvers approves
it in the admin (:mod:`leaderboard.approvals`); a rejection keeps it off, with the reason. ``Result.objects``
is the published results only; ``Result.everything`` is for recording and the admin.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from registry.models import Benchmark, Dataset, LanguageModel, Metric


class PublishedResults(models.Manager["Result"]):
    """Results anyone may see: none awaiting its data holder's approval, none it rejected."""

    def get_queryset(self) -> models.QuerySet[Result]:
        return super().get_queryset().exclude(approval__in=Result.UNPUBLISHED)


class Result(models.Model):
    class Approval(models.TextChoices):
        NOT_NEEDED = "", "not needed (public data)"
        PENDING = "pending", "awaiting the data holder's approval"
        APPROVED = "approved"
        REJECTED = "rejected"

    UNPUBLISHED = (Approval.PENDING, Approval.REJECTED)

    language_model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="results")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="results")
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="results")
    variant = models.CharField(max_length=200, blank=True)
    scope = models.SlugField(
        max_length=100, blank=True, help_text="Benchmark slug for a number transcribed from its paper; empty if ours."
    )
    value = models.FloatField(help_text="On the 0-100 scale.")
    std = models.FloatField(null=True, blank=True)
    median = models.FloatField(null=True, blank=True)
    n_seeds = models.PositiveSmallIntegerField(null=True, blank=True)
    source = models.CharField(max_length=300, blank=True)
    job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="results",
        help_text="The job that recorded it; empty for a number transcribed from a paper.",
    )  # fmt: skip
    provenance = models.JSONField(
        default=dict, blank=True, help_text="Library and plugin versions, commit, device and seeds of its runs."
    )
    inference_per_s = models.FloatField(
        null=True, blank=True, help_text="Median test-set inference throughput of its runs, examples per second."
    )
    preview = models.BooleanField(
        default=False,
        help_text="From a quick preview: one grid point, one seed. Never ranked; a full result replaces it.",
    )
    gpu_hours = models.FloatField(
        null=True,
        blank=True,
        help_text="GPU-hours its fine-tuning took, retried attempts and shared GPUs' shares counted.",
    )
    wall_s = models.FloatField(
        null=True, blank=True, help_text="Seconds from its fine-tuning's first start to its end."
    )
    gpu_model = models.CharField(max_length=200, blank=True, help_text="The GPUs its workers reported; empty: CPUs.")
    approval = models.CharField(
        max_length=10, choices=Approval.choices, blank=True, default=Approval.NOT_NEEDED,
        help_text="A held dataset's result is published only once its data holder approves it.",
    )  # fmt: skip
    approval_reason = models.TextField(blank=True, help_text="Why it was rejected (or a note with the approval).")
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approval_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PublishedResults()
    everything = models.Manager()

    class Meta:
        base_manager_name = "everything"
        constraints = [
            models.UniqueConstraint(
                fields=["language_model", "dataset", "metric", "variant", "scope"], name="unique_result"
            )
        ]
        indexes = [models.Index(fields=["dataset", "metric"])]

    def __str__(self) -> str:
        return f"{self.language_model} {self.dataset.slug} {self.metric.slug}={self.value:.2f}"


class HeldResult(Result):
    """A held dataset's result, as its data holder's approvers see it in the admin (:mod:`leaderboard.approvals`)."""

    class Meta:
        proxy = True
        verbose_name = "held dataset's result"
        verbose_name_plural = "held datasets' results (approval)"


class ScoreQuerySet(models.QuerySet["Score"]):
    def stale(self) -> ScoreQuerySet:
        """Scores computed with an aggregation other than their benchmark's current one."""
        return self.exclude(aggregation_version=models.F("benchmark__aggregation_version"))

    def ranked(self) -> ScoreQuerySet:
        return self.order_by(models.F("score").desc(nulls_last=True), "language_model__name")


class Score(models.Model):
    language_model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="scores")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="scores")
    score = models.FloatField(null=True, blank=True, help_text="The primary summary; empty when incomplete.")
    groups = models.JSONField(default=dict)
    summaries = models.JSONField(default=dict)
    entries = models.JSONField(default=dict, help_text="{entry key: value} used for this score.")
    missing = models.JSONField(default=list)
    aggregation_version = models.CharField(max_length=50)
    entry_spread = models.JSONField(
        default=dict, blank=True, help_text="{entry key: {std, n}} over the seeds (or folds) behind each entry."
    )
    inference_per_s = models.FloatField(null=True, blank=True, help_text="Median over its entries' throughputs.")
    preview = models.BooleanField(
        default=False, help_text="Built on at least one quick-preview result: shown apart, never ranked."
    )
    rank = models.PositiveIntegerField(null=True, blank=True, help_text="1 + the models significantly better.")
    rank_tied = models.BooleanField(default=False, help_text="Shares its rank with the model above.")
    rank_basis = models.CharField(
        max_length=10, blank=True, help_text='"bootstrap" (paired test on predictions) or "point" (no predictions).'
    )
    rank_interval = models.JSONField(
        null=True, blank=True, help_text="{model, low, high}: 95% interval of the difference to the model above."
    )
    computed_at = models.DateTimeField(auto_now=True)

    objects = ScoreQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["language_model", "benchmark"], name="unique_score")]
        # A board's cache version reads the benchmark's newest score on every request (board_cache.version).
        indexes = [models.Index(fields=["benchmark", "computed_at"], name="score_benchmark_newest")]

    def __str__(self) -> str:
        return f"{self.language_model} on {self.benchmark.slug}: {self.score}"

    @property
    def complete(self) -> bool:
        return not self.missing


class ResultResamples(models.Model):
    """A result's value on each of the dataset's shared bootstrap resamples of its test examples.

    Computed once from the stored per-example test predictions (seeds combined inside each
    resample), so ranking a benchmark never rescores predictions: see biolm.significance.
    """

    result = models.OneToOneField(Result, on_delete=models.CASCADE, related_name="resamples")
    dataset_key = models.CharField(max_length=300, help_text="What seeds the shared resamples (dataset, test size).")
    values = models.BinaryField(help_text="float64 little-endian, one per resample; NaN where undefined.")
    computed_at = models.DateTimeField(auto_now=True)


class ResultClasses(models.Model):
    """A result's per-class test figures (relation types, PICO elements, entity types, HoC hallmarks).

    Computed once, when the result is recorded, from the stored test predictions
    (:mod:`workers.engine.per_class_counts`): only aggregates of classes with enough test examples are
    ever stored, so nothing here can reveal the gold label of any one example.
    """

    result = models.OneToOneField(Result, on_delete=models.CASCADE, related_name="classes")
    figures = models.JSONField(
        help_text="{classes: [{name, support, precision, recall, f1}], below_threshold, min_support}."
    )
    computed_at = models.DateTimeField(auto_now=True)


class ScoreResamples(models.Model):
    """A model's benchmark score on each shared resample: what its paired comparisons difference."""

    score = models.OneToOneField(Score, on_delete=models.CASCADE, related_name="resamples")
    values = models.BinaryField()
    computed_at = models.DateTimeField(auto_now=True)


class Ranking(models.Model):
    """When a benchmark's ranks were last computed, and how."""

    benchmark = models.OneToOneField(Benchmark, on_delete=models.CASCADE, related_name="ranking")
    aggregation_version = models.CharField(max_length=50)
    resamples = models.PositiveIntegerField()
    confidence = models.FloatField()
    models_ranked = models.PositiveIntegerField()
    models_tested = models.PositiveIntegerField(help_text="Of them, with predictions (bootstrap-tested).")
    seconds = models.FloatField()
    computed_at = models.DateTimeField(auto_now=True)


class Snapshot(models.Model):
    """A leaderboard frozen on a date: what was public then, never rewritten by later results."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="snapshots")
    date = models.DateField()
    aggregation_version = models.CharField(max_length=50)
    board = models.JSONField(help_text="The leaderboard's JSON as the public API gave it that day.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["benchmark", "date"], name="one_snapshot_per_day")]
        ordering = ["-date"]

    def __str__(self) -> str:
        return f"{self.benchmark.slug} {self.date.isoformat()}"

    def save(self, *args, **kwargs) -> None:
        """A citation must keep pointing at the same numbers: a stored snapshot is never rewritten."""
        if self.pk is not None:
            raise ValueError(f"snapshot {self} is immutable; take a new one on another day")
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("leaderboard:snapshot", args=[self.benchmark.slug, self.date.isoformat()])
