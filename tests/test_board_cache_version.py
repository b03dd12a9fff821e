"""A cached board's version (leaderboard.board_cache.version) moves with every change a board shows.

Its stamps are read from indexes on every request; the newest change to *any* model stands in
for the newest change to the benchmark's own, so a change to a model elsewhere rebuilds the board
too (harmless), while a change to one it shows must never leave the old copy in use.
"""

from __future__ import annotations

import datetime as dt

import pytest

from leaderboard import board_cache
from leaderboard.models import Score, Snapshot
from registry.models import Benchmark, LanguageModel

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    benchmark = Benchmark.objects.get(slug="blurb")
    model = LanguageModel.objects.create(slug="version-bert", name="Version BERT")
    score = Score.objects.create(language_model=model, benchmark=benchmark, score=80.0, aggregation_version="1")
    return benchmark, model, score


def test_the_version_is_stable_while_nothing_changes(board):
    benchmark, _, _ = board
    assert board_cache.version(benchmark) == board_cache.version(benchmark)


def test_renaming_a_model_on_the_board_moves_the_version(board):
    benchmark, model, _ = board
    before = board_cache.version(benchmark)
    model.name = "Version BERT, renamed"
    model.save()
    assert board_cache.version(benchmark) != before


def test_a_rescore_moves_the_version(board):
    benchmark, _, score = board
    before = board_cache.version(benchmark)
    score.score = 81.0
    score.save()
    assert board_cache.version(benchmark) != before


def test_a_new_snapshot_moves_the_version(board):
    benchmark, _, _ = board
    before = board_cache.version(benchmark)
    Snapshot.objects.create(benchmark=benchmark, date=dt.date(2026, 11, 28), aggregation_version="1", board={})
    assert board_cache.version(benchmark) != before


def test_the_version_is_one_query(board, django_assert_num_queries):
    benchmark, _, _ = board
    with django_assert_num_queries(1):
        board_cache.version(benchmark)
