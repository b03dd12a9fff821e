"""Make a local checkpoint a ``LanguageModel`` ready to be evaluated (``register_model`` and ``submit`` share it).

The checkpoint is checked as the engine checks ``--model`` (a config, weights and a tokenizer),
its parameters are counted on PyTorch's meta device, and a checkpoint written by
``python -m workers.engine pretrain`` brings its report (recipe, corpus fingerprint, vocabulary
coverage, contamination, losses): the recipe is linked and the report stored with the model.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.utils.text import slugify

from biolm.specs import LANGUAGE_MODEL_SLUG_MAX, NAME_MAX
from registry.models import Architecture, LanguageModel, PretrainingRecipe


class RegistrationError(ValueError):
    """The directory is not a checkpoint biolm can evaluate, or its slug is taken; the message says which."""


def register_checkpoint(
    directory: Path,
    *,
    slug: str | None = None,
    name: str | None = None,
    owner=None,
    private: bool = False,
    recorded_as: Path | None = None,
    location: str | None = None,
) -> tuple[LanguageModel, bool]:
    """The model row for ``directory`` (created, or updated if that slug already points there) and whether it is new.

    ``recorded_as`` is the checkpoint's location to keep when ``directory`` is a temporary copy
    (an unpacked archive); ``location`` replaces it where the checkpoint lives in no directory
    (``artefacts:<prefix>``, a pretraining job's model in the artefact store).
    """
    from workers.engine.architectures import count_parameters, load_config  # torch: only when registering
    from workers.engine.preflight import check_checkpoint

    directory = Path(directory).resolve()
    try:
        check_checkpoint(directory)
        config = load_config(directory)
    except ValueError as exc:
        raise RegistrationError(str(exc).replace("--model ", "")) from None
    if location is None:
        location = str(Path(recorded_as).resolve()) if recorded_as is not None else str(directory)
    slug = slug or slugify(Path(location).name)[:LANGUAGE_MODEL_SLUG_MAX]
    if not slug:
        raise RegistrationError(f"{directory}: cannot make a slug from the directory name; pass --slug")
    report = pretraining_report(directory)
    existing = LanguageModel.objects.filter(slug=slug).first()
    if existing is not None and existing.checkpoint != location:
        raise RegistrationError(f"the slug {slug!r} is taken by the model at {existing.checkpoint or 'no checkpoint'}")
    recipe_slug = (report or {}).get("recipe", {}).get("slug")
    corpus = (report or {}).get("corpus", {})
    return LanguageModel.objects.update_or_create(
        slug=slug,
        defaults={
            "name": (name or Path(location).name)[:NAME_MAX],
            "owner": owner,
            "architecture": Architecture.objects.filter(model_type=config.model_type, active=True).first(),
            "recipe": PretrainingRecipe.objects.filter(slug=recipe_slug).first() if recipe_slug else None,
            "parameter_count": count_parameters(config),
            "vocabulary": f"{config.model_type} vocabulary of {config.vocab_size:,} entries",
            "pretraining_corpus": (
                f"{corpus.get('path', '')} (fingerprint {corpus.get('fingerprint', '?')})" if corpus else ""
            ),
            "max_sequence_length": getattr(config, "max_position_embeddings", None),
            "checkpoint": location,
            "visibility": LanguageModel.Visibility.PRIVATE if private else LanguageModel.Visibility.PUBLIC,
            "origin": LanguageModel.Origin.REPRODUCED,
            "pretraining": report,
        },
    )


def pretraining_report(directory: Path) -> dict | None:
    """The ``pretraining.json`` a biolm pretraining run leaves beside its checkpoint, if there is one."""
    path = directory / "pretraining.json"
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RegistrationError(f"{path}: not a readable pretraining report: {exc}") from None
    if not isinstance(report, dict):
        raise RegistrationError(f"{path}: a pretraining report is a JSON object")
    return report
