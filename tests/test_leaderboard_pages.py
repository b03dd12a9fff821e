"""The server-rendered leaderboard pages a reader browses."""

from __future__ import annotations

import re

import pytest

from registry.models import LanguageModel

pytestmark = pytest.mark.django_db


def test_index_lists_every_builtin_benchmark_with_links(client):
    page = client.get("/").content.decode()
    for slug in ("blurb", "lewis2020", "bioformer", "gatortron", "clinical-longformer"):
        assert f'href="/leaderboard/{slug}/"' in page


def ranked_rows(page: str) -> list[tuple[str, str]]:
    """(rank as printed, e.g. "=3", model name) of each ranked row, top to bottom."""
    rank = r'<td class="rank"><span class="rank-value" title="[^"]*">(=?\d+)</span>.*?</td>\s*'
    name = r'<th scope="row" class="text">\s*<a href="[^"]+">([^<]+)</a>'
    return re.findall(rank + name, page, re.S)


def test_blurb_page_ranks_reported_models_by_their_published_blurb_score(client):
    page = client.get("/leaderboard/blurb/").content.decode()
    rows = ranked_rows(page)
    names = [name.strip() for _, name in rows]
    # Gu et al. 2021: PubMed+PMC with longer training (Table 8, 81.45) > PubMedBERT (Table 6, 81.10) > BioBERT (80.29).
    assert names[0] == "PubMedBERT (PubMed + PMC, longer training)"
    assert names.index("PubMedBERT") < names.index("BioBERT-Base v1.1") < names.index("BERT-Base (uncased)")
    assert [rank for rank, _ in rows] == [str(i) for i in range(1, len(rows) + 1)]
    assert "81.10" in page and "81.45" in page
    assert "Gu et al. 2021 (PubMedBERT), Table 8" in page
    assert page.count("not tested: no predictions") >= len(rows)  # reported rows are ranked by point score


def test_pages_are_accessible_tables_with_a_language_caption_and_header_scopes(client):
    page = client.get("/leaderboard/blurb/?datasets=1").content.decode()
    assert '<html lang="en">' in page
    assert '<caption id="board-caption">' in page
    assert page.count('scope="col"') >= 13 + 6 + 5  # datasets, task types, rank/model/origin/size/score
    assert 'scope="row"' in page
    assert 'href="#content"' in page


def test_unknown_benchmark_is_a_404(client):
    assert client.get("/leaderboard/no-such-benchmark/").status_code == 404


def test_private_models_are_shown_only_to_their_owner_and_staff(client, alice, bob, staff):
    from leaderboard.models import Result
    from leaderboard.score_aggregation import recompute_scores
    from registry.models import Benchmark, Dataset, Metric

    model = LanguageModel.objects.create(
        slug="alice-secret", name="Alice Secret BERT", owner=alice, visibility=LanguageModel.Visibility.PRIVATE
    )
    Result.objects.create(
        language_model=model, dataset=Dataset.objects.get(slug="biosses"), metric=Metric.objects.get(slug="pearson"),
        value=95.0,
    )  # fmt: skip
    recompute_scores(Benchmark.objects.get(slug="blurb"), [model])
    assert "Alice Secret BERT" not in client.get("/leaderboard/blurb/").content.decode()
    for user, visible in ((bob, False), (alice, True), (staff, True)):
        client.force_login(user)
        assert ("Alice Secret BERT" in client.get("/leaderboard/blurb/").content.decode()) is visible


def test_a_model_missing_datasets_is_listed_unranked(client, alice):
    from leaderboard.models import Result
    from leaderboard.score_aggregation import recompute_scores
    from registry.models import Benchmark, Dataset, Metric

    model = LanguageModel.objects.create(slug="alice-partial", name="Alice Partial BERT", owner=alice)
    Result.objects.create(
        language_model=model, dataset=Dataset.objects.get(slug="biosses"), metric=Metric.objects.get(slug="pearson"),
        value=99.0,
    )  # fmt: skip
    recompute_scores(Benchmark.objects.get(slug="blurb"), [model])
    page = client.get("/leaderboard/blurb/").content.decode()
    row = re.search(r'<tr class="unranked" data-model="alice-partial">.*?</tr>', page, re.S).group(0)
    assert ">unranked</span>" in row and "missing 12 datasets" in row
    assert "missing: bc5-chem, bc5-disease" in row
    assert page.index('data-model="alice-partial"') > page.rindex('<span class="rank-value"')  # after all ranked


def test_admin_lists_every_model_for_staff(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.org", "root-password-123")
    client.force_login(admin)
    for path in (
        "registry/architecture", "registry/pretrainingrecipe", "registry/dataset", "registry/benchmark",
        "registry/languagemodel", "registry/metric", "registry/tasktype", "submissions/submission",
        "jobs/job", "jobs/run", "leaderboard/result", "leaderboard/score",
    ):  # fmt: skip
        response = client.get(f"/admin/{path}/?q=bert")
        assert response.status_code == 200, path


def test_the_index_counts_each_public_model_once_not_once_per_dataset(client):
    page = client.get("/").content.decode()
    blurb = re.search(r'href="/leaderboard/blurb/">[^<]+</a>.*?</tr>', page, re.S).group(0)
    counts = [int(n) for n in re.findall(r"<td[^>]*>(\d+)</td>", blurb)]
    public = LanguageModel.objects.public().filter(scores__benchmark__slug="blurb").distinct().count()
    assert counts == [13, public] and public == 15  # 13 datasets, 15 published rows (the old count was 15 x 13)


def test_the_index_counts_datasets_as_the_benchmarks_names_do_not_scored_columns(client):
    from registry.models import Benchmark

    bioformer = Benchmark.objects.get(slug="bioformer")
    page = client.get("/").content.decode()
    row = re.search(r'href="/leaderboard/bioformer/">([^<]+)</a>.*?</tr>', page, re.S)
    datasets = int(re.findall(r"<td[^>]*>(\d+)</td>", row.group(0))[0])
    assert row.group(1) == "Bioformer evaluation (15 datasets)" and datasets == 15
    assert bioformer.entries.count() == 20  # BioASQ factoid's four metrics are four columns of one dataset
    assert "a dataset scored under several metrics counts once" in page


def test_a_model_with_a_primary_score_but_a_missing_dataset_is_listed_after_every_ranked_model(client, alice):
    from leaderboard.models import Result
    from leaderboard.score_aggregation import recompute_scores
    from leaderboard.tables import leaderboard_for
    from registry.models import Benchmark

    gatortron = Benchmark.objects.get(slug="gatortron")
    model = LanguageModel.objects.create(slug="alice-almost", name="Alice Almost BERT", owner=alice)
    for entry in gatortron.entries.exclude(key="i2b2-2010-precision"):  # the F1 headline needs no precision
        Result.objects.create(
            language_model=model, dataset=entry.dataset, metric=entry.metric, variant=entry.variant, value=99.0
        )
    recompute_scores(gatortron, [model])
    rows = leaderboard_for(gatortron).rows
    [almost] = [row for row in rows if row.model == model]
    assert almost.rank is None and almost.score == pytest.approx(99.0)  # the best score, yet unranked
    ranks = [row.rank for row in rows]
    ranked = [rank for rank in ranks if rank is not None]
    assert ranked and ranks[: len(ranked)] == list(range(1, len(ranked) + 1))  # every ranked row first
    page = client.get("/leaderboard/gatortron/").content.decode()
    assert page.index("Alice Almost BERT") > page.index(rows[len(ranked) - 1].model.name)


def test_a_deactivated_dataset_keeps_its_page_and_dataset_pages_show_no_server_paths(client):
    from registry.models import Dataset, DatasetImport

    dataset = Dataset.objects.get(slug="demo-qa")
    DatasetImport.objects.create(
        dataset=dataset, fingerprint="0123456789abcdef", source_path="/srv/secret/biolm-data/demo-qa",
        stored_path="/srv/secret/var/datasets/demo-qa", split_sizes={"train": 1}, paper_unit_sizes={"train": 1},
    )  # fmt: skip
    page = client.get("/datasets/demo-qa/").content.decode()
    assert "0123456789abcdef" in page and "/srv/secret" not in page
    Dataset.objects.filter(slug="demo-qa").update(active=False)  # its plugin uninstalled: the page stays
    page = client.get("/datasets/demo-qa/").content.decode()
    assert "is no longer installed on this site" in page and "/srv/secret" not in page


def test_a_benchmark_page_names_the_protocol_its_reproduced_rows_follow(client):
    assert "<code>lewis2020</code> protocol" in client.get("/leaderboard/lewis2020/").content.decode()
    assert "<code>blurb</code> protocol" in client.get("/leaderboard/blurb/").content.decode()


def test_a_pretrained_model_shows_how_much_of_each_test_set_its_corpus_contains(client, alice):
    from leaderboard.models import Result
    from leaderboard.score_aggregation import recompute_scores
    from leaderboard.tables import leaderboard_for
    from registry.models import Benchmark, Dataset, Metric

    shares = {"biosses": 0.45, "hoc": 0.0081, "ddi": 0.0, "mednli": 0.5}
    report = {"contamination": {"datasets": {slug: {"share": share} for slug, share in shares.items()}}}
    model = LanguageModel.objects.create(slug="tiny-pre", name="Tiny pretrained", pretraining=report)
    Result.objects.create(language_model=model, dataset=Dataset.objects.get(slug="biosses"),
                          metric=Metric.objects.get(slug="pearson"), value=50.0)  # fmt: skip
    blurb = Benchmark.objects.get(slug="blurb")
    recompute_scores(blurb, [model])
    page = client.get("/leaderboard/blurb/").content.decode()
    assert ">test-set overlap up to 45.0% (biosses)</div>" in page
    assert "biosses: 45.00%; ddi: 0.00%; hoc: 0.81%" in page  # mednli is not a BLURB dataset
    (row,) = [r for r in leaderboard_for(blurb).rows if r.model == model]
    assert row.test_overlap == {"biosses": 0.45, "hoc": 0.0081, "ddi": 0.0}
    assert leaderboard_for(blurb).as_json()["rows"][-1]["test_overlap"] == row.test_overlap
    # Published rows carry no report: nothing is claimed about them.
    assert all(not r.overlap_summary for r in leaderboard_for(blurb).rows if r.model != model)
