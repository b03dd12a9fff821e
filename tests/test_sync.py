"""Syncing plugin contributions into the database: idempotent, complete, and rescoring on change."""

from __future__ import annotations

import dataclasses

import pytest

from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import SummarySpec
from leaderboard.models import Result, Score
from leaderboard.scoring import recompute_stale_scores
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
            model = LanguageModel.objects.get(slug=f"{bench.slug}--{published.slug}")
            assert model.origin == LanguageModel.Origin.REPORTED
            assert model.reported_in.slug == bench.slug
            assert model.source_paper
            assert model.results.filter(scope=bench.slug).count() == len(published.scores)


def test_reported_blurb_scores_match_the_papers_blurb_score_column():
    contributions = builtin_contributions()
    blurb = contributions.benchmarks["blurb"]
    for published in blurb.published:
        score = Score.objects.get(language_model__slug=f"blurb--{published.slug}", benchmark__slug="blurb")
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
    pubmedbert = Score.objects.get(language_model__slug="blurb--pubmedbert", benchmark__slug="blurb")
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
    before = Score.objects.get(language_model__slug=f"blurb--{first.slug}").score
    sync_contributions(contributions)
    result = Result.objects.get(language_model__slug=f"blurb--{first.slug}", dataset__slug="biosses")
    assert result.value == pytest.approx(first.scores["biosses"] + 10)
    after = Score.objects.get(language_model__slug=f"blurb--{first.slug}").score
    assert after == pytest.approx(before + 10 / 6)  # BIOSSES alone is one of six task types


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
