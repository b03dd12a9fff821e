"""``python -m MODULE ARGS`` as a process of its own, forked from a server that imported MODULE once.

A score job runs the engine in a process of its own so that the CPU worker's Django process never
loads torch. Started cold, each such process spends about 10 s of CPU importing torch, transformers and
every formulation before it reads its first byte; a scoring worker that records hundreds of results
would spend most of its time there. So the process is forked instead from a server
(``python -m biolm.warm_process``) that did those imports once. The server is a fresh interpreter, not a
fork of its caller: it holds nothing of the caller's but ``sys.path`` and the environment it was given
(the platform's secrets left out), and it only imports, so a fork of it starts no thread twice.

Each child does what ``python -m MODULE ARGS`` does (:func:`runpy.run_module`, ``sys.argv`` set) in a
session of its own, with its output written to a log file. Its exit status is the one ``python -m``
would give: the module's ``sys.exit`` status, 1 after an uncaught exception (its traceback in the log),
minus the signal's number when it was killed. One child runs at a time per server, as one task runs at a
time per worker process; a server that dies is started again on the next run.

The multiprocessing module's own ``forkserver`` was the first choice, but each of its children
re-imports the caller's ``__main__`` (Celery's, pytest's) before it runs, as spawn's children do.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

_servers: dict[tuple, _Server] = {}
_lock = threading.Lock()


class Stopped(Exception):
    """The process outlived its time limit and was killed."""


class ServerLost(RuntimeError):
    """The warm server died (its imports failed, or it was killed); the next run starts another."""


def run(module: str, arguments: Sequence[str], log: Path, *, preload: Sequence[str], environment: Mapping[str, str],
        timeout_s: float | None = None, code: str = "") -> int:  # fmt: skip
    """Run ``python -m module *arguments`` in a warm child; its exit status (see the module's docstring).

    ``preload``: what the server imports before its first fork. ``environment``: the server's and so its
    children's whole environment. ``code``: a digest of the code the children must run (the installed
    plugins'): a server started under another is replaced, since what it imported, and the import paths
    it read at start (an editable install's ``.pth``), may be another release's. One server is kept per
    (preload, environment). Raises :class:`Stopped` after ``timeout_s``; whatever interrupts the wait (the
    worker stopping) kills the child first.
    """
    key = (tuple(preload), tuple(sorted(environment.items())))
    with _lock:
        server = _servers.get(key)
        if server is not None and (not server.alive() or server.code != code):
            server.stop()
            server = None
        if server is None:
            server = _servers[key] = _Server(preload, environment, code)
        return server.run(module, arguments, log, timeout_s)


def stop_servers() -> None:
    """End every server this process started (each also ends by itself when its caller exits)."""
    with _lock:
        for server in _servers.values():
            server.stop()
        _servers.clear()


class _Server:
    """The caller's end of one ``python -m biolm.warm_process`` server: a JSON line each way per request."""

    def __init__(self, preload: Sequence[str], environment: Mapping[str, str], code: str = "") -> None:
        self.code = code
        path = os.pathsep.join(entry for entry in sys.path if entry and Path(entry).is_dir())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "biolm.warm_process", *preload],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**environment, "PYTHONPATH": path},
            bufsize=0,  # unbuffered: a buffered read of the pid could take the status with it, unseen by select
        )  # fmt: skip

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        with contextlib.suppress(OSError):  # a server that died has closed its end
            self.process.stdin.close()  # its loop ends at the end of its input
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()

    def run(self, module: str, arguments: Sequence[str], log: Path, timeout_s: float | None) -> int:
        request = {"module": module, "arguments": list(arguments), "log": str(log)}
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        pid = self._answer()["pid"]
        try:
            ready, _, _ = select.select([self.process.stdout], [], [], timeout_s)
            if not ready:
                raise Stopped(f"python -m {module} ran past {timeout_s:g} s and was stopped")
        except BaseException:  # the time limit, or the worker stopping: the child goes first
            _kill_session(pid)
            self._answer()
            raise
        return self._answer()["status"]

    def _answer(self) -> dict:
        line = self.process.stdout.readline()  # an unbuffered pipe's readline reads no byte past the newline
        if not line:
            self.process.kill()
            raise ServerLost(f"the warm process server died (status {self.process.wait()}); see the worker's log")
        return json.loads(line)


def _kill_session(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(pid, signal.SIGKILL)


def serve(preload: Sequence[str]) -> None:
    """The server: import ``preload``, then fork one child per request line on stdin (see the module's docstring)."""
    for module in preload:
        __import__(module)
    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request["module"], request["arguments"], request["log"])
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


def _child(module: str, arguments: list[str], log: str) -> None:
    """In the fork: ``python -m module *arguments``, its output into ``log``; never returns."""
    os.setsid()  # its own session: a kill reaches whatever it starts
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.argv = [module, *arguments]
    sys.modules.pop(f"{module}.__main__", None)  # preloaded for its imports; run afresh as __main__, as -m does
    status = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _exit_status(code: object) -> int:
    """What ``python`` exits with after ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    serve(sys.argv[1:])
