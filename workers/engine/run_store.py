"""Finished runs are kept as they finish, so an interrupted grid loses at most the run in progress.

A BLURB grid is 6 trainings plus 4 (or 9) more seeds; on a large dataset that is hours. Each
finished run is written to ``<out>/runs/<key>.json`` (atomically: a temporary file renamed into
place), and the next invocation with the same ``--out`` reuses every run whose key matches. The
key covers everything that changes a run's outcome: the data's fingerprint, the model (a
checkpoint's files, or the architecture preset), the tokenizer's vocabulary, the formulation and
its options, the lengths and precision, the device type, the code (git commit and biolm
version), the hyperparameters and the seed. Change any of them and the run is trained again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

KEY_LENGTH = 24


def checkpoint_identity(directory: Path | None) -> list[tuple[str, int, int]] | None:
    """Names, sizes and modification times of a checkpoint's files: a retrained checkpoint is another model."""
    if directory is None:
        return None
    return sorted(
        (str(path.relative_to(directory)), path.stat().st_size, path.stat().st_mtime_ns)
        for path in Path(directory).rglob("*")
        if path.is_file()
    )


class RunStore:
    """Runs of one fine-tuning invocation under ``directory``, keyed by ``identity`` + hyperparameters + seed."""

    def __init__(self, directory: Path, identity: dict[str, Any]) -> None:
        self.directory = directory
        self.identity = identity
        self.reused = 0

    def key(self, hyperparameters: Any, seed: int, variant: dict | None = None) -> str:
        """``variant``: what else the caller varies per run (the split a checkpoint is chosen on, the splits scored)."""
        payload = {**self.identity, "hyperparameters": asdict(hyperparameters), "seed": seed}
        if variant:
            payload["variant"] = variant
        text = json.dumps(payload, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_LENGTH]

    def load(self, hyperparameters: Any, seed: int, variant: dict | None = None) -> dict | None:
        """The stored run's fields, or None when there is none (or it cannot be read: it is then retrained)."""
        path = self.directory / f"{self.key(hyperparameters, seed, variant)}.json"
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        self.reused += 1
        return stored["run"]

    def save(self, hyperparameters: Any, seed: int, run: dict, variant: dict | None = None) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self.key(hyperparameters, seed, variant)}.json"
        record = {"identity": self.identity, "run": run}
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(record, stream, default=str)
        os.replace(temporary, path)
        return path
