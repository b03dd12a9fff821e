"""The one way a checkpoint enters biolm: ``submit``, ``register_model``, a pretraining job's model, the web form.

A checkpoint arrives as a directory, an archive on disk, or an archive in the artefact store
(what a worker uploaded). Whatever its form, it is first copied, member by member and within
:class:`~biolm.intake_limits.ArchiveLimits`, into a fresh temporary folder
(:mod:`biolm.archives`: regular files only, no links followed, nothing written outside, and only
files of a kind a checkpoint holds, each within its kind's cap: :mod:`biolm.checkpoint_files`), then
checked there completely (:mod:`workers.engine.checkpoint_checks`: no pickles, no code, a
config that builds within :class:`~biolm.intake_limits.CheckpointLimits`, safetensors headers
that match it). Only then may the caller write rows or store files, from that checked copy and
never from the original, which could change in between. The temporary folder is removed on
every path out, and no message names it: errors name what the user gave.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings

from biolm import archives
from registry.models import Architecture

PRETRAINING_STATE = ("checkpoint", "data", "checkpoint.tmp", "checkpoint.old")


class IntakeError(ValueError):
    """The checkpoint is refused; the message names the file given and what to do."""


@dataclass(frozen=True)
class TakenCheckpoint:
    """A checked copy of a checkpoint, valid inside :func:`checkpoint_intake`'s ``with``."""

    directory: Path
    config: object  # the built transformers config
    parameter_count: int
    weights_parameter_count: int
    content_sha256: str  # of every file's name and content: equal for two copies of the same checkpoint
    label: str


@contextmanager
def checkpoint_intake(
    source: Path | BinaryIO, *, label: str | None = None, compressed_size: int | None = None
) -> Iterator[TakenCheckpoint]:
    """Copy ``source`` (a directory, an archive, or an archive's open file) somewhere fresh and check it."""
    from workers.engine.checkpoint_checks import CheckpointRefused, check_submitted_checkpoint

    if isinstance(source, str | Path):
        source = Path(source).expanduser().resolve()  # the path the user typed; nothing inside is followed
        label = label or source.name
    label = label or "the checkpoint"
    with tempfile.TemporaryDirectory(prefix="biolm-intake-", dir=scratch_folder()) as temporary:
        target = Path(temporary) / "checkpoint"
        try:
            written = _copy(source, target, label, compressed_size)
            root = archives.content_root(target)
            _refuse_unlisted(written, target, root, label)
            checked = check_submitted_checkpoint(
                root, settings.BIOLM_CHECKPOINT_LIMITS, known_model_types=registered_model_types()
            )
        except archives.ArchiveRefused as exc:
            raise IntakeError(str(exc)) from None
        except CheckpointRefused as exc:
            raise IntakeError(f"{label}: {exc}") from None
        yield TakenCheckpoint(
            directory=root,
            config=checked.config,
            parameter_count=checked.parameter_count,
            weights_parameter_count=checked.weights_parameter_count,
            content_sha256=written.content_sha256(root.relative_to(target).as_posix()),
            label=label,
        )


def _copy(source: Path | BinaryIO, target: Path, label: str, compressed_size: int | None) -> archives.Written:
    limits, files = settings.BIOLM_ARCHIVE_LIMITS, settings.BIOLM_CHECKPOINT_FILES
    if not isinstance(source, Path):
        return archives.unpack(source, target, limits, label=label, compressed_size=compressed_size, files=files)
    if source.is_dir():
        # A biolm pretraining run's --out also holds its resumable state and corpus blocks: not the model.
        skip = PRETRAINING_STATE if (source / "pretraining.json").is_file() else ()
        return archives.copy_tree(source, target, limits, label=label, skip=skip, files=files)
    if not source.is_file():
        raise IntakeError(f"{source}: no such checkpoint directory or archive")  # the user's own path
    if not archives.is_archive_name(source.name):
        raise IntakeError(f"{label}: a checkpoint is a directory or a {', '.join(archives.ARCHIVE_SUFFIXES)} archive")
    return archives.unpack(source, target, limits, label=label, files=files)


def _refuse_unlisted(written: archives.Written, target: Path, root: Path, label: str) -> None:
    """Each file, now that the checkpoint's own folder is known, where the allow-list says it may be.

    The unpacker let each member sit under one top folder (``model/config.json``) before it knew
    whether the archive has one; a file outside the checkpoint's folder is never stored.
    """
    under = root.relative_to(target)
    names = [PurePosixPath(name).relative_to(under.as_posix()) for name, _, _ in written.files
             if PurePosixPath(name).is_relative_to(under.as_posix())]  # fmt: skip
    unlisted = settings.BIOLM_CHECKPOINT_FILES.unlisted(names)
    if unlisted is not None:
        shown = (PurePosixPath(under) / unlisted).as_posix()
        raise IntakeError(f"{label}: {settings.BIOLM_CHECKPOINT_FILES.refusal(shown)}")


def check_tokenizer(taken: TakenCheckpoint) -> None:
    """The fine-tuning jobs load the checkpoint's tokenizer first: one that does not load is refused now."""
    from workers.engine.tokenization import load_tokenizer  # transformers: only when a checkpoint is taken

    try:
        load_tokenizer(taken.directory)
    except Exception as exc:  # transformers raises many types for a missing or broken tokenizer
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise IntakeError(
            f"{taken.label}: its tokenizer does not load ({reason}); include the tokenizer files "
            "(tokenizer.json, or vocab.txt with tokenizer_config.json) that AutoTokenizer.from_pretrained reads"
        ) from None


def scratch_folder() -> Path:
    """Where checkpoints are unpacked and checked: under ``BIOLM_VAR_DIR``, on the artefact store's disk, not
    in ``/tmp``, which is often a small RAM disk that a 36 GB GatorTron-large checkpoint would not fit."""
    folder = Path(settings.BIOLM_VAR_DIR) / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def registered_model_types() -> set[str]:
    """The ``model_type`` of every active architecture a plugin contributes (``manage.py sync_plugins``)."""
    return set(Architecture.objects.filter(active=True).values_list("model_type", flat=True))
