"""The supervisor that keeps worker processes alive, with real child processes (no Celery needed).

A killed process comes back after its back-off, one that keeps dying at start-up is given up on
and reported once, and SIGTERM to the supervisor stops every child with a warm shutdown.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from biolm.engine_exits import describe_exit
from workers.runner.processes import ManagedProcess, RestartPolicy, Supervisor

PYTHON = sys.executable
ROOT = Path(__file__).resolve().parents[1]


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def sleeper(pids: Path) -> list[str]:
    """A child that records its pid, then sleeps until it is killed."""
    code = f"import os, time; open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n'); time.sleep(120)"
    return [PYTHON, "-c", code]


def started_pids(pids: Path) -> list[int]:
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def in_background(supervisor: Supervisor) -> tuple[threading.Thread, list[int]]:
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(supervisor.run(install_signal_handlers=False)))
    thread.start()
    return thread, result


def test_a_worker_killed_by_sigkill_is_restarted_after_its_backoff_and_the_log_names_the_signal(tmp_path, caplog):
    pids = tmp_path / "pids"
    policy = RestartPolicy(backoff_s=0.3, backoff_max_s=5, quick_exit_s=0.5, give_up_after=3)
    supervisor = Supervisor([ManagedProcess("gpu0@test", sleeper(pids))], policy, poll_s=0.05)
    caplog.set_level(logging.WARNING, logger="biolm.worker")
    thread, result = in_background(supervisor)
    try:
        (first,) = wait_until(lambda: started_pids(pids), 20, "the first start")
        time.sleep(0.8)  # longer than quick_exit_s: a crash in service, not at start-up
        os.kill(first, signal.SIGKILL)
        killed_at = time.monotonic()
        second = wait_until(lambda: started_pids(pids)[1:], 20, "the restart")[0]
        assert time.monotonic() - killed_at >= 0.3  # the back-off was waited out
        assert second != first
        assert "gpu0@test was killed by SIGKILL after" in caplog.text and "restarting it in 0.3 s" in caplog.text
    finally:
        supervisor.request_stop()
        thread.join(30)
    assert result == [0]
    assert len(started_pids(pids)) == 2  # stopping restarted nothing


def test_a_worker_that_dies_at_start_up_is_given_up_on_and_reported_once(tmp_path, caplog):
    starts = tmp_path / "starts"
    crash = [PYTHON, "-c", f"open({str(starts)!r}, 'a').write('x'); raise SystemExit(3)"]
    reports: list[tuple[str, str]] = []
    policy = RestartPolicy(backoff_s=0.05, backoff_max_s=0.2, quick_exit_s=30, give_up_after=3)
    supervisor = Supervisor(
        [ManagedProcess("gpu0@test", crash)],
        policy,
        on_give_up=lambda m, why: reports.append((m.name, why)),
        poll_s=0.02,
    )
    caplog.set_level(logging.WARNING, logger="biolm.worker")
    started = time.monotonic()
    assert supervisor.run(install_signal_handlers=False) == 1  # nothing left to supervise
    assert time.monotonic() - started < 20
    assert starts.read_text() == "xxx"  # three starts, then no more
    ((name, why),) = reports
    assert name == "gpu0@test"
    assert "exited with status 3 within 30 s of starting, 3 times in a row; not restarted" in why
    assert "every worker process was given up on" in caplog.text


def test_a_failing_worker_does_not_stop_the_others(tmp_path):
    pids = tmp_path / "pids"
    policy = RestartPolicy(backoff_s=0.05, backoff_max_s=0.1, quick_exit_s=30, give_up_after=2)
    crash = ManagedProcess("gpu1@test", [PYTHON, "-c", "raise SystemExit(1)"])
    healthy = ManagedProcess("gpu0@test", sleeper(pids))
    supervisor = Supervisor([healthy, crash], policy, poll_s=0.02)
    thread, result = in_background(supervisor)
    try:
        wait_until(lambda: crash.gave_up, 20, "the crashing worker to be given up on")
        wait_until(lambda: started_pids(pids), 20, "the healthy worker to start")
        time.sleep(0.3)  # and it is not started again
        assert thread.is_alive() and healthy.running and len(started_pids(pids)) == 1
    finally:
        supervisor.request_stop()
        thread.join(30)
    assert result == [0]


def test_the_backoff_doubles_with_each_quick_exit_up_to_its_limit():
    policy = RestartPolicy(backoff_s=1, backoff_max_s=10, quick_exit_s=30, give_up_after=9)
    assert [policy.delay_s(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_restart_settings_are_read_from_the_environment_and_bad_values_name_the_variable(monkeypatch):
    monkeypatch.setenv("BIOLM_WORKER_RESTART_BACKOFF_S", "2.5")
    monkeypatch.setenv("BIOLM_WORKER_GIVE_UP_AFTER", "7")
    policy = RestartPolicy.from_environment()
    assert (policy.backoff_s, policy.give_up_after, policy.quick_exit_s) == (2.5, 7, 30.0)
    monkeypatch.setenv("BIOLM_WORKER_QUICK_EXIT_S", "soon")
    with pytest.raises(ValueError, match="BIOLM_WORKER_QUICK_EXIT_S='soon'"):
        RestartPolicy.from_environment()
    monkeypatch.setenv("BIOLM_WORKER_QUICK_EXIT_S", "30")
    monkeypatch.setenv("BIOLM_WORKER_GIVE_UP_AFTER", "0")
    with pytest.raises(ValueError, match="BIOLM_WORKER_GIVE_UP_AFTER"):
        RestartPolicy.from_environment()


def test_exits_are_described_by_status_or_signal():
    assert describe_exit(1) == "exited with status 1"
    assert describe_exit(-signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_exit(-signal.SIGSEGV) == "was killed by SIGSEGV"


def test_sigterm_to_the_supervisor_stops_every_child_with_a_warm_shutdown_and_restarts_none(tmp_path):
    """The supervisor as its own process, as ``python -m workers.runner`` runs it."""
    marks = tmp_path / "marks"
    child = textwrap.dedent(f"""
        import os, signal, sys, time
        def warm(*_):
            open({str(marks)!r}, "a").write(f"warm {{os.getpid()}}\\n")
            sys.exit(0)
        signal.signal(signal.SIGTERM, warm)
        open({str(marks)!r}, "a").write(f"started {{os.getpid()}}\\n")
        while True:
            time.sleep(0.1)
    """)
    supervisor = textwrap.dedent(f"""
        import sys
        from workers.runner.processes import ManagedProcess, RestartPolicy, Supervisor
        children = [ManagedProcess(f"gpu{{i}}@test", [sys.executable, "-c", {child!r}]) for i in range(2)]
        sys.exit(Supervisor(children, RestartPolicy(backoff_s=0.05), poll_s=0.05).run())
    """)
    process = subprocess.Popen([PYTHON, "-c", supervisor], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        wait_until(lambda: marks.exists() and marks.read_text().count("started") == 2, 30, "both children")
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the supervisor did not stop within 30 s of SIGTERM; its children wrote {marks.read_text()!r}")
        assert code == 0
    finally:
        if process.poll() is None:
            process.kill()
    lines = marks.read_text().splitlines()
    assert sorted(line.split()[0] for line in lines) == ["started", "started", "warm", "warm"]


def test_a_stop_requested_while_a_child_is_being_started_reaches_that_child_too(tmp_path, monkeypatch):
    """SIGTERM's handler can run inside ``_start``, after the fork and before the child is recorded."""
    pids = tmp_path / "pids"
    supervisor = Supervisor([ManagedProcess("gpu0@test", sleeper(pids))], RestartPolicy(backoff_s=0.05), poll_s=0.05)
    forked: list[subprocess.Popen] = []
    popen = subprocess.Popen

    def fork_then_stop(*arguments, **options):
        forked.append(popen(*arguments, **options))
        supervisor.request_stop()  # where the handler ran: the child is forked, not yet the supervisor's
        return forked[-1]

    monkeypatch.setattr(subprocess, "Popen", fork_then_stop)
    thread, result = in_background(supervisor)
    try:
        thread.join(30)
        assert not thread.is_alive(), "the supervisor waits for a child it never asked to stop"
        assert result == [0] and forked[0].returncode == -signal.SIGTERM
    finally:
        for child in forked:
            if child.poll() is None:
                child.kill()


def test_a_stop_request_takes_no_lock_so_a_signal_handler_cannot_hang_the_loop():
    """A handler runs between two bytecodes of the main thread, perhaps while that thread holds the lock the
    handler would take (a threading.Event's, inside its wait): it would then wait for itself forever."""
    supervisor = Supervisor([], RestartPolicy(), poll_s=5.0)
    locks = []

    def watch(frame, event, called) -> None:
        if event == "c_call" and "lock" in getattr(called, "__qualname__", "").lower():
            locks.append(called.__qualname__)

    sys.setprofile(watch)
    try:
        supervisor.request_stop()
    finally:
        sys.setprofile(None)
    assert locks == [] and supervisor.stopping
    started = time.monotonic()
    supervisor._sleep()  # woken by the request at once, not after poll_s
    assert time.monotonic() - started < 1.0


def test_sigusr2_writes_a_stuck_workers_stacks_to_its_log_and_leaves_it_running(tmp_path):
    """``kill -USR2``: where a worker that will not stop is stuck, even inside a blocking call."""
    code = textwrap.dedent("""
        import socket
        from workers.runner.processes import dump_stacks_on_signal
        dump_stacks_on_signal()
        left, right = socket.socketpair()
        def waits_for_the_broker():
            print("ready", flush=True)
            left.recv(1)  # blocked in a system call: faulthandler answers from C, without the interpreter
        waits_for_the_broker()
    """)
    log = tmp_path / "worker.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([PYTHON, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=sink,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        assert process.stdout.readline().strip() == b"ready"
        process.send_signal(signal.SIGUSR2)
        wait_until(lambda: "waits_for_the_broker" in log.read_text(), 10, "the stack in the log")
        assert process.poll() is None  # still running: asking costs nothing
    finally:
        process.kill()
        process.wait()
    assert "Current thread" in log.read_text() or "Thread 0x" in log.read_text()


def test_a_worker_whose_standard_error_is_closed_still_starts_without_the_stack_dump(monkeypatch, caplog):
    from workers.runner.processes import dump_stacks_on_signal

    monkeypatch.setattr(sys, "stderr", None)  # a daemon started with its standard error closed
    with caplog.at_level(logging.WARNING, logger="biolm.worker"):
        dump_stacks_on_signal()
    assert "kill -USR2 will not show this process's stacks" in caplog.text
