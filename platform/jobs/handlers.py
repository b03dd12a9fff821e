"""What runs a ``cpu`` job on the platform, by kind: the apps above contribute the work, the jobs app runs it.

The jobs app claims, runs, heartbeats and finishes platform jobs (:mod:`jobs.tasks`), but what a
``score`` job does (score the predictions, record the result, re-rank) is the leaderboard's. The
leaderboard registers its handler when it is ready (:func:`register`), so this app never imports
the leaderboard.

A handler takes the claimed job and returns the line its log gets. It raises :class:`JobRefused`
when the job's inputs are the submission's fault (its uploaded predictions cannot be scored);
anything else it raises is the platform's, unless a plugin's code raised it.
"""

from __future__ import annotations

from collections.abc import Callable

from jobs.models import Job

Handler = Callable[[Job], str]
_handlers: dict[str, Handler] = {}


class JobRefused(ValueError):
    """The job cannot be done with what the submission produced; the message says what is wrong (charged)."""


def register(kind: str, handler: Handler) -> None:
    """``handler`` runs the platform jobs of ``kind`` (an app's ``ready()`` calls this)."""
    _handlers[kind] = handler


def handler_for(kind: str) -> Handler:
    try:
        return _handlers[kind]
    except KeyError:
        raise ValueError(f"a {kind} job cannot run on the platform's cpu queue") from None
