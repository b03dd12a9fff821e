"""The workers' internal API against a job token used as an attacker would: it reads only that job's own inputs.

A running job's token is the most an attacker on a worker holds. Every traversal encoding of
another submission's file is answered 404 (or 400), never 200 or 500; an unknown job id and
another job's id answer alike; the schema needs the worker secret; and schemathesis fuzzes every
operation from that schema without a server error.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from jobs.models import Job
from registry.imports import import_dataset
from submissions.submitting import SubmissionRequest, submit

pytestmark = pytest.mark.django_db
API = "/internal/"


@pytest.fixture(autouse=True)
def isolated(artefact_store):
    import_dataset("demo-ner")
    return artefact_store


def running(owner, checkpoint, name: str) -> Job:
    request = SubmissionRequest(
        owner=owner, benchmark="blurb-mini", model=checkpoint, datasets=("demo-ner",), name=name
    )
    job = submit(request).jobs.get(kind=Job.Kind.FINETUNE)
    response = client_for(job.token).post(f"{API}jobs/{job.pk}/claim", {"delivery": "d", "worker": "gpu0@test"})
    assert response.status_code == 200, response.content
    job.refresh_from_db()
    return job


def client_for(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def mine(alice, good) -> Job:
    return running(alice, good, "mine")


@pytest.fixture
def other(bob, good, tmp_path) -> Job:
    """Bob's checkpoint holds a file of its own (a README), stored as a blob that alice's job never lists."""
    theirs = tmp_path / "theirs"
    shutil.copytree(good, theirs)
    (theirs / "README.md").write_text("Bob's model card, his alone.\n")
    return running(bob, theirs, "theirs")


def blob(job: Job, path: str) -> str:
    """The artefact name of the file at ``path`` of the job's checkpoint (a content-addressed blob)."""
    (entry,) = [entry for entry in job.spec["model"]["checkpoint"] if entry["path"] == path]
    return entry["name"]


def traversals(mine: Job, other: Job, store) -> list[str]:
    me, them = mine.submission_id, other.submission_id
    target = f"{them}/model/config.json"
    own, theirs = blob(mine, "config.json"), blob(other, "README.md")
    shard, digest = theirs.split("/")[-2:]
    return [
        theirs,
        f"{own}/../../{shard}/{digest}",
        f"{own}/%2e%2e/%2e%2e/{shard}/{digest}",
        f"{own}/..%2f..%2f{shard}%2f{digest}",
        f"{own}%00",
        f"blobs/sha256/{shard}/../{shard}/{digest}",
        f"blobs/sha256/{shard}",
        f"blobs/sha256/{shard}/",
        "blobs/sha256",
        f"/{store}/store/{theirs}",
        f"submissions/{me}/model/../../{target}",
        f"submissions/{me}/model/%2e%2e/%2e%2e/{target}",
        f"submissions/{me}/model/%2E%2E/%2E%2E/{target}",
        f"submissions/{me}/model/..%2f..%2f{target}",
        f"submissions/{me}/model/..%2F..%2F{target}",
        f"submissions/{me}/model/%252e%252e/%252e%252e/{target}",
        f"submissions/{me}/model/..%5c..%5c{them}%5cmodel%5cconfig.json",
        f"submissions/{me}/model/..\\..\\{them}\\model\\config.json",
        f"submissions/{me}/model/..%c0%af..%c0%af{target}",
        f"submissions/{me}/model/....//....//{target}",
        f"submissions/{me}/model/./../../{target}",
        f"submissions/{me}/model//../../{target}",
        f"submissions/{me}/model/config.json/../../../{target}",
        f"submissions/{me}/model/config.json%00",
        f"submissions/{me}/model/config.json%2500",
        f"submissions/{target}",
        f"/{store}/store/submissions/{target}",
        f"%2F{store}%2Fstore%2Fsubmissions%2F{target}",
        f"submissions/{me}/model/",
        f"submissions/{me}/model",
        f"submissions/{me}",
        f"submissions/{me}/model/.",
        f"submissions/{me}/model/manifest.json",
        f"jobs/{other.pk}/results.json",
        "%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "../../../../etc/passwd",
        "/etc/passwd",
    ]


def test_no_traversal_encoding_reads_another_jobs_artefact(mine, other, isolated):
    client = client_for(mine.token)
    assert client.get(f"{API}jobs/{mine.pk}/artefacts/{blob(mine, 'config.json')}").status_code == 200
    for name in traversals(mine, other, str(isolated).lstrip("/")):
        response = client.get(f"{API}jobs/{mine.pk}/artefacts/{name}")
        assert response.status_code in (400, 404), f"{name}: {response.status_code}"
    assert client.get(f"{API}jobs/{other.pk}/artefacts/{blob(other, 'README.md')}").status_code == 404


def test_an_unknown_job_and_another_jobs_id_answer_alike(mine, other):
    client = client_for(mine.token)
    for path in ("artefacts/submissions/1/model/config.json", "claim", "heartbeat", "complete"):
        foreign = client.post(f"{API}jobs/{other.pk}/{path}", {"delivery": "d"}, format="json")
        unknown = client.post(f"{API}jobs/{other.pk + 10_000}/{path}", {"delivery": "d"}, format="json")
        if path.startswith("artefacts"):
            foreign = client.get(f"{API}jobs/{other.pk}/{path}")
            unknown = client.get(f"{API}jobs/{other.pk + 10_000}/{path}")
        assert foreign.status_code == unknown.status_code == 404
        assert foreign.json()["detail"].replace(str(other.pk), "N") == unknown.json()["detail"].replace(
            str(other.pk + 10_000), "N"
        )


def test_the_internal_schema_needs_the_worker_secret(client, mine, settings):
    assert client.get(f"{API}schema/").status_code == 401
    assert client.get(f"{API}schema/", HTTP_AUTHORIZATION=f"Bearer {mine.token}").status_code == 403
    assert client.get(f"{API}schema/", HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}").status_code == 200


@contextmanager
def connection_kept_open() -> Iterator[None]:
    """Calls through WSGI, as schemathesis makes them, must not close the test transaction's connection.

    Django's own test client disconnects ``close_old_connections`` from the request signals around
    each request for the same reason (and connects it again after, so this wraps the fuzzing
    itself); on PostgreSQL the next query would otherwise find the connection closed.
    """
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.mark.slow  # fuzzing
def test_fuzzed_requests_with_a_job_token_never_crash_the_api_or_read_a_foreign_file(mine, other, settings):
    """Every operation of the schema, with random paths, ids, bodies and names, sent with a running job's token."""
    from biolm_site.wsgi import application

    secret = {"Authorization": f"Bearer {settings.BIOLM_WORKER_SECRET}"}
    with connection_kept_open():
        schema = schemathesis.openapi.from_wsgi(f"{API}schema/", application, headers=secret)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 8
    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        def fuzz(case):
            if "job_id" in (case.path_parameters or {}) and case.path_parameters["job_id"] % 2 == 0:
                case.path_parameters["job_id"] = mine.pk  # half the cases aim at the token's own job
            response = case.call(headers={"Authorization": f"Bearer {mine.token}"})
            assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code}"
            if case.path.endswith("/artefacts/{name}") and response.status_code == 200:
                assert case.path_parameters["job_id"] == mine.pk
                assert str(case.path_parameters["name"]).startswith(f"submissions/{mine.submission_id}/")

        with connection_kept_open():
            fuzz()
