"""``manage.py register_model DIR``: make a local checkpoint a ``LanguageModel`` ready to be evaluated.

The work is :func:`registry.registration.register_checkpoint`'s; ``manage.py submit`` uses it too.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from registry.registration import RegistrationError, register_checkpoint


class Command(BaseCommand):
    help = "Register a local Hugging Face checkpoint directory as a language model to evaluate."

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", type=Path, help="The checkpoint directory (config, weights, tokenizer).")
        parser.add_argument("--slug", help="The model's slug (default: from the directory name).")
        parser.add_argument("--name", help="The model's display name (default: the directory name).")
        parser.add_argument("--owner", help="The username of the model's owner.")
        parser.add_argument("--private", action="store_true", help="Only its owner and staff see it.")

    def handle(self, *args, directory: Path, slug: str | None, name: str | None, owner: str | None, **options):
        user = None
        if owner is not None:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user {owner!r}")
        try:
            model, created = register_checkpoint(
                directory, slug=slug, name=name, owner=user, private=options["private"]
            )
        except RegistrationError as exc:
            raise CommandError(str(exc)) from None
        verb = "registered" if created else "updated"
        self.stdout.write(
            self.style.SUCCESS(f"{verb} {model.slug}: {model.parameter_count:,} parameters, {model.vocabulary}")
        )
