"""``manage.py submit``: evaluate a checkpoint, or pretrain a recipe and evaluate the result, on a benchmark.

It calls :func:`jobs.graph.submit`, the same service the web form will call, and prints the
jobs it queued. Workers pick them up (``manage.py worker``); ``manage.py jobs`` follows them.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from jobs.graph import PROTOCOL_OVERRIDES, SubmissionError, SubmissionRequest, submit


class Command(BaseCommand):
    help = "Queue the jobs that evaluate a model on a benchmark (pretraining it first from a recipe if asked)."

    def add_arguments(self, parser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--model", type=Path, help="A checkpoint directory, or a .tar.gz/.tgz/.tar/.zip of one.")
        source.add_argument("--recipe", help="Pretrain this recipe (see manage.py plugins) on --corpus first.")
        parser.add_argument("--corpus", type=Path, help="With --recipe: a text file, one document per line.")
        parser.add_argument("--benchmark", required=True, help="The benchmark's slug, e.g. blurb.")
        parser.add_argument("--datasets", nargs="+", default=(), help="Only these of its datasets (default: all).")
        parser.add_argument("--owner", required=True, help="The submitter's username (the quota is theirs).")
        parser.add_argument("--name", help="The model's display name (default: the checkpoint's name).")
        parser.add_argument("--slug", help="The model's slug (default: from the checkpoint's name, made unique).")
        parser.add_argument("--steps", type=int, help="With --recipe: pretraining steps (default: the recipe's).")
        parser.add_argument("--pretrain-settings", default="{}", help="With --recipe: JSON of recipe settings.")
        parser.add_argument("--gpus", type=int, default=1, help="With --recipe: GPUs of one host (torchrun).")
        parser.add_argument(
            "--protocol",
            default="{}",
            help=f"JSON overriding the benchmark's protocol for quick runs; keys: {', '.join(PROTOCOL_OVERRIDES)}.",
        )
        parser.add_argument("--priority", type=int, default=0, help="Higher runs first within the owner's jobs.")
        parser.add_argument("--private", action="store_true", help="Only the owner and staff see the model.")
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
            recipe=options["recipe"],
            corpus=options["corpus"],
            datasets=tuple(options["datasets"]),
            name=options["name"],
            slug=options["slug"],
            protocol=_json_object(options["protocol"], "--protocol"),
            pretrain_steps=options["steps"],
            pretrain_settings=_json_object(options["pretrain_settings"], "--pretrain-settings"),
            gpus=options["gpus"],
            private=options["private"],
            priority=options["priority"],
        )
        try:
            submission = submit(request)
        except SubmissionError as exc:
            raise CommandError(str(exc)) from None
        jobs = list(submission.jobs.select_related("dataset").order_by("pk"))
        if options["json"]:
            payload = {
                "submission": submission.pk,
                "model": submission.language_model.slug,
                "jobs": [
                    {"id": j.pk, "kind": j.kind, "queue": j.queue, "dataset": j.dataset.slug if j.dataset else None}
                    for j in jobs
                ],
            }
            self.stdout.write(json.dumps(payload, indent=2))
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"submission #{submission.pk}: {submission.language_model.slug} on {options['benchmark']}, "
                f"{len(jobs)} jobs queued"
            )
        )
        for job in jobs:
            target = job.dataset.slug if job.dataset else job.spec.get("recipe", "")
            after = ", ".join(f"#{d}" for d in job.depends_on.values_list("pk", flat=True))
            self.stdout.write(
                f"  #{job.pk} {job.kind:<9} {job.queue}  {target}" + (f"  (after {after})" if after else "")
            )


def _json_object(text: str, option: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"{option}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CommandError(f"{option}: expected a JSON object, got {type(value).__name__}")
    return value
