"""Keeping worker processes alive: restart the ones that die, give up on the ones that cannot start.

A GPU worker's Celery process can die under it: the kernel's OOM killer, a CUDA fault, a
segfault in a native library. The platform notices the silence and requeues the job, but a job
needs a live worker to run again, so on a host with eight GPUs one crash must not leave a GPU
idle until someone notices. :class:`Supervisor` starts each worker process, and when one exits
without being asked to it logs how (its exit status, or the signal that killed it) and starts it
again after an exponential back-off. A process that keeps dying within seconds of starting (a
broken install, a missing driver, a bad setting) is not restarted in a tight loop: after a few
such exits in a row it is given up on and reported, and the others keep running.

Ctrl-C or SIGTERM to the supervisor stops everything: each child gets SIGTERM (Celery's warm
shutdown: the running job finishes its current step and reports), and a second signal sends
SIGQUIT (Celery's cold shutdown). Nothing is restarted once stopping has begun.

A worker that will not stop, or hangs, can be asked where it is: ``kill -USR2 <pid>`` writes every
thread's Python stack to its log, without stopping it (:func:`dump_stacks_on_signal`). It writes
from C, inside the signal itself, where Celery's own SIGUSR1 dump is a Python-level handler that
runs only once the main thread gets back to the interpreter.

No Django here: ``python -m workers.runner`` (database-free) and ``manage.py worker`` share it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from biolm.engine_exits import describe_exit

logger = logging.getLogger("biolm.worker")
STACKS_SIGNAL = signal.SIGUSR2


def dump_stacks_on_signal() -> None:
    """On ``STACKS_SIGNAL``, write every thread's Python stack to standard error (the process's log).

    :mod:`faulthandler` writes from C, without the interpreter, so a process stuck in a blocking call
    (a socket read, a lock) still answers. Called before Celery replaces ``sys.stderr`` with its
    logging proxy, it writes to the real file descriptor. A process whose standard error is closed or
    is not a file (no descriptor to write to) runs without it rather than failing to start.
    """
    try:
        faulthandler.register(STACKS_SIGNAL, all_threads=True)
    except (AttributeError, RuntimeError, ValueError, OSError) as exc:  # sys.stderr is None, or has no fileno()
        logger.warning("kill -USR2 will not show this process's stacks: %s", exc)


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number of seconds") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} must not be negative")
    return value


@dataclass(frozen=True)
class RestartPolicy:
    """When a dead worker process is started again, and when it is given up on.

    A process that exits within ``quick_exit_s`` of starting counts as failing to start; after
    ``give_up_after`` such exits in a row it is not restarted. The wait before a restart doubles
    with each of those exits, from ``backoff_s`` up to ``backoff_max_s``; a process that had run
    longer than ``quick_exit_s`` is restarted after ``backoff_s``.
    """

    backoff_s: float = 1.0
    backoff_max_s: float = 60.0
    quick_exit_s: float = 30.0
    give_up_after: int = 5

    @classmethod
    def from_environment(cls) -> RestartPolicy:
        limit = os.environ.get("BIOLM_WORKER_GIVE_UP_AFTER", "").strip()
        if limit and not (limit.isdigit() and int(limit) >= 1):
            raise ValueError(f"BIOLM_WORKER_GIVE_UP_AFTER={limit!r} must be a whole number of at least 1")
        return cls(
            backoff_s=_env_float("BIOLM_WORKER_RESTART_BACKOFF_S", cls.backoff_s),
            backoff_max_s=_env_float("BIOLM_WORKER_RESTART_MAX_S", cls.backoff_max_s),
            quick_exit_s=_env_float("BIOLM_WORKER_QUICK_EXIT_S", cls.quick_exit_s),
            give_up_after=int(limit) if limit else cls.give_up_after,
        )

    def delay_s(self, quick_exits: int) -> float:
        """Seconds to wait before the next start, after ``quick_exits`` quick exits in a row."""
        return min(self.backoff_max_s, self.backoff_s * 2 ** max(0, quick_exits - 1))


@dataclass
class ManagedProcess:
    """One process the supervisor keeps running, and what it knows of its history."""

    name: str
    command: list[str]
    environment: Mapping[str, str] | None = None
    cwd: Path | None = None
    popen_options: Mapping[str, object] = field(default_factory=dict)
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    starts: int = 0
    quick_exits: int = 0
    restart_at: float | None = None
    gave_up: str = ""  # why it is no longer restarted

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


GiveUpCallback = Callable[[ManagedProcess, str], None]


class Supervisor:
    """Runs ``processes`` until told to stop, restarting the ones that die (see the module docstring)."""

    def __init__(
        self,
        processes: list[ManagedProcess],
        policy: RestartPolicy | None = None,
        on_give_up: GiveUpCallback | None = None,
        poll_s: float = 0.25,
    ) -> None:
        self.processes = processes
        self.policy = policy or RestartPolicy.from_environment()
        self.on_give_up = on_give_up
        self.poll_s = poll_s
        self._stop_requests = 0
        # A pipe, not a threading.Event, wakes the loop: Event.set() takes the Event's lock, and a signal
        # handler runs in the main thread between two bytecodes, possibly while that thread holds the same
        # lock inside Event.wait() or clear(); it then waits for itself forever (CPython issue 126434). In
        # CI a supervisor sent SIGTERM hung, most likely this way. os.write on a non-blocking pipe takes no lock.
        self._wake_read, self._wake_write = os.pipe()
        for end in (self._wake_read, self._wake_write):
            os.set_blocking(end, False)

    # -- stopping -------------------------------------------------------------------------------

    def request_stop(self, *_: object) -> None:
        """First call: a warm shutdown (SIGTERM to every child); a second: a cold one (SIGQUIT).

        It only counts the request and wakes the loop, which signals the children: a signal handler
        runs between any two bytecodes, also inside ``_start`` after a child was forked and before
        it was recorded, and a child signalled from there would be missed and waited for forever.
        """
        self._stop_requests += 1
        with contextlib.suppress(BlockingIOError):  # the pipe is full: the loop is woken already
            os.write(self._wake_write, b"\0")

    def _signal_children(self, signum: int) -> None:
        for managed in self.processes:
            if managed.running:
                with contextlib.suppress(ProcessLookupError):
                    managed.process.send_signal(signum)

    @property
    def stopping(self) -> bool:
        return self._stop_requests > 0

    # -- running --------------------------------------------------------------------------------

    def run(self, install_signal_handlers: bool = True) -> int:
        """Supervise until stopped (0 if every child stopped cleanly) or until every child was given up (1)."""
        if install_signal_handlers:
            signal.signal(signal.SIGINT, self.request_stop)
            signal.signal(signal.SIGTERM, self.request_stop)
            dump_stacks_on_signal()
        for managed in self.processes:
            self._start(managed)
        while not self.stopping:
            now = time.monotonic()
            for managed in self.processes:
                if managed.process is not None and managed.process.poll() is not None and not self.stopping:
                    self._exited(managed, now)
                if managed.restart_at is not None and now >= managed.restart_at and not self.stopping:
                    self._start(managed)
            if all(managed.gave_up for managed in self.processes):
                logger.error("every worker process was given up on; stopping")
                return 1
            self._sleep()
        return self._wait_for_children()

    def _sleep(self) -> None:
        """Wait ``poll_s``, or less if a stop is requested meanwhile (a byte in the wake pipe)."""
        readable, _, _ = select.select([self._wake_read], [], [], self.poll_s)
        if readable:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_read, 4096)

    def _start(self, managed: ManagedProcess) -> None:
        managed.restart_at = None
        managed.process = subprocess.Popen(
            managed.command,
            cwd=managed.cwd,
            env=dict(managed.environment) if managed.environment is not None else None,
            **dict(managed.popen_options),
        )
        managed.started_at = time.monotonic()
        managed.starts += 1
        if managed.starts > 1:
            logger.warning("%s restarted (start %d, pid %d)", managed.name, managed.starts, managed.process.pid)

    def _exited(self, managed: ManagedProcess, now: float) -> None:
        code = managed.process.returncode
        ran_s = now - managed.started_at
        managed.process = None
        how = f"{managed.name} {describe_exit(code)} after {ran_s:.1f} s"
        managed.quick_exits = managed.quick_exits + 1 if ran_s < self.policy.quick_exit_s else 0
        if managed.quick_exits >= self.policy.give_up_after:
            managed.gave_up = (
                f"{describe_exit(code)} within {self.policy.quick_exit_s:g} s of starting, "
                f"{managed.quick_exits} times in a row; not restarted (fix the cause, then start the worker again)"
            )
            logger.error("%s: %s", managed.name, managed.gave_up)
            if self.on_give_up is not None:
                try:
                    self.on_give_up(managed, managed.gave_up)
                except Exception:  # reporting is best effort: the log above already says it
                    logger.exception("%s: could not report that it was given up on", managed.name)
            return
        delay = self.policy.delay_s(max(1, managed.quick_exits))
        logger.warning("%s unexpectedly; restarting it in %.1f s", how, delay)
        managed.restart_at = now + delay

    def _wait_for_children(self) -> int:
        self._signal_children(signal.SIGTERM)
        signalled = 1
        codes = []
        for managed in self.processes:
            if managed.process is None:
                continue
            while True:
                try:
                    codes.append(managed.process.wait(timeout=self.poll_s))
                    break
                except subprocess.TimeoutExpired:
                    if self._stop_requests > signalled:  # a second Ctrl-C meanwhile: a cold shutdown
                        self._signal_children(signal.SIGQUIT)
                        signalled = self._stop_requests
        failed = [code for code in codes if code not in (0, -signal.SIGTERM)]
        return 1 if failed else 0
