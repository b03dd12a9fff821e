"""How an engine run ends, as its exit status and last line say, so the worker can tell whose fault it was.

* 0: the run finished.
* :data:`INPUT_REFUSED` (1) with a last line ``error: ...``: the engine refused its input (a
  malformed checkpoint, a data file it cannot read, a setting out of range). The submission's
  fault: charged, not retried.
* :data:`PLUGIN_FAULT` (3) with a last line ``error: plugin ...``: code a plugin contributed (a
  metric, a reader, a formulation, a preprocessor, a recipe) raised; the line names the plugin,
  the contribution and the line of the plugin's code, and the traceback precedes it. Or the code
  installed here is not the code the job pins (``error: plugin version mismatch: ...``). Not
  retried: it would fail the same way again.
* :data:`CODE_MISSING` (4) with a last line ``error: this machine lacks the plugin(s) ...``: a plugin
  the job pins is not installed here. The platform's: retried (another worker may have it) and
  refunded.
* Anything else (a traceback with status 1, a signal, status 2 for bad arguments) is a crash: the
  platform's, retried and refunded.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from biolm.contract import CodeMismatch, CodeMissing
from biolm.engine_exits import CODE_MISSING, INPUT_REFUSED, PLUGIN_FAULT
from biolm.errors import DataFormatError
from biolm.plugin_faults import blame
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import ImplementationError


def report_failure(
    exc: Exception, *, load_entrypoints: bool, dataset: str | None = None, recipe: str | None = None,
    record: Path | None = None,
) -> int | None:  # fmt: skip
    """Print why the run stopped and return its exit status; None for a crash, which the caller re-raises.

    ``record``: a file to keep the status and the error line in, for :func:`replay_failure`.
    """
    status, line, with_traceback = _judge(exc, load_entrypoints, dataset, recipe)
    if status is None:
        return None
    if with_traceback:
        traceback.print_exception(exc, file=sys.stderr)  # kept in the job's log; the line below is its error
    print(line, file=sys.stderr)
    if record is not None:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"status": status, "line": line}), encoding="utf-8")
    return status


def replay_failure(record: Path) -> int | None:
    """The status of a refusal :func:`report_failure` recorded, its line printed again; None without one.

    torchrun restarts a worker group whatever the exit (``--max-restarts``): a refused input or a plugin's
    fault would run again and fail the same way. The restarted processes replay the first refusal instead.
    """
    try:
        recorded = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    print("restarted by torchrun after a refusal: the same refusal again, without running", file=sys.stderr)
    print(recorded["line"], file=sys.stderr)
    return int(recorded["status"])


def _judge(exc: Exception, load_entrypoints: bool, dataset: str | None, recipe: str | None):
    """(status, the error line, whether the traceback goes before it); a status of None is a crash."""
    if isinstance(exc, CodeMismatch | CodeMissing):
        return (PLUGIN_FAULT if isinstance(exc, CodeMismatch) else CODE_MISSING), f"error: {exc}", False
    try:
        contributions = collect_contributions(get_plugin_manager(load_entrypoints=load_entrypoints))
        fault = blame(exc, contributions, dataset, recipe)
    except Exception:  # the plugins cannot even be listed now: say nothing rather than hide the error
        fault = None
    if fault is not None:
        return PLUGIN_FAULT, f"error: {fault}", True
    if isinstance(exc, ValueError | ImplementationError | DataFormatError):
        return INPUT_REFUSED, f"error: {exc}", False
    return None, "", False
