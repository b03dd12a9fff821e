"""A registered dataset as a worker receives it: canonical JSON Lines in the artefact store.

Workers never read the official files: the platform exports the examples it validated at import
(the stored ``DatasetDict``) as ``{train,dev,test}.jsonl`` under
``datasets/<slug>/<fingerprint>/``, once per imported version, and checks that the export has
the import's fingerprint, so a worker trains on exactly the examples the platform registered.
"""

from __future__ import annotations

import json

from biolm.dataset_io import fingerprint_of
from jobs import artefacts
from registry.models import Dataset


class ExportError(ValueError):
    """The dataset cannot be sent to a worker; the message says what the operator must do."""


def dataset_artefacts(dataset: Dataset) -> tuple[str, list[dict]]:
    """The prefix and manifest entries of ``dataset``'s export, exported on first use."""
    imported = dataset.imports.order_by("-imported_at").first()
    if imported is None:
        raise ExportError(
            f"dataset {dataset.slug!r} is not imported on the platform: run manage.py import_dataset {dataset.slug}"
        )
    prefix = f"datasets/{dataset.slug}/{imported.fingerprint}"
    manifest = f"{prefix}/manifest.json"
    store = artefacts.storage()
    if store.exists(manifest):
        with store.open(manifest, "rb") as handle:
            return prefix, json.loads(handle.read())
    import datasets

    stored = datasets.load_from_disk(imported.stored_path)
    splits = {split: stored[split].to_list() for split in stored}
    if fingerprint_of(splits) != imported.fingerprint:
        raise ExportError(
            f"dataset {dataset.slug!r}: the stored copy at {imported.stored_path} no longer has the imported "
            f"fingerprint {imported.fingerprint}; import it again"
        )
    entries = []
    for split, rows in splits.items():
        text = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
        entries.append(artefacts.store_bytes(text.encode("utf-8"), f"{prefix}/{split}.jsonl"))
    artefacts.store_bytes(json.dumps(entries).encode(), manifest)
    return prefix, entries
