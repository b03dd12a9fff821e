"""A registered dataset as a worker receives it: canonical JSON Lines, its test gold withheld.

Workers never read the official files, and never see test labels: the platform exports the
examples it validated at import (re-read from their files, or its stored copy, whichever still
has the import's fingerprint) as ``{train,dev,test}.jsonl``
under ``datasets/<slug>/<fingerprint>/withheld/``, once per imported version, with every test
example's gold replaced by a placeholder (:meth:`biolm.schemas.base.Schema.withhold_gold`). The
platform scores the worker's test predictions against the gold, which only it reads
(:func:`loaded`). A worker trains on exactly the examples the platform registered.

Cross-validation folds (imported with the dataset, :mod:`registry.fold_imports`) are exported the
same way under ``.../folds-<fingerprint>/withheld/folds/<k>/{train,test}.jsonl``. The reported
folds' tests are withheld; the first fold's test keeps its gold, because the protocol of
Lewis et al. 2020 selects its hyperparameters and stopping step on it (the engine scores it, and never reports it).
Under cross-validation every example is in some other fold's train, so withholding cannot keep a
label from a worker that looks for it; what it keeps is the scoring, which is the platform's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from django.db import transaction

from biolm.dataset_io import DataFormatError, LoadedDataset, fingerprint_of, load_dataset_files, validate_examples
from biolm.schemas import get_schema
from biolm.specs import ContractBreach
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
    read = (lambda: load_dataset_files(spec, source)) if spec is not None and spec.adapter is not None else None
    return _exact_copy(read, source, imported.stored_path, imported.fingerprint, f"dataset {imported.dataset.slug!r}")


def _exact_copy(read, source: Path, stored_path: str, fingerprint: str, what: str) -> dict[str, list[dict]]:
    """The examples with ``fingerprint``: ``read()`` from ``source`` when it still gives them, else the stored copy."""
    if read is not None and source.is_dir():
        try:
            splits = dict(read().splits)
        except (DataFormatError, ContractBreach):  # the files changed, or the reader reads nothing now: the copy
            splits = {}
        if splits and fingerprint_of(splits) == fingerprint:
            return splits
    import datasets

    stored = datasets.load_from_disk(stored_path)
    splits = {split: stored[split].to_list() for split in stored}
    if fingerprint_of(splits) != fingerprint:
        raise ExportError(
            f"{what}: neither its files at {source} nor the stored copy at {stored_path} still have the "
            f"imported fingerprint {fingerprint}; import it again"
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


def export_prefix(imported: DatasetImport) -> str:
    """Where the workers' copy of a dataset's import is kept (and all a worker may read of it)."""
    return f"datasets/{imported.dataset.slug}/{imported.fingerprint}/withheld"


def dataset_artefacts(dataset: Dataset) -> tuple[str, list[dict]]:
    """The prefix and manifest entries of ``dataset``'s export for workers, exported on first use."""
    imported = _latest_import(dataset)

    def files() -> Iterator[tuple[str, list[dict]]]:
        for split, rows in withheld_splits(imported).items():
            yield f"{split}.jsonl", rows

    return _exported(imported, export_prefix(imported), files)


def _exported(
    imported: DatasetImport, prefix: str, files: Callable[[], Iterable[tuple[str, list[dict]]]]
) -> tuple[str, list[dict]]:
    """The export's manifest entries: read back when it exists, else each file written under ``prefix`` first.

    The first claims of a new dataset arrive together (200 workers start at once): one of them exports it,
    holding the import's row, and the others wait and read its manifest. Written side by side, one claim's
    store deleted a file another had just saved, and the claim failed.
    """
    manifest = f"{prefix}/manifest.json"
    store = artefacts.storage()
    if not store.exists(manifest):
        with transaction.atomic():
            list(DatasetImport.objects.select_for_update().filter(pk=imported.pk).values_list("pk"))  # one at a time
            if not store.exists(manifest):  # none was written while this claim waited
                entries = [artefacts.store_bytes(_jsonl(rows), f"{prefix}/{name}") for name, rows in files()]
                artefacts.store_bytes(json.dumps(entries).encode(), manifest)  # last: a manifest, a whole export
                return prefix, entries
    with store.open(manifest, "rb") as handle:
        return prefix, json.loads(handle.read())


def folds_of(dataset: Dataset) -> dict:
    """The folds of the dataset's current import (``DatasetImport.folds``); an error naming the command if none."""
    imported = _latest_import(dataset)
    if not imported.folds:
        raise ExportError(
            f"dataset {dataset.slug!r} was imported without its cross-validation folds: "
            f"run manage.py import_dataset {dataset.slug} --folds DIR"
        )
    return imported.folds


def _fold_splits(dataset: Dataset, fold: int) -> dict[str, list[dict]]:
    """One imported fold exactly: re-read from its files when they still match, else from the stored copy."""
    from biolm.cross_validation import load_fold
    from registry.sync import load_contributions

    folds = folds_of(dataset)
    record = folds["per_fold"][str(fold)]
    spec = load_contributions().datasets.get(dataset.slug)
    source = Path(record["source_path"])
    read = (lambda: load_fold(spec, source)) if spec is not None else None
    stored = str(Path(folds["stored_path"]) / str(fold))
    return _exact_copy(read, source, stored, record["fingerprint"], f"dataset {dataset.slug!r}, fold {fold}")


def selection_fold(dataset: Dataset) -> int:
    """The fold whose test chooses the protocol's hyperparameters (the first), sent with its gold."""
    return min(int(k) for k in folds_of(dataset)["per_fold"])


def withheld_fold_splits(dataset: Dataset, fold: int) -> dict[str, list[dict]]:
    splits = _fold_splits(dataset, fold)
    if fold == selection_fold(dataset):
        return splits
    imported = _latest_import(dataset)
    schema = get_schema(dataset.adapter["schema"])
    placeholder = placeholder_label(imported)
    splits["test"] = [schema.withhold_gold(row, placeholder) for row in splits["test"]]
    return splits


def folds_prefix(dataset: Dataset) -> str:
    """Where the workers' copy of the dataset's folds is kept; files under it are ``folds/<k>/<split>.jsonl``."""
    imported = _latest_import(dataset)
    return f"datasets/{dataset.slug}/{imported.fingerprint}/folds-{folds_of(dataset)['fingerprint']}/withheld"


def fold_artefacts(dataset: Dataset) -> tuple[str, list[dict]]:
    """The prefix and manifest entries of the folds' export for workers, exported on first use."""

    def files() -> Iterator[tuple[str, list[dict]]]:
        for fold in sorted(int(k) for k in folds_of(dataset)["per_fold"]):
            for split, rows in withheld_fold_splits(dataset, fold).items():
                yield f"folds/{fold}/{split}.jsonl", rows

    return _exported(_latest_import(dataset), folds_prefix(dataset), files)


def loaded_fold(dataset: Dataset, spec, fold: int, *, withheld: bool) -> LoadedDataset:
    """One fold as the engine's :class:`LoadedDataset`: as workers got it, or with the gold."""
    splits = withheld_fold_splits(dataset, fold) if withheld else _fold_splits(dataset, fold)
    labels = validate_examples(spec, {split: [dict(row) for row in rows] for split, rows in splits.items()})
    return LoadedDataset(spec, splits, labels, fingerprint_of(splits), [])  # the labels as the worker's engine saw them


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows).encode("utf-8")


def loaded(dataset: Dataset, spec, *, withheld: bool) -> LoadedDataset:
    """The imported examples as the engine's :class:`LoadedDataset`: as workers got them, or with the gold."""
    imported = _latest_import(dataset)
    splits = withheld_splits(imported) if withheld else _splits(imported)
    from registry.imports import read_test_types  # loads the datasets library: only where gold is scored

    notes = list(imported.notes or [])
    types = None if withheld else read_test_types(imported)  # typed test gold is gold: never in the workers' copy
    return LoadedDataset(spec, splits, list(imported.label_set), fingerprint_of(splits), notes, types)
