"""The internal API GPU workers call (``jobs.api``): tokens, claims, withheld test gold, uploads, the end of a job."""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from checkpoints import tiny_bert
from contract_documents import results_document
from django.utils import timezone
from rest_framework.test import APIClient

from jobs import artefacts, completion, exports, lifecycle, tasks
from jobs.models import WAITING, Job, Worker
from registry.imports import import_dataset
from submissions.submitting import SubmissionRequest, submit

pytestmark = pytest.mark.django_db
API = "/internal/"


@pytest.fixture(autouse=True)
def isolated(artefact_store):
    import_dataset("demo-ner")
    return artefact_store


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(
        tmp_path_factory.mktemp("checkpoints") / "tiny-bert", ["aspirin inhibits cyclooxygenase in platelets"] * 5, 120
    )


@pytest.fixture
def finetune(alice, checkpoint) -> Job:
    submission = submit(
        SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-ner",))
    )
    return submission.jobs.get(kind=Job.Kind.FINETUNE)


def worker_client(job: Job, token: str | None = None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token or job.token}")
    return client


def claim(job: Job, delivery: str = "d1") -> dict:
    response = worker_client(job).post(f"{API}jobs/{job.pk}/claim", {"delivery": delivery, "worker": "gpu0@test"})
    assert response.status_code == 200, response.content
    return response.json()


def download(client: APIClient, url: str) -> bytes:
    response = client.get(url.removeprefix("http://testserver"))
    assert response.status_code == 200, url
    return b"".join(response.streaming_content)


def test_a_claim_needs_the_jobs_own_token(finetune, bob, checkpoint):
    request = SubmissionRequest(owner=bob, benchmark="blurb-mini", model=checkpoint, datasets=("demo-ner",), name="b")
    other = submit(request).jobs.first()
    assert APIClient().post(f"{API}jobs/{finetune.pk}/claim", {"delivery": "d", "worker": "w"}).status_code == 401
    response = worker_client(finetune, other.token).post(
        f"{API}jobs/{finetune.pk}/claim", {"delivery": "d", "worker": "w"}
    )
    assert response.status_code == 404  # as for a job that does not exist: a token reveals no other job
    assert Job.objects.get(pk=finetune.pk).status == Job.Status.QUEUED


def test_a_claim_hands_out_the_model_and_the_dataset_with_its_test_gold_withheld(finetune, checkpoint):
    claimed = claim(finetune)
    assert claimed["kind"] == "finetune" and claimed["spec"]["dataset"] == "demo-ner"
    client = worker_client(finetune)
    model = {entry["path"]: download(client, entry["url"]) for entry in claimed["inputs"]["model"]}
    assert model["config.json"] == (checkpoint / "config.json").read_bytes()
    data = {entry["path"]: download(client, entry["url"]).decode() for entry in claimed["inputs"]["dataset"]}
    assert set(data) == {"train.jsonl", "dev.jsonl", "test.jsonl"}
    rows = {split: [json.loads(line) for line in text.splitlines()] for split, text in data.items()}
    assert any(tag != "O" for row in rows["train.jsonl"] for tag in row["tags"])  # training gold is sent
    assert any(tag != "O" for row in rows["dev.jsonl"] for tag in row["tags"])
    assert all(tag == "O" for row in rows["test.jsonl"] for tag in row["tags"])  # test gold is not
    assert len(rows["test.jsonl"]) > 10 and all(row["tokens"] for row in rows["test.jsonl"])


def test_a_second_delivery_cannot_claim_a_running_job(finetune):
    claim(finetune, "first")
    response = worker_client(finetune).post(f"{API}jobs/{finetune.pk}/claim", {"delivery": "second", "worker": "w"})
    assert response.status_code == 409 and "running" in response.json()["detail"]


def test_a_host_running_other_code_than_the_job_pins_hands_it_back_uncharged_and_the_admin_says_why(
    finetune, admin_client
):
    from biolm import contract

    pinned = next(pin for pin in contract.parse_job_spec(finetune.spec).code if pin.name == "biolm")
    older = {**pinned.to_json(), "version": "0.0.1", "fingerprint": "sha256:0123456789abcdef", "provides": []}
    Worker.objects.create(name="gpu0@old-host", queues="gpu")
    url = f"{API}jobs/{finetune.pk}/claim"
    refused = worker_client(finetune).post(url, {"delivery": "d1", "worker": "gpu0@old-host", "code": [older]},
                                           format="json")  # fmt: skip
    expected = f"host gpu0@old-host runs biolm 0.0.1, the job pins biolm {pinned.version} (job #{finetune.pk})"
    assert refused.status_code == 409 and refused.json()["detail"] == f"{expected}: handed back, no attempt charged"
    finetune.refresh_from_db()
    assert (finetune.status, finetune.attempts, finetune.failure_cause) == (Job.Status.QUEUED, 0, "")  # not failed
    assert Worker.objects.get(name="gpu0@old-host").code_note == expected
    assert expected in admin_client.get("/admin/jobs/worker/").content.decode()

    upgraded = {**pinned.to_json(), "provides": []}  # the same host after its upgrade: the pinned code
    claimed = worker_client(finetune).post(url, {"delivery": "d2", "worker": "gpu0@old-host", "code": [upgraded]},
                                           format="json")  # fmt: skip
    assert claimed.status_code == 200, claimed.content
    assert Worker.objects.get(name="gpu0@old-host").code_note == ""


def test_the_words_for_other_code_name_each_plugin_its_versions_or_its_absence():
    from biolm.contract import CodePin, other_code_words

    pins = [CodePin("probe", "biolm-probe", "0.2.0", "sha256:aa"), CodePin("extra", "biolm-extra", "1.0", "sha256:cc")]
    older = CodePin("probe", "biolm-probe", "0.1.0", "sha256:bb")
    assert other_code_words(pins, [older]) == [
        "lacks extra (biolm-extra 1.0)", "runs biolm-probe 0.1.0, the job pins biolm-probe 0.2.0",
    ]  # fmt: skip
    edited = CodePin("probe", "biolm-probe", "0.2.0", "sha256:bb")  # same version, other files: the digests say so
    assert other_code_words(pins[:1], [edited]) == [
        "runs biolm-probe 0.2.0 (sha256:bb), the job pins biolm-probe 0.2.0 (sha256:aa)"
    ]
    assert other_code_words(pins[:1], [pins[0]]) == []


def test_a_claim_whose_code_is_not_a_list_of_pins_is_refused_naming_the_field(finetune):
    claim = {"delivery": "d", "worker": "w", "code": [{"version": 3}]}
    response = worker_client(finetune).post(f"{API}jobs/{finetune.pk}/claim", claim, format="json")
    assert response.status_code == 400 and "code" in response.json()
    assert Job.objects.get(pk=finetune.pk).status == Job.Status.QUEUED


def test_a_worker_reads_only_its_jobs_inputs(finetune, isolated):
    claimed = claim(finetune)
    client = worker_client(finetune)
    (isolated / "store" / "secrets.txt").write_text("not yours")
    export = claimed["inputs"]["dataset"][0]["url"].split("/artefacts/")[1].rsplit("/", 2)[0]  # datasets/demo-ner/<fp>
    (isolated / "store" / export / "gold.jsonl").write_text("the real labels")
    for name in ("secrets.txt", f"{export}/gold.jsonl", f"{export}/withheld/manifest.json"):
        assert client.get(f"{API}jobs/{finetune.pk}/artefacts/{name}").status_code == 404, name
    lifecycle.cancel(Job.objects.filter(pk=finetune.pk))  # a job that is not running reads nothing
    assert client.get(claimed["inputs"]["dataset"][0]["url"].removeprefix("http://testserver")).status_code == 404


def test_heartbeats_carry_progress_and_a_cancelled_job_answers_stop(finetune):
    claim(finetune)
    client = worker_client(finetune)
    beat = {"delivery": "d1", "step": 5, "total": 20, "loss": 0.7, "eta_s": 30, "log": "epoch 1\n"}
    assert client.post(f"{API}jobs/{finetune.pk}/heartbeat", beat, format="json").json() == {"verdict": "continue"}
    job = Job.objects.get(pk=finetune.pk)
    assert (job.progress_step, job.progress_total, job.progress_loss, job.eta_s) == (5, 20, 0.7, 30)
    assert job.log == "epoch 1\n"
    lifecycle.cancel(Job.objects.filter(pk=job.pk))
    assert client.post(f"{API}jobs/{finetune.pk}/heartbeat", beat, format="json").json() == {"verdict": "stop"}


def test_a_known_workers_claim_reads_the_job_and_the_worker_once_and_numbers_its_attempt(
    finetune, settings, django_assert_max_num_queries
):
    """A claim per job, from every GPU host: the job (with its dataset) and the worker are read once each, the
    claimed job is not read again, and the attempt still gets the job's next number and the worker's GPUs."""
    beat = {"name": "gpu0@test", "queues": ["gpu"], "slots": 1, "gpus": 2, "gpus_free": 2}
    secret = APIClient()
    secret.credentials(HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}")
    assert secret.post(f"{API}workers/heartbeat", beat, format="json").status_code == 204
    Job.objects.filter(pk=finetune.pk).update(attempts=2)  # two earlier attempts, lost
    exports.dataset_artefacts(finetune.dataset)  # exported by an earlier claim: this one reads its manifest
    # the job with its dataset, the worker, the claim, the attempt, the attempts it ends, the submission's
    # jobs and status (three), the dataset's import: 12 before the job and the worker were each read once
    with django_assert_max_num_queries(9):
        claimed = claim(finetune)
    assert claimed["spec"]["dataset"] == "demo-ner" and claimed["inputs"]["dataset"]
    job = Job.objects.get(pk=finetune.pk)
    assert (job.status, job.attempts, job.claim, job.worker) == (Job.Status.RUNNING, 3, "d1", "gpu0@test")
    (attempt,) = job.attempt_log.all()
    assert (attempt.number, attempt.worker, attempt.delivery, attempt.gpus) == (3, "gpu0@test", "d1", 1)


def test_a_claim_raced_by_another_attempt_between_its_read_and_its_write_is_refused_not_misnumbered(finetune):
    """The claim reads the job, then takes it only if no attempt began in between: another delivery that
    claimed, lost and handed it back meanwhile would otherwise leave two attempts under one number."""
    seen = Job.objects.get(pk=finetune.pk)
    assert lifecycle.claim(finetune.pk, finetune.token, "other", "gpu1@test") is not None
    lifecycle.fail(finetune.pk, finetune.token, "other", "lost", Job.Cause.PLATFORM)
    Job.objects.filter(pk=finetune.pk).update(status=Job.Status.QUEUED, not_before=None)  # waiting again at once
    assert lifecycle.claim(finetune.pk, finetune.token, "late", "gpu0@test", seen=seen) is None
    assert lifecycle.claim(finetune.pk, finetune.token, "late", "gpu0@test", seen=Job.objects.get(pk=finetune.pk))
    assert Job.objects.get(pk=finetune.pk).attempts == 2


def test_a_job_heartbeat_reads_the_job_once_and_keeps_the_eta_from_growing(finetune, django_assert_num_queries):
    claim(finetune)
    client = worker_client(finetune)
    beat = {"delivery": "d1", "step": 5, "total": 20, "eta_s": 30}
    assert client.post(f"{API}jobs/{finetune.pk}/heartbeat", beat, format="json").json() == {"verdict": "continue"}
    with django_assert_num_queries(2):  # the job's token and progress, then the UPDATE
        answer = client.post(f"{API}jobs/{finetune.pk}/heartbeat", {**beat, "step": 6, "eta_s": 45}, format="json")
    assert answer.json() == {"verdict": "continue"}
    job = Job.objects.get(pk=finetune.pk)
    assert (job.progress_step, job.eta_s) == (6, 30)  # the pace wobbled: the promise made stands


def test_only_the_holding_delivery_may_upload(finetune):
    claim(finetune)
    client = worker_client(finetune)
    url = f"{API}jobs/{finetune.pk}/outputs/results.json"
    headers = {"HTTP_CONTENT_DISPOSITION": 'attachment; filename="results.json"'}
    stranger = client.put(url, b"{}", content_type="application/octet-stream", HTTP_X_BIOLM_DELIVERY="other", **headers)
    assert stranger.status_code == 409
    unknown = client.put(f"{API}jobs/{finetune.pk}/outputs/weights.bin", b"x", content_type="application/octet-stream",
                         HTTP_X_BIOLM_DELIVERY="d1", **headers)  # fmt: skip
    assert unknown.status_code == 404


def test_an_output_that_would_leave_the_disk_under_its_reserve_is_refused_unread_and_the_job_keeps_running(
    finetune, settings
):
    claim(finetune)
    reservations = Path(settings.BIOLM_VAR_DIR) / "upload-reservations"
    settings.BIOLM_DISK_RESERVE_BYTES = shutil.disk_usage(settings.BIOLM_VAR_DIR).free - (1 << 20)
    url = f"{API}jobs/{finetune.pk}/outputs/checkpoint.tar"
    headers = {"HTTP_CONTENT_DISPOSITION": 'attachment; filename="checkpoint.tar"', "HTTP_X_BIOLM_DELIVERY": "d1"}
    client = worker_client(finetune)
    refused = client.put(url, b"\0" * (2 << 20), content_type="application/octet-stream", **headers)
    assert refused.status_code == 507, refused.content
    detail = refused.json()["detail"]
    assert (
        f"job #{finetune.pk}'s checkpoint.tar (2.0\xa0MB) does not fit" in detail
        and "BIOLM_DISK_RESERVE_BYTES" in detail
    )
    assert completion.stored_output(finetune.pk, "checkpoint.tar") is None
    assert Job.objects.get(pk=finetune.pk).status == Job.Status.RUNNING
    assert not list(reservations.glob("*.bytes"))  # the refused request holds nothing
    settings.BIOLM_DISK_RESERVE_BYTES = 0
    accepted = client.put(url, b"\0" * 1000, content_type="application/octet-stream", **headers)
    assert accepted.status_code == 204 and completion.stored_output(finetune.pk, "checkpoint.tar")["size"] == 1000
    assert not list(reservations.glob("*.bytes"))  # released once the body was stored


def test_results_that_were_not_made_on_the_withheld_split_fail_the_job_and_charge_it(finetune, alice):
    claim(finetune)
    client = worker_client(finetune)
    results = results_document(finetune.contract, [], withheld=False)
    client.put(f"{API}jobs/{finetune.pk}/outputs/results.json", json.dumps(results).encode(),
               content_type="application/octet-stream", HTTP_X_BIOLM_DELIVERY="d1",
               HTTP_CONTENT_DISPOSITION='attachment; filename="results.json"')  # fmt: skip
    response = client.post(f"{API}jobs/{finetune.pk}/complete", {"delivery": "d1"}, format="json")
    assert response.status_code == 422 and "withheld" in response.json()["detail"]
    job = Job.objects.get(pk=finetune.pk)
    assert job.status == Job.Status.FAILED and job.failure_cause == Job.Cause.SUBMISSION
    assert not job.submission.refunded
    aggregate = Job.objects.get(kind=Job.Kind.SCORE, submission=job.submission)
    assert aggregate.status == Job.Status.FAILED  # the rest of its branch cannot run


def test_completing_without_results_fails_and_a_platform_failure_is_retried(finetune):
    claim(finetune)
    client = worker_client(finetune)
    response = client.post(f"{API}jobs/{finetune.pk}/complete", {"delivery": "d1"}, format="json")
    assert response.status_code == 422 and "no results" in response.json()["detail"]
    Job.objects.filter(pk=finetune.pk).update(status=Job.Status.QUEUED, claim="", error="")
    claim(finetune, "d2")
    failure = {"delivery": "d2", "error": "CUDA out of memory", "cause": "platform"}
    failed = client.post(f"{API}jobs/{finetune.pk}/fail", failure, format="json")
    assert failed.json() == {"status": Job.Status.RETRYING}
    job = Job.objects.get(pk=finetune.pk)
    assert job.error == "CUDA out of memory" and job.not_before is not None


def test_a_pretraining_jobs_model_becomes_its_language_models_checkpoint(
    alice, checkpoint, isolated, django_capture_on_commit_callbacks
):
    corpus = isolated / "corpus.txt"
    corpus.write_text("aspirin inhibits cyclooxygenase\n" * 20)
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus,
                                          datasets=("demo-ner",)))  # fmt: skip
    pretrain = submission.jobs.get(kind=Job.Kind.PRETRAIN)
    claimed = claim(pretrain)
    client = worker_client(pretrain)
    assert download(client, claimed["inputs"]["corpus"][0]["url"]) == corpus.read_bytes()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for path in checkpoint.iterdir():
            tar.add(path, arcname=path.name)
    upload = {"HTTP_X_BIOLM_DELIVERY": "d1", "HTTP_CONTENT_DISPOSITION": 'attachment; filename="model.tar"'}
    url = f"{API}jobs/{pretrain.pk}/outputs/model.tar"
    client.put(url, archive.getvalue(), content_type="application/octet-stream", **upload)
    with django_capture_on_commit_callbacks() as sent:
        answer = client.post(f"{API}jobs/{pretrain.pk}/complete", {"delivery": "d1"}, format="json")
    assert answer.status_code == 202 and answer.json() == {"status": "checking"} and len(sent) == 1
    handed = Job.objects.get(pk=pretrain.pk)  # the worker is done; the model is not checked yet
    assert handed.status == Job.Status.RUNNING and handed.claim.startswith(lifecycle.INTAKE_PREFIX)
    assert client.post(f"{API}jobs/{pretrain.pk}/heartbeat", {"delivery": "d1"}, format="json").json() == {
        "verdict": "stop"
    }  # the delivering worker's claim is gone: nothing it sends now changes the job
    assert tasks.check_outputs(pretrain.pk, pretrain.token, handed.claim) == Job.Status.SUCCEEDED
    model = submission.language_model
    model.refresh_from_db()
    assert model.checkpoint == f"artefacts:{pretrain.spec['output']}" and model.parameter_count
    finetune = submission.jobs.get(kind=Job.Kind.FINETUNE)
    files = {entry["path"] for entry in claim(finetune, "f1")["inputs"]["model"]}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= files


def test_a_delivered_model_whose_bytes_differ_from_its_declared_digest_fails_the_job(
    alice, checkpoint, isolated, django_capture_on_commit_callbacks
):
    corpus = isolated / "corpus.txt"
    corpus.write_text("aspirin inhibits cyclooxygenase\n" * 20)
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus,
                                          datasets=("demo-ner",)))  # fmt: skip
    pretrain = submission.jobs.get(kind=Job.Kind.PRETRAIN)
    claim(pretrain)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for path in checkpoint.iterdir():
            tar.add(path, arcname=path.name)
    completion.record_output(pretrain.pk, "model.tar", io.BytesIO(archive.getvalue()))
    sidecar = completion.output_name(pretrain.pk, "model.tar") + ".json"
    entry = {**completion.stored_output(pretrain.pk, "model.tar"), "sha256": "0" * 64}
    artefacts.store_bytes(json.dumps(entry).encode(), sidecar)  # what a worker declaring other bytes leaves
    with django_capture_on_commit_callbacks():
        worker_client(pretrain).post(f"{API}jobs/{pretrain.pk}/complete", {"delivery": "d1"}, format="json")
    handed = Job.objects.get(pk=pretrain.pk)
    assert tasks.check_outputs(pretrain.pk, pretrain.token, handed.claim) == Job.Status.FAILED
    handed.refresh_from_db()
    assert handed.failure_cause == Job.Cause.SUBMISSION and "not the file its upload declared" in handed.error
    submission.language_model.refresh_from_db()
    assert not submission.language_model.checkpoint


def test_a_job_the_platform_is_checking_holds_no_worker_slot_and_waits_its_own_limit_before_it_is_retried(
    finetune, settings
):
    from jobs import dispatch

    dispatch.record_worker("gpu0@host", ["gpu"], slots=1)
    claim(finetune)
    assert dispatch.free_slots("gpu", stale_after_s=60) == {"gpu": 0}
    claimed = lifecycle.hand_over(finetune.pk, finetune.token, "d1", "check-1")
    assert claimed == "intake:check-1" and dispatch.free_slots("gpu", stale_after_s=60) == {"gpu": 1}
    later = timezone.now() + dt.timedelta(seconds=120)
    assert lifecycle.reap(stale_after_s=60, now=later, intake_wait_s=600) == []
    assert lifecycle.reap(stale_after_s=60, now=later + dt.timedelta(seconds=600), intake_wait_s=600) == [finetune.pk]
    finetune.refresh_from_db()
    assert finetune.status in WAITING and "did not finish checking its outputs" in finetune.error


def test_a_heartbeat_whose_step_no_column_can_hold_is_refused_as_bad_input(finetune):
    claim(finetune)
    beat = {"delivery": "d1", "step": 10**30, "total": 10}
    answer = worker_client(finetune).post(f"{API}jobs/{finetune.pk}/heartbeat", beat, format="json")
    assert answer.status_code == 400 and "step" in answer.json()


def test_workers_register_with_the_worker_secret_only(settings):
    client = APIClient()
    body = {"name": "gpu0@host", "queues": ["gpu"], "slots": 1}
    client.credentials(HTTP_AUTHORIZATION="Bearer wrong")
    assert client.post(f"{API}workers/heartbeat", body, format="json").status_code == 403
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}")
    assert client.post(f"{API}workers/heartbeat", body, format="json").status_code == 204
    assert Worker.objects.get(name="gpu0@host").queues == "gpu"


def test_a_workers_heartbeat_records_the_gpus_it_runs_on_and_none_when_it_says_nothing(settings):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}")
    client.post(f"{API}workers/heartbeat", {"name": "gpu0@box", "queues": ["gpu"], "gpus": 1}, format="json")
    client.post(f"{API}workers/heartbeat", {"name": "gpu0@laptop", "queues": ["gpu"]}, format="json")  # older workers
    assert dict(Worker.objects.values_list("name", "gpus")) == {"gpu0@box": 1, "gpu0@laptop": 0}


def test_the_worker_api_is_described_by_an_openapi_schema_for_workers_only(client, settings):
    assert client.get(f"{API}schema/").status_code == 401
    assert client.get(f"{API}schema/", HTTP_AUTHORIZATION="Bearer not-the-secret").status_code == 403
    response = client.get(f"{API}schema/", HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}")
    assert response.status_code == 200
    text = response.content.decode()
    for path in ("/internal/jobs/{job_id}/claim", "/internal/jobs/{job_id}/heartbeat", "/internal/workers/heartbeat"):
        assert path in text


def test_every_demo_dataset_exports_exactly_as_imported_with_its_test_gold_withheld(settings):
    from jobs import exports
    from registry.models import Dataset

    for slug in ("demo-pico", "demo-relation", "demo-similarity", "demo-doc-classification", "demo-qa"):
        import_dataset(slug)
    for dataset in Dataset.objects.filter(slug__startswith="demo-"):
        _, entries = exports.dataset_artefacts(dataset)  # refuses a copy whose fingerprint changed
        assert sorted(entry["name"].rsplit("/", 1)[1] for entry in entries) == [
            "dev.jsonl",
            "test.jsonl",
            "train.jsonl",
        ]
        gold = exports.loaded(dataset, None, withheld=False)
        withheld = exports.loaded(dataset, None, withheld=True)
        assert gold.fingerprint == dataset.imports.get().fingerprint
        assert withheld.splits["train"] == gold.splits["train"] and withheld.splits["dev"] == gold.splits["dev"]
        assert withheld.splits["test"] != gold.splits["test"], dataset.slug
