"""Sizes for every model (issue 30, deliverable 2): the reported models' parameter counts, each with where
it is stated, reach the leaderboard's size filter, its score-vs-size chart and the model page.

The counts come from the benchmark plugins' published rows (``parameters`` and ``parameters_source``);
tests/test_published_*.py check them against the papers, these check what a reader sees of them.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from biolm.plugins import collect_contributions, get_plugin_manager
from registry.models import LanguageModel
from registry.sync import sync_contributions

pytestmark = pytest.mark.django_db

BASE_LOW, BASE_HIGH = 50_000_000, 200_000_000  # the "50M to 200M" bucket of LanguageModel.SIZE_BUCKETS


def shown_models(page: str) -> set[str]:
    """The slugs of the models a leaderboard page lists (one ``data-model`` per row)."""
    return set(re.findall(r'data-model="([^"]+)"', page))


def reported(name: str, benchmark: str = "") -> LanguageModel:
    """The reported model a paper (``benchmark``'s, or any) calls ``name`` (one model, many sources: its own
    name may differ)."""
    where = {"aliases__benchmark__slug": benchmark} if benchmark else {}
    models = LanguageModel.objects.filter(origin=LanguageModel.Origin.REPORTED, aliases__name=name, **where)
    return models.distinct().order_by("pk").first()


def test_the_size_filter_50m_to_200m_finds_the_bert_base_sized_models_on_blurb(client):
    everyone = shown_models(client.get("/leaderboard/blurb/").content.decode())
    page = client.get("/leaderboard/blurb/?size=base").content.decode()
    found = shown_models(page)
    sizes = dict(LanguageModel.objects.filter(slug__in=everyone).values_list("slug", "parameter_count"))
    assert found == {slug for slug, count in sizes.items() if count and BASE_LOW <= count < BASE_HIGH}
    assert len(everyone) == 15 and len(found) == 14  # all but RoBERTa, whose size Gu et al. 2021 never say
    assert "Showing 14 of 15 models" in page
    assert reported("RoBERTa", "blurb").slug in everyone - found
    for name in ("PubMedBERT", "BioBERT", "BERT (uncased)", "SciBERT (cased)", "ClinicalBERT", "BlueBERT"):
        assert reported(name, "blurb").slug in found, name


def test_every_benchmark_with_sized_rows_draws_its_score_against_size_chart(client):
    for slug in ("blurb", "bioformer", "gatortron", "lewis2020"):
        page = client.get(f"/leaderboard/{slug}/").content.decode()
        assert 'id="pareto-size"' in page, slug


def test_pubmedberts_page_shows_its_size_with_the_paper_that_states_it(client):
    pubmedbert = reported("PubMedBERT")
    page = client.get(pubmedbert.get_absolute_url()).content.decode()
    card = page[page.index("<dt>Parameters</dt>") : page.index("<dt>Vocabulary</dt>")]
    assert "110,000,000 (110M, size 50M to 200M)" in card
    assert "Source: <cite>Fang et al. 2023, Table 1 (PubMedBERT, 110M)</cite>" in card


def test_a_model_whose_size_no_source_states_shows_not_stated(client):
    bigbird = reported("Clinical-BigBird")  # Li et al. 2022 give no count, nor does its card
    assert bigbird.parameter_count is None and bigbird.parameter_count_source == ""
    page = client.get(bigbird.get_absolute_url()).content.decode()
    card = page[page.index("<dt>Parameters</dt>") : page.index("<dt>Vocabulary</dt>")]
    assert "not stated" in card and "Source" not in card


def without_sizes(contributions):
    """``contributions`` as the plugins were before sizes were recorded: every published row unsized."""
    unsized = {
        slug: dataclasses.replace(
            spec,
            published=tuple(dataclasses.replace(m, parameters=None, parameters_source="") for m in spec.published),
        )
        for slug, spec in contributions.benchmarks.items()
    }
    return dataclasses.replace(contributions, benchmarks=unsized)


def test_a_re_sync_gives_existing_rows_their_sizes_and_sources_without_duplicating_them():
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    sync_contributions(without_sizes(contributions))
    before = dict(LanguageModel.objects.values_list("pk", "slug"))
    assert reported("PubMedBERT").parameter_count is None
    assert not LanguageModel.objects.filter(origin="reported", parameter_count__isnull=False).exists()

    report = sync_contributions(contributions)
    assert not report.problems, report.problems
    assert dict(LanguageModel.objects.values_list("pk", "slug")) == before  # the same rows, none added
    pubmedbert = reported("PubMedBERT")
    assert (pubmedbert.parameter_count, pubmedbert.parameter_count_source) == (
        110_000_000,
        "Fang et al. 2023, Table 1 (PubMedBERT, 110M)",
    )
    gatortron = reported("GatorTron-large")
    assert (gatortron.parameter_count, gatortron.parameter_count_source) == (8_900_000_000, "Yang et al. 2022, Table 3")
    sized = LanguageModel.objects.filter(origin="reported", parameter_count__isnull=False).count()
    assert report.updated.get("language_models", 0) >= sized > 30  # every sized model, updated in place
    assert not sync_contributions(contributions).updated.get("language_models")  # and a third sync changes nothing


def test_the_apis_model_card_gives_the_size_and_its_source(client):
    pubmedbert = reported("PubMedBERT")
    namespace, name = pubmedbert.address_parts
    card = client.get(f"/api/v1/models/{namespace}/{name}").json()
    assert card["parameters"] == 110_000_000
    assert card["parameters_source"] == "Fang et al. 2023, Table 1 (PubMedBERT, 110M)"


def test_a_leaderboard_size_cell_names_its_source_on_hover(client):
    page = client.get("/leaderboard/bioformer/").content.decode()
    assert '<td class="params" title="Fang et al. 2023, Table 1">43M</td>' in page
