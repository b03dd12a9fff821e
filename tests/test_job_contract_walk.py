"""One fine-tuning job walked through every layer of the platform, each of which sees an equal spec.

submit builds the spec (its values checked) and stores it on the job; the Celery message carries
only the job's id and token (the dispatcher's ``send`` is recorded here); the claim returns the spec
once; the worker writes it to a file and runs the engine on it (``--spec FILE``), in this process;
the engine records it in its results document; the platform accepts the upload only when that
document answers the job's own spec; the score job records the result from it. At every step the
spec is compared with the one submit built, field by field through its typed document and as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert
from worker_side import API as INTERNAL_API
from worker_side import deliver_results, fetch, worker_client

from biolm.contract import FinetuneJob, ResultsDocument, ScoreJob, parse_job_spec
from jobs import tasks
from jobs.models import Job, Run
from jobs.results import load_results
from leaderboard import recording
from leaderboard.models import Result
from registry.imports import import_dataset
from submissions.submitting import SubmissionRequest, submit
from workers.engine.__main__ import main as engine
from workers.runner.execution import JobRun

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
OVERRIDES = {"grid": "single", "seeds": 2, "epochs": 1, "max_train_examples": 40, "max_length": 64}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600, hidden=32)


def test_submit_claim_engine_upload_and_record_all_see_the_spec_submit_built(
    alice, checkpoint, artefact_store, monkeypatch
):
    import_dataset("demo-ner")
    request = SubmissionRequest(
        owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-ner",), overrides=OVERRIDES
    )
    submission = submit(request)
    finetune = submission.jobs.get(kind=Job.Kind.FINETUNE)
    built = FinetuneJob.from_json(finetune.spec)  # what submit built and stored
    assert built.overrides.to_json() == OVERRIDES and built.benchmark == "blurb-mini" and built.metric == "entity-f1"
    assert [pin.name for pin in built.code] == ["biolm"] and built.code[0].fingerprint.startswith("sha256:")

    messages = []
    monkeypatch.setattr(tasks.current_app, "send_task", lambda name, args, queue: messages.append((name, args)))
    Job.objects.filter(pk=finetune.pk).update(dispatched_at=None)
    tasks.send(finetune)
    assert messages == [("biolm.worker.run_job", [finetune.pk, finetune.token])]  # no spec in the message

    client = worker_client(finetune)
    claimed = client.post(
        f"{INTERNAL_API}jobs/{finetune.pk}/claim", {"delivery": "d1", "worker": "gpu0@test"}, format="json"
    )
    assert claimed.status_code == 200, claimed.content
    assert claimed.json()["spec"] == finetune.spec and parse_job_spec(claimed.json()["spec"]) == built

    work = artefact_store / "worker"
    run = JobRun(finetune.pk, finetune.token, api_url="http://testserver/internal/", worker="gpu0@test", work_dir=work)
    run.spec = parse_job_spec(claimed.json()["spec"])
    spec_file = work / "spec.json"
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(json.dumps(claimed.json()["spec"]))
    inputs = {role: fetch(client, entries, work / role) for role, entries in claimed.json()["inputs"].items()}
    out = work / "out"
    command = run._finetune_command(spec_file, inputs, out)
    assert engine(command[3:]) == 0  # `python -m workers.engine finetune --spec FILE ...`, in this process
    written = json.loads((out / "results.json").read_text())
    assert written["spec"] == finetune.spec and ResultsDocument.from_json(written).spec == built

    deliver_results(client, finetune, out / "results.json")
    assert load_results(finetune).spec == built

    score = submission.jobs.get(kind=Job.Kind.SCORE)
    assert ScoreJob.from_json(score.spec).finetune_job == finetune.pk
    result = recording.record(score)
    assert result.provenance["overrides"] == OVERRIDES and result.n_seeds == 2
    runs = Run.objects.filter(job=finetune).order_by("seed")
    assert [(r.fold, r.seed) for r in runs] == [(0, 42), (0, 43)]
    assert result == Result.objects.get(language_model=submission.language_model, dataset__slug="demo-ner")
    Job.objects.filter(pk=finetune.pk).update(spec={**finetune.spec, "overrides": {"seeds": 3}})
    with pytest.raises(recording.RecordingError, match="answer another spec than the job's own"):
        recording.record(score)  # a results document is only ever read as the answer to its own job's spec
