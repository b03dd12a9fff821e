"""How the submission and queue pages write durations, progress and times.

``static/submissions/submission.js`` writes the live updates with the same rules (its
``duration``, ``percent`` and ``clock``), so a cell reads the same before and after an update.
"""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone

from biolm.durations import in_words

register = template.Library()

KINDS = {"pretrain": "pretraining", "finetune": "fine-tuning", "score": "scoring", "fetch": "fetching from the Hub"}
DASH = "—"


@register.filter
def duration(seconds: float | None) -> str:
    """``42 s``, ``3 min``, ``2 h 5 min``, ``3 d 4 h``; a dash when unknown (:func:`biolm.durations.in_words`)."""
    return in_words(seconds)


@register.filter
def age(seconds: float | None) -> str:
    """How long ago: ``12 s ago``; ``never`` when it never happened."""
    return "never" if seconds is None else f"{duration(seconds)} ago"


@register.filter
def percent(progress: float | None) -> str:
    """``42%`` (rounded down: 100% only when done); a dash when unknown."""
    return DASH if progress is None else f"{int(progress * 100)}%"


@register.filter
def percent_value(progress: float | None) -> int:
    """A ``<progress max="100">``'s value: 0 until something is known."""
    return 0 if progress is None else int(progress * 100)


@register.filter
def clock(moment: dt.datetime | None) -> str:
    """``14:05 UTC`` today, ``2025-03-02 14:05 UTC`` on another day (the site's times are UTC)."""
    if moment is None:
        return DASH
    moment = moment.astimezone(dt.UTC)
    today = timezone.now().astimezone(dt.UTC).date()
    return f"{moment:%H:%M} UTC" if moment.date() == today else f"{moment:%Y-%m-%d %H:%M} UTC"


@register.filter
def job_kind(kind: str) -> str:
    return KINDS.get(kind, kind)


@register.filter
def place(job) -> str:
    """A waiting job's place in its queue and estimated start (a :class:`~submissions.services.JobState`)."""
    if job.queue_position is None:
        return DASH
    where = f"#{job.queue_position} in the {job.queue_name} queue"
    return f"{where}, starts about {clock(job.estimated_start)}" if job.estimated_start else where


@register.filter
def eta(job) -> str:
    """A job's ETA cell: ``stalled since 14:05 UTC`` when no step moved lately, else its :func:`duration`."""
    if getattr(job, "stalled_since", None) is not None:
        return f"stalled since {clock(job.stalled_since)}"
    return duration(job.eta_s)


@register.filter
def steps(job) -> str:
    """``step 37 of 360`` while a job reports steps (across all its runs); "" otherwise."""
    return f"step {job.step:,} of {job.total:,}" if job.total and job.status == "running" else ""


@register.filter
def overall(state) -> str:
    """The whole submission's time left in words (a :class:`~submissions.services.Overall`); "" when done."""
    if state.left == 0:
        return ""
    jobs = f"{state.left} job{'s' if state.left != 1 else ''} left"
    if state.seconds is None:
        return f"{jobs}; the time is not known yet: no job of their kind has finished on this site"
    if state.unknown:
        return f"at least {duration(state.seconds)} for the {jobs} ({state.unknown} without a typical duration yet)"
    return f"about {duration(state.seconds)} for the {jobs}"
