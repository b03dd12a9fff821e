"""A new dataset's first claims arrive together: it is exported once, and every claim reads that export.

Under ``python -m bench many_workers`` with the internal API in threads, two of 200 first claims failed:
each wrote the export, and one's store deleted a file the other had just saved. The export now holds
its import's row while it writes (:func:`jobs.exports._exported`). These tests commit their rows
(``transaction=True``) so that the claims, on connections of their own, see them and wait on each other.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from jobs import exports
from registry.imports import import_dataset
from registry.models import Dataset

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("session_rows_restored")]


def test_claims_that_export_a_new_dataset_together_write_it_once_and_all_read_the_same_files(
    session_rows, artefact_store, monkeypatch
):
    if connection.vendor != "postgresql":  # as production runs many web processes: CI's first pass
        pytest.skip("SQLite's in-memory test database refuses a second writer ('table is locked') where a file waits")
    import_dataset("demo-ner")
    dataset = Dataset.objects.get(slug="demo-ner")
    written: list[int] = []
    splits = exports.withheld_splits

    def slow_splits(imported):  # long enough that every claim arrives while the first still writes
        written.append(1)
        time.sleep(0.3)
        return splits(imported)

    monkeypatch.setattr(exports, "withheld_splits", slow_splits)
    answers: list[tuple[str, list[dict]]] = []
    failures: list[BaseException] = []

    def claim() -> None:
        try:
            answers.append(exports.dataset_artefacts(Dataset.objects.get(pk=dataset.pk)))
        except BaseException as exc:  # the test reports what any claim raised
            failures.append(exc)
        finally:
            connection.close()

    claims = [threading.Thread(target=claim) for _ in range(4)]
    for thread in claims:
        thread.start()
    for thread in claims:
        thread.join(timeout=60)
    assert failures == [] and len(answers) == 4
    assert len(written) == 1  # one claim exported it; the others waited and read its manifest
    prefix, entries = answers[0]
    assert all(answer == (prefix, entries) for answer in answers)
    names = sorted(entry["name"] for entry in entries)
    assert names == [f"{prefix}/{split}.jsonl" for split in ("dev", "test", "train")]
    for entry in entries:
        assert (artefact_store / "store" / entry["name"]).stat().st_size == entry["size"]
