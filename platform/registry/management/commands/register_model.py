"""``manage.py register_model PATH``: make a local checkpoint a ``LanguageModel`` ready to be evaluated.

The checkpoint (a directory or an archive) goes through the same intake as a submission
(:mod:`registry.intake`): copied without following links, checked for pickles, code, an
``auto_map`` and a config within the limits, before any row is written. The row is
:func:`registry.registration.register_checkpoint`'s, which never changes another user's model.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from registry.intake import IntakeError, checkpoint_intake
from registry.registration import RegistrationError, check_slug_available, register_checkpoint


class Command(BaseCommand):
    help = "Register a local Hugging Face checkpoint (a directory or a .tar.gz/.tgz/.tar/.zip archive) as a model."

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", type=Path, help="The checkpoint: config, safetensors weights, tokenizer.")
        parser.add_argument("--slug", help="The model's slug (default: from the directory or archive name).")
        parser.add_argument("--name", help="The model's display name (default: the directory or archive name).")
        parser.add_argument("--owner", help="The username of the model's owner.")
        parser.add_argument("--private", action="store_true", help="Only its owner and staff see it.")

    def handle(self, *args, directory: Path, slug: str | None, name: str | None, owner: str | None, **options):
        user = None
        if owner is not None:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user {owner!r}")
        location = str(directory.expanduser().resolve())
        try:
            if slug is not None:
                check_slug_available(slug, user, location)
            with checkpoint_intake(directory) as taken:
                model, outcome = register_checkpoint(
                    taken, location=location, slug=slug, name=name, owner=user, private=options["private"]
                )
        except (IntakeError, RegistrationError) as exc:
            raise CommandError(str(exc)) from None
        verb = {"reused": "already registered as", "updated": "updated"}.get(outcome, "registered")
        self.stdout.write(
            self.style.SUCCESS(f"{verb} {model.address}: {model.parameter_count:,} parameters, {model.vocabulary}")
        )
