"""A fine-tuning job's results document on the platform: the one place that reads it back, and its model's files.

The worker uploads the engine's ``results.json`` (:class:`biolm.contract.ResultsDocument`); the
completion check, the recording of results and the model page all read it through
:func:`load_results`, which refuses a document of another version, with unknown fields, or whose
spec is not the job's own. Scoring its test predictions needs the model's tokenizer:
:func:`model_files` gives the model's files (weights left out) as a local folder.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.files.storage import FileSystemStorage

from biolm.contract import ContractError, FinetuneJob, ResultsDocument
from jobs import artefacts
from jobs.models import Job

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".h5", ".msgpack")


class ResultsError(ValueError):
    """A job's results cannot be read; the message says what is wrong with them."""


class InputError(ValueError):
    """A job's inputs are not available on the platform (for example, its dataset is not imported)."""


def results_name(job_id: int) -> str:
    """Where a fine-tuning job's results file is kept in the artefact store."""
    return f"jobs/{job_id}/results.json"


def load_results(job: Job | int) -> ResultsDocument:
    """The job's results document, checked: readable, of this version, and answering the job's own spec."""
    job = job if isinstance(job, Job) else Job.objects.get(pk=job)
    name = results_name(job.pk)
    store = artefacts.storage()
    if not store.exists(name):
        raise ResultsError(f"job #{job.pk} uploaded no results ({name} is missing from the artefact store)")
    with store.open(name, "rb") as handle:
        try:
            data = json.loads(handle.read())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ResultsError(f"job #{job.pk}: {name} is not JSON: {exc}") from None
    try:
        document = ResultsDocument.from_json(data)
    except ContractError as exc:
        raise ResultsError(f"job #{job.pk}: {name}: {exc}") from None
    if document.spec != job.contract:
        raise ResultsError(f"job #{job.pk}: the results answer another spec than the job's own")
    return document


def model_entries(model: dict | object) -> list[dict]:
    """The stored files of a fine-tuning job's model: submitted, or written by its pretraining or Hub fetch job."""
    spec = model if isinstance(model, dict) else model.to_json()
    if "checkpoint" in spec:
        return spec["checkpoint"]
    manifest = f"{spec['prefix']}/manifest.json"
    store = artefacts.storage()
    if not store.exists(manifest):
        made_by = (f"pretraining job #{spec['pretrained_by']}" if "pretrained_by" in spec
                   else f"Hub fetch job #{spec.get('fetched_by')}")  # fmt: skip
        raise InputError(f"the model of {made_by} is not in the artefact store")
    with store.open(manifest, "rb") as handle:
        return json.loads(handle.read())


@contextmanager
def model_files(job: Job) -> Iterator[Path]:
    """A fine-tuning job's model as a local directory: its config and tokenizer (weights left out)."""
    spec: FinetuneJob = job.contract
    entries = model_entries(spec.model)
    prefix = spec.model.prefix
    store = artefacts.storage()
    if isinstance(store, FileSystemStorage) and not any("path" in entry for entry in entries):
        yield Path(store.path(prefix))  # a pretraining job's output, stored under its own names
        return
    with tempfile.TemporaryDirectory(prefix="biolm-tokenizer-") as temporary:
        cut = len(prefix.rstrip("/")) + 1
        for entry in entries:
            relative = entry.get("path") or entry["name"][cut:]
            if relative.endswith(WEIGHT_SUFFIXES):
                continue
            target = Path(temporary) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with store.open(entry["name"], "rb") as source, target.open("wb") as out:
                for chunk in iter(lambda: source.read(1 << 20), b""):
                    out.write(chunk)
        yield Path(temporary)
