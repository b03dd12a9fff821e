"""A dataset's cross-validation folds, imported with it for the protocols that score on folds.

Lewis et al. 2020 (``lewis2020``) report GAD and EU-ADR as the median over BioBERT's ten folds, so a job
running that protocol needs every fold, validated like the dataset's own files. Folds are read
from ``--folds DIR`` or from the adapter's default location; every fold is validated before
anything is written, and they are stored as one unit (``folds-<fingerprint>/<k>/``, renamed into
place when complete), so the platform can still export them when the official files move.

Only a complete set counts. At the default location a partial copy (the GAD folder here holds
fold 1 alone) imports the dataset without folds and says why; named with ``--folds`` it is an
error, since the user asked for folds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from biolm.cross_validation import cross_validation_of, fold_directories, load_fold
from biolm.dataset_io import DataFormatError, LoadedDataset
from biolm.specs import DatasetSpec
from registry.staging import write_once


@dataclass
class Folds:
    """The folds read for an import: what to store, or why there are none."""

    loaded: dict[int, LoadedDataset] = field(default_factory=dict)
    root: Path | None = None
    skipped: str | None = None  # why the import goes on without folds

    @property
    def fingerprint(self) -> str:
        joined = ",".join(f"{k}:{data.fingerprint}" for k, data in sorted(self.loaded.items()))
        return hashlib.md5(joined.encode(), usedforsecurity=False).hexdigest()

    def record(self, stored_path: Path, directories: dict[int, Path]) -> dict:
        return {
            "count": len(self.loaded),
            "fingerprint": self.fingerprint,
            "source_path": str(self.root.resolve()),
            "stored_path": str(stored_path),
            "per_fold": {
                str(k): {
                    "fingerprint": data.fingerprint,
                    "sizes": data.sizes,
                    "source_path": str(directories[k].resolve()),
                }
                for k, data in sorted(self.loaded.items())
            },
        }


def in_data_dir(path: str | None) -> Path | None:
    """A default location of official files: absolute, or relative to ``BIOLM_DATA_DIR``."""
    if not path:
        return None
    return Path(path) if Path(path).is_absolute() else Path(settings.BIOLM_DATA_DIR) / path


def default_folds_directory(spec: DatasetSpec) -> Path | None:
    folds = cross_validation_of(spec)
    return in_data_dir(folds.default_path) if folds is not None else None


def read_folds(spec: DatasetSpec, path: Path | None) -> tuple[Folds, dict[int, Path]]:
    """Every fold of ``spec`` validated (raises on a bad one); none, with the reason, where none are asked for."""
    if cross_validation_of(spec) is None:
        if path is not None:
            raise DataFormatError(path, f"{spec.name} has no cross-validation folds to import")
        return Folds(), {}
    root = Path(path) if path is not None else default_folds_directory(spec)
    try:
        directories = fold_directories(spec, root)
    except DataFormatError as exc:
        if path is not None:
            raise
        command = f"manage.py import_dataset {spec.slug} --folds DIR"
        return Folds(skipped=f"cross-validation folds not imported: {exc}; to add them: {command}"), {}
    loaded = {k: load_fold(spec, directory) for k, directory in directories.items()}
    return Folds(loaded, root), directories


def store_folds(folds: Folds, parent: Path) -> tuple[Path, bool]:
    """Save the folds under ``parent/folds-<fingerprint>/<k>/``; whether this call wrote them."""
    import datasets

    def write(into: Path) -> None:
        datasets.disable_progress_bars()
        for k, data in folds.loaded.items():
            data.to_datasetdict().save_to_disk(str(into / str(k)))

    target = parent / f"folds-{folds.fingerprint}"
    return target, write_once(target, folds.fingerprint, write)
