"""Make a checked checkpoint a ``LanguageModel`` ready to be evaluated (``register_model`` and ``submit`` share it).

The checkpoint has passed :func:`registry.intake.checkpoint_intake`, which counted its
parameters; a checkpoint written by ``python -m workers.engine pretrain`` brings its report
(recipe, corpus fingerprint, vocabulary coverage, contamination, losses): the recipe is linked
and the report stored with the model.

A model belongs to whoever registered it, and nothing here changes another user's model:

* the same owner's same content (by :attr:`TakenCheckpoint.content_sha256`) reuses their model;
* a slug that is someone else's, or the same owner's for another checkpoint, is refused when it
  was asked for (``--slug``);
* the same owner registering the same location again (a checkpoint trained further) updates it.

A model's address is ``owner/name`` (:attr:`LanguageModel.address`): the name comes from the name
typed (the checkpoint's file name when none was), and it is made unique (``-2``, ``-3``...) among
the owner's own models only. Its internal slug is derived from the address and the owner's id
(``minilm--u7``), so neither ever depends on another user's models: a private model's name is not
discovered by taking it.

Slugs and display names are validated, never silently cut: a slug is letters, digits, ``-``
and ``_``; a name loses control and bidirectional-override characters (which can make a name
read backwards on the leaderboard) and must fit its column.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from django.utils.text import slugify

from biolm import archives
from biolm.column_limits import LANGUAGE_MODEL_SLUG_MAX, NAME_MAX
from registry.intake import TakenCheckpoint
from registry.models import Architecture, LanguageModel, PretrainingRecipe, default_namespace

MODEL_SLUG_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?$")
# Characters that reorder or hide text: the bidirectional embeddings, overrides and isolates.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


class RegistrationError(ValueError):
    """The checkpoint cannot become a model (a bad slug or name, a slug that is taken); the message says which."""


def check_model_slug(slug: str) -> str:
    """``slug`` if it is a model slug; else the error says what a slug may hold."""
    if not isinstance(slug, str) or len(slug) > LANGUAGE_MODEL_SLUG_MAX or not MODEL_SLUG_RE.match(slug):
        shown = ascii(slug[:60]) + ("..." if len(slug) > 60 else "")
        raise RegistrationError(
            f"the slug {shown} is not valid: a slug is 1 to {LANGUAGE_MODEL_SLUG_MAX} letters, digits, '-' or '_', "
            "starting and ending with a letter or digit"
        )
    return slug


def clean_display_name(name: str, *, option: str = "--name") -> str:
    """``name`` without control or bidirectional-override characters; refused if empty or too long."""
    cleaned = "".join(ch for ch in name if ch not in BIDI_CONTROLS and unicodedata.category(ch) != "Cc").strip()
    if not cleaned:
        raise RegistrationError(f"the model's name is empty; give one with {option}")
    if len(cleaned) > NAME_MAX:
        raise RegistrationError(
            f"the model's name is {len(cleaned):,} characters long, over the limit of {NAME_MAX}; "
            f"give a shorter one with {option}"
        )
    return cleaned


def check_slug_available(slug: str, owner, location: str) -> None:
    """Refuse an asked-for slug that is another model's, before any file is copied."""
    existing = LanguageModel.objects.filter(slug=check_model_slug(slug)).first()
    if existing is not None and not _same_place(existing, owner, location):
        raise RegistrationError(f"the slug {slug!r} is taken by another model; choose another with --slug")


def register_checkpoint(
    taken: TakenCheckpoint,
    *,
    location: str,
    slug: str | None = None,
    name: str | None = None,
    owner=None,
    private: bool = False,
) -> tuple[LanguageModel, str]:
    """The model row for the checked checkpoint ``taken``, kept at ``location``, and what happened to it:
    "registered" (new), "updated" (the owner's model at that location) or "reused" (the owner's same content).

    ``slug`` is the one asked for (validated and never changed, and the address's name too), or None to
    derive one from ``name``, else from ``location``'s name; ``name`` likewise defaults to that name.
    """
    stem = _stem(location)
    display = clean_display_name(name if name is not None else stem)
    if slug is not None:
        check_slug_available(slug, owner, location)
    reused = LanguageModel.objects.filter(
        owner=owner, content_sha256=taken.content_sha256, origin=LanguageModel.Origin.REPRODUCED
    )
    if slug is not None:
        reused = reused.filter(slug=slug)
    model = reused.order_by("pk").first()
    if model is not None:
        return model, "reused"
    slug, address_name = (
        _chosen_address(slug, owner, location) if slug is not None else derived_address(name, owner, location, stem)
    )
    report = pretraining_report(taken.directory)
    recipe, corpus = (report or {}).get("recipe"), (report or {}).get("corpus")
    recipe_slug = recipe.get("slug") if isinstance(recipe, dict) else None
    corpus = corpus if isinstance(corpus, dict) else {}
    config = taken.config
    model, created = LanguageModel.objects.update_or_create(
        slug=slug,
        defaults={
            "name": display,
            "owner": owner,
            "namespace": default_namespace(owner),
            "address_name": address_name,
            "architecture": Architecture.objects.filter(model_type=config.model_type, active=True).first(),
            "recipe": PretrainingRecipe.objects.filter(slug=recipe_slug).first() if recipe_slug else None,
            "parameter_count": taken.parameter_count,
            "vocabulary": f"{config.model_type} vocabulary of {config.vocab_size:,} entries",
            "pretraining_corpus": (
                f"{corpus.get('path', '')} (fingerprint {corpus.get('fingerprint', '?')})"[:500] if corpus else ""
            ),
            "max_sequence_length": getattr(config, "max_position_embeddings", None),
            "checkpoint": location,
            "content_sha256": taken.content_sha256,
            "visibility": LanguageModel.Visibility.PRIVATE if private else LanguageModel.Visibility.PUBLIC,
            "origin": LanguageModel.Origin.REPRODUCED,
            "pretraining": report,
        },
    )
    return model, "registered" if created else "updated"


def _same_place(model: LanguageModel, owner, location: str | None) -> bool:
    """The same owner's model at the same location: registering it again updates it.

    Not for uploads (``upload:NAME``): two uploads under one file name are two checkpoints, and
    updating the first model in place would put the second's weights under the first's results.
    """
    return (
        location is not None
        and model.owner_id == getattr(owner, "pk", None)
        and model.checkpoint == location
        and not location.startswith("upload:")
    )


def _stem(location: str) -> str:
    name = Path(location.removeprefix("artefacts:").removeprefix("upload:")).name
    for suffix in archives.ARCHIVE_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def _chosen_address(slug: str, owner, location: str) -> tuple[str, str]:
    """The asked-for slug (already checked free) and its address name: the slug, or the address the same
    model at that place already has; refused if another of the owner's own models holds that name."""
    existing = LanguageModel.objects.filter(slug=slug).first()
    if existing is not None:  # the same place (check_slug_available refused any other)
        return slug, existing.address_name
    if LanguageModel.objects.filter(namespace=default_namespace(owner), address_name=slug).exists():
        raise RegistrationError(
            f"the address {default_namespace(owner)}/{slug} is taken by another of your models; "
            "choose another with --slug"
        )
    return slug, slug


def derived_address(
    typed: str | None, owner, location: str | None, fallback: str, *, slug_as_named: bool = False
) -> tuple[str, str]:
    """A free (slug, address name) from the typed name (``fallback`` when none was typed, or none that makes an
    address, such as one of punctuation only): the name, or the name with -2, -3... when another of
    the owner's own models has it (the same model at ``location`` keeps its own; None: a new model, always).
    Only the owner's namespace is looked at (and the slug, which carries the owner's id): whatever anyone
    else has named their models changes nothing here. ``slug_as_named``: the slug is the address's name
    itself, numbered past every model's slug (an operator's ``--slug``, never a web or API user's)."""
    base = slugify(typed or "")[: LANGUAGE_MODEL_SLUG_MAX - 24].strip("-_")
    if not base or not MODEL_SLUG_RE.match(base):
        typed, base = fallback, slugify(fallback)[: LANGUAGE_MODEL_SLUG_MAX - 24].strip("-_")
    if not base or not MODEL_SLUG_RE.match(base):
        raise RegistrationError(f"cannot make a slug from the name {typed[:60]!r}; give one with --slug")
    namespace = default_namespace(owner)
    address, number = base, 1
    while True:
        slug = f"{address}--u{owner.pk}" if owner is not None and not slug_as_named else address
        existing = LanguageModel.objects.filter(namespace=namespace, address_name=address).first()
        if existing is not None and _same_place(existing, owner, location):
            return existing.slug, address
        if existing is None and not LanguageModel.objects.filter(slug=slug).exists():
            return slug, address
        number += 1
        address = f"{base}-{number}"


def pretraining_report(directory: Path) -> dict | None:
    """The ``pretraining.json`` a biolm pretraining run leaves beside its checkpoint, if there is one."""
    path = directory / "pretraining.json"
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise RegistrationError(f"pretraining.json: not a readable pretraining report: {exc}") from None
    if not isinstance(report, dict):
        raise RegistrationError("pretraining.json: a pretraining report is a JSON object")
    return report
