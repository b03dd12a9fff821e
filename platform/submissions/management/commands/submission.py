"""``manage.py submission N``: one submission's state, its jobs, and the scores it earned.

What the submission page shows, in a terminal: the status (a failure says whether it was refunded),
what was asked (benchmark, datasets, preview, the protocol's settings the submitter changed), each
job's state, each dataset's recorded result (the protocol's statistic over seeds or folds, with
its spread) and the benchmark score with its rank.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from jobs.models import Job
from leaderboard.models import Result, Score
from submissions.models import Submission
from submissions.terminal import describe


class Command(BaseCommand):
    help = "Show a submission: its state, its jobs and its scores."

    def add_arguments(self, parser) -> None:
        parser.add_argument("id", type=int, help="The submission's number (manage.py submit prints it).")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print it as JSON.")

    def handle(self, *args, **options) -> None:
        id, as_json = options["id"], options["as_json"]
        submission = (
            Submission.objects.select_related("language_model", "submitter")
            .prefetch_related("benchmarks")
            .filter(pk=id)
        ).first()
        if submission is None:
            raise CommandError(f"no submission #{id}")
        shown = summary(submission)
        if as_json:
            self.stdout.write(json.dumps(shown, indent=2, sort_keys=True))
            return
        self.stdout.write(
            f"submission #{submission.pk}: {shown['address']} by {shown['submitter']} "
            f"on {', '.join(shown['benchmarks'])}"
            f" — {submission.status_text}"
        )
        settings = json.dumps(shown["overrides"], sort_keys=True) if shown["overrides"] else "the protocol's own"
        self.stdout.write(f"  {'quick preview (not ranked); ' if shown['preview'] else ''}settings: {settings}")
        self.stdout.write("jobs:")
        for job in Job.objects.filter(submission=submission).select_related("dataset", "language_model").order_by("pk"):
            self.stdout.write("  " + describe(job))
        self.stdout.write("results:" if shown["results"] else "results: none recorded yet")
        for row in shown["results"]:
            spread = f" ± {row['std']:.2f}" if row["std"] else ""
            self.stdout.write(
                f"  {row['dataset']:<24} {row['metric']:<18} {row['value']:.2f}{spread} ({row['n']} {row['over']})"
                + (" [preview]" if row["preview"] else "")
            )
        for row in shown["scores"]:
            value = "incomplete" if row["score"] is None else f"{row['score']:.2f}"
            rank = f", rank {row['rank']}" if row["rank"] else ""
            self.stdout.write(f"score on {row['benchmark']}: {value}{rank}")


def summary(submission: Submission) -> dict:
    """The submission as the command prints it (and ``--json`` gives it)."""
    model = submission.language_model
    finetunes = list(Job.objects.filter(submission=submission, kind=Job.Kind.FINETUNE).order_by("pk"))
    overrides = finetunes[0].contract.overrides.to_json() if finetunes else {}
    jobs = [job.pk for job in finetunes]
    results = Result.objects.filter(language_model=model, job__in=jobs).select_related("dataset", "metric")
    benchmarks = sorted(b.slug for b in submission.benchmarks.all())
    scores = Score.objects.filter(language_model=model, benchmark__slug__in=benchmarks).select_related("benchmark")
    return {
        "submission": submission.pk,
        "status": submission.status,
        "refunded": submission.refunded,
        "refund": submission.refund.sentence if submission.status == Submission.Status.FAILED else "",
        "model": model.slug,  # the internal key the other commands and the API take
        "address": model.address,  # where its page is: /models/<address>/
        "submitter": submission.submitter.get_username(),
        "benchmarks": benchmarks,
        "preview": submission.preview,
        "overrides": overrides,
        "results": [
            {
                "dataset": r.dataset.slug,
                "metric": r.metric.slug,
                "value": r.value,
                "std": r.std,
                "n": r.n_seeds,
                "over": "folds" if ((r.provenance or {}).get("protocol") or {}).get("cross_validation") else "seeds",
                "preview": r.preview,
            }
            for r in results.order_by("dataset__slug")
        ],
        "scores": [{"benchmark": s.benchmark.slug, "score": s.score, "rank": s.rank} for s in scores],
    }
