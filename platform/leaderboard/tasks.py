"""Celery tasks of the leaderboard: thin wrappers over :mod:`leaderboard.scoring`."""

from __future__ import annotations

from celery import shared_task

from leaderboard.scoring import recompute_stale_scores


@shared_task(name="biolm.leaderboard.recompute_stale_scores", acks_late=True, ignore_result=True)
def recompute_stale_scores_task() -> int:
    """Safety net for the beat schedule: rescore anything computed with an outdated aggregation."""
    return recompute_stale_scores()
