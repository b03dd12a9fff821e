"""The health checks docker-compose runs: the web app's ``/healthz``, the CPU worker's row, the GPU heartbeats."""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import time

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError
from django.utils import timezone

from jobs import dispatch
from jobs.models import Worker
from workers.runner import health

pytestmark = pytest.mark.django_db


def test_healthz_answers_ok_without_redirecting_even_behind_an_https_redirect(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert client.get("/").status_code == 301  # the public pages are redirected to https
    assert client.post("/internal/workers/heartbeat").status_code == 401  # the workers' API is not redirected


def test_healthz_answers_503_when_the_database_does_not(client, monkeypatch):
    from biolm_site import health as view

    class Broken:
        def __enter__(self):
            raise DatabaseError("connection refused")

        def __exit__(self, *_):
            return False

    monkeypatch.setattr(view.connection, "cursor", lambda: Broken())
    response = client.get("/healthz")
    assert response.status_code == 503 and "connection refused" in response.json()["database"]


def test_the_cpu_workers_health_follows_its_ticks():
    name = f"cpu@{socket.gethostname()}"
    with pytest.raises(CommandError, match="has not heartbeated yet"):
        call_command("worker_health")
    dispatch.record_worker(name, ["cpu"])
    call_command("worker_health")
    Worker.objects.filter(name=name).update(last_heartbeat=timezone.now() - dt.timedelta(minutes=5))
    with pytest.raises(CommandError, match=r"last heartbeated 3\d\d s ago"):
        call_command("worker_health")


def test_the_gpu_hosts_health_needs_a_recent_heartbeat_from_each_of_its_workers(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BIOLM_WORKER_DIR", str(tmp_path))
    first, second = (health.health_file(tmp_path, f"gpu{i}@{socket.gethostname()}") for i in range(2))
    assert health.main(["--gpus", "2"]) == 1
    assert "no heartbeat yet" in capsys.readouterr().err
    first.parent.mkdir(parents=True)
    first.touch()
    second.touch()
    assert health.main(["--gpus", "2"]) == 0
    old = time.time() - 300
    os.utime(second, (old, old))
    assert health.main(["--gpus", "2", "--max-age", "60"]) == 1
    stale = rf"gpu1@{re.escape(socket.gethostname())} \(last heartbeat 30[01] s ago\)"  # 301: a check started late
    assert re.search(stale, capsys.readouterr().err)


def test_a_host_whose_gpus_are_shared_needs_a_heartbeat_from_every_worker_on_each(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BIOLM_WORKER_DIR", str(tmp_path))
    monkeypatch.setenv("BIOLM_WORKERS_PER_GPU", "3")  # as docker-compose sets it for the worker-gpu service
    files = [health.health_file(tmp_path, f"gpu{i}@{socket.gethostname()}") for i in range(6)]
    files[0].parent.mkdir(parents=True)
    for path in files[:5]:
        path.touch()
    assert health.main(["--gpus", "2"]) == 1
    assert f"gpu5@{socket.gethostname()} (no heartbeat yet)" in capsys.readouterr().err
    files[5].touch()
    assert health.main(["--gpus", "2"]) == 0
    assert "alive: 6 worker(s)" in capsys.readouterr().out
    assert health.main(["--gpus", "2", "--per-gpu", "1"]) == 0  # the flag wins over the variable
    assert "alive: 2 worker(s)" in capsys.readouterr().out
