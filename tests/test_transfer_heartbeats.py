"""A worker keeps its job while a transfer blocks its loop (``workers.runner.transfer_heartbeats``).

A large checkpoint's upload outlasts the platform's silence limit; without heartbeats from a
thread, the job was reaped mid-upload and given to another worker. A real HTTP server stands in
for the platform's API here, and takes its time over each upload.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from workers.runner import execution
from workers.runner.execution import JobRun

UPLOAD_S = 1.5


class SlowPlatform(BaseHTTPRequestHandler):
    """Answers heartbeats at once and records them; reads an upload, or accepts the outputs, in ``UPLOAD_S``."""

    heartbeats: list[tuple[float, dict]] = []
    uploads: list[tuple[float, float, str]] = []

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        started = time.monotonic()
        if self.path.endswith("/heartbeat"):
            self.heartbeats.append((started, payload))
        elif self.path.endswith("/complete"):
            time.sleep(UPLOAD_S)
            self.uploads.append((started, time.monotonic(), self.path))
        self._answer({"verdict": "continue"})

    def do_PUT(self) -> None:
        started = time.monotonic()
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(UPLOAD_S)
        self.uploads.append((started, time.monotonic(), self.path))
        self._answer({})

    def _answer(self, document: dict) -> None:
        body = json.dumps(document).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def platform_api():
    SlowPlatform.heartbeats, SlowPlatform.uploads = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowPlatform)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/internal/"
    server.shutdown()


def run_with_checkpoint(platform_api: str, tmp_path, monkeypatch, size: int) -> tuple[JobRun, Path]:
    """A job's run heartbeating every 0.25 s, and an engine output folder holding a ``size``-byte checkpoint."""
    monkeypatch.setattr(execution, "HEARTBEAT_S", 0.25)
    run = JobRun(7, "token", api_url=platform_api, worker="gpu0@test", work_dir=tmp_path / "work")
    run.directory.mkdir(parents=True)
    out = tmp_path / "out"
    (out / "checkpoint").mkdir(parents=True)
    (out / "checkpoint" / "state.bin").write_bytes(b"\0" * size)
    return run, out


def test_a_checkpoint_upload_longer_than_a_heartbeat_interval_keeps_the_job_heartbeating(
    platform_api, tmp_path, monkeypatch
):
    run, out = run_with_checkpoint(platform_api, tmp_path, monkeypatch, 1_000_000)
    run._upload_new_checkpoint(out)

    ((started, finished, path),) = SlowPlatform.uploads
    assert path == "/internal/jobs/7/outputs/checkpoint.tar"
    during = [payload for at, payload in SlowPlatform.heartbeats if started <= at <= finished]
    assert len(during) >= 3, SlowPlatform.heartbeats  # every 0.25 s over 1.5 s, with room for a slow machine
    assert all(payload["delivery"] == run.delivery for payload in during)
    beats = len(SlowPlatform.heartbeats)
    time.sleep(0.6)
    assert len(SlowPlatform.heartbeats) == beats, "the thread heartbeats after the upload ended"


def test_an_unchanged_checkpoint_is_not_uploaded_again(platform_api, tmp_path, monkeypatch):
    run, out = run_with_checkpoint(platform_api, tmp_path, monkeypatch, 1000)
    run._upload_new_checkpoint(out)
    run._upload_new_checkpoint(out)
    assert len(SlowPlatform.uploads) == 1


def test_the_job_keeps_heartbeating_while_the_platform_accepts_its_outputs(platform_api, tmp_path, monkeypatch):
    run, _ = run_with_checkpoint(platform_api, tmp_path, monkeypatch, 1000)
    assert run._complete().status == "succeeded"

    ((started, finished, path),) = SlowPlatform.uploads
    assert path == "/internal/jobs/7/complete"
    during = [payload for at, payload in SlowPlatform.heartbeats if started <= at <= finished]
    assert len(during) >= 3, SlowPlatform.heartbeats
    assert all(payload["delivery"] == run.delivery for payload in during)
