"""``manage.py submit``: evaluate a checkpoint or a Hub model, or pretrain a recipe and evaluate the result.

A gated or private Hub repository (``--hub``) is read with the token in ``HF_TOKEN``, the variable the
Hugging Face tools read too: an option would leave it in the shell's history and the process list.

It parses its options into a :class:`~submissions.submitting.SubmissionRequest` for
:func:`~submissions.submitting.submit`, the one service the form and the API call too, and prints
the jobs it queued, or the earlier submission it reused. ``--wait`` follows the jobs in the
terminal and exits non-zero when the submission does not finish; ``manage.py submission N``
shows one later.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from biolm.contract import Overrides
from registry.models import LanguageModel
from submissions.models import Submission
from submissions.submitting import SubmissionError, SubmissionRequest, submit
from submissions.terminal import follow


class Command(BaseCommand):
    help = "Queue the jobs that evaluate a model on a benchmark (pretraining it first from a recipe if asked)."

    def add_arguments(self, parser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--model", type=Path, help="A checkpoint directory, or a .tar.gz/.tgz/.tar/.zip of one.")
        source.add_argument("--hub", help="A Hugging Face Hub model id, org/name[@revision], fetched by a CPU job.")
        source.add_argument("--recipe", help="Pretrain this recipe (see manage.py plugins) on --corpus first.")
        parser.add_argument("--corpus", type=Path, help="With --recipe: a text file, one document per line.")
        parser.add_argument("--benchmark", required=True, help="The benchmark's slug, e.g. blurb.")
        parser.add_argument("--datasets", nargs="+", default=(), help="Only these of its datasets (default: all).")
        parser.add_argument("--owner", required=True, help="The submitter's username (the quota is theirs).")
        parser.add_argument("--name", help="The model's display name (default: the checkpoint's name).")
        parser.add_argument("--slug", help="The model's slug (default: from the checkpoint's name, made unique).")
        parser.add_argument("--steps", type=int, help="With --recipe: pretraining steps (default: the recipe's).")
        parser.add_argument("--pretrain-settings", default="{}", help="With --recipe: JSON of recipe settings.")
        parser.add_argument("--gpus", type=int, default=1, help="With --recipe: GPUs of each node (torchrun).")
        parser.add_argument(
            "--nodes", type=int, default=1, help="With --recipe: nodes (more than 1 runs on a Slurm worker)."
        )
        parser.add_argument(
            "--overrides",
            default=None,
            help="JSON overriding the protocol's settings (results say 'custom settings'); settings: "
            + ", ".join(Overrides.names())
            + '. Example: \'{"seeds": 1, "grid": "single"}\'.',
        )
        parser.add_argument("--protocol", default=None, help="Deprecated alias of --overrides (kept for one release).")
        parser.add_argument("--preview", action="store_true", help="A quick preview: one grid point, one seed.")
        parser.add_argument(
            "--rerun", action="store_true", help="Evaluate again even if these weights and settings were evaluated."
        )
        parser.add_argument("--domain", default="", choices=["", *LanguageModel.Domain.values],
                            help="What it was pretrained on (the leaderboard's domain filter).")  # fmt: skip
        parser.add_argument("--vocabulary", default="", choices=["", *LanguageModel.VocabularyKind.values],
                            help="domain: its own vocabulary; general: inherited from a general model.")  # fmt: skip
        parser.add_argument("--initialisation", default="", choices=["", *LanguageModel.Initialisation.values],
                            help="How its pretraining started (--base-model makes it continual).")  # fmt: skip
        parser.add_argument("--base-model", default="", help="The checkpoint it continued pretraining from.")
        parser.add_argument("--priority", type=int, default=0, help="Higher runs first within the owner's jobs.")
        parser.add_argument("--private", action="store_true", help="Only the owner and staff see the model.")
        parser.add_argument("--wait", action="store_true", help="Follow the jobs; exit 1 unless all succeed.")
        parser.add_argument("--json", action="store_true", help="Print the submission and its jobs as JSON.")

    def handle(self, *args, **options) -> None:
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"no user {options['owner']!r} (create one with manage.py createsuperuser)")
        if options["corpus"] is not None and options["recipe"] is None:
            raise CommandError("--corpus goes with --recipe")
        request = SubmissionRequest(
            owner=owner,
            benchmark=options["benchmark"],
            model=options["model"],
            hub=options["hub"],
            hub_token=os.environ.get("HF_TOKEN", "").strip() if options["hub"] else "",
            recipe=options["recipe"],
            corpus=options["corpus"],
            datasets=tuple(options["datasets"]),
            name=options["name"],
            slug=options["slug"],
            overrides=self.overrides(options),
            pretrain_steps=options["steps"],
            pretrain_settings=_json_object(options["pretrain_settings"], "--pretrain-settings"),
            gpus=options["gpus"],
            nodes=options["nodes"],
            private=options["private"],
            priority=options["priority"],
            preview=options["preview"],
            rerun=options["rerun"],
            pretraining_domain=options["domain"],
            vocabulary_kind=options["vocabulary"],
            initialisation=options["initialisation"],
            base_model=options["base_model"],
        )
        try:
            submission = submit(request)
        except SubmissionError as exc:
            raise CommandError(f"--{exc.field}: {exc}" if exc.field == "overrides" else str(exc)) from None
        jobs = list(submission.jobs.select_related("dataset").order_by("pk"))
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(submission, jobs), indent=2))
        else:
            self.report(submission, jobs, options["benchmark"])
        if options["wait"]:
            self.wait(submission, [job.pk for job in jobs])

    def overrides(self, options: dict) -> dict:
        if options["protocol"] is not None:
            if options["overrides"] is not None:
                raise CommandError("give --overrides only (--protocol is its deprecated alias)")
            sys.stderr.write("--protocol is deprecated: it is now --overrides (the same JSON)\n")
            return _json_object(options["protocol"], "--protocol")
        return _json_object(options["overrides"] or "{}", "--overrides")

    def report(self, submission: Submission, jobs: list, benchmark: str) -> None:
        if submission.reused:
            ended = submission.updated_at if submission.is_finished else None
            when = f"finished {timezone.localtime(ended):%H:%M}" if ended else submission.status
            self.stdout.write(
                self.style.WARNING(
                    f"reused submission #{submission.pk} ({when}); nothing queued "
                    "(these weights and settings were evaluated already: --rerun evaluates them again)"
                )
            )
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"submission #{submission.pk}: {submission.language_model.slug} on {benchmark}, {len(jobs)} jobs queued"
            )
        )
        for job in jobs:
            target = job.dataset.slug if job.dataset else job.spec.get("recipe", "")
            after = ", ".join(f"#{d}" for d in job.depends_on.values_list("pk", flat=True))
            self.stdout.write(
                f"  #{job.pk} {job.kind:<9} {job.queue}  {target}" + (f"  (after {after})" if after else "")
            )

    def wait(self, submission: Submission, ids: list[int]) -> None:
        follow(ids, self.stdout.write)
        submission.refresh_from_db()
        line = f"submission #{submission.pk} {submission.status_text}; manage.py submission {submission.pk} shows it"
        if submission.status != Submission.Status.FINISHED:
            raise CommandError(line)
        self.stdout.write(self.style.SUCCESS(line))


def _as_json(submission: Submission, jobs: list) -> dict:
    return {
        "submission": submission.pk,
        "reused": submission.reused,
        "status": submission.status,
        "model": submission.language_model.slug,
        "jobs": [
            {"id": j.pk, "kind": j.kind, "queue": j.queue, "dataset": j.dataset.slug if j.dataset else None}
            for j in jobs
        ],
    }


def _json_object(text: str, option: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"{option}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CommandError(f"{option}: expected a JSON object, got {type(value).__name__}")
    return value
