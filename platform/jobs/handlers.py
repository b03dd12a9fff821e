"""What runs a ``cpu`` job on the platform, by kind: the apps above contribute the work, the jobs app runs it.

The jobs app claims, runs, heartbeats and finishes platform jobs (:mod:`jobs.tasks`), but what a
``score`` job does (score the predictions, record the result, re-rank) is the leaderboard's. The
leaderboard registers its handler when it is ready (:func:`register`), so this app never imports
the leaderboard.

A handler takes the claimed job and does its work outside any transaction (reading, scoring), then
returns a *writer*: the function that writes what it found and returns the line the job's log
gets. The jobs app calls the writer in the one transaction that also marks the job succeeded
(:func:`jobs.lifecycle.succeeding`), so a job never ends failed beside results it wrote, and the
transaction lasts as long as the writes, not the work (on SQLite a transaction holds the write lock).
A handler raises :class:`JobRefused` when the job's inputs are the submission's fault (its
uploaded predictions cannot be scored), and :class:`PluginRaised` when a plugin's code failed in a
process it ran; anything else it raises is the platform's, unless a plugin's code raised it.
"""

from __future__ import annotations

from collections.abc import Callable

from jobs.models import Job

Writer = Callable[[], str]
Handler = Callable[[Job], Writer]
_handlers: dict[str, Handler] = {}


class JobRefused(ValueError):
    """The job cannot be done with what the submission produced; the message says what is wrong (charged).

    ``log``: what a process the handler ran printed (its traceback, its ``error:`` line), for the job's log.
    """

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class PluginRaised(RuntimeError):
    """A plugin's code failed in a process the handler ran (the engine's ``error: plugin ...``): not retried.

    In the handler's own process :func:`biolm.plugin_faults.blame` finds the plugin from the traceback;
    across a process boundary the engine names it, and this carries the name.
    """

    def __init__(self, message: str, plugin: str, log: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin
        self.log = log


def register(kind: str, handler: Handler) -> None:
    """``handler`` runs the platform jobs of ``kind`` (an app's ``ready()`` calls this)."""
    _handlers[kind] = handler


def handler_for(kind: str) -> Handler:
    try:
        return _handlers[kind]
    except KeyError:
        raise ValueError(f"a {kind} job cannot run on the platform's cpu queue") from None
