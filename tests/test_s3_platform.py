"""A submission through a platform whose artefact store is a real S3 server, with GPU workers that hold no key to it.

The whole loop in real processes (``bench.harness``) against SeaweedFS (``bench.s3_server``): the web
stores the submitted checkpoint in the bucket, the GPU worker downloads it with pre-signed ``GET``s and
sends its results with a pre-signed ``PUT`` signed with their SHA-256, the platform checks what the
server holds before it accepts the job, and the score job reads the results from the bucket onto the
leaderboard. The worker's environment has neither the database's URL nor the bucket's keys.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert

from bench.harness import Platform
from bench.s3_server import S3Server

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.backend]


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    with S3Server(tmp_path_factory.mktemp("s3")) as s3:
        running = Platform(tmp_path_factory.mktemp("platform"))
        running.environment.update(s3.environment())
        running.s3 = s3
        running.start(datasets=("demo-ner",))
        yield running
        running.stop()


def test_a_submission_reaches_the_leaderboard_with_every_artefact_through_the_s3_server(platform, against_postgres,
                                                                                        tmp_path):  # fmt: skip
    model = tiny_bert(tmp_path / "tiny-bert", demo_texts(), 600, hidden=32)
    worker = platform.start_gpu_worker("gpu-remote")
    environment = Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0")
    assert not any(entry.startswith((b"DATABASE_URL=", b"BIOLM_S3_")) for entry in environment)
    protocol = '{"grid": "single", "seeds": 1, "epochs": 1, "max_length": 64}'
    submitted = platform.submit("--model", str(model), "--benchmark", "blurb-mini", "--protocol", protocol,
                                "--name", "through s3", "--datasets", "demo-ner")  # fmt: skip
    (finetune,) = [job["id"] for job in submitted["jobs"] if job["kind"] == "finetune"]
    (score,) = [job["id"] for job in submitted["jobs"] if job["kind"] == "score"]
    assert platform.wait_for_job(score, ("succeeded", "failed"))["status"] == "succeeded", platform.job(score)
    assert [row["dataset"] for row in platform.results(submitted["model"])] == ["demo-ner"]

    bucket = platform.s3.client()
    results = bucket.get_object(Bucket=platform.s3.bucket, Key=f"jobs/{finetune}/results.json")["Body"].read()
    recorded = json.loads(bucket.get_object(Bucket=platform.s3.bucket, Key=f"jobs/{finetune}/results.json.json")
                          ["Body"].read())  # fmt: skip
    assert recorded["sha256"] == hashlib.sha256(results).hexdigest() and recorded["size"] == len(results)
    weights = (model / "model.safetensors").read_bytes()
    blob = f"blobs/sha256/{hashlib.sha256(weights).hexdigest()[:2]}/{hashlib.sha256(weights).hexdigest()}"
    assert bucket.head_object(Bucket=platform.s3.bucket, Key=blob)["ContentLength"] == len(weights)
    log = (platform.directory / "gpu-remote.log").read_text(errors="replace")
    assert "results.json sent to the object store" in log
