"""The merge of per-paper rows into one model per identity (registry 0013 to 0015), on a database as before.

Before, each benchmark's published table made a model of each of its rows: BioBERT-Base v1.1 was
``blurb--biobert``, ``lewis2020--biobert`` and ``bioformer--biobert-base-v1.1``. The migration makes them
one model at ``dmis-lab/biobert-v1.1`` holding every result and score (resamples follow their score), keeps
a row a model of its own where it is one (BlueBERT), links BioBERT-Large v1.1 as a version, and leaves a
snapshot taken before untouched; the old addresses redirect to the merged model.
"""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("session_rows_restored")]
BEFORE = [("registry", "0012_language_model_base_model"), ("leaderboard", "0004_preview_results")]
AFTER = [("registry", "0014_merge_reported_rows")]
OLD_BOARD = {"rows": [{"model": "blurb--biobert", "url": "/models/papers/blurb--biobert/", "score": 80.29}]}


def migrate(targets) -> object:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _per_paper_rows(apps) -> dict[str, object]:
    """Today's rows: BioBERT in three tables, BioBERT-Large in GatorTron's, BlueBERT in BLURB's alone."""
    LanguageModel, Benchmark = apps.get_model("registry", "LanguageModel"), apps.get_model("registry", "Benchmark")
    Result, Score = apps.get_model("leaderboard", "Result"), apps.get_model("leaderboard", "Score")
    ScoreResamples, Dataset = apps.get_model("leaderboard", "ScoreResamples"), apps.get_model("registry", "Dataset")
    LanguageModel.objects.filter(origin="reported").delete()  # what a sync after this release made
    chem = Dataset.objects.get(slug="bc5-chem")
    rows = {}
    for bench, row, value in (("blurb", "biobert", 92.85), ("lewis2020", "biobert", 93.67),
                              ("bioformer", "biobert-base-v1.1", 91.90), ("gatortron", "biobert", None),
                              ("blurb", "bluebert", 90.0)):  # fmt: skip
        benchmark = Benchmark.objects.get(slug=bench)
        slug = f"{bench}--{row}"
        model = LanguageModel.objects.create(
            slug=slug, namespace="papers", address_name=slug, name=f"old {slug}", origin="reported",
            reported_in=benchmark, source_paper=f"source of {slug}",
        )  # fmt: skip
        if value is not None:
            Result.objects.create(language_model=model, dataset=chem, metric=chem.metric, scope=bench, value=value,
                                  source=f"source of {slug}")  # fmt: skip
        score = Score.objects.create(language_model=model, benchmark=benchmark, score=value, aggregation_version="1")
        ScoreResamples.objects.create(score=score, values=b"\x00" * 8)
        rows[slug] = model
    apps.get_model("leaderboard", "Snapshot").objects.create(
        benchmark=Benchmark.objects.get(slug="blurb"), date=datetime.date(2026, 1, 2), aggregation_version="1",
        board=OLD_BOARD,
    )  # fmt: skip
    return rows


def synced() -> None:
    """The built-in plugins' rows, as the session set them up: a transactional test before this one in the
    same process flushed the database at its end, benchmarks and datasets included."""
    from biolm.plugins import collect_contributions, get_plugin_manager
    from registry.sync import sync_contributions

    report = sync_contributions(collect_contributions(get_plugin_manager(load_entrypoints=False)))
    assert not report.problems, report.problems


def test_per_paper_rows_merge_into_one_model_per_identity_and_old_addresses_redirect(client):
    synced()
    try:
        _per_paper_rows(migrate(BEFORE))
        apps = migrate(AFTER)
        LanguageModel = apps.get_model("registry", "LanguageModel")
        ModelAlias = apps.get_model("registry", "ModelAlias")
        biobert = LanguageModel.objects.get(namespace="dmis-lab", address_name="biobert-v1.1")
        assert (biobert.slug, biobert.name) == ("dmis-lab--biobert-v1.1", "BioBERT-Base v1.1")
        results = apps.get_model("leaderboard", "Result").objects.filter(language_model=biobert)
        assert sorted(results.values_list("scope", "value", "source")) == [
            ("bioformer", 91.90, "source of bioformer--biobert-base-v1.1"),
            ("blurb", 92.85, "source of blurb--biobert"),
            ("lewis2020", 93.67, "source of lewis2020--biobert"),
        ]
        scores = apps.get_model("leaderboard", "Score").objects.filter(language_model=biobert)
        assert sorted(scores.values_list("benchmark__slug", flat=True)) == ["bioformer", "blurb", "lewis2020"]
        assert apps.get_model("leaderboard", "ScoreResamples").objects.filter(score__in=scores).count() == 3
        assert sorted(ModelAlias.objects.filter(language_model=biobert).values_list("former_slug", "name")) == [
            ("bioformer--biobert-base-v1.1", "old bioformer--biobert-base-v1.1"),
            ("blurb--biobert", "old blurb--biobert"),
            ("lewis2020--biobert", "old lewis2020--biobert"),
        ]
        large = LanguageModel.objects.get(namespace="dmis-lab", address_name="biobert-large-cased-v1.1")
        assert large.version_of_id == biobert.pk
        bluebert = LanguageModel.objects.get(slug="blurb--bluebert")  # a model of its own keeps its address
        assert (bluebert.namespace, bluebert.address_name) == ("papers", "blurb--bluebert")
        assert not LanguageModel.objects.filter(slug__in=["blurb--biobert", "lewis2020--biobert"]).exists()
        snapshot = apps.get_model("leaderboard", "Snapshot").objects.get(date=datetime.date(2026, 1, 2))
        assert snapshot.board == OLD_BOARD  # its contents as taken; its link redirects
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
        response = client.get(OLD_BOARD["rows"][0]["url"])
        assert (response.status_code, response["Location"]) == (301, "/models/dmis-lab/biobert-v1.1/")
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
