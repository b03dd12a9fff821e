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

import sys
import traceback

from biolm.contract import CodeMismatch, CodeMissing
from biolm.errors import DataFormatError
from biolm.plugin_faults import blame
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import ImplementationError

INPUT_REFUSED = 1
PLUGIN_FAULT = 3
CODE_MISSING = 4


def report_failure(
    exc: Exception, *, load_entrypoints: bool, dataset: str | None = None, recipe: str | None = None
) -> int | None:
    """Print why the run stopped and return its exit status; None for a crash, which the caller re-raises."""
    if isinstance(exc, CodeMismatch | CodeMissing):
        print(f"error: {exc}", file=sys.stderr)
        return PLUGIN_FAULT if isinstance(exc, CodeMismatch) else CODE_MISSING
    try:
        contributions = collect_contributions(get_plugin_manager(load_entrypoints=load_entrypoints))
        fault = blame(exc, contributions, dataset, recipe)
    except Exception:  # the plugins cannot even be listed now: say nothing rather than hide the error
        fault = None
    if fault is not None:
        traceback.print_exception(exc, file=sys.stderr)  # kept in the job's log; the line below is its error
        print(f"error: {fault}", file=sys.stderr)
        return PLUGIN_FAULT
    if isinstance(exc, ValueError | ImplementationError | DataFormatError):
        print(f"error: {exc}", file=sys.stderr)
        return INPUT_REFUSED
    return None
