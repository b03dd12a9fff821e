"""The model addresses' data migration (registry 0010): every existing model gets ``owner/name``, its owner's
username for a submitted model and ``papers`` for a reported one (or one registered without an owner), named
by its slug, so its old URL has an address to redirect to; rolled back, the addresses go and the rows stay."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("session_rows_restored")]
BEFORE = [("registry", "0009_protocols_and_plugins")]
AFTER = [("registry", "0010_model_addresses")]


def migrate(targets) -> object:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_existing_models_get_their_owners_or_the_papers_address_and_keep_their_slug():
    try:
        apps = migrate(BEFORE)
        User, LanguageModel = apps.get_model("auth", "User"), apps.get_model("registry", "LanguageModel")
        alice, bob = User.objects.create(username="alice"), User.objects.create(username="bob")
        LanguageModel.objects.create(slug="old-minilm", name="MiniLM", owner=alice, visibility="private")
        LanguageModel.objects.create(slug="old-minilm-2", name="MiniLM", owner=bob)  # named after alice's, before
        LanguageModel.objects.create(slug="old--biobert", name="BioBERT", origin="reported")
        apps = migrate(AFTER)
        mine = apps.get_model("registry", "LanguageModel").objects.filter(slug__startswith="old-")
        assert sorted(mine.values_list("slug", "namespace", "address_name")) == [
            ("old--biobert", "papers", "old--biobert"),
            ("old-minilm", "alice", "old-minilm"),
            ("old-minilm-2", "bob", "old-minilm-2"),
        ]
        apps = migrate(BEFORE)  # a rollback of the release keeps every model
        assert apps.get_model("registry", "LanguageModel").objects.filter(slug__startswith="old-").count() == 3
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
