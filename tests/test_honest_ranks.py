"""The ranks a reader sees come from a paired bootstrap, and match one computed independently here.

A fixture of models with known per-example test correctness on BLURB-mini's six datasets: the
platform stores each result's resampled values, aggregates them per resample into the benchmark
score, ranks and renders. This test redoes the bootstrap from the per-example arrays with its own
code (its own macro average of group means, its own pair-by-pair counting) and compares the ranks
and the "=" ties on the page, the API's JSON and the stored intervals.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from biolm.significance import resample_indices
from leaderboard.models import Result, Score
from leaderboard.resamples import store_result_resamples
from leaderboard.score_aggregation import recompute_scores
from registry.models import Benchmark, LanguageModel

pytestmark = pytest.mark.django_db
N_TEST = 60  # test examples per dataset
# Per model, the chance of a correct answer on each example: two pairs that differ by little, and
# a clearly worse model. Drawn once from a fixed generator, so the arrays are known and fixed.
SKILLS = {"alpha": 0.80, "beta": 0.79, "gamma": 0.60, "delta": 0.59, "omega": 0.30}


def correctness() -> dict[str, dict[str, np.ndarray]]:
    """{model: {dataset: 0/1 array over the test examples}}, each example right with the model's skill."""
    generator = np.random.default_rng(7)
    datasets = list(Benchmark.objects.get(slug="blurb-mini").entries.values_list("dataset__slug", flat=True))
    return {
        model: {slug: (generator.random(N_TEST) < skill).astype(np.float64) for slug in datasets}
        for model, skill in SKILLS.items()
    }


def independent_ranks(arrays: dict[str, dict[str, np.ndarray]], groups: dict[str, list[str]]) -> dict[str, int]:
    """1 + the models better on at least 95% of the resamples, from the arrays, without the platform's code."""
    scores = {}
    for model, per_dataset in arrays.items():
        per_group = []
        for members in groups.values():
            values = []
            for slug in members:
                digest = hashlib.sha256(f"{slug}\n{N_TEST}".encode()).digest()
                rng = np.random.default_rng(np.random.SeedSequence([20211, int.from_bytes(digest, "big")]))
                drawn = rng.integers(0, N_TEST, size=(1000, N_TEST), dtype=np.int64)
                values.append(100.0 * per_dataset[slug][drawn].mean(axis=1))
            per_group.append(np.mean(values, axis=0))
        scores[model] = np.mean(per_group, axis=0)  # BLURB: macro average of the task types' means
    ranks = {}
    for model in scores:
        better = sum(1 for other in scores if other != model and np.count_nonzero(scores[other] > scores[model]) >= 950)
        ranks[model] = 1 + better
    return ranks


@pytest.fixture
def board(db):
    benchmark = Benchmark.objects.get(slug="blurb-mini")
    arrays = correctness()
    for name, per_dataset in arrays.items():
        model = LanguageModel.objects.create(slug=f"model-{name}", name=f"Model {name.title()}")
        for entry in benchmark.entries.select_related("dataset", "metric"):
            known = per_dataset[entry.dataset.slug]
            result = Result.objects.create(
                language_model=model, dataset=entry.dataset, metric=entry.metric, variant=entry.variant,
                value=100.0 * known.mean(), std=0.0, n_seeds=1,
            )  # fmt: skip
            drawn = resample_indices(entry.dataset.slug, N_TEST)
            store_result_resamples(result, entry.dataset.slug, 100.0 * known[drawn].mean(axis=1))
    recompute_scores(benchmark)
    groups = {g["slug"]: g["members"] for g in benchmark.aggregation["groups"]}
    members = {e.key: e.dataset.slug for e in benchmark.entries.select_related("dataset")}
    groups = {slug: [members[m] for m in keys] for slug, keys in groups.items()}
    return benchmark, arrays, independent_ranks(arrays, groups)


def test_the_ranks_on_the_page_match_an_independent_paired_bootstrap(client, board):
    benchmark, _, expected = board
    page = client.get(f"/leaderboard/{benchmark.slug}/").content.decode()
    shown = dict(
        (slug, int(rank.lstrip("=")))
        for rank, slug in re.findall(
            r'<span class="rank-value" title="[^"]*">(=?\d+)</span>.*?href="/models/[^/]+/([^/]+)/"', page, re.S
        )
    )
    assert shown == {f"model-{name}": rank for name, rank in expected.items()}
    # The fixture's point: near-equal pairs share a rank, the rest are told apart.
    assert expected["alpha"] == expected["beta"] == 1 and expected["omega"] == 5
    assert len(set(expected.values())) < len(expected)


def test_a_shared_rank_is_marked_and_explains_the_interval_to_the_model_above(client, board):
    benchmark, _, _ = board
    pair = Score.objects.filter(benchmark=benchmark, language_model__slug__in=["model-alpha", "model-beta"])
    (second,) = [s for s in pair if s.rank_tied]  # the lower point score of the two, marked "="
    (first,) = [s for s in pair if s != second]
    assert second.rank == first.rank == 1 and second.rank_basis == "bootstrap"
    interval = second.rank_interval
    assert interval["model"] == first.language_model.slug and interval["low"] < 0 < interval["high"]  # 0 inside
    page = client.get(f"/leaderboard/{benchmark.slug}/").content.decode()
    above = first.language_model.name
    assert re.search(rf'title="cannot be told apart from {above}[^"]*\[-\d+\.\d\d, \d+\.\d\d\][^"]*">=1</span>', page)
    omega = Score.objects.get(benchmark=benchmark, language_model__slug="model-omega")
    assert not omega.rank_tied and omega.rank_interval["low"] > 0  # clearly below the model above


def test_the_api_and_the_exports_carry_the_same_ranks(client, board):
    benchmark, _, expected = board
    data = client.get(f"/leaderboard/{benchmark.slug}/export.json").json()
    assert {row["model"]: row["rank"] for row in data["rows"]} == {f"model-{k}": v for k, v in expected.items()}
    (tied,) = [row["model"] for row in data["rows"] if row["tied"] and row["rank"] == 1]
    csv_text = client.get(f"/leaderboard/{benchmark.slug}/export.csv").content.decode()
    assert f'1,"true","{tied}",' in csv_text  # the tie as true/false, like preview: a bare "=" is a formula's start


def test_a_model_without_predictions_is_ranked_by_its_point_score_and_says_so(client, board):
    benchmark, _, _ = board
    model = LanguageModel.objects.create(slug="typed-in", name="Typed In")
    for entry in benchmark.entries.all():
        Result.objects.create(language_model=model, dataset=entry.dataset, metric=entry.metric, value=99.0)
    recompute_scores(benchmark, [model])
    score = Score.objects.get(benchmark=benchmark, language_model=model)
    assert score.rank == 1 and score.rank_basis == "point"
    page = client.get(f"/leaderboard/{benchmark.slug}/").content.decode()
    row = re.search(r'<tr class="" data-model="typed-in">.*?</tr>', page, re.S).group(0)
    assert "not tested: no predictions" in row


def test_a_private_model_neither_moves_nor_reveals_itself_in_public_ranks(client, board, alice):
    benchmark, _, expected = board
    private = LanguageModel.objects.create(
        slug="alice-best", name="Alice Best", owner=alice, visibility=LanguageModel.Visibility.PRIVATE
    )
    for entry in benchmark.entries.all():
        Result.objects.create(language_model=private, dataset=entry.dataset, metric=entry.metric, value=100.0)
    recompute_scores(benchmark, [private])
    public = {s.language_model.slug: s.rank for s in Score.objects.filter(benchmark=benchmark).exclude(
        language_model=private)}  # fmt: skip
    assert public == {f"model-{k}": v for k, v in expected.items()}  # nobody moved down
    assert Score.objects.get(language_model=private).rank == 1  # where it would stand, for its owner
    assert "alice-best" not in client.get(f"/leaderboard/{benchmark.slug}/export.csv").content.decode()
    client.force_login(alice)
    assert "alice-best" in client.get(f"/leaderboard/{benchmark.slug}/").content.decode()


def test_a_leaderboard_page_costs_the_same_queries_for_few_and_many_models(client, board, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    benchmark, _, _ = board
    with CaptureQueriesContext(connection) as few:
        assert client.get(f"/leaderboard/{benchmark.slug}/?datasets=1").status_code == 200
    for number in range(20):
        model = LanguageModel.objects.create(slug=f"extra-{number}", name=f"Extra {number}")
        for entry in benchmark.entries.all():
            Result.objects.create(language_model=model, dataset=entry.dataset, metric=entry.metric, value=50.0)
    recompute_scores(benchmark)
    with CaptureQueriesContext(connection) as many:
        page = client.get(f"/leaderboard/{benchmark.slug}/?datasets=1")
    assert page.content.decode().count("data-model=") == len(SKILLS) + 20
    assert len(many) == len(few)


def test_making_a_model_private_re_ranks_the_public_models_it_was_ahead_of(
    client, board, django_capture_on_commit_callbacks
):
    benchmark, _, _ = board
    omega = Score.objects.get(benchmark=benchmark, language_model__slug="model-omega")
    assert omega.rank == 5
    for name in ("alpha", "beta"):
        model = LanguageModel.objects.get(slug=f"model-{name}")
        model.visibility = LanguageModel.Visibility.PRIVATE
        with django_capture_on_commit_callbacks(execute=True):
            model.save()
    omega.refresh_from_db()
    assert omega.rank == 3  # two fewer public models above it
    page = client.get(f"/leaderboard/{benchmark.slug}/").content.decode()
    assert "model-alpha" not in page and "model-beta" not in page
