"""Settings come from typed environment variables and fail loudly on bad values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from biolm_site.env import env_bool, env_int, env_list

pytestmark = pytest.mark.backend  # settings (database, broker) start in processes of their own
ROOT = Path(__file__).resolve().parents[1]


def settings_in_subprocess(**env: str) -> subprocess.CompletedProcess:
    code = (
        "import django, json; from django.conf import settings; django.setup(); "
        "print(json.dumps([settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL, settings.DEBUG]))"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DEBUG")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **clean,
            "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
            "DJANGO_SETTINGS_MODULE": "biolm_site.settings",
            **env,
        },
        capture_output=True,
        text=True,
    )


def test_a_bad_boolean_names_the_variable(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", False)


def test_a_bad_integer_names_the_variable(monkeypatch):
    monkeypatch.setenv("DB_CONN_MAX_AGE", "sixty")
    with pytest.raises(ImproperlyConfigured, match="DB_CONN_MAX_AGE='sixty' is not an integer"):
        env_int("DB_CONN_MAX_AGE", 60)


def test_lists_are_comma_separated_and_trimmed(monkeypatch):
    monkeypatch.setenv("ALLOWED_HOSTS", " biolm.example.org, localhost ,,")
    assert env_list("ALLOWED_HOSTS", []) == ["biolm.example.org", "localhost"]


def test_defaults_are_embedded_sqlite_and_filesystem_broker_with_debug_off():
    result = settings_in_subprocess()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '["django.db.backends.sqlite3", "filesystem://", false]'


def test_postgres_urls_select_the_postgresql_backend_and_redis_the_broker():
    result = settings_in_subprocess(
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/biolm", CELERY_BROKER_URL="redis://127.0.0.1:6379/0"
    )
    assert result.stdout.strip() == '["django.db.backends.postgresql", "redis://127.0.0.1:6379/0", false]'


def test_an_unusable_database_url_stops_start_up_naming_the_variable():
    result = settings_in_subprocess(DATABASE_URL="nosuchdb://x")
    assert result.returncode != 0
    assert "DATABASE_URL='nosuchdb://x' cannot be used" in result.stderr


def test_a_bad_checkpoint_limit_stops_start_up_naming_the_variable():
    result = settings_in_subprocess(BIOLM_ARCHIVE_MAX_RATIO="lots")
    assert result.returncode != 0
    assert "BIOLM_ARCHIVE_MAX_RATIO='lots' is not a number" in result.stderr


def secret_in_subprocess(var_dir: Path, **env: str) -> subprocess.CompletedProcess:
    code = "import django; from django.conf import settings; django.setup(); print(settings.SECRET_KEY)"
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "BIOLM_GENERATE_SECRET_KEY")}
    base = {"PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}", "DJANGO_SETTINGS_MODULE": "biolm_site.settings"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**clean, **base, "BIOLM_VAR_DIR": str(var_dir), **env},
        capture_output=True, text=True,
    )  # fmt: skip


def test_without_a_secret_key_a_random_one_is_generated_once_and_kept_across_restarts(tmp_path):
    first, second = secret_in_subprocess(tmp_path), secret_in_subprocess(tmp_path)
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    assert key == second.stdout.strip() and len(key) >= 64
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    other = secret_in_subprocess(tmp_path / "elsewhere").stdout.strip()
    assert other and other != key  # each site its own key: nothing public


def test_a_blank_or_placeholder_secret_key_is_refused(tmp_path):
    for value, message in (
        ("   ", "SECRET_KEY is set but blank"),
        ("change-me-to-a-long-random-string", "placeholder"),
    ):
        result = secret_in_subprocess(tmp_path, SECRET_KEY=value)
        assert result.returncode != 0 and message in result.stderr


def test_production_without_a_secret_key_refuses_to_start(tmp_path):
    result = secret_in_subprocess(tmp_path, BIOLM_GENERATE_SECRET_KEY="0")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert not (tmp_path / "secret_key").exists()


def test_check_deploy_with_the_production_variables_reports_no_warnings(tmp_path):
    import secrets

    import yaml

    production = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["x-app"]["environment"]
    production = {k: str(v) for k, v in production.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY")}
    env = (
        clean
        | production
        | {
            "SECRET_KEY": secrets.token_urlsafe(64),
            "BIOLM_WORKER_SECRET": secrets.token_urlsafe(32),
            "ALLOWED_HOSTS": "biolm.example.org",
            "BIOLM_VAR_DIR": str(tmp_path),
        }
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_postgresql_goes_through_psycopg_3():
    import psycopg

    assert psycopg.__version__.startswith("3.")


def test_the_configured_celery_broker_accepts_connections():
    """CI points CELERY_BROKER_URL at the local Redis; the default is the embedded filesystem broker."""
    from kombu import Connection

    with Connection(settings.CELERY_BROKER_URL, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as conn:
        conn.ensure_connection(max_retries=2)
        queue = conn.SimpleQueue("biolm-test-broker")
        queue.put({"ping": 1})
        message = queue.get(timeout=5)
        message.ack()
        assert message.payload == {"ping": 1}
        queue.close()


def test_a_previews_overrides_are_checked_at_start_up_and_the_old_variable_is_still_read():
    refused = settings_in_subprocess(BIOLM_PREVIEW_OVERRIDES='{"epochs": 0}')
    assert refused.returncode != 0
    assert "BIOLM_PREVIEW_OVERRIDES: epochs must be a whole number from 1" in refused.stderr
    code = "import django; from django.conf import settings; django.setup(); print(settings.BIOLM_PREVIEW_OVERRIDES)"
    old = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env={
        **os.environ, "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}", "DJANGO_SETTINGS_MODULE": "biolm_site.settings",
        "BIOLM_QUICK_PROTOCOL": '{"epochs": 2}'})  # fmt: skip
    assert old.returncode == 0 and old.stdout.strip() == "{'epochs': 2}", old.stderr[-500:]
