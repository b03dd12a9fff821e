"""Commands started together (two web replicas, two operators) both succeed, with nothing duplicated.

Real processes on a database of their own: a new PostgreSQL database when the suite runs on
PostgreSQL (CI's first pass), else a SQLite file. Each test starts the commands at the same time
with ``subprocess.Popen`` and checks both exit 0 and the rows they leave.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.backend]


@pytest.fixture
def site(tmp_path):
    """Environment variables of a fresh, migrated site: its own database and var/ directory."""
    url = os.environ.get("DATABASE_URL", "")
    database = None
    if url.startswith("postgres"):
        import psycopg

        server = url.rsplit("/", 1)[0]
        database = f"biolm_concurrency_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{database}"')
        url = f"{server}/{database}"
    else:
        url = f"sqlite:///{tmp_path / 'site.sqlite3'}"
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env |= {"DATABASE_URL": url, "BIOLM_VAR_DIR": str(tmp_path / "var"), "BIOLM_LOAD_ENTRYPOINT_PLUGINS": "0"}
    env |= {"HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}"}
    migrate = manage(env, "migrate", "--noinput")
    assert migrate.returncode == 0, migrate.stderr
    yield env
    if database is not None:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)


def together(env: dict, *args: str) -> list[subprocess.CompletedProcess]:
    """Run the command twice at the same moment; return both outcomes."""
    processes = [
        subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    outcomes = []
    for process in processes:
        out, err = process.communicate(timeout=600)
        outcomes.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return outcomes


def count(env: dict, expression: str) -> str:
    result = manage(env, "shell", "--no-imports", "-c", f"print({expression})")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_two_sync_plugins_at_once_both_succeed_with_no_duplicates(site):
    first, second = together(site, "sync_plugins")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert "Traceback" not in first.stderr + second.stderr
    results = count(site, "__import__('leaderboard.models').models.Result.objects.count()")
    datasets = count(site, "__import__('registry.models').models.Dataset.objects.count()")
    again = manage(site, "sync_plugins")
    assert "already up to date" in again.stdout  # the two together left exactly what one sync leaves
    assert count(site, "__import__('leaderboard.models').models.Result.objects.count()") == results
    assert int(datasets) == 40 and int(results) > 700


def test_two_imports_of_one_dataset_at_once_both_exit_0_and_leave_one_row(site, tmp_path):
    assert manage(site, "sync_plugins").returncode == 0
    first, second = together(site, "import_dataset", "demo-ner")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    rows = count(
        site, "__import__('registry.models').models.DatasetImport.objects.filter(dataset__slug='demo-ner').count()"
    )
    assert rows == "1"
    stored = tmp_path / "var" / "datasets" / "demo-ner"
    assert len([p for p in stored.iterdir() if not p.name.startswith(".")]) == 1
    assert not [p for p in stored.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_staging_left_by_a_killed_import_is_removed_by_the_next_import(site, tmp_path):
    assert manage(site, "sync_plugins").returncode == 0
    stored = tmp_path / "var" / "datasets" / "demo-ner"
    stored.mkdir(parents=True)
    code = (
        "import sys, time; from pathlib import Path; from registry.staging import new_staging_directory; "
        f"print(new_staging_directory(Path({str(stored)!r}), 'abc123'), flush=True); time.sleep(600)"
    )
    importer = subprocess.Popen([sys.executable, "-c", code], env=site, stdout=subprocess.PIPE, text=True)
    killed = Path(importer.stdout.readline().strip())
    assert killed.is_dir()
    importer.send_signal(signal.SIGKILL)
    importer.wait()
    from registry.staging import new_staging_directory

    live = new_staging_directory(stored, "def456")  # this test process is alive: its staging must stay
    time.sleep(0.1)
    result = manage(site, "import_dataset", "demo-ner")
    assert result.returncode == 0, result.stderr
    assert not killed.exists()
    assert live.exists()
