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


def test_production_without_a_secret_key_refuses_to_start():
    result = settings_in_subprocess(BIOLM_ALLOW_DEV_SECRET="0", SECRET_KEY="")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


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
