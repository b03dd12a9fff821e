"""Artefacts both ways through a real S3 server (SeaweedFS, ``bench.s3_server``), as GPU hosts elsewhere move them.

The platform signs; workers fetch and send with the standard library (``workers.runner``), straight to
the server, through the internal API of a live web server: checkpoints down with pre-signed ``GET``s,
outputs up with pre-signed ``PUT``s, multipart in small parts here, each signed with the SHA-256 the
worker declared, so the server itself refuses a different body. A proxy in front of the server cuts a
part's connection once, to check that the worker sends that part again, and only that part.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import tarfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from checkpoints import tiny_bert

from bench.s3_server import S3Server
from jobs import artefacts, completion, tasks
from jobs.models import Job
from submissions.submitting import SubmissionRequest, submit
from workers.runner.client import FileRange, PlatformClient, Rejected
from workers.runner.outputs import send_output

pytestmark = [
    pytest.mark.backend,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("session_rows_restored"),
]
PART_BYTES = 5 << 20  # S3's smallest part


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("the S3 server's tests run once, in CI's PostgreSQL pass (set DATABASE_URL=postgres://...)")
    with S3Server(tmp_path_factory.mktemp("s3")) as server:
        yield server


def s3_storage(s3: S3Server, **options) -> dict:
    return {
        "BACKEND": "jobs.s3_store.ArtefactS3Storage",
        "OPTIONS": {
            "bucket_name": s3.bucket, "endpoint_url": s3.endpoint_url, "public_endpoint_url": s3.endpoint_url,
            "access_key": s3.access_key, "secret_key": s3.secret_key, "region_name": "us-east-1",
            "addressing_style": "path", "signature_version": "s3v4", "querystring_auth": True,
            "querystring_expire": 600, "file_overwrite": True, **options,
        },
    }  # fmt: skip


@pytest.fixture
def store(s3, settings, artefact_store):
    settings.STORAGES = {**settings.STORAGES, "artefacts": s3_storage(s3)}
    settings.BIOLM_ARTEFACT_STORAGE = "artefacts"
    settings.BIOLM_S3_MULTIPART_BYTES = PART_BYTES
    return artefacts.storage()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("ckpt") / "tiny", ["aspirin inhibits cyclooxygenase"] * 5, 120)


@pytest.fixture
def running(store, session_rows, alice, checkpoint, live_server) -> tuple[Job, PlatformClient, dict]:
    """A fine-tuning job claimed through the live internal API: the job, its worker's client and the claim."""
    request = SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-ner",))
    job = submit(request).jobs.get(kind=Job.Kind.FINETUNE)
    client = PlatformClient(f"{live_server.url}/internal/", job.token, retry_for_s=10)
    claimed = client.post(f"jobs/{job.pk}/claim", {"delivery": "d1", "worker": "gpu0@elsewhere"})
    return job, client, claimed


def random_file(path: Path, size: int) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def test_a_checkpoint_goes_down_byte_identical_from_urls_signed_for_the_public_endpoint(running, checkpoint, tmp_path):
    _, client, claimed = running
    assert claimed["uploads"] == {"part_bytes": PART_BYTES}
    for entry in claimed["inputs"]["model"]:
        assert entry["url"].startswith(artefacts.storage().public_endpoint_url + "/"), entry["url"]
        fetched = client.download(entry, tmp_path / "model" / entry["path"])
        assert fetched.read_bytes() == (checkpoint / entry["path"]).read_bytes()
    assert {entry["path"] for entry in claimed["inputs"]["model"]} >= {"config.json", "model.safetensors"}


def test_an_output_goes_up_in_small_parts_and_is_recorded_with_its_declared_digest(running, tmp_path):
    job, client, claimed = running
    file = random_file(tmp_path / "checkpoint.tar", 2 * PART_BYTES + 123)
    send_output(client, f"jobs/{job.pk}", "checkpoint.tar", file, "d1", claimed["uploads"])
    name = completion.output_name(job.pk, "checkpoint.tar")
    with artefacts.storage().open(name, "rb") as handle:
        assert handle.read() == file.read_bytes()
    assert completion.stored_output(job.pk, "checkpoint.tar") == {
        "name": name,
        "size": file.stat().st_size,
        "sha256": hashlib.sha256(file.read_bytes()).hexdigest(),
    }
    assert not artefacts.storage().exists(name + ".upload.json")  # the plan is gone once the upload is recorded


def test_a_body_other_than_the_declared_one_is_refused_by_the_server_and_never_recorded(running, tmp_path):
    job, client, _ = running
    file = random_file(tmp_path / "results.json", 1000)
    declared = hashlib.sha256(b"something else").hexdigest()
    planned = client.post(f"jobs/{job.pk}/outputs/results.json/upload",
                          {"delivery": "d1", "size": 1000, "sha256": declared, "parts": [declared]})  # fmt: skip
    with pytest.raises(Rejected, match="400"):
        client.put(planned["parts"][0]["url"], FileRange(file, 0, 1000), planned["parts"][0]["headers"])
    with pytest.raises(Rejected, match="422"):
        client.post(f"jobs/{job.pk}/outputs/results.json/uploaded", {"delivery": "d1", "upload_id": None})
    assert completion.stored_output(job.pk, "results.json") is None
    with pytest.raises(Rejected, match="was not recorded"):
        client.post(f"jobs/{job.pk}/complete", {"delivery": "d1"})
    assert Job.objects.get(pk=job.pk).status == Job.Status.FAILED


def test_a_pretrained_model_sent_in_parts_is_checked_whole_by_the_cpu_worker_after_its_gpu_worker_is_free(
    store, session_rows, alice, live_server, checkpoint, tmp_path, monkeypatch
):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("aspirin inhibits cyclooxygenase\n" * 20)
    request = SubmissionRequest(owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus,
                                datasets=("demo-ner",))  # fmt: skip
    submission = submit(request)
    job = submission.jobs.get(kind=Job.Kind.PRETRAIN)
    client = PlatformClient(f"{live_server.url}/internal/", job.token, retry_for_s=10)
    claimed = client.post(f"jobs/{job.pk}/claim", {"delivery": "d1", "worker": "gpu0@elsewhere"})
    model = tmp_path / "model.tar"
    with tarfile.open(model, "w") as tar:
        for path in checkpoint.iterdir():
            tar.add(path, arcname=path.name)
    with model.open("ab") as handle:  # zeros past the end-of-archive marker: a second part the unpacker never reads
        handle.write(bytes(PART_BYTES + 1000))
    send_output(client, f"jobs/{job.pk}", "model.tar", model, "d1", claimed["uploads"])
    sent = []
    monkeypatch.setattr(tasks, "send_check", lambda *args: sent.append(args))
    assert client.post(f"jobs/{job.pk}/complete", {"delivery": "d1"}) == {"status": "checking"}
    ((job_id, token, claim),) = sent
    assert tasks.check_outputs(job_id, token, claim) == Job.Status.SUCCEEDED
    submission.language_model.refresh_from_db()
    assert submission.language_model.checkpoint == f"artefacts:{job.spec['output']}"
    assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED


def test_the_web_takes_no_output_when_the_store_is_a_bucket(running, tmp_path):
    job, client, _ = running
    file = random_file(tmp_path / "results.json", 100)
    with pytest.raises(Rejected, match="pre-signed"):
        client.upload(f"jobs/{job.pk}/outputs/results.json", file, "d1")


def test_an_expired_or_tampered_url_is_refused(s3, settings, artefact_store, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "artefacts": s3_storage(s3, querystring_expire=1)}
    settings.BIOLM_ARTEFACT_STORAGE = "artefacts"
    entry = artefacts.store_bytes(b"weights", "probe/weights.bin")
    url = artefacts.locate(entry["name"])
    client = PlatformClient("http://127.0.0.1:9/internal/", "unused", retry_for_s=1)
    tampered = {"url": url.replace("weights.bin", "other.bin"), "size": 7, "sha256": entry["sha256"]}
    with pytest.raises(Rejected, match="403"):
        client.download(tampered, tmp_path / "tampered")
    time.sleep(2.1)
    with pytest.raises(Rejected, match="403"):
        client.download({"url": url, "size": 7, "sha256": entry["sha256"]}, tmp_path / "expired")


def test_urls_are_signed_for_the_public_endpoint_while_the_platform_uses_its_own(s3, settings, artefact_store):
    public = "http://s3.biolm.example:9000"
    settings.STORAGES = {**settings.STORAGES, "artefacts": s3_storage(s3, public_endpoint_url=public)}
    settings.BIOLM_ARTEFACT_STORAGE = "artefacts"
    entry = artefacts.store_bytes(b"x" * 10, "probe/public.bin")  # stored through endpoint_url
    url = urlparse(artefacts.locate(entry["name"]))
    assert (url.scheme, url.netloc, url.path) == ("http", "s3.biolm.example:9000", f"/{s3.bucket}/probe/public.bin")
    assert "X-Amz-Signature=" in url.query


class CuttingProxy:
    """A TCP relay to the S3 server that cuts, once, the connection sending part ``cut_part`` mid-body."""

    def __init__(self, upstream: tuple[str, int], cut_part: int) -> None:
        self.upstream, self.cut_part, self.cut = upstream, cut_part, False
        self.requests: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(downstream,), daemon=True).start()

    def _relay(self, downstream: socket.socket) -> None:
        upstream = socket.create_connection(self.upstream)
        first = downstream.recv(65536)
        line = first.split(b"\r\n", 1)[0].decode(errors="replace")
        self.requests.append(line)
        if not self.cut and re.search(rf"[?&]partNumber={self.cut_part}(&| )", line):
            self.cut = True
            upstream.sendall(first[: len(first) // 2])
            downstream.close()
            upstream.close()
            return
        upstream.sendall(first)
        threading.Thread(target=self._pipe, args=(downstream, upstream), daemon=True).start()
        self._pipe(upstream, downstream)

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def test_a_part_cut_mid_transfer_is_sent_again_alone_and_the_object_is_whole(running, s3, settings, tmp_path):
    job, client, claimed = running
    proxy = CuttingProxy(("127.0.0.1", s3.port), cut_part=2)
    settings.STORAGES = {
        **settings.STORAGES,
        "artefacts": s3_storage(s3, public_endpoint_url=f"http://127.0.0.1:{proxy.port}"),
    }
    try:
        file = random_file(tmp_path / "model.tar", 2 * PART_BYTES + 7)
        send_output(client, f"jobs/{job.pk}", "model.tar", file, "d1", claimed["uploads"])
    finally:
        proxy.close()
    puts = [line for line in proxy.requests if line.startswith("PUT ")]
    numbers = [int(re.search(r"[?&]partNumber=(\d+)", line)[1]) for line in puts]
    assert sorted(numbers) == [1, 2, 2, 3], proxy.requests  # part 2 twice, every other part once
    with artefacts.storage().open(completion.output_name(job.pk, "model.tar"), "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == hashlib.sha256(file.read_bytes()).hexdigest()
