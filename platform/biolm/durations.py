"""Durations as pages write them: ``42 s``, ``3 min``, ``2 h 5 min``, ``3 d 4 h``.

One rule for every page (the queue's ETAs, a submission's jobs, a benchmark's time to the
leaderboard), and the one ``static/submissions/submission.js`` follows for live updates.
"""

from __future__ import annotations

DASH = "\u2014"


def in_words(seconds: float | None) -> str:
    """``42 s``, ``3 min``, ``2 h 5 min``, ``3 d 4 h`` from two days on; a dash when unknown."""
    if seconds is None:
        return DASH
    whole = max(0, int(seconds + 0.5))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min"
    if whole < 2 * 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"


def gpu_hours_in_words(hours: float | None) -> str:
    """``0.42 GPU-hours``, ``12.5 GPU-hours``; ``none`` for work that held no GPU; a dash when unknown."""
    if hours is None:
        return DASH
    if hours == 0:
        return "no GPU"
    if hours < 0.01:
        return "< 0.01 GPU-hours"
    return f"{hours:.2f} GPU-hours" if hours < 10 else f"{hours:.1f} GPU-hours"
