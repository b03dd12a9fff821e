"""A GPU host reaches the broker over the network: Redis with a password and TLS (``rediss://``), through
biolm's own Redis transport, and a server whose certificate does not verify is refused.

Each test starts a redis-server of its own, speaking only TLS, with a certificate signed by a CA the test
makes (openssl), and connects both Celery apps' settings (the platform's and the GPU worker's) to it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kombu import Connection, Exchange, Queue

from bench.harness import ROOT, Redis
from biolm import broker
from biolm.redis_transport import Transport

PASSWORD = "a-broker-password"


def authority(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA's certificate and key."""
    folder.mkdir(parents=True, exist_ok=True)
    key, certificate = folder / f"{name}.key", folder / f"{name}.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                    "-keyout", key, "-out", certificate], check=True, capture_output=True)  # fmt: skip
    return certificate, key


def server_certificate(folder: Path, ca: tuple[Path, Path]) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by ``ca``, and its key."""
    key, request, certificate = folder / "redis.key", folder / "redis.csr", folder / "redis.crt"
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key,
                    "-out", request], check=True, capture_output=True)  # fmt: skip
    extensions = folder / "san.cnf"
    extensions.write_text("subjectAltName = IP:127.0.0.1\n")
    signing = [
        "openssl",
        "x509",
        "-req",
        "-in",
        request,
        "-CA",
        ca[0],
        "-CAkey",
        ca[1],
        "-CAcreateserial",
        "-days",
        "2",
    ]
    subprocess.run([*signing, "-extfile", extensions, "-out", certificate], check=True, capture_output=True)
    return certificate, key


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls-redis")
    ca = authority(folder, "biolm-test-ca")
    certificate, key = server_certificate(folder, ca)
    redis = Redis(folder / "data", password=PASSWORD, tls=(certificate, key, ca[0]))
    redis.start()
    yield redis, ca[0], authority(folder, "someone-else")[0]
    redis.stop()


def round_trip(url: str, ca_file: str) -> str:
    """A message published and read back through the broker settings biolm gives ``url``."""
    queue = Queue("tls-check", Exchange("tls-check"), routing_key="tls-check")
    with Connection(url, transport=broker.transport(url), ssl=broker.use_ssl(url, ca_file),
                    connect_timeout=5) as connection:  # fmt: skip
        assert isinstance(connection.transport, Transport)  # biolm's: a worker outlives a Redis restart over TLS too
        connection.ensure_connection(max_retries=1)
        with connection.Producer() as producer:
            producer.publish({"job": 7}, exchange=queue.exchange, routing_key="tls-check", declare=[queue])
        with connection.SimpleQueue(queue) as simple:
            message = simple.get(timeout=5)
            message.ack()
            return message.payload


def test_both_celery_apps_reach_a_password_and_tls_redis_through_biolm_transport(tls_redis):
    redis, ca_file, _ = tls_redis
    assert redis.url.startswith(f"rediss://:{PASSWORD}@")
    assert round_trip(redis.url, str(ca_file)) == {"job": 7}
    environment = os.environ | {"CELERY_BROKER_URL": redis.url, "BIOLM_BROKER_CA_FILE": str(ca_file),
                                "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)])}  # fmt: skip
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'biolm_site.settings'); django.setup()\n"
        "from biolm_site.celery import app as site\nfrom workers.runner.app import app as worker\n"
        "for app in (site, worker):\n"
        "    with app.connection_for_write() as c:\n"
        "        c.ensure_connection(max_retries=1)\n"
        "        ca = c.ssl['ssl_ca_certs'] == os.environ['BIOLM_BROKER_CA_FILE']\n"
        "        print(type(c.transport).__module__, c.ssl['ssl_cert_reqs'].name, ca)"
    )  # fmt: skip
    printed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert printed.returncode == 0, printed.stderr[-3000:]
    assert printed.stdout.split("\n")[:2] == [f"{Transport.__module__} CERT_REQUIRED True"] * 2


def test_a_broker_whose_certificate_another_ca_signed_is_refused(tls_redis):
    redis, _, other_ca = tls_redis
    with pytest.raises(Exception, match="certificate verify failed"):
        round_trip(redis.url, str(other_ca))


def test_a_wrong_broker_password_is_refused(tls_redis):
    redis, ca_file, _ = tls_redis
    with pytest.raises(Exception, match="invalid username-password pair"):
        round_trip(redis.url.replace(PASSWORD, "not-the-password"), str(ca_file))


def test_only_rediss_urls_ask_for_a_verified_certificate():
    assert broker.use_ssl("redis://127.0.0.1:6379/0") is None
    assert broker.use_ssl("filesystem://") is None
    options = broker.use_ssl("rediss://broker.example:6380/0")
    assert options["ssl_cert_reqs"].name == "CERT_REQUIRED" and "ssl_ca_certs" not in options  # the system's CAs
    assert broker.use_ssl("rediss://broker.example:6380/0", "/etc/biolm/ca.pem")["ssl_ca_certs"] == "/etc/biolm/ca.pem"
