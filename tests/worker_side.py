"""What a GPU worker does with a claimed job's inputs, done by a test through Django's test client."""

from __future__ import annotations

from pathlib import Path

from rest_framework.test import APIClient

API = "/internal/"


def worker_client(job) -> APIClient:
    """The internal API as the worker holding ``job``'s token calls it."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {job.token}")
    return client


def fetch(client: APIClient, entries: list[dict], folder: Path) -> Path:
    """What a worker's download does: every input file of the claim's manifest in place under ``folder``."""
    for entry in entries:
        response = client.get(entry["url"].removeprefix("http://testserver"))
        assert response.status_code == 200, entry["path"]
        target = folder / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(response.streaming_content))
    return folder


def deliver_results(client: APIClient, job, results: Path, delivery: str = "d1") -> None:
    """What a worker does when its engine exits 0: upload ``results.json``, then report the job complete."""
    upload = client.put(f"{API}jobs/{job.pk}/outputs/results.json", results.read_bytes(),
                        content_type="application/octet-stream", HTTP_X_BIOLM_DELIVERY=delivery,
                        HTTP_CONTENT_DISPOSITION='attachment; filename="results.json"')  # fmt: skip
    assert upload.status_code == 204, upload.content
    done = client.post(f"{API}jobs/{job.pk}/complete", {"delivery": delivery}, format="json")
    assert done.status_code == 200, done.content
