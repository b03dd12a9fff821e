"""What a result and a submission cost, and how long a submission took to reach a benchmark's leaderboard.

Both come from the jobs' attempts (:mod:`jobs.attempts`), retried and lost ones included: GPU-hours
are the GPUs each attempt held times the time it held them, a shared GPU counted at its share.
A submission reaches a benchmark's leaderboard when the last of its jobs for that benchmark
succeeds; only submissions whose jobs for it all succeeded are counted, and quick previews are
counted apart from the full protocol, since they run a fraction of it. Only public models' submissions
are counted: a page that anyone reads says nothing of a private model, not even that it was submitted.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Max, Min, Q, Sum

from jobs.models import Attempt, Job
from registry.models import LanguageModel


@dataclass(frozen=True)
class Cost:
    """What some jobs took: GPU-hours, the wall time from the first attempt's start to the last one's end,
    and the GPUs their workers reported ("" when they ran on CPUs)."""

    gpu_hours: float
    wall_s: float | None
    gpu_model: str


def of_jobs(job_ids: Iterable[int]) -> Cost:
    """The cost of ``job_ids`` from their ended attempts."""
    ended = Attempt.objects.filter(job_id__in=list(job_ids), ended_at__isnull=False)
    totals = ended.aggregate(gpu_seconds=Sum("gpu_seconds"), first=Min("started_at"), last=Max("ended_at"))
    models = sorted(set(ended.filter(gpus__gt=0).exclude(gpu_model="").values_list("gpu_model", flat=True)))
    wall = (totals["last"] - totals["first"]).total_seconds() if totals["first"] and totals["last"] else None
    return Cost(gpu_hours=(totals["gpu_seconds"] or 0.0) / 3600, wall_s=wall, gpu_model=" + ".join(models)[:200])


@dataclass(frozen=True)
class Turnaround:
    """Submission-to-leaderboard times on one benchmark: how many submissions, the median and the 90th
    percentile (nearest rank) in seconds, and the median GPU-hours a submission took."""

    submissions: int
    median_s: float | None
    p90_s: float | None
    gpu_hours_median: float | None

    def to_json(self) -> dict:
        return {"submissions": self.submissions, "median_s": self.median_s, "p90_s": self.p90_s,
                "gpu_hours_median": self.gpu_hours_median}  # fmt: skip


def nearest_rank(values: list[float], fraction: float) -> float:
    """The smallest value at least ``fraction`` of ``values`` do not exceed: a time some submission took."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def time_to_leaderboard(benchmark_id: int, preview: bool) -> Turnaround:
    """The turnaround of ``benchmark_id``'s published submissions: full-protocol ones, or previews."""
    published = (
        Job.objects.filter(
            benchmark_id=benchmark_id,
            submission__isnull=False,
            submission__preview=preview,
            language_model__visibility=LanguageModel.Visibility.PUBLIC,
        )
        .values("submission_id")
        .annotate(
            jobs=Count("pk"),
            done=Count("pk", filter=Q(status=Job.Status.SUCCEEDED)),
            submitted=Min("submission__created_at"),
            last=Max("finished_at"),
        )
        .values_list("submission_id", "jobs", "done", "submitted", "last")
    )
    took = {sid: (last - submitted).total_seconds() for sid, jobs, done, submitted, last in published
            if jobs == done and last is not None}  # fmt: skip
    if not took:
        return Turnaround(0, None, None, None)
    gpu_seconds = dict(
        Attempt.objects.filter(job__submission_id__in=list(took))
        .values("job__submission_id")
        .annotate(total=Sum("gpu_seconds"))
        .values_list("job__submission_id", "total")
    )
    hours = [(total or 0.0) / 3600 for total in gpu_seconds.values()]  # none before attempts were kept
    times = list(took.values())
    median_hours = statistics.median(hours) if hours else None
    return Turnaround(len(times), statistics.median(times), nearest_rank(times, 0.9), median_hours)
