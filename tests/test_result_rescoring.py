"""Scores follow results: any saved, edited or deleted Result rescores its model when the transaction commits."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse

from leaderboard import score_aggregation
from leaderboard.models import Result, Score
from registry.models import Benchmark, LanguageModel

pytestmark = pytest.mark.django_db


@pytest.fixture
def blurb_mini():
    return Benchmark.objects.get(slug="blurb-mini")


@pytest.fixture
def model(alice):
    return LanguageModel.objects.create(slug="ours", name="Ours", owner=alice)


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """``with commit():`` runs the block's on-commit callbacks at its end, as a real commit would.

    (Each test runs inside a transaction that is never committed.)
    """
    return lambda: django_capture_on_commit_callbacks(execute=True)


def record_all(model, benchmark, commit, value=80.0) -> list[Result]:
    with commit(), transaction.atomic():
        return [
            Result.objects.create(language_model=model, dataset=e.dataset, metric=e.metric, variant=e.variant,
                                  value=value + i, n_seeds=5)
            for i, e in enumerate(benchmark.entries.order_by("position"))
        ]  # fmt: skip


def test_recording_results_scores_the_model_once_per_transaction(model, blurb_mini, commit, monkeypatch):
    calls = []
    real = score_aggregation.recompute_scores
    monkeypatch.setattr(score_aggregation, "recompute_scores", lambda b, m=None: calls.append(b.slug) or real(b, m))
    record_all(model, blurb_mini, commit)
    score = Score.objects.get(language_model=model, benchmark=blurb_mini)
    assert score.score == pytest.approx(82.5) and score.missing == []  # the mean of 80..85 over six task types
    assert calls.count("blurb-mini") == 1


def test_a_deleted_result_leaves_its_dataset_missing_never_zero(model, blurb_mini, commit):
    results = record_all(model, blurb_mini, commit)
    with commit():
        results[0].delete()
    score = Score.objects.get(language_model=model, benchmark=blurb_mini)
    assert score.score is None and len(score.missing) == 1
    assert results[0].dataset.slug not in "".join(score.entries)


def test_a_result_edited_in_the_admin_rescores(model, blurb_mini, admin_client, commit):
    results = record_all(model, blurb_mini, commit)
    result = results[0]
    url = reverse("admin:leaderboard_result_change", args=[result.pk])
    form = {"language_model": model.pk, "dataset": result.dataset_id, "metric": result.metric_id, "variant": "",
            "scope": "", "value": "20.0", "n_seeds": 5, "source": "corrected by an operator"}  # fmt: skip
    with commit():
        response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Score.objects.get(language_model=model, benchmark=blurb_mini).score == pytest.approx(82.5 - 60 / 6)


def test_a_change_after_a_rolled_back_transaction_is_still_rescored(model, blurb_mini, commit):
    results = record_all(model, blurb_mini, commit)
    with commit(), pytest.raises(RuntimeError), transaction.atomic():
        Result.objects.filter(pk=results[0].pk).update(value=0.0)
        results[0].value = 0.0
        results[0].save()
        raise RuntimeError("the job lost its claim")
    assert Score.objects.get(language_model=model, benchmark=blurb_mini).score == pytest.approx(82.5)
    with commit():
        results[1].value = 87.0  # was 81
        results[1].save()
    assert Score.objects.get(language_model=model, benchmark=blurb_mini).score == pytest.approx(83.5)
