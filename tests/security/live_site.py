"""A real web server on a site of its own, for the tests that need the web process itself.

gunicorn as deployed (``--workers`` processes, ``--threads`` each), on a database of its own (a
fresh PostgreSQL database on the server ``DATABASE_URL`` names, else a SQLite file) and a
``BIOLM_VAR_DIR`` of its own, whose ``tmp/`` a test can check for what an upload left. The site's
users are signed in for the test: an API token and a session cookie each. No Celery worker and no
Redis: a submission's jobs are queued on the embedded filesystem broker under the site's var/.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.harness import free_port, stop_process_group, wait_until, web_is_healthy

ROOT = Path(__file__).resolve().parents[2]

USERS = """
import json
from django.contrib.auth import get_user_model
from django.test import Client
from accounts.tokens import create_token
signed_in = {}
for name in NAMES:
    user = get_user_model().objects.create_user(name, f"{name}@example.org", f"{name}-password-123")
    client = Client()
    client.force_login(user)
    signed_in[name] = {"token": create_token(user, "tests")[1], "session": client.cookies["sessionid"].value}
print(json.dumps(signed_in))
"""

# BLURB-mini's datasets (plugins/benchmarks/blurb_mini.py), which the tests here submit to.
BLURB_MINI_DATASETS = (
    "demo-ner",
    "demo-pico",
    "demo-relation",
    "demo-similarity",
    "demo-doc-classification",
    "demo-qa",
)


@dataclass(frozen=True)
class SignedIn:
    """A user of the site as a client holds it: an API token and a session (with a CSRF secret of the test's)."""

    token: str
    session: str
    csrf: str

    @property
    def api_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def cookies(self) -> dict[str, str]:
        return {"sessionid": self.session, "csrftoken": self.csrf}


class LiveSite:
    def __init__(self, directory: Path, environment: dict[str, str] | None = None, workers: int = 2,
                 threads: int = 1) -> None:  # fmt: skip
        self.directory = directory
        self.var = directory / "var"
        self.port = free_port()
        self.workers, self.threads = workers, threads
        self.process: subprocess.Popen | None = None
        self.users: dict[str, SignedIn] = {}
        configured = os.environ.get("DATABASE_URL", "")
        self.postgres = configured.startswith("postgres")
        if self.postgres:
            self.server_url = configured.rsplit("/", 1)[0]
            self.database = f"biolm_site_{uuid.uuid4().hex[:10]}"
            self.database_url = f"{self.server_url}/{self.database}"
        else:
            self.database_url = f"sqlite:///{directory / 'site.sqlite3'}"
        self.environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("BIOLM_", "CELERY_", "DATABASE_", "DJANGO_"))},
            "DATABASE_URL": self.database_url,
            "BIOLM_VAR_DIR": str(self.var),
            "BIOLM_LOAD_ENTRYPOINT_PLUGINS": "0",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)]),
            **(environment or {}),
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, users: tuple[str, ...] = ("alice",), plugins: bool = True) -> LiveSite:
        """Migrate, sync the built-in plugins (``plugins``), sign ``users`` in, and start gunicorn."""
        if self.postgres:
            self._admin_sql(f'CREATE DATABASE "{self.database}"')
        self.manage("migrate", "--noinput", "-v", "0")
        if plugins:  # and BLURB-mini's demo data, as make demo does: a submission names only imported data
            self.manage("sync_plugins")
            self.manage("import_dataset", *BLURB_MINI_DATASETS)
        made = json.loads(self.shell(USERS.replace("NAMES", repr(list(users)))).strip().splitlines()[-1])
        self.users = {name: SignedIn(**made[name], csrf=secrets.token_hex(16)) for name in users}
        log = (self.directory / "web.log").open("ab")
        command = [sys.executable, "-m", "gunicorn", "biolm_site.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
                   "--workers", str(self.workers), "--threads", str(self.threads), "--timeout", "120"]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=ROOT, env=self.environment, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)  # fmt: skip
        wait_until(self._healthy, 90, "gunicorn to answer /healthz")
        return self

    def stop(self) -> None:
        stop_process_group(self.process)
        if self.postgres:
            self._admin_sql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

    def log(self) -> str:
        return (self.directory / "web.log").read_text(errors="replace")

    def manage(self, *arguments: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=self.environment,
                                capture_output=True, text=True, timeout=600)  # fmt: skip
        assert result.returncode == 0, f"manage.py {' '.join(arguments)}:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def shell(self, code: str) -> str:
        return self.manage("shell", "--no-imports", "-c", code)

    def files_in_tmp(self) -> list[Path]:
        """Every file under the site's var/tmp: the upload folder and the intake's scratch space."""
        return sorted(p for p in (self.var / "tmp").rglob("*") if p.is_file())

    def _healthy(self) -> bool:
        return web_is_healthy(self.process, self.port, self.log)

    def _admin_sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(f"{self.server_url}/postgres", autocommit=True) as connection:
            connection.execute(statement)
