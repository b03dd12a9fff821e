"""Import a dataset's official files: validate everything, then store it, all or nothing.

Validation happens completely before anything is written. The DatasetDict is
saved to a temporary directory and renamed into place, and the database row is
written in a transaction; if that fails the new directory is removed. So an
import either registers a whole, valid dataset or leaves no trace.
"""

from __future__ import annotations

import difflib
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import datasets
from django.conf import settings
from django.db import transaction

from biolm.dataset_io import DataFormatError, LoadedDataset, load_dataset_files
from biolm.plugins import Contributions
from biolm.specs import DatasetSpec
from registry.fold_imports import in_data_dir, read_folds, store_folds
from registry.locks import hold_for_transaction
from registry.models import Dataset, DatasetImport
from registry.staging import write_once
from registry.sync import load_contributions

logger = logging.getLogger("biolm.imports")


class UnknownDatasetError(LookupError):
    pass


@dataclass
class ImportOutcome:
    record: DatasetImport
    loaded: LoadedDataset
    created: bool
    folds_skipped: str | None = None  # why the dataset's cross-validation folds were not imported with it


def datasets_root() -> Path:
    return Path(settings.BIOLM_VAR_DIR) / "datasets"


def typed_gold_path(stored_path: Path | str) -> Path:
    """Where an import keeps its typed test tags (the adapter's ``test_types``): beside the stored examples."""
    stored = Path(stored_path)
    return stored.with_name(f"{stored.name}.test-types.json")


def _store_test_types(target: Path, test_types: dict[str, list[str]] | None) -> list[Path]:
    """Write the typed test tags beside the examples, replacing a copy; the paths created (to undo on failure).

    Without them an earlier copy stays: it was checked against the same examples (same fingerprint).
    """
    if test_types is None:
        return []
    path = typed_gold_path(target)
    existed = path.exists()
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(test_types, sort_keys=True), encoding="utf-8")
    partial.replace(path)
    return [] if existed else [path]


def read_test_types(record: DatasetImport) -> dict[str, list[str]] | None:
    """The import's typed test tags (``{example id: tags}``), or None when it kept none."""
    path = typed_gold_path(record.stored_path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def dataset_spec(slug: str, contributions: Contributions | None = None) -> DatasetSpec:
    contributions = contributions or load_contributions()
    spec = contributions.datasets.get(slug)
    if spec is None:
        close = difflib.get_close_matches(slug.lower(), list(contributions.datasets), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownDatasetError(f"unknown dataset {slug!r}{hint}; `manage.py datasets` lists them")
    return spec


def default_directory(spec: DatasetSpec) -> Path | None:
    """Where the dataset's files are expected when no --path is given."""
    return in_data_dir(spec.adapter.default_path) if spec.adapter is not None else None


def import_dataset(
    slug: str, path: Path | None = None, contributions: Contributions | None = None, folds_path: Path | None = None
) -> ImportOutcome:
    """Validate and register ``slug`` from ``path`` (default: its directory under BIOLM_DATA_DIR).

    A dataset with a cross-validation distribution brings its folds along (from ``folds_path``,
    else their default location, where an incomplete copy is skipped with the reason).
    """
    spec = dataset_spec(slug, contributions)
    if spec.adapter is None:
        raise DataFormatError(slug, "this dataset has no adapter: biolm cannot read its files yet")
    directory = Path(path) if path is not None else default_directory(spec)
    if directory is None:
        raise DataFormatError(slug, "no --path given and the dataset has no default location")
    dataset = Dataset.objects.filter(slug=slug, active=True).first()
    if dataset is None:
        raise UnknownDatasetError(f"dataset {slug!r} is not in the database; run `manage.py sync_plugins` first")

    loaded = load_dataset_files(spec, directory)  # raises DataFormatError before anything is written
    folds, fold_dirs = read_folds(spec, folds_path)  # so do the folds
    target = datasets_root() / slug / loaded.fingerprint
    datasets.disable_progress_bars()  # the command prints one line per dataset instead
    created_dir = write_once(target, loaded.fingerprint, lambda into: loaded.to_datasetdict().save_to_disk(str(into)))
    written: list[Path] = [target] if created_dir else []
    try:
        written += _store_test_types(target, loaded.test_types)
        defaults = {
            "source_path": str(Path(directory).resolve()),
            "stored_path": str(target),
            "split_sizes": loaded.sizes,
            "paper_unit_sizes": loaded.sizes_in_paper_units(),
            "label_set": loaded.label_set,
            "longest_examples": loaded.longest_examples(),
            "notes": loaded.notes,
        }
        if folds.loaded:  # an import without folds keeps those an earlier import of the same content brought
            stored_folds, created_folds = store_folds(folds, datasets_root() / slug)
            written += [stored_folds] if created_folds else []
            defaults["folds"] = folds.record(stored_folds, fold_dirs)
        with transaction.atomic():
            hold_for_transaction(f"import_dataset:{slug}")  # a concurrent import of it waits, then updates
            record, created = DatasetImport.objects.update_or_create(
                dataset=dataset, fingerprint=loaded.fingerprint, defaults=defaults
            )
    except Exception:
        for path_written in written:
            if path_written.is_file():
                path_written.unlink(missing_ok=True)
            shutil.rmtree(path_written, ignore_errors=True)
        raise
    logger.debug("imported %s (%s): %s", slug, loaded.fingerprint, loaded.sizes)
    return ImportOutcome(record, loaded, created, None if record.folds else folds.skipped)
