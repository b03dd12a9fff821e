"""A Hub fetch job: a Hugging Face Hub repository at one commit becomes the submission's stored checkpoint.

It runs on the platform's CPU worker (the ``cpu`` queue, :mod:`jobs.tasks`), not in the web request
that accepted the submission: a checkpoint is gigabytes. It fetches exactly the files the checkpoint
allow-list admits (``snapshot_download`` with ``allow_patterns``), then gives them to the same intake
as an upload (:func:`registry.intake.checkpoint_intake`: the files' kinds and caps, no pickles, a
config that builds, safetensors headers that match it; and a tokenizer that loads). The checked copy
is stored under the spec's ``output`` with its manifest, which the fine-tuning jobs (``fetched_by``)
read as they read a pretraining job's model, and the submission's model gets its parameter count and
architecture.

The repository's faults (a refusal of :mod:`registry.hub`, or of the intake) are the submission's:
:class:`~jobs.handlers.JobRefused`, not retried. The Hub's own (5xx, time-outs) are the platform's:
raised as they are, so the job is retried and, failing for good, refunded. The submitter's token,
if any, is read from :mod:`jobs.hub_tokens` here and deleted with the success.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from biolm.contract import FetchJob
from jobs import artefacts, hub_tokens
from jobs.handlers import JobRefused, Writer
from jobs.models import Job
from registry import hub
from registry.intake import IntakeError, check_tokenizer, checkpoint_intake, scratch_folder
from registry.models import LanguageModel
from registry.registration import RegistrationError, register_checkpoint


def run(job: Job) -> Writer:
    """Fetch, check and store the job's checkpoint; the writer forgets the token and says what was done."""
    spec: FetchJob = job.contract
    token = hub_tokens.token_for(job)
    model = LanguageModel.objects.get(pk=job.language_model_id)
    try:
        checkpoint = hub.resolve(hub.HubReference(spec.repository, spec.revision), token)
        with tempfile.TemporaryDirectory(prefix="biolm-hub-", dir=scratch_folder()) as temporary:
            folder = hub.fetch(checkpoint, Path(temporary) / "checkpoint", token)
            with checkpoint_intake(folder, label=str(checkpoint)) as taken:
                check_tokenizer(taken)
                register_checkpoint(
                    taken, location=model.checkpoint, slug=model.slug, name=model.name, owner=model.owner,
                    private=model.visibility == LanguageModel.Visibility.PRIVATE,
                )  # fmt: skip
                entries = artefacts.store_directory(taken.directory, spec.output)
                parameters = taken.parameter_count
    except hub.HubRefused as exc:
        raise JobRefused(str(exc)) from None
    except (IntakeError, RegistrationError) as exc:
        raise JobRefused(f"the Hub's checkpoint is not usable: {exc}") from None
    artefacts.store_bytes(json.dumps(entries).encode(), f"{spec.output}/manifest.json")

    def write() -> str:
        hub_tokens.forget([job.pk])
        return (
            f"fetched {len(checkpoint.files)} files ({checkpoint.size / 1e6:,.1f} MB) of {checkpoint} from the Hub; "
            f"checked ({parameters:,} parameters) and stored under {spec.output}"
        )

    return write
