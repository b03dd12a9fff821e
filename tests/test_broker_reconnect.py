"""A worker outlives a Redis restart that happens while it runs a task (``biolm.redis_transport``).

In CI the platform's CPU worker stopped for good when Redis restarted while it ran a score job:
kombu gave back, then acknowledged, the job's message through the connection it had closed, and the
AttributeError this raised stopped the worker. These tests stop and restart a Redis of their own
around a task that a real prefork worker holds, and let the task end once the worker has reconnected.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from celery import Celery

from bench.harness import ROOT, Redis, stop_process_group, wait_until
from biolm import broker
from biolm.redis_transport import Transport

TESTS = Path(__file__).resolve().parent


def python_path(*folders: Path) -> str:
    return os.pathsep.join(str(folder) for folder in folders)


def test_redis_urls_get_biolm_transport_and_other_brokers_keep_their_own():
    assert broker.transport("redis://127.0.0.1:6379/0") == broker.REDIS_TRANSPORT
    assert broker.transport("rediss://cache.example:6380/0") == broker.REDIS_TRANSPORT  # TLS: broker.use_ssl
    assert broker.transport("filesystem://") is None
    assert broker.transport("amqp://guest@localhost//") is None


def test_both_celery_apps_connect_to_redis_through_biolm_transport():
    environment = os.environ | {
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
        "PYTHONPATH": python_path(ROOT / "platform", ROOT),
    }
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'biolm_site.settings'); django.setup()\n"
        "from biolm_site.celery import app as site\nfrom workers.runner.app import app as worker\n"
        "for app in (site, worker):\n    print(app.connection_for_read().get_transport_cls().__module__)"
    )
    printed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True,
                             text=True, check=True).stdout.split()  # fmt: skip
    assert printed == [Transport.__module__] * 2


@pytest.mark.slow
@pytest.mark.faults
def test_a_prefork_worker_keeps_consuming_after_redis_restarts_under_a_running_task(tmp_path, monkeypatch):
    # Celery prefers CELERY_BROKER_URL, when set (as in CI's PostgreSQL + Redis passes), to the URL an app is
    # given: both the worker and this process would reach the shared Redis instead of the one stopped here.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    redis = Redis(tmp_path / "redis")
    redis.start()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_")} | {
        "BROKER_RESTART_URL": redis.url,
        "PYTHONPATH": python_path(TESTS, ROOT / "platform", ROOT),
    }
    log_path = tmp_path / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "broker_restart_app", "worker", "-c", "2", "-l", "info",
               "-n", "restart@test", "--without-gossip", "--without-mingle", "--without-heartbeat"]  # fmt: skip
    with log_path.open("ab") as log:
        worker = subprocess.Popen(command, cwd=tmp_path, env=environment, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)  # fmt: skip

    def log_text() -> str:
        return log_path.read_text(errors="replace")

    try:
        wait_until(lambda: "ready." in log_text(), 60, "the worker to be ready")
        sender = Celery("sender", broker=redis.url)
        sender.send_task("hold_then_write", args=[str(tmp_path), "first"])
        wait_until((tmp_path / "first.started").exists, 60, "the first task to start")
        connections_before = log_text().count("Connected to ")
        redis.stop()
        wait_until(lambda: "Connection to broker lost" in log_text(), 30, "the worker to notice Redis is gone")
        redis.start()
        wait_until(lambda: log_text().count("Connected to ") > connections_before or worker.poll() is not None,
                   60, "the worker to reconnect")  # fmt: skip
        assert worker.poll() is None, f"the worker stopped when Redis went away:\n{log_text()[-3000:]}"
        (tmp_path / "release").touch()  # the first task ends now, on a channel of the closed connection
        wait_until((tmp_path / "first").exists, 30, "the first task to finish")
        wait_until(lambda: "so it is not acknowledged" in log_text(), 30, "the unacknowledged message to be logged")

        sender.send_task("hold_then_write", args=[str(tmp_path), "second"])
        wait_until((tmp_path / "second").exists, 60, "the worker to run a task sent after the restart")
        assert worker.poll() is None, log_text()[-3000:]
        assert "Unrecoverable error" not in log_text()
    finally:
        stop_process_group(worker)
        redis.stop()
