"""Celery tasks of the leaderboard: thin wrappers over :mod:`leaderboard.score_aggregation` and its results dump."""

from __future__ import annotations

from celery import shared_task

from leaderboard.results_dump import write_dump
from leaderboard.score_aggregation import recompute_stale_scores


@shared_task(name="biolm.leaderboard.recompute_stale_scores", acks_late=True, ignore_result=True)
def recompute_stale_scores_task() -> int:
    """Safety net for the beat schedule: rescore anything computed with an outdated aggregation."""
    return recompute_stale_scores()


@shared_task(name="biolm.leaderboard.export_results", acks_late=True, ignore_result=True)
def export_results_task() -> int:
    """The day's dump of every public result (``manage.py export_results``); its line count."""
    return write_dump().lines
