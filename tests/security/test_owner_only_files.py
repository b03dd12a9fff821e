"""What the platform writes under var/ is its own user's only: files 0600, folders 0700 (umask 077).

Each test starts real platform processes in a fresh ``BIOLM_VAR_DIR``, from a parent whose umask is
the usual 022 (``Popen(umask=...)``), so only the processes' own entry points (biolm.owner_only) can make
what they create owner-only: the database, the logs, the artefact store (``var/media``), the upload and
scratch folder (``var/tmp``), the broker's folders and the beat schedule.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

import pytest
from embedded_demo import environment

from bench.harness import free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.backend]

ROOT = Path(__file__).resolve().parents[2]
USUAL_UMASK = 0o022  # what a login shell gives: group and others may read what is created


def platform_environment(folder: Path) -> dict[str, str]:
    """The embedded defaults with the database in its default place, ``var/biolm.sqlite3``, and the static
    files in theirs, ``var/staticfiles`` (not the test session's collection, which the environment names)."""
    env = environment(folder, PYTHONPATH=os.pathsep.join([str(ROOT / "platform"), str(ROOT)]))
    del env["DATABASE_URL"]
    env.pop("STATIC_ROOT", None)
    return env


def manage(env: dict[str, str], *arguments: str, status: int = 0) -> str:
    result = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600, umask=USUAL_UMASK)  # fmt: skip
    assert result.returncode == status, f"manage.py {' '.join(arguments)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def open_to_others(var: Path) -> list[str]:
    """Everything under ``var`` (itself included) with a group or other permission bit, as ``0o644 path``."""
    return [f"{oct(p.lstat().st_mode & 0o777)} {p}" for p in [var, *var.rglob("*")] if p.lstat().st_mode & 0o077]


def test_manage_py_creates_the_database_logs_media_and_tmp_owner_only(tmp_path, tiny_bert_checkpoint):
    env = platform_environment(tmp_path)
    var = tmp_path / "var"
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "sync_plugins")
    manage(env, "import_dataset", "demo-ner")  # a submission names only imported data
    # The demo opens its processes' logs, starts the site and a worker, then stops them all at its first error.
    refused = manage(env, "demo", "--no-serve", "--models", "demo-tiny", "--datasets", "no-such-dataset",
                     "--port", str(free_port()), status=1)  # fmt: skip
    assert "blurb-mini has no dataset 'no-such-dataset'" in refused
    archive = tmp_path / "tiny-bert.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tiny_bert_checkpoint, arcname="tiny-bert")
    manage(env, "submit", "--model", str(archive), "--benchmark", "blurb-mini", "--datasets", "demo-ner",
           "--owner", "demo")  # fmt: skip  # unpacked under var/tmp, stored in var/media
    for made in ("biolm.sqlite3", "secret_key", "demo/web.log", "demo/worker.log", "demo_password", "tmp"):
        assert (var / made).exists(), made
    assert [p for p in (var / "media").rglob("*") if p.is_file()], "the submission stored nothing in var/media"
    assert open_to_others(var) == []


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def beat_schedule(var: Path) -> list[Path]:
    return list(var.glob("celerybeat-schedule*"))


SERVICES = {
    # name: (command, what shows it started, what it must have created under var/)
    "web (gunicorn biolm_site.wsgi)": (
        ["-m", "gunicorn", "biolm_site.wsgi:application", "--bind", "127.0.0.1:{port}", "--workers", "1"],
        lambda var, port: healthy(f"http://127.0.0.1:{port}/healthz"),
        ("biolm.sqlite3", "secret_key", "tmp", "staticfiles"),
    ),
    "celery beat (celery -A biolm_site)": (
        ["-m", "celery", "-A", "biolm_site", "beat", "--schedule", "{var}/celerybeat-schedule"],
        lambda var, port: beat_schedule(var),
        ("secret_key", "tmp"),
    ),
    "GPU worker (python -m workers.runner)": (
        ["-m", "workers.runner", "--gpus", "0"],
        lambda var, port: (var / "celery-broker" / "control" / "gpu.exchange").exists(),
        ("celery-broker/control/gpu.exchange",),
    ),
}


@pytest.mark.parametrize("service", SERVICES)
def test_a_platform_service_creates_its_var_files_owner_only(tmp_path, service):
    arguments, started, expected = SERVICES[service]
    var, port = tmp_path / "var", free_port()
    env = platform_environment(tmp_path) | {"BIOLM_API_URL": "http://127.0.0.1:9/internal/"}  # no platform to call
    command = [sys.executable, *(a.format(port=port, var=var) for a in arguments)]
    log = (tmp_path / "service.log").open("wb")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, umask=USUAL_UMASK,
                               start_new_session=True)  # fmt: skip
    try:
        wait_until(lambda: process.poll() is not None or started(var, port), 120, f"{service} to start")
        assert process.poll() is None, (tmp_path / "service.log").read_text(errors="replace")[-3000:]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    for made in expected:
        assert (var / made).exists(), made
    assert open_to_others(var) == []
