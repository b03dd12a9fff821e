"""Shared fixtures: the plugin registry synced once per session, the usual personas, the official files.

alice submits models, bob is another user, staff administers (healthchecks' habit).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from official_data import OfficialData

pytest_plugins = ["biolm.testing"]  # the plugin authors' kit: register_plugin and friends

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Load the built-in plugins (only: installed ones would make tests depend on the machine) once."""
    from biolm.plugins import collect_contributions, get_plugin_manager
    from registry.sync import sync_contributions

    with django_db_blocker.unblock():
        report = sync_contributions(collect_contributions(get_plugin_manager(load_entrypoints=False)))
    assert not report.problems, report.problems


@pytest.fixture(scope="session")
def official_data() -> OfficialData:
    """The official files (tests/official_data.py): ``official_data("HoC", "blurb", "train.tsv")`` is that
    path under BIOLM_DATA_DIR, and skips the test when it is absent. A test using it, even through a
    fixture, is marked ``official_data``."""
    return OfficialData()


@pytest.fixture(scope="session")
def tiny_bert_checkpoint(tmp_path_factory) -> Path:
    """A real tiny BERT checkpoint (config, safetensors weights, tokenizer) that passes the intake; built once.

    Tests read it and copy it, never change it.
    """
    from checkpoints import tiny_bert

    folder = tmp_path_factory.mktemp("checkpoints") / "tiny-bert"
    return tiny_bert(folder, ["aspirin inhibits cyclooxygenase in platelets"] * 5, 120)


@pytest.fixture
def artefact_store(settings, tmp_path) -> Path:
    """A platform of the test's own: ``BIOLM_VAR_DIR`` and the artefact store under ``tmp_path``."""
    settings.BIOLM_VAR_DIR = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "store"},
        },
    }
    return tmp_path


@pytest.fixture
def against_postgres(platform):
    """Fault tests run against PostgreSQL, as production does (CI's first pass); ``platform`` is the module's."""
    from bench.harness import POSTGRES_ONLY

    if not platform.postgres:
        pytest.skip(POSTGRES_ONLY)


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.org", "alice-password-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.org", "bob-password-123")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", "staff@example.org", "staff-password-123", is_staff=True)


# CI's second pass (`.ci/run`, on the embedded defaults) needs only the tests that can reach the
# database or the broker. A module that imports neither Django nor an app, uses no database
# fixture and starts no platform process tests Django-free code (import-linter proves that the
# engine, pretraining, readers and plugins never import Django), which the first pass already ran.
DATABASE_FIXTURES = {"db", "transactional_db", "client", "admin_client", "django_user_model", "settings", "live_server",
                     "alice", "bob", "staff"}  # fmt: skip
_PLATFORM_IMPORT = re.compile(
    r"^\s*(from|import)\s+(django|registry|leaderboard|jobs|submissions|accounts|biolm_site|bench\.harness)\b", re.M
)


def _reaches_the_platform(item) -> bool:
    if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    source = Path(str(item.fspath)).read_text(encoding="utf-8")
    return bool(_PLATFORM_IMPORT.search(source)) or "manage.py" in source or "call_command" in source


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marker must be there when it does
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "official_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.official_data)
    if os.environ.get("BIOLM_TESTS_BACKEND_ONLY") != "1":
        return
    kept = [item for item in items if _reaches_the_platform(item)]
    deselected = [item for item in items if not _reaches_the_platform(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
