"""What a worker downloads for a job, and what the platform accepts back from it.

Inputs are named by the job's spec and resolved at claim time: a fine-tuning job gets its
model's files (the submitted checkpoint, or the pretraining job's output) and its dataset as
the platform exported it; a pretraining job gets its corpus and, when an earlier attempt left
one, its last checkpoint, so a killed run resumes instead of starting again. Each file comes as
``{path, url, size, sha256}``: where to put it, where to fetch it (the internal API for a
filesystem store, a pre-signed URL for S3) and how to check it.

Outputs are checked before a job may succeed: a fine-tuning job's results must be readable
results of its dataset, and a pretraining job's model must be a checkpoint the engine can load,
which then becomes its language model's files.

A held dataset's jobs (gated data on its holder's hosts, :mod:`jobs.held`) get no data from the platform,
which has none: the holder's worker reads its own copy, gold included, so its results are not made on a
withheld split. Its score job runs there too, on the fine-tuning job's results and the model's tokenizer,
and its ``scores.json`` is what the platform records (:mod:`leaderboard.recording`), on the CPU worker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from django.core.files.storage import FileSystemStorage

from biolm.contract import SLICE_FILE
from biolm.contract.scores import SCORES_FILE
from biolm.placement import holder_of
from jobs import artefacts, direct_uploads, exports, handlers
from jobs.models import Job
from jobs.results import InputError, ResultsError, load_results, model_entries
from registry.intake import IntakeError, checkpoint_intake
from registry.models import LanguageModel
from registry.registration import RegistrationError, register_checkpoint

__all__ = ["InputError", "OutputError", "accept_outputs", "inputs_of", "may_read", "record_output"]


OUTPUT_OF = {Job.Kind.FINETUNE: "results.json", Job.Kind.SLICE: SLICE_FILE, Job.Kind.PRETRAIN: "model.tar",
             Job.Kind.SCORE: SCORES_FILE}  # a score job's only where a holder's worker scored it  # fmt: skip


class OutputError(ValueError):
    """What the worker produced cannot be accepted; the message says what is wrong with it."""


def output_name(job_id: int, name: str) -> str:
    return f"jobs/{job_id}/{name}"


def record_output(job_id: int, name: str, handle) -> dict:
    """Store an uploaded output, with its size and digest beside it (the next attempt checks them)."""
    entry = artefacts.store_file_object(handle, output_name(job_id, name))
    artefacts.store_bytes(json.dumps(entry).encode(), output_name(job_id, name) + ".json")
    return entry


def stored_output(job_id: int, name: str) -> dict | None:
    store, sidecar = artefacts.storage(), output_name(job_id, name) + ".json"
    if not store.exists(sidecar):
        return None
    with store.open(sidecar, "rb") as handle:
        return json.loads(handle.read())


def url_maker(job: Job, api_base: str) -> Callable[[str], str]:
    store = artefacts.storage()
    if isinstance(store, FileSystemStorage):
        return lambda name: f"{api_base}{job.pk}/artefacts/{name}"
    return store.url  # S3 through django-storages: a pre-signed URL the worker fetches directly


def inputs_of(job: Job, api_base: str) -> dict[str, list[dict]]:
    url_for = url_maker(job, api_base)
    spec = job.contract
    if job.kind in (Job.Kind.FINETUNE, Job.Kind.SLICE):
        inputs = {"slices": artefacts.download_manifest(slice_entries(spec), "", url_for)} if spec.reads else {}
        if spec.part is not None and not spec.part.trains:  # the selection, the gather: slice documents only
            return inputs
        model = {"model": artefacts.download_manifest(model_entries(spec.model), spec.model.prefix, url_for)}
        if holder_of(job.queue):  # the data is on its holder's hosts: its worker reads its own copy
            return {**model, **inputs}
        try:
            export = exports.fold_artefacts if spec.cross_validation else exports.dataset_artefacts
            prefix, entries = export(job.dataset)
        except exports.ExportError as exc:
            raise InputError(str(exc)) from None
        return {**model, "dataset": artefacts.download_manifest(entries, prefix, url_for), **inputs}
    if job.kind == Job.Kind.SCORE and holder_of(job.queue):
        return {role: artefacts.download_manifest(entries, prefix, url_for)
                for role, (prefix, entries) in held_score_inputs(spec).items()}  # fmt: skip
    if job.kind == Job.Kind.PRETRAIN:
        corpus = spec.corpus.to_json()
        inputs = {"corpus": [{**artefacts.download_manifest([corpus], corpus["name"].rsplit("/", 1)[0], url_for)[0]}]}
        stored = stored_output(job.pk, "checkpoint.tar")
        if stored is not None:
            inputs["checkpoint"] = artefacts.download_manifest([stored], f"jobs/{job.pk}", url_for)
        return inputs
    return {}


def held_score_inputs(spec) -> dict[str, tuple[str, list[dict]]]:
    """What a held score job's worker reads, ``{role: (prefix, entries)}``: the fine-tuning job's results document
    and its model's files (the tokenizer decodes the predictions); the data and gold it has itself."""
    finetune = Job.objects.get(pk=spec.finetune_job)
    results = stored_output(finetune.pk, OUTPUT_OF[Job.Kind.FINETUNE])
    if results is None:
        raise InputError(f"fine-tuning job #{finetune.pk} has no results recorded")
    model = finetune.contract.model
    return {"results": (f"jobs/{finetune.pk}", [results]), "model": (model.prefix, model_entries(model))}


def slice_entries(spec) -> list[dict]:
    """The slice documents a sliced job reads, each its job's recorded output, placed as ``<slice name>.json``."""
    entries = []
    for name, job_id in spec.reads:
        entry = stored_output(job_id, SLICE_FILE)
        if entry is None:
            raise InputError(f"slice {name} (job #{job_id}) has no {SLICE_FILE} recorded")
        entries.append({**entry, "path": f"{name}.json"})
    return entries


def may_read(job: Job, name: str) -> bool:
    """Whether ``name`` is exactly one of the files the job's inputs list (a worker reads nothing else).

    The name is checked as given (after the URL's own decoding), never normalised into something
    else: a ``..``, ``.`` or empty part, a backslash, a leading slash or a control character makes
    it no input at all. What remains must be in the set of artefact names the job's inputs list,
    not merely under one of their folders, so a double-encoded ``%2e%2e`` is simply no such name.
    """
    return is_plain_artefact_name(name) and name in input_names(job)


def is_plain_artefact_name(name: str) -> bool:
    if not name or len(name) > 1024 or name.startswith("/") or "\\" in name:
        return False
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def input_names(job: Job) -> set[str]:
    """The artefact names of the job's inputs, as :func:`inputs_of` lists them to its worker."""
    try:
        spec = job.contract
        if job.kind in (Job.Kind.FINETUNE, Job.Kind.SLICE):
            names = {entry["name"] for entry in slice_entries(spec)}
            if spec.part is not None and not spec.part.trains:
                return names
            names.update(entry["name"] for entry in model_entries(spec.model))
            if job.dataset_id and not holder_of(job.queue):
                export = exports.fold_artefacts if spec.cross_validation else exports.dataset_artefacts
                names.update(entry["name"] for entry in export(job.dataset)[1])
            return names
        if job.kind == Job.Kind.SCORE and holder_of(job.queue):
            return {entry["name"] for _, entries in held_score_inputs(spec).values() for entry in entries}
        if job.kind == Job.Kind.PRETRAIN:
            names = {spec.corpus.name}
            if stored_output(job.pk, "checkpoint.tar") is not None:
                names.add(output_name(job.pk, "checkpoint.tar"))
            return names
    except (InputError, exports.ExportError, Job.DoesNotExist, KeyError, TypeError, ValueError):
        return set()
    return set()


def checked_off_the_request(job: Job) -> bool:
    """Whether the job's outputs are checked by the platform's CPU worker rather than in the worker's ``/complete``.

    A pretraining job's model is an archive of gigabytes, unpacked member by member and loaded to be
    checked: that is minutes of a web process (which gunicorn kills after its timeout) for a large model.
    A fine-tuning job's results are a small JSON document and are checked at once. A held dataset's score
    job's scores are recorded, which is the CPU worker's work (the leaderboard's, :mod:`jobs.handlers`).
    """
    return job.kind in (Job.Kind.PRETRAIN, Job.Kind.SCORE)


def check_delivered(job: Job) -> None:
    """The quick checks ``/complete`` makes before the platform takes the job over: every output is there."""
    name = OUTPUT_OF.get(job.kind)
    if name is None:
        return
    _check_sent_directly(job, name)
    if not artefacts.storage().exists(output_name(job.pk, name)):
        noun = {Job.Kind.FINETUNE: "results", Job.Kind.SLICE: "slice document"}.get(job.kind, "model")
        raise OutputError(f"{job.get_kind_display()} job #{job.pk} uploaded no {noun} ({output_name(job.pk, name)})")


def accept_outputs(job: Job) -> str:
    """Check what the worker uploaded and put it where the rest of the graph reads it; what was done, for its log."""
    check_delivered(job)
    if job.kind == Job.Kind.FINETUNE:
        try:
            results = load_results(job)
        except ResultsError as exc:
            raise OutputError(str(exc)) from None
        if job.dataset_id and results.dataset != job.dataset.slug:
            raise OutputError(f"the results are of dataset {results.dataset!r}, not {job.dataset.slug!r}")
        if not results.test_gold_withheld and not holder_of(job.queue):  # a holder's worker has its own gold
            raise OutputError("the results were not produced on the withheld test split the platform sent")
    elif job.kind == Job.Kind.SLICE:
        _accept_slice(job)
    elif job.kind == Job.Kind.PRETRAIN:
        _accept_model(job)
    elif job.kind == Job.Kind.SCORE:  # scored on its holder's worker: recorded here, as the CPU worker records
        return handlers.handler_for(job.kind)(job)()
    return ""


def _accept_slice(job: Job) -> None:
    """A slice's document: JSON of this slice of this job's protocol (its runs are checked by the gather's results)."""
    spec, name = job.contract, output_name(job.pk, SLICE_FILE)
    with artefacts.storage().open(name, "rb") as handle:
        try:
            document = json.loads(handle.read())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise OutputError(f"job #{job.pk}: {name} is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("slice") != spec.slice:
        raise OutputError(f"job #{job.pk}: {name} is not the document of slice {spec.slice}")
    if document.get("job") != spec.whole_digest():
        raise OutputError(f"job #{job.pk}: {name} was made for another job's spec than this one")


def _check_sent_directly(job: Job, name: str) -> None:
    """An output sent straight to the S3 store counts once its upload was finished and checked
    (:func:`jobs.direct_uploads.finish` records it), and only while the store still holds it at that size."""
    store = direct_uploads.direct_store()
    if store is None:
        return
    entry = stored_output(job.pk, name)
    if entry is None:
        raise OutputError(f"job #{job.pk}'s {name} was not recorded: its upload was never finished (POST .../uploaded)")
    held = store.stored(output_name(job.pk, name))
    if held is None or held.size != entry["size"]:
        raise OutputError(f"job #{job.pk}'s {name} is no longer the {entry['size']} bytes its upload recorded")


def _accept_model(job: Job) -> None:
    """A pretraining job's uploaded model.tar, through the same intake as a submitted checkpoint.

    A worker holds only a job token, and whoever holds one can upload anything: the archive is
    unpacked member by member within the limits and checked like any submission before it
    becomes the language model's files.
    """
    name = output_name(job.pk, "model.tar")
    store = artefacts.storage()
    prefix = job.contract.output
    model = LanguageModel.objects.get(pk=job.language_model_id)
    location = f"artefacts:{prefix}"
    declared = stored_output(job.pk, "model.tar")
    label = f"the model.tar of pretraining job #{job.pk}"
    try:
        with (
            store.open(name, "rb") as stored,
            DigestingReader(stored) as handle,
            checkpoint_intake(handle, label=label, compressed_size=store.size(name)) as taken,
        ):
            if declared is not None and handle.rest_digest() != declared["sha256"]:
                raise OutputError(f"{label} is not the file its upload declared (sha256 {declared['sha256']})")
            LanguageModel.objects.filter(pk=model.pk).update(checkpoint=location)
            model.checkpoint = location
            register_checkpoint(
                taken, location=location, slug=model.slug, name=model.name, owner=model.owner,
                private=model.visibility == LanguageModel.Visibility.PRIVATE,
            )  # fmt: skip
            entries = artefacts.store_directory(taken.directory, prefix)
    except (IntakeError, RegistrationError) as exc:
        raise OutputError(f"the pretrained model is not a usable checkpoint: {exc}") from None
    artefacts.store_bytes(json.dumps(entries).encode(), f"{prefix}/manifest.json")


class DigestingReader:
    """A stored file read through for the intake, hashing each byte once, in order, whatever it seeks.

    A tar is read front to back (after a peek at its first bytes): :meth:`rest_digest` then reads
    only the padding after the last member. A zip's reader jumps to its directory at the end; the
    bytes hashed stop where the jumps began and :meth:`rest_digest` reads on from there. Either
    way the SHA-256 of the whole file is compared with the digest its worker declared, which the
    S3 server never checked for a multipart upload (it checks each part's).
    """

    def __init__(self, handle) -> None:
        self.handle, self.digest, self.position, self.hashed = handle, hashlib.sha256(), 0, 0

    def __enter__(self) -> DigestingReader:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        start, self.position = self.position, self.position + len(data)
        if start <= self.hashed < self.position:
            self.digest.update(memoryview(data)[self.hashed - start :])
            self.hashed = self.position
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = self.handle.seek(offset, whence)
        return self.position

    def tell(self) -> int:
        return self.position

    def seekable(self) -> bool:
        return True

    def rest_digest(self) -> str:
        """The SHA-256 of the whole file: what the intake did not read in order is read now."""
        self.seek(self.hashed)
        while self.read(1 << 20):
            pass
        return self.digest.hexdigest()
