"""Checks made before any training: a run that would fail at its end must fail at its start.

A grid on a large dataset is hours of GPU time; discovering then that ``--out`` is read-only or
that the checkpoint directory lacks its tokenizer wastes all of it. So the output directory is
created and written to, and a checkpoint directory is checked for the three things a
fine-tuning run reads from it, naming what is missing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

CONFIG_FILES = ("config.json",)
WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)
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


def check_checkpoint(directory: Path) -> None:
    """A Hugging Face checkpoint directory with a config, weights and a tokenizer; the error lists what lacks."""
    if not directory.is_dir():
        raise ValueError(f"--model {directory}: no such directory (give a local Hugging Face checkpoint)")
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
    if missing:
        held = ", ".join(sorted(names)[:10]) or "nothing"
        raise ValueError(
            f"--model {directory}: not a complete checkpoint: missing {', '.join(missing)}; it holds {held}"
        )
