"""Checks made before any training: a run that would fail at its end must fail at its start.

A grid on a large dataset is hours of GPU time; discovering then that ``--out`` is read-only or
that the checkpoint directory lacks its tokenizer wastes all of it. So the output directory is
created and written to, and a checkpoint directory is checked for the three things a
fine-tuning run reads from it, naming what is missing. A run that is then refused (or fails)
before writing anything takes away the directories it created: it leaves no empty ``--out``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CONFIG_FILES = ("config.json",)
# Safetensors only: a pytorch_model.bin is a pickle, and loading one can run code.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
PICKLED_WEIGHT_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model")


def check_output_directory(out: Path) -> None:
    """``out`` exists (created if needed) and accepts files; the error says why not."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"--out {out}: is a file, not a directory") from None
    except OSError as exc:
        raise ValueError(f"--out {out}: cannot be created: {exc.strerror or exc}") from None
    try:
        handle, probe = tempfile.mkstemp(dir=out, prefix=".write-test-")
    except OSError as exc:
        raise ValueError(f"--out {out}: cannot be written to: {exc.strerror or exc}") from None
    os.close(handle)
    os.unlink(probe)


@contextmanager
def output_directory(out: Path) -> Iterator[None]:
    """``check_output_directory(out)`` for the length of a run: if the run raises, the directories it created
    (``out`` and any missing parents) are removed again, innermost first, as long as they are still empty.

    A directory that existed before, and anything the run wrote (the finished runs an interrupted grid
    reuses, a pretraining corpus's blocks), stay.
    """
    created = _missing_directories(out)
    try:
        check_output_directory(out)
        yield
    except BaseException:
        for directory in created:
            try:
                directory.rmdir()
            except OSError:  # not empty (or not ours to remove): it and its parents stay
                break
        raise


def _missing_directories(out: Path) -> list[Path]:
    """``out`` and those of its parents that do not exist yet, innermost first."""
    missing = []
    path = Path(os.path.abspath(out))
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def check_checkpoint(directory: Path) -> None:
    """A Hugging Face checkpoint directory with a config, weights and a tokenizer; the error lists what lacks."""
    problem = checkpoint_problem(directory)
    if problem is not None:
        raise ValueError(f"--model {directory}: {problem}")


def checkpoint_problem(directory: Path) -> str | None:
    """What keeps ``directory`` from being a complete checkpoint, in words that name no option; None if nothing."""
    if not directory.is_dir():
        return "no such directory (give a local Hugging Face checkpoint)"
    names = {path.name for path in directory.iterdir()}
    missing = [
        f"{what} ({' or '.join(candidates)})"
        for what, candidates in (
            ("a config", CONFIG_FILES),
            ("weights", WEIGHT_FILES),
            ("a tokenizer", TOKENIZER_FILES),
        )
        if not names.intersection(candidates)
    ]
    if names.intersection(PICKLED_WEIGHT_FILES) and not names.intersection(WEIGHT_FILES):
        return (
            "its weights are a pickle (pytorch_model.bin), which biolm does not load because unpickling can run "
            "code; save the model again with save_pretrained(..., safe_serialization=True)"
        )
    if missing:
        held = ", ".join(sorted(names)[:10]) or "nothing"
        return f"not a complete checkpoint: missing {', '.join(missing)}; it holds {held}"
    return None
