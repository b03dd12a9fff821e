"""Whose failure an engine's exit is, and the one line that says how: the words every executor uses.

A local worker reads its child's exit status (:mod:`workers.runner.execution`); a Slurm worker reads the
batch job's (:mod:`workers.runner.slurm`). Both judge it here, so an engine's refusal, a plugin's fault and
a crash mean the same on a laptop and on a cluster.
"""

from __future__ import annotations

import re

from biolm.engine_exits import CODE_MISSING, EXCEPTION_LINE, INPUT_REFUSED, PLUGIN_FAULT

# torchrun's own lines: its logger's ("E1201 22:16:38.955000 23348 torch/distributed/elastic/..."), the banner
# about OMP_NUM_THREADS, and the report it raises when a rank fails (a traceback of torch.distributed.elastic
# ending in ChildFailedError and a box of "=" lines), or when it is signalled (SignalException).
TORCHRUN_LOG_LINE = re.compile(r"^[DIWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S*torch/")
TORCHRUN_RAISED = re.compile(r"^torch\.distributed\.elastic\.\S+(Error|Exception)\b")
ROOT_CAUSE_EXIT = re.compile(r"Root Cause \(first observed failure\):.*?exitcode\s*:\s*(-?\d+)", re.DOTALL)


def engine_exit(code: int, log_tail: str) -> tuple[int, str]:
    """The engine's own exit status and log when torchrun ran it: torchrun exits 1 whatever its ranks did and
    ends the log with its own traceback, which would make every refusal a crash. The status is the one
    torchrun's report names as the root cause (a rank's ``exitcode``); the log loses torchrun's lines, so the
    engine's ``error: ...`` line is the last again (on several nodes, the ranks that were stopped because
    another failed print nothing of the engine's after it). Anything not run by torchrun is returned as it is.
    """
    causes = ROOT_CAUSE_EXIT.findall(log_tail)
    if not causes:
        return code, log_tail
    own = [int(found) for found in causes if int(found) > 0]  # a rank's own status beats a rank torchrun stopped
    status = own[0] if own else int(causes[0])
    kept = without_torchrun_lines(log_tail.splitlines())
    if status in (INPUT_REFUSED, PLUGIN_FAULT, CODE_MISSING):
        errors = [index for index, line in enumerate(kept) if line.startswith("error: ")]
        kept = kept[: errors[-1] + 1] if errors else kept
    return status, "\n".join(kept) + "\n"


def without_torchrun_lines(lines: list[str]) -> list[str]:
    """``lines`` less torchrun's own: its log lines, its banner, its tracebacks and its failure report's box."""
    kept: list[str] = []
    held: list[str] | None = None  # a traceback being read: the engine's (kept) or torchrun's (dropped)
    box = -1  # in torchrun's report: the "=" lines seen so far (it ends at the second)
    for line in lines:
        if box >= 0:
            box += line.startswith("=" * 20)
            box = -1 if box == 2 else box
        elif line.startswith("Traceback (most recent call last)"):
            held = [line]
        elif held is not None and TORCHRUN_RAISED.match(line):
            held, box = None, (0 if "ChildFailedError" in line else -1)
        elif held is not None and (line.startswith((" ", "\t")) or not line.strip()):
            held.append(line)
        elif held is not None and EXCEPTION_LINE.match(line):
            kept += [*held, line]
            held = None
        elif not (TORCHRUN_LOG_LINE.match(line) or line.startswith("*" * 20) or "OMP_NUM_THREADS" in line):
            kept.append(line)
    return kept + (held or [])
