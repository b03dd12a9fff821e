"""The S3-compatible artefact store (django-storages; MinIO in docker-compose): configured from the environment,
and workers handed pre-signed URLs instead of the web app's download endpoint. Pre-signing is computed locally,
so no S3 server is needed to check it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from django.core.files.storage import storages
from django.test import override_settings

from jobs import artefacts, completion
from jobs.models import Job

pytestmark = pytest.mark.backend  # start-up checks run manage.py in processes of their own
ROOT = Path(__file__).resolve().parents[1]
S3 = {
    "BACKEND": "jobs.s3_store.ArtefactS3Storage",
    "OPTIONS": {
        "bucket_name": "biolm-artefacts", "endpoint_url": "http://minio:9000", "access_key": "biolm",
        "secret_key": "biolm-minio-secret", "region_name": "us-east-1", "addressing_style": "path",
        "signature_version": "s3v4", "querystring_auth": True, "querystring_expire": 3600,
    },
}  # fmt: skip


def test_naming_a_bucket_makes_s3_the_artefact_store(tmp_path):
    environment = {**os.environ, "BIOLM_S3_BUCKET": "biolm-artefacts", "BIOLM_S3_ENDPOINT_URL": "http://minio:9000",
                   "BIOLM_VAR_DIR": str(tmp_path)}  # fmt: skip
    probe = "from django.conf import settings as s; print(s.BIOLM_ARTEFACT_STORAGE, s.STORAGES['artefacts']['BACKEND'])"
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", probe], cwd=ROOT, env=environment,
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "artefacts jobs.s3_store.ArtefactS3Storage"


def test_an_unknown_artefact_storage_stops_start_up_with_its_name(tmp_path):
    environment = {**os.environ, "BIOLM_ARTEFACT_STORAGE": "nowhere", "BIOLM_VAR_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=environment,
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode != 0 and "BIOLM_ARTEFACT_STORAGE='nowhere' names no storage" in result.stderr


@pytest.mark.django_db
def test_workers_get_pre_signed_urls_from_an_s3_store():
    with override_settings(STORAGES={**storages.backends, "artefacts": S3}, BIOLM_ARTEFACT_STORAGE="artefacts"):
        entries = [{"name": "submissions/7/model/config.json", "size": 10, "sha256": "0" * 64}]
        job = Job(pk=3, kind=Job.Kind.FINETUNE)
        url_for = completion.url_maker(job, "http://web:8000/internal/jobs/")
        (entry,) = artefacts.download_manifest(entries, "submissions/7/model", url_for)
        url = urlparse(entry["url"])
        assert (url.scheme, url.netloc, url.path) == (
            "http",
            "minio:9000",
            "/biolm-artefacts/submissions/7/model/config.json",
        )
        query = parse_qs(url.query)
        assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and query["X-Amz-Expires"] == ["3600"]
        assert "X-Amz-Signature" in query and entry["path"] == "config.json"
        assert artefacts.locate("submissions/7/model/config.json").startswith("http://minio:9000/")
