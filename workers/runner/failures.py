"""Whose failure an engine's exit is, and the one line that says how: the words every executor uses.

A local worker reads its child's exit status (:mod:`workers.runner.execution`); a Slurm worker reads the
batch job's (:mod:`workers.runner.slurm`). Both judge it here, so an engine's refusal, a plugin's fault and
a crash mean the same on a laptop and on a cluster.
"""

from __future__ import annotations

import re
import signal

from workers.engine.exit_status import CODE_MISSING, INPUT_REFUSED, PLUGIN_FAULT
from workers.runner.processes import describe_exit

EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Fault)\b.*")


def _lines(log_tail: str) -> list[str]:
    return [line for line in log_tail.splitlines() if line.strip()]


def failure_cause(code: int, log_tail: str) -> str:
    """Whose failure an engine exit is (see :mod:`workers.engine.exit_status`): the submission's, a plugin's or ours.

    The engine refuses input by printing ``error: ...`` and exiting with status 1 (the
    submission's: charged), and reports a plugin's exception as ``error: plugin ...`` with status
    3 (the plugin's: not retried); a crash (a traceback, a signal, running out of memory) is the
    platform's, retried and refunded.
    """
    lines = _lines(log_tail)
    last = lines[-1] if lines else ""
    if code == PLUGIN_FAULT and last.startswith("error: plugin "):
        return "plugin"
    if code == CODE_MISSING:
        return "platform"
    refused = code == INPUT_REFUSED and last.startswith("error: ")
    return "submission" if refused and "Traceback (most recent call last)" not in log_tail else "platform"


def failure_summary(code: int, log_tail: str) -> str:
    """The job's error: the engine's ``error:`` line, or how it crashed, in one line; the job's log keeps the rest."""
    lines = _lines(log_tail)
    if lines and lines[-1].startswith("error: ") and code in (INPUT_REFUSED, PLUGIN_FAULT, CODE_MISSING):
        return lines[-1].removeprefix("error: ")
    how = describe_exit(code)
    after_traceback = log_tail.rpartition("Traceback (most recent call last)")[2] if "Traceback" in log_tail else ""
    raised = [line for line in _lines(after_traceback) if EXCEPTION_LINE.match(line)]
    if raised:
        return f"the engine {how}: {raised[-1].strip()[:500]} (the traceback is in the job's log)"
    hint = " (out of memory?)" if code == -signal.SIGKILL else ""
    return f"the engine {how}{hint}; its last lines are in the job's log"


def plugin_of(log_tail: str) -> str:
    """The plugin an ``error: plugin <name> ...`` line names (``plugin version mismatch: <name> ...`` too)."""
    last = (_lines(log_tail) or [""])[-1]
    words = last.removeprefix("error: plugin ").removeprefix("version mismatch: ").split()
    return words[0] if last.startswith("error: plugin ") and words else ""
