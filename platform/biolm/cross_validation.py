"""A dataset's k-fold distribution, read fold by fold (Lewis et al. 2020 score GAD and EU-ADR this way).

Each fold is read and validated exactly as a dataset's own split files are (same schema
checks, same fingerprint), with the fold reader the adapter's :class:`CrossValidationSpec`
names. A partial copy is refused with the missing folds named: a median over the folds that
happen to be present would look like the paper's number without being it.

``canonical=True`` reads the folds as the platform exports them to a worker
(``<root>/<k>/{train,test}.jsonl``, :mod:`biolm.canonical_jsonl`) instead of the official files.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from biolm.canonical_jsonl import READER, canonical_folds
from biolm.dataset_io import LoadedDataset, load_dataset_files
from biolm.errors import DataFormatError
from biolm.specs import AdapterSpec, CrossValidationSpec, DatasetSpec, resolve_implementation

__all__ = ["cross_validation_of", "fold_directories", "load_fold"]


def cross_validation_of(spec: DatasetSpec) -> CrossValidationSpec | None:
    return spec.adapter.cross_validation if spec.adapter is not None else None


def fold_directories(spec: DatasetSpec, root: Path, *, canonical: bool = False) -> dict[int, Path]:
    """Every fold's directory under ``root``; a missing fold is an error that names all of them."""
    folds = cross_validation_of(spec)
    if folds is None:
        raise ValueError(f"dataset {spec.slug!r} has no cross-validation distribution")
    if canonical:
        locate = canonical_folds
    else:
        locate = resolve_implementation(folds.locate, f"dataset {spec.slug}: cross-validation locator")
    found = {int(k): Path(v) for k, v in dict(locate(Path(root), folds.folds)).items()}
    missing = [k for k in range(1, folds.folds + 1) if k not in found]
    if missing:
        present = (
            "; found " + ", ".join(f"fold {k} ({found[k]})" for k in sorted(found)) if found else "; found no fold"
        )
        raise DataFormatError(
            root,
            f"{spec.name} is evaluated on {folds.folds} cross-validation folds{present}; "
            f"missing {_plural('fold', missing)} {', '.join(map(str, missing))} "
            f"(each expected as {Path(root) / '<k>'}/ with its train and test files)",
        )
    return dict(sorted(found.items()))


def load_fold(spec: DatasetSpec, directory: Path, *, canonical: bool = False) -> LoadedDataset:
    """One fold, read by the fold reader and validated against the dataset's schema and labels."""
    folds = cross_validation_of(spec)
    if folds is None:
        raise ValueError(f"dataset {spec.slug!r} has no cross-validation distribution")
    adapter = AdapterSpec(
        schema=spec.adapter.schema,
        reader=READER if canonical else folds.reader,
        options={"optional": ["dev"]} if canonical else folds.options,
        optional_splits=("dev",),
        multi_label=spec.adapter.multi_label,
    )
    # A worker's canonical copy is the platform's own export, not the plugin's reading: an empty one is not
    # charged to the plugin.
    return load_dataset_files(dataclasses.replace(spec, adapter=adapter), directory, contributed=not canonical)


def _plural(word: str, items: list) -> str:
    return word if len(items) == 1 else f"{word}s"
