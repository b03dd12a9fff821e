"""A registered dataset as a worker receives it: canonical JSON Lines, its test gold withheld.

Workers never read the official files, and never see test labels: the platform exports the
examples it validated at import (re-read from their files, or its stored copy, whichever still
has the import's fingerprint) as ``{train,dev,test}.jsonl``
under ``datasets/<slug>/<fingerprint>/withheld/``, once per imported version, with every test
example's gold replaced by a placeholder (:meth:`biolm.schemas.base.Schema.withhold_gold`). The
platform scores the worker's test predictions against the gold, which only it reads
(:func:`loaded`). A worker trains on exactly the examples the platform registered.
"""

from __future__ import annotations

import json
from pathlib import Path

from biolm.dataset_io import DataFormatError, LoadedDataset, fingerprint_of, load_dataset_files
from biolm.schemas import get_schema
from jobs import artefacts
from registry.models import Dataset, DatasetImport


class ExportError(ValueError):
    """The dataset cannot be sent to a worker; the message says what the operator must do."""


def _latest_import(dataset: Dataset) -> DatasetImport:
    imported = dataset.imports.order_by("-imported_at").first()
    if imported is None:
        raise ExportError(
            f"dataset {dataset.slug!r} is not imported on the platform: run manage.py import_dataset {dataset.slug}"
        )
    return imported


def _splits(imported: DatasetImport) -> dict[str, list[dict]]:
    """The imported examples exactly: re-read from the files they came from, else from the stored copy.

    The stored ``DatasetDict`` keeps numbers as its features type them (a regression score as
    float32), so only a copy whose fingerprint equals the import's is sent.
    """
    from registry.sync import load_contributions

    spec = load_contributions().datasets.get(imported.dataset.slug)
    source = Path(imported.source_path)
    if spec is not None and spec.adapter is not None and source.is_dir():
        try:
            splits = {k: v for k, v in load_dataset_files(spec, source).splits.items()}
        except DataFormatError:
            splits = {}
        if splits and fingerprint_of(splits) == imported.fingerprint:
            return splits
    import datasets

    stored = datasets.load_from_disk(imported.stored_path)
    splits = {split: stored[split].to_list() for split in stored}
    if fingerprint_of(splits) != imported.fingerprint:
        raise ExportError(
            f"dataset {imported.dataset.slug!r}: neither its files at {source} nor the stored copy at "
            f"{imported.stored_path} still have the imported fingerprint {imported.fingerprint}; import it again"
        )
    return splits


def placeholder_label(imported: DatasetImport) -> str:
    """A label of the dataset that says nothing about any example: O for tagging, else the first label."""
    labels = sorted(imported.label_set) or sorted(imported.dataset.labels or []) or ["0"]
    return "O" if "O" in labels else labels[0]


def withheld_splits(imported: DatasetImport) -> dict[str, list[dict]]:
    splits = _splits(imported)
    schema = get_schema(imported.dataset.adapter["schema"])
    placeholder = placeholder_label(imported)
    if "test" in splits:
        splits["test"] = [schema.withhold_gold(row, placeholder) for row in splits["test"]]
    return splits


def export_prefix(dataset: Dataset) -> str:
    """Where the workers' copy of the dataset's current import is kept (and all a worker may read of it)."""
    return f"datasets/{dataset.slug}/{_latest_import(dataset).fingerprint}/withheld"


def dataset_artefacts(dataset: Dataset) -> tuple[str, list[dict]]:
    """The prefix and manifest entries of ``dataset``'s export for workers, exported on first use."""
    imported = _latest_import(dataset)
    prefix = export_prefix(dataset)
    manifest = f"{prefix}/manifest.json"
    store = artefacts.storage()
    if store.exists(manifest):
        with store.open(manifest, "rb") as handle:
            return prefix, json.loads(handle.read())
    entries = []
    for split, rows in withheld_splits(imported).items():
        text = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
        entries.append(artefacts.store_bytes(text.encode("utf-8"), f"{prefix}/{split}.jsonl"))
    artefacts.store_bytes(json.dumps(entries).encode(), manifest)
    return prefix, entries


def loaded(dataset: Dataset, spec, *, withheld: bool) -> LoadedDataset:
    """The imported examples as the engine's :class:`LoadedDataset`: as workers got them, or with the gold."""
    imported = _latest_import(dataset)
    splits = withheld_splits(imported) if withheld else _splits(imported)
    return LoadedDataset(spec, splits, list(imported.label_set), fingerprint_of(splits), list(imported.notes or []))
