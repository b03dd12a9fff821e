"""Shared fixtures: the plugin registry synced once per session, and the usual personas.

alice submits models, bob is another user, staff administers (healthchecks' habit).
"""

from __future__ import annotations

import os

import pytest

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


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.org", "alice-password-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.org", "bob-password-123")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", "staff@example.org", "staff-password-123", is_staff=True)
