"""``manage.py register_model DIR``: make a local checkpoint a ``LanguageModel`` ready to be evaluated.

The checkpoint is checked as the engine checks ``--model`` (a config, weights and a tokenizer),
its parameters are counted on PyTorch's meta device, and a checkpoint written by
``python -m workers.engine pretrain`` brings its report (recipe, corpus fingerprint, vocabulary
coverage, losses): the recipe is linked and the report stored with the model.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from biolm.specs import LANGUAGE_MODEL_SLUG_MAX, NAME_MAX
from registry.models import Architecture, LanguageModel, PretrainingRecipe


class Command(BaseCommand):
    help = "Register a local Hugging Face checkpoint directory as a language model to evaluate."

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", type=Path, help="The checkpoint directory (config, weights, tokenizer).")
        parser.add_argument("--slug", help="The model's slug (default: from the directory name).")
        parser.add_argument("--name", help="The model's display name (default: the directory name).")
        parser.add_argument("--owner", help="The username of the model's owner.")
        parser.add_argument("--private", action="store_true", help="Only its owner and staff see it.")

    def handle(self, *args, directory: Path, slug: str | None, name: str | None, owner: str | None, **options):
        from workers.engine.architectures import count_parameters, load_config  # torch: only when registering
        from workers.engine.preflight import check_checkpoint

        directory = directory.resolve()
        try:
            check_checkpoint(directory)
            config = load_config(directory)
        except ValueError as exc:
            raise CommandError(str(exc).replace("--model ", "")) from None
        slug = slug or slugify(directory.name)[:LANGUAGE_MODEL_SLUG_MAX]
        if not slug:
            raise CommandError(f"{directory}: cannot make a slug from the directory name; pass --slug")
        user = None
        if owner is not None:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user {owner!r}")
        report = _pretraining_report(directory)
        existing = LanguageModel.objects.filter(slug=slug).first()
        if existing is not None and existing.checkpoint != str(directory):
            raise CommandError(f"the slug {slug!r} is taken by the model at {existing.checkpoint or 'no checkpoint'}")
        recipe_slug = (report or {}).get("recipe", {}).get("slug")
        corpus = (report or {}).get("corpus", {})
        model, created = LanguageModel.objects.update_or_create(
            slug=slug,
            defaults={
                "name": (name or directory.name)[:NAME_MAX],
                "owner": user,
                "architecture": Architecture.objects.filter(model_type=config.model_type, active=True).first(),
                "recipe": PretrainingRecipe.objects.filter(slug=recipe_slug).first() if recipe_slug else None,
                "parameter_count": count_parameters(config),
                "vocabulary": f"{config.model_type} vocabulary of {config.vocab_size:,} entries",
                "pretraining_corpus": (
                    f"{corpus.get('path', '')} (fingerprint {corpus.get('fingerprint', '?')})" if corpus else ""
                ),
                "max_sequence_length": getattr(config, "max_position_embeddings", None),
                "checkpoint": str(directory),
                "visibility": LanguageModel.Visibility.PRIVATE
                if options["private"]
                else LanguageModel.Visibility.PUBLIC,
                "origin": LanguageModel.Origin.REPRODUCED,
                "pretraining": report,
            },
        )
        verb = "registered" if created else "updated"
        self.stdout.write(
            self.style.SUCCESS(f"{verb} {model.slug}: {model.parameter_count:,} parameters, {config.model_type}")
        )


def _pretraining_report(directory: Path) -> dict | None:
    path = directory / "pretraining.json"
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path}: not a readable pretraining report: {exc}") from None
    if not isinstance(report, dict):
        raise CommandError(f"{path}: a pretraining report is a JSON object")
    return report
