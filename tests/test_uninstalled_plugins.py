"""A benchmark or dataset whose plugin was uninstalled keeps its page and its results, under a notice saying so.

The acme plugin's rows are written as ``manage.py sync_plugins`` writes them (a metric, a task
type, a dataset, a benchmark scoring it), models are evaluated on it, and then the real sync runs
without acme, as it does after ``pip uninstall``: it marks acme's rows inactive. The pages that a
plain 404 used to answer now say what happened, show the kept results, offer nothing to run, and
keep a private model as invisible as everywhere else.
"""

from __future__ import annotations

import re

import pytest

from biolm.plugins import collect_contributions, get_plugin_manager
from leaderboard.models import Result, Score
from leaderboard.score_aggregation import recompute_scores
from registry.models import Benchmark, BenchmarkEntry, Dataset, LanguageModel, Metric, TaskType
from registry.sync import sync_contributions

pytestmark = pytest.mark.django_db

NOTICE = (
    "The plugin that provided this {what} (acme) is no longer installed on this site; its results are kept as they "
    "were last computed. An operator reinstalls it and runs manage.py sync_plugins."
)


@pytest.fixture
def acme(alice, bob) -> Benchmark:
    """acme's benchmark on its one dataset, synced while acme was installed, with bob's public and alice's private
    model evaluated on it."""
    metric = Metric.objects.create(slug="acme-accuracy", name="Acme accuracy", plugin="acme")
    task = TaskType.objects.create(slug="acme-polarity", name="Polarity", plugin="acme")
    dataset = Dataset.objects.create(
        slug="acme-findings", name="Acme findings", plugin="acme", task_type=task, metric=metric, domain="biomedical",
        splits=[{"name": "test", "size": 8, "unit": "examples"}], access=Dataset.Access.RESTRICTED,
    )  # fmt: skip
    aggregation = {"version": "1", "primary": "acme-score", "summaries": [
        {"slug": "acme-score", "name": "Acme score", "method": "mean"}
    ]}  # fmt: skip
    bench = Benchmark.objects.create(
        slug="acme-bench", name="Acme benchmark", plugin="acme", aggregation=aggregation, aggregation_version="1",
        description="Invented findings, scored by accuracy.",
    )  # fmt: skip
    BenchmarkEntry.objects.create(benchmark=bench, key="acme-findings", dataset=dataset, metric=metric)
    public = LanguageModel.objects.create(slug="bob-public", name="Bob Public BERT", owner=bob)
    private = LanguageModel.objects.create(
        slug="alice-secret", name="Alice Secret BERT", owner=alice, visibility=LanguageModel.Visibility.PRIVATE
    )
    for model, value in ((public, 71.25), (private, 93.5)):
        Result.objects.create(language_model=model, dataset=dataset, metric=metric, value=value, std=0.5, n_seeds=5)
    recompute_scores(bench)
    return bench


def uninstall() -> None:
    """What ``pip uninstall biolm-acme && manage.py sync_plugins`` does to the database."""
    sync_contributions(collect_contributions(get_plugin_manager(load_entrypoints=False)))


def text_of(html: str) -> str:
    """The words of ``html``, tags dropped and white space collapsed."""
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def text(response) -> str:
    return text_of(response.content.decode())


def test_sync_without_the_plugin_marks_its_rows_inactive_and_keeps_their_results(acme):
    uninstall()
    assert not Benchmark.objects.get(slug="acme-bench").active
    assert not Dataset.objects.get(slug="acme-findings").active
    assert Score.objects.filter(benchmark=acme).count() == 2


def test_an_uninstalled_benchmarks_page_says_so_and_shows_its_kept_results(client, acme):
    uninstall()
    response = client.get("/leaderboard/acme-bench/")
    assert response.status_code == 200
    page = text(response)
    assert NOTICE.format(what="benchmark") in page
    assert "Bob Public BERT" in page and "71.25" in page
    html = response.content.decode()
    assert "python -m workers.engine finetune" not in html  # nothing offers to run it
    assert "/api/v1/benchmarks/acme-bench/" not in html  # the API serves installed benchmarks only
    assert 'href="/leaderboard/acme-bench/export.csv' in html  # the kept results still download


def test_an_uninstalled_datasets_page_says_so_and_shows_its_kept_results(client, acme):
    uninstall()
    response = client.get("/datasets/acme-findings/")
    assert response.status_code == 200
    page = text(response)
    assert NOTICE.format(what="dataset") in page
    assert "Bob Public BERT" in page and "71.25" in page
    assert "import_dataset" not in page  # its reader is gone with the plugin
    assert 'href="/leaderboard/acme-bench/"' in response.content.decode()  # its benchmark's page still answers


def test_a_private_model_stays_invisible_on_an_uninstalled_plugins_pages(client, acme, alice, bob, staff):
    uninstall()
    pages = ("/leaderboard/acme-bench/", "/datasets/acme-findings/", "/leaderboard/acme-bench/export.csv")
    for user, visible in ((None, False), (bob, False), (alice, True), (staff, True)):
        client.logout()
        if user is not None:
            client.force_login(user)
        for page in pages:
            assert ("Alice Secret BERT" in client.get(page).content.decode()) is visible, (user, page)


def test_the_index_lists_uninstalled_benchmarks_apart(client, acme):
    assert "No longer installed" not in client.get("/").content.decode()
    uninstall()
    page = client.get("/").content.decode()
    installed, _, apart = page.partition('<h2 id="uninstalled-heading">No longer installed</h2>')
    assert 'href="/leaderboard/acme-bench/"' in apart and 'href="/leaderboard/acme-bench/"' not in installed
    assert "1 model with scores, from the plugin acme" in text_of(apart)  # alice's private model is not counted


def test_a_page_cached_while_installed_is_not_served_after_the_uninstall(client, acme):
    assert NOTICE.format(what="benchmark") not in text(client.get("/leaderboard/acme-bench/"))
    uninstall()  # a bulk update: the benchmark's updated_at, part of the cache's version, stays as it was
    assert NOTICE.format(what="benchmark") in text(client.get("/leaderboard/acme-bench/"))


def test_comparing_models_on_an_uninstalled_benchmark_reads_its_kept_scores(client, acme):
    uninstall()
    page = text(client.get("/compare/?benchmark=acme-bench&models=bob-public,alice-secret"))
    assert "Compare models on Acme benchmark" in page
    assert "Bob Public BERT" in page and "Not found: alice-secret" in page


def test_a_benchmark_or_dataset_that_never_existed_is_still_a_404(client):
    assert client.get("/leaderboard/no-such-benchmark/").status_code == 404
    assert client.get("/datasets/no-such-dataset/").status_code == 404
