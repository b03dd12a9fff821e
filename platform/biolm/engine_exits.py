"""How an engine process ended, and whose failure that is: the words every caller of the engine uses.

The engine (``python -m workers.engine ...``) ends with a status and a last line that say whose fault a
failure is (:mod:`workers.engine.exit_status` writes them): 0 finished; :data:`INPUT_REFUSED` with
``error: ...``, the submission's; :data:`PLUGIN_FAULT` with ``error: plugin ...``, a plugin's;
:data:`CODE_MISSING`, a plugin this machine lacks, the platform's; anything else a crash, the
platform's. A GPU worker reads them of its fine-tuning and pretraining processes (:mod:`workers.runner`),
and the platform's scoring worker of its score processes (``leaderboard.recording``): both judge them
here, so a refusal means the same wherever the engine ran. Django-free and torch-free, like the core.
"""

from __future__ import annotations

import re
import signal

INPUT_REFUSED = 1
PLUGIN_FAULT = 3
CODE_MISSING = 4
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Fault)\b.*")


def describe_exit(code: int) -> str:
    """``exited with status 1``, or ``was killed by SIGKILL`` (Popen's negative status is the signal)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


def _lines(log_tail: str) -> list[str]:
    return [line for line in log_tail.splitlines() if line.strip()]


def failure_cause(code: int, log_tail: str) -> str:
    """Whose failure an engine exit is: ``submission`` (charged), ``plugin`` (not retried) or ``platform``.

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
