"""Syncing plugin contributions into the database: idempotent, complete, and rescoring on change."""

from __future__ import annotations

import dataclasses
import re

import pytest
from django.apps import apps
from django.db import models

from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import SummarySpec
from leaderboard.models import Result, Score
from leaderboard.score_aggregation import recompute_stale_scores
from registry.models import Benchmark, Dataset, LanguageModel
from registry.sync import sync_contributions

pytestmark = pytest.mark.django_db


def builtin_contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


def test_a_second_sync_changes_nothing():
    report = sync_contributions(builtin_contributions())
    assert not report.changed, (report.created, report.updated, report.deactivated, report.rescored)


def test_every_published_model_row_is_loaded_as_a_reported_model_with_its_results():
    contributions = builtin_contributions()
    for bench in contributions.benchmarks.values():
        for published in bench.published:
            model = LanguageModel.objects.get(aliases__benchmark__slug=bench.slug, aliases__row=published.slug)
            assert model.origin == LanguageModel.Origin.REPORTED
            assert model.address == published.identity_in(bench.slug).address
            assert model.source_paper
            assert model.results.filter(scope=bench.slug).count() == len(published.scores)


def test_reported_blurb_scores_match_the_papers_blurb_score_column():
    contributions = builtin_contributions()
    blurb = contributions.benchmarks["blurb"]
    for published in blurb.published:
        score = Score.objects.get(
            language_model__aliases__row=published.slug,
            language_model__aliases__benchmark__slug="blurb",
            benchmark__slug="blurb",
        )
        assert round(score.score, 2) == pytest.approx(published.reported_summaries["blurb-score"], abs=0.005)


def test_a_changed_aggregation_with_a_new_version_recomputes_stored_scores():
    contributions = builtin_contributions()
    blurb = contributions.benchmarks["blurb"]
    plain_mean = dataclasses.replace(
        blurb.aggregation,
        version="2-plain-mean",
        primary="plain-mean",
        summaries=(*blurb.aggregation.summaries, SummarySpec("plain-mean", "Mean over datasets", "mean")),
    )
    contributions.benchmarks["blurb"] = dataclasses.replace(blurb, aggregation=plain_mean)
    report = sync_contributions(contributions)
    assert report.rescored >= len(blurb.published)
    pubmedbert = Score.objects.get(
        language_model__aliases__row="pubmedbert",
        language_model__aliases__benchmark__slug="blurb",
        benchmark__slug="blurb",
    )
    values = pubmedbert.entries.values()
    assert pubmedbert.aggregation_version == "2-plain-mean"
    assert pubmedbert.score == pytest.approx(sum(values) / len(values))


def test_stale_scores_are_found_and_recomputed():
    Benchmark.objects.filter(slug="blurb").update(aggregation_version="99")
    assert Score.objects.stale().filter(benchmark__slug="blurb").exists()
    assert recompute_stale_scores() > 0
    assert not Score.objects.stale().exists()


def test_a_corrected_transcription_updates_the_result_and_the_score():
    contributions = builtin_contributions()
    blurb = contributions.benchmarks["blurb"]
    first = blurb.published[0]
    fixed = dataclasses.replace(first, scores={**first.scores, "biosses": first.scores["biosses"] + 10})
    contributions.benchmarks["blurb"] = dataclasses.replace(blurb, published=(fixed, *blurb.published[1:]))
    before = Score.objects.get(
        language_model__aliases__row=first.slug, language_model__aliases__benchmark__slug="blurb"
    ).score
    sync_contributions(contributions)
    result = Result.objects.get(
        language_model__aliases__row=first.slug,
        language_model__aliases__benchmark__slug="blurb",
        dataset__slug="biosses",
    )
    assert result.value == pytest.approx(first.scores["biosses"] + 10)
    after = Score.objects.get(
        language_model__aliases__row=first.slug, language_model__aliases__benchmark__slug="blurb"
    ).score
    assert after == pytest.approx(before + 10 / 6)  # BIOSSES alone is one of six task types


def test_a_resync_writes_a_reworded_source_over_the_stored_published_rows():
    """A database synced from an older wording of the published sources takes the new one."""
    older = "an older wording of the source"
    Benchmark.objects.filter(slug="lewis2020").update(published_source=older)
    LanguageModel.objects.filter(aliases__benchmark__slug="lewis2020").update(source_paper=older)
    stored = Result.objects.filter(scope="lewis2020").update(source=older)
    report = sync_contributions(builtin_contributions())
    lewis = builtin_contributions().benchmarks["lewis2020"]
    assert Benchmark.objects.get(slug="lewis2020").published_source == lewis.published_source
    for published in lewis.published:
        expected = (published.source or lewis.published_source or lewis.source_paper)[:300]
        model = LanguageModel.objects.get(aliases__benchmark__slug="lewis2020", aliases__row=published.slug)
        assert model.aliases.get(benchmark__slug="lewis2020").source == expected  # its own table, merged or not
        assert model.source_paper  # the card's paper: the first table that lists it
        assert set(model.results.filter(scope="lewis2020").values_list("source", flat=True)) == {expected}
    assert report.updated["results"] == stored
    assert not Result.objects.filter(source=older).exists()


def test_no_synced_text_cites_a_paper_by_its_file_number():
    """Sources, descriptions and citations on the pages cite papers by authors and year."""
    file_number = re.compile(r"\bse" + r"eds?[ \t-]?0" + r"0\d", re.IGNORECASE)
    found = []
    for model in (*apps.get_app_config("registry").get_models(), *apps.get_app_config("leaderboard").get_models()):
        texts = [f.name for f in model._meta.fields if isinstance(f, models.CharField | models.TextField)]
        for row in model.objects.values("pk", *texts):
            for name in texts:
                if file_number.search(row[name] or ""):
                    found.append(f"{model.__name__} {row['pk']} {name}: {row[name]}")
    assert not found, "\n".join(found)


def test_a_contribution_that_disappears_is_deactivated_not_deleted():
    contributions = builtin_contributions()
    del contributions.benchmarks["gatortron"]
    report = sync_contributions(contributions)
    assert report.deactivated["benchmarks"] == 1
    assert Benchmark.objects.get(slug="gatortron").active is False
    assert Dataset.objects.get(slug="mednli").active is True


def test_plugin_problems_are_carried_into_the_report():
    pm = get_plugin_manager(default_plugins=("plugins.missing_module",), load_entrypoints=False)
    contributions = builtin_contributions()
    contributions.problems.extend(collect_contributions(pm).problems)
    report = sync_contributions(contributions)
    assert any("plugins.missing_module" in p for p in report.problems)
