"""What a GPU worker does with a claimed job's inputs, done by a test through Django's test client."""

from __future__ import annotations

from pathlib import Path

from rest_framework.test import APIClient


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
