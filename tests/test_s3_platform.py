"""A GPU host of its own joins with three settings and runs a submission to the leaderboard through a real S3 server.

The whole loop in real processes (``bench.harness``) against SeaweedFS (``bench.s3_server``), with the GPU
worker on a second host (``bench.netns``: a network namespace whose one link is a veth pair). The web,
Redis and the S3 server listen on this side's veth address, as a web host's services listen on the address
other hosts use; PostgreSQL listens only on this side's loopback, out of the second host's reach. The
worker is given the broker's URL, the internal API's URL and the worker secret, and nothing else of the
platform's. The web stores the submitted checkpoint in the bucket, the worker downloads it with pre-signed
``GET``s and sends its results with a pre-signed ``PUT`` signed with their SHA-256, the platform checks what
the server holds before it accepts the job, and the scoring worker reads the results from the bucket onto
the leaderboard.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert

from bench.harness import Platform
from bench.netns import SecondHost, listening_port
from bench.s3_server import S3Server

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.backend]


@pytest.fixture(scope="module")
def second_host():
    if SecondHost.unavailable():
        pytest.skip(SecondHost.unavailable())
    with SecondHost() as host:
        yield host


@pytest.fixture(scope="module")
def platform(tmp_path_factory, second_host):
    with S3Server(tmp_path_factory.mktemp("s3"), host=second_host.peer) as s3:
        running = Platform(tmp_path_factory.mktemp("platform"), host=second_host.peer)
        running.environment.update(s3.environment())
        running.s3 = s3
        try:  # a start that fails half-way leaves no process on the veth address
            running.start(datasets=("demo-ner",))
            yield running
        finally:
            running.stop()


THREE_SETTINGS = {"CELERY_BROKER_URL", "BIOLM_API_URL", "BIOLM_WORKER_SECRET"}


def test_a_gpu_host_of_its_own_runs_a_submission_to_the_leaderboard_through_the_s3_server(
    platform, against_postgres, second_host, tmp_path
):
    host = second_host
    for service, (address, port) in {"web": (host.peer, platform.port), "redis": (host.peer, platform.redis.port),
                                     "s3": (host.peer, platform.s3.port)}.items():  # fmt: skip
        assert host.reaches(address, port), f"the second host cannot reach the {service} at {address}:{port}"
    database = listening_port(platform.database_url)
    assert not host.reaches(*database) and not host.reaches(host.peer, database[1])  # no road to PostgreSQL
    model = tiny_bert(tmp_path / "tiny-bert", demo_texts(), 600, hidden=32)
    platform_only = {"DATABASE_URL", "BIOLM_S3_BUCKET", "BIOLM_S3_ACCESS_KEY", "BIOLM_S3_SECRET_KEY", "BIOLM_VAR_DIR"}
    given = {name: value for name, value in platform.worker_environment().items() if name not in platform_only}
    worker = platform.start_gpu_worker("gpu-remote", prefix=host.prefix)
    environment = Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0")
    assert not any(entry.startswith((b"DATABASE_URL=", b"BIOLM_S3_")) for entry in environment)
    assert set(given) >= THREE_SETTINGS and host.peer in given["CELERY_BROKER_URL"] + given["BIOLM_API_URL"]
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
    assert platform.job(finetune)["worker"] == "gpu-remote@harness"  # the second host's worker ran it
