"""One model, many sources (issue 30): every paper's numbers for one checkpoint belong to one model.

Each published row names its model identity (``biolm.model_identity.ModelIdentity``); ``sync_plugins`` upserts one
model per identity, so BioBERT-Base v1.1, which Gu et al. 2021, Lewis et al. 2020 and Fang et al. 2023 all
compare, is one page with each paper's numbers attributed to its table, while the 345M BioBERT of Yang et
al. 2022 (BioBERT-Large v1.1) and the unversioned one of Li et al. 2022 stay models of their own, linked
as versions. The old per-paper addresses redirect to the one model.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from biolm.model_identity import ModelIdentity
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.spec_checks import SpecError
from leaderboard.compare_data import comparison
from leaderboard.models import Result, Score
from registry.models import Benchmark, LanguageModel, ModelAlias
from registry.sync import sync_contributions

pytestmark = pytest.mark.django_db

BIOBERT = "/models/dmis-lab/biobert-v1.1/"


def builtin_contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


@pytest.fixture
def biobert() -> LanguageModel:
    return LanguageModel.objects.get(namespace="dmis-lab", address_name="biobert-v1.1")


def test_biobert_base_v1_1_is_one_model_holding_three_papers_numbers(biobert):
    assert biobert.name == "BioBERT-Base v1.1"
    assert biobert.checkpoint == "dmis-lab/biobert-v1.1"
    assert set(biobert.results.values_list("scope", flat=True)) == {"blurb", "lewis2020", "bioformer"}
    assert set(biobert.scores.values_list("benchmark__slug", flat=True)) == {"blurb", "lewis2020", "bioformer"}
    names = dict(biobert.aliases.values_list("benchmark__slug", "name"))
    assert names == {"blurb": "BioBERT", "lewis2020": "BioBERT", "bioformer": "BioBERT-Base-v1.1"}
    for result in biobert.results.all():  # each number keeps its paper and table
        assert result.source == biobert.aliases.get(benchmark__slug=result.scope).source
    assert not LanguageModel.objects.filter(slug__in=["blurb--biobert", "lewis2020--biobert"]).exists()


def test_checkpoints_the_papers_tell_apart_stay_models_linked_as_versions(biobert):
    large = LanguageModel.objects.get(namespace="dmis-lab", address_name="biobert-large-cased-v1.1")
    unversioned = LanguageModel.objects.get(namespace="papers", address_name="clinical-longformer--biobert")
    assert large.version_of == biobert and unversioned.version_of == biobert
    assert (biobert.parameter_count, large.parameter_count) == (110_000_000, 345_000_000)
    assert biobert.parameter_count_source.startswith("Fang et al. 2023, Table 1")
    assert large.parameter_count_source.startswith("Yang et al. 2022, Methods")
    assert set(large.results.values_list("scope", flat=True)) == {"gatortron"}


def test_a_second_sync_recreates_no_per_paper_row():
    models = set(LanguageModel.objects.values_list("pk", "slug"))
    report = sync_contributions(builtin_contributions())
    assert not report.changed, (report.created, report.updated, report.deactivated)
    assert set(LanguageModel.objects.values_list("pk", "slug")) == models
    assert not LanguageModel.objects.filter(slug__regex=r"^(blurb|lewis2020|bioformer)--biobert").exists()


def test_every_published_row_has_one_alias_on_its_identity():
    for bench in builtin_contributions().benchmarks.values():
        for row in bench.published:
            alias = ModelAlias.objects.select_related("language_model").get(benchmark__slug=bench.slug, row=row.slug)
            assert alias.language_model.address == row.identity_in(bench.slug).address
            assert alias.former_slug == f"{bench.slug}--{row.slug}"


def test_a_row_dropped_from_one_table_leaves_the_models_other_papers_numbers(biobert):
    contributions = builtin_contributions()
    lewis = contributions.benchmarks["lewis2020"]
    contributions.benchmarks["lewis2020"] = dataclasses.replace(
        lewis, published=tuple(row for row in lewis.published if row.slug != "biobert")
    )
    sync_contributions(contributions)
    assert set(biobert.results.values_list("scope", flat=True)) == {"blurb", "bioformer"}
    assert not Score.objects.filter(language_model=biobert, benchmark__slug="lewis2020").exists()
    sync_contributions(builtin_contributions())  # back: the numbers return to the same model
    assert biobert.results.filter(scope="lewis2020").exists()


def test_a_table_naming_one_identity_twice_or_an_address_without_owner_is_refused():
    blurb = builtin_contributions().benchmarks["blurb"]
    twice = tuple(dataclasses.replace(row, identity=blurb.published[3].identity) for row in blurb.published[3:5])
    with pytest.raises(SpecError, match="one table lists a model once"):
        dataclasses.replace(blurb, published=twice).validate()
    with pytest.raises(SpecError, match="must be owner/name"):
        ModelIdentity("biobert", "BioBERT").check("row")


def test_biobert_page_shows_every_benchmark_and_each_papers_value_with_its_source(client, biobert):
    page = client.get(BIOBERT).content.decode()
    assert "reported in 3 papers" in page
    for alias in biobert.aliases.select_related("benchmark"):
        assert alias.source in page and f'href="{alias.benchmark.get_absolute_url()}"' in page
    assert "BioBERT-Base-v1.1" in page  # Fang et al. 2023's name for it
    shared = page[page.index('id="shared-datasets"') :]
    chem = Result.objects.filter(language_model=biobert, dataset__slug="bc5-chem").order_by("scope")
    assert chem.count() == 3  # Gu et al. 2021, Lewis et al. 2020 and Fang et al. 2023 all report BC5-chem
    for result in chem:
        assert f"{result.value:.2f}" in shared and result.source in shared
    versions = page[page.index('id="versions"') :]
    assert 'href="/models/dmis-lab/biobert-large-cased-v1.1/"' in versions
    assert 'href="/models/papers/clinical-longformer--biobert/"' in versions


def test_each_version_links_back(client):
    page = client.get("/models/dmis-lab/biobert-large-cased-v1.1/").content.decode()
    versions = page[page.index('id="versions"') :]
    assert f'href="{BIOBERT}"' in versions and "this model is a version of it" in versions


def test_the_dataset_page_lists_biobert_once_with_each_papers_value(client, biobert):
    page = client.get("/datasets/bc5-chem/").content.decode()
    assert page.count(f'href="{BIOBERT}"') == 1
    group = re.search(rf'<th scope="rowgroup"[^>]*rowspan="3"[^>]*><a href="{re.escape(BIOBERT)}"', page)
    assert group, "one row group spanning the three papers' values"
    for result in Result.objects.filter(language_model=biobert, dataset__slug="bc5-chem"):
        assert f"{result.value:.2f}" in page and result.source in page


def test_each_leaderboard_shows_its_own_papers_number_and_table(client, biobert):
    for alias in biobert.aliases.select_related("benchmark"):
        board = client.get(f"/api/v1/benchmarks/{alias.benchmark.slug}/leaderboard").json()
        row = next(row for row in board["rows"] if row["model"] == biobert.slug)
        assert row["source"] == alias.source
        assert row["url"] == BIOBERT
        stored = Score.objects.get(language_model=biobert, benchmark=alias.benchmark).score
        assert row["score"] == pytest.approx(stored, abs=0.051)  # rounded to the benchmark's precision
        csv = client.get(f"/leaderboard/{alias.benchmark.slug}/export.csv").content.decode()
        assert "BioBERT-Base v1.1" in csv


def test_the_api_gives_the_merged_model_with_every_papers_results(client, biobert):
    detail = client.get("/api/v1/models/dmis-lab/biobert-v1.1").json()
    assert detail["slug"] == biobert.slug
    assert {result["scope"] for result in detail["results"]} == {"blurb", "lewis2020", "bioformer"}
    assert {(source["benchmark"], source["name"]) for source in detail["sources"]} == {
        ("blurb", "BioBERT"), ("lewis2020", "BioBERT"), ("bioformer", "BioBERT-Base-v1.1"),
    }  # fmt: skip
    assert detail["version_of"] is None
    large = client.get("/api/v1/models/dmis-lab/biobert-large-cased-v1.1").json()
    assert large["version_of"] == "dmis-lab/biobert-v1.1"


@pytest.mark.parametrize(
    "old",
    ["/models/papers/blurb--biobert/", "/models/papers/bioformer--biobert-base-v1.1/", "/models/lewis2020--biobert/"],
)
def test_a_per_paper_address_redirects_to_the_one_model(client, old):
    response = client.get(old)
    assert response.status_code == 301
    assert response["Location"] == BIOBERT


def test_an_old_api_address_redirects_to_the_one_model(client):
    for old in ("/api/v1/models/papers/blurb--biobert", "/api/v1/models/gatortron--biobert"):
        response = client.get(old)
        assert response.status_code == 301, old
    assert client.get("/api/v1/models/papers/blurb--biobert")["Location"] == "/api/v1/models/dmis-lab/biobert-v1.1"


def test_a_comparison_link_copied_with_a_per_paper_key_compares_the_one_model(client, biobert):
    blurb = Benchmark.objects.get(slug="blurb")
    compared = comparison(blurb, LanguageModel.objects.public(), ["blurb--biobert", "blurb--bluebert"])
    assert [model.slug for model in compared.models] == [biobert.slug, "blurb--bluebert"]
    assert not compared.not_found
    page = client.get("/compare/?benchmark=blurb&models=blurb--biobert,blurb--bluebert").content.decode()
    assert f'href="{BIOBERT}"' in page and "Not found" not in page


def test_the_admin_lists_each_papers_row_of_a_model(admin_client, biobert):
    found = admin_client.get("/admin/registry/languagemodel/?q=BioBERT-Base-v1.1").content.decode()
    assert f"/admin/registry/languagemodel/{biobert.pk}/change/" in found  # found by a paper's name for it
    page = admin_client.get(f"/admin/registry/languagemodel/{biobert.pk}/change/").content.decode()
    for alias in biobert.aliases.all():
        assert alias.former_slug in page
