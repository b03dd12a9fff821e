"""Refused weights, unreadable models and hostile archives are the submission's fault: no retry, no refund.

A hostile upload must cost its submitter, not three workers' time and none of their quota.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from contract_documents import pretrain_spec
from hostile_inputs import copy_checkpoint, member, pickle_that_writes, tar_with
from rest_framework.test import APIClient

from biolm.engine_exits import failure_cause, failure_summary
from workers.runner.execution import JobRun

ROOT = Path(__file__).resolve().parents[2]
API = "/internal/"


def engine_finetune(model: Path, out: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "workers.engine", "finetune", "--model", str(model), "--dataset", "demo-ner",
               "--data_dir", str(ROOT / "plugins" / "datasets" / "demo" / "demo-ner"), "--out", str(out),
               "--grid", "single", "--seeds", "1", "--epochs", "1"]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")} | {"HF_HUB_OFFLINE": "1"}
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300, env=environment)


def test_pickled_weights_on_a_worker_are_refused_unrun_and_charged_to_the_submission(good, tmp_path):
    model = copy_checkpoint(good, tmp_path / "pickled")
    (model / "model.safetensors").unlink()
    marker = tmp_path / "pickle-ran"
    pickle_that_writes(model / "pytorch_model.bin", marker)
    done = engine_finetune(model, tmp_path / "out")
    log = done.stdout + done.stderr
    assert done.returncode == 1 and not marker.exists()
    assert failure_cause(done.returncode, log) == "submission"
    assert "its weights are a pickle (pytorch_model.bin)" in failure_summary(done.returncode, log)


def test_unreadable_weights_on_a_worker_are_charged_to_the_submission(good, tmp_path):
    model = copy_checkpoint(good, tmp_path / "truncated")
    data = (model / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(data[: len(data) // 2])
    done = engine_finetune(model, tmp_path / "out")
    log = done.stdout + done.stderr
    assert done.returncode == 1 and failure_cause(done.returncode, log) == "submission", log[-2000:]
    assert "its weights cannot be loaded" in failure_summary(done.returncode, log)


def test_an_unreadable_tokenizer_on_a_worker_is_charged_to_the_submission_not_retried_as_a_crash(good, tmp_path):
    model = copy_checkpoint(good, tmp_path / "bad-tokenizer")
    (model / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "Nonsense"}}')
    done = engine_finetune(model, tmp_path / "out")
    log = done.stdout + done.stderr
    assert done.returncode == 1 and failure_cause(done.returncode, log) == "submission", log[-2000:]
    assert "its tokenizer cannot be loaded" in failure_summary(done.returncode, log)


def test_a_hostile_resume_archive_fails_the_job_as_the_submissions_fault_without_unpacking(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    inputs = {"corpus": tmp_path / "inputs" / "corpus", "checkpoint": tmp_path / "inputs" / "checkpoint"}
    for folder in inputs.values():
        folder.mkdir(parents=True)
    (inputs["corpus"] / "corpus.txt").write_text("text\n")
    tar_with(inputs["checkpoint"] / "checkpoint.tar", [(member("checkpoint/../../../outside/x"), b"x")], mode="w")
    run = JobRun(7, "token", api_url="http://platform/internal/", worker="gpu0@t", work_dir=tmp_path / "work")
    (tmp_path / "work" / "job-7").mkdir(parents=True)
    run.directory = tmp_path / "work" / "job-7"
    failures = []
    monkeypatch.setattr(run, "_download", lambda role, entries: inputs[role])
    monkeypatch.setattr(run, "_fail", lambda error, cause, plugin="": failures.append((error, cause)) or "failed")
    claimed = {"kind": "pretrain", "spec": pretrain_spec().to_json(), "inputs": {"corpus": [], "checkpoint": []}}
    run._run_claimed(claimed)
    ((error, cause),) = failures
    assert cause == "submission" and "the checkpoint.tar of job #7: member" in error and "outside" in error
    assert list(outside.iterdir()) == []


@pytest.mark.django_db
def test_a_hostile_model_tar_uploaded_by_a_worker_fails_the_job_unretried_and_unrefunded(
    alice, artefact_store, django_capture_on_commit_callbacks
):
    from jobs.models import Job
    from jobs.tasks import check_outputs
    from submissions.submitting import SubmissionRequest, submit

    corpus = artefact_store / "corpus.txt"
    corpus.write_text("aspirin inhibits cyclooxygenase\n" * 20)
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus,
                                          datasets=("demo-ner",)))  # fmt: skip
    pretrain = submission.jobs.get(kind=Job.Kind.PRETRAIN)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {pretrain.token}")
    assert client.post(f"{API}jobs/{pretrain.pk}/claim", {"delivery": "d1", "worker": "w"}).status_code == 200
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        link = tarfile.TarInfo("config.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    upload = {"HTTP_X_BIOLM_DELIVERY": "d1", "HTTP_CONTENT_DISPOSITION": 'attachment; filename="model.tar"'}
    client.put(f"{API}jobs/{pretrain.pk}/outputs/model.tar", archive.getvalue(),
               content_type="application/octet-stream", **upload)  # fmt: skip
    with django_capture_on_commit_callbacks():
        assert client.post(f"{API}jobs/{pretrain.pk}/complete", {"delivery": "d1"}, format="json").status_code == 202
    claim = Job.objects.get(pk=pretrain.pk).claim  # the platform's CPU worker checks the model, not the request
    assert check_outputs(pretrain.pk, pretrain.token, claim) == Job.Status.FAILED
    pretrain.refresh_from_db()
    submission.refresh_from_db()
    assert pretrain.status == Job.Status.FAILED and pretrain.failure_cause == Job.Cause.SUBMISSION
    assert "member 'config.json' is a symbolic link" in pretrain.error and pretrain.attempts == 1
    assert not submission.refunded
