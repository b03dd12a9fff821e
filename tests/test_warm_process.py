"""``biolm.warm_process``: ``python -m MODULE`` forked from a server that imported it once, with the exit
status, output and environment a cold ``python -m`` would have, and a time limit that kills the child."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from biolm import warm_process

PROBE_MAIN = """
import os, signal, sys, time
from pathlib import Path

import warmprobe.heavy  # what the server preloads: imported once, however many children run

command = sys.argv[1]
print("argv", sys.argv[1:], "pid", os.getpid())
if command == "exit":
    sys.exit(int(sys.argv[2]))
if command == "raise":
    raise KeyError("the probe's own failure")
if command == "env":
    print("SECRET" in os.environ, os.environ.get("GIVEN"))
if command == "sleep":
    Path(sys.argv[2]).write_text(str(os.getpid()))
    time.sleep(60)
if command == "signal":
    os.kill(os.getpid(), signal.SIGTERM)
"""


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A package ``warmprobe`` whose ``heavy`` module counts its imports in a file."""
    package = tmp_path / "code" / "warmprobe"
    package.mkdir(parents=True)
    counter = tmp_path / "imports.txt"
    (package / "__init__.py").write_text("")
    (package / "heavy.py").write_text(f"with open({str(counter)!r}, 'a') as f:\n    f.write('imported\\n')\n")
    (package / "__main__.py").write_text(textwrap.dedent(PROBE_MAIN))
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    monkeypatch.setenv("SECRET", "the platform's")
    yield counter
    warm_process.stop_servers()


def run(tmp_path: Path, *arguments: str, timeout_s: float | None = 60, code: str = "") -> tuple[int, str]:
    log = tmp_path / f"log-{time.monotonic_ns()}.txt"
    environment = {name: value for name, value in os.environ.items() if name != "SECRET"} | {"GIVEN": "yes"}
    status = warm_process.run("warmprobe", arguments, log, preload=["warmprobe.heavy"], environment=environment,
                              timeout_s=timeout_s, code=code)  # fmt: skip
    return status, log.read_text(encoding="utf-8") if log.exists() else ""


def test_children_fork_from_one_server_that_imported_the_module_once(probe, tmp_path):
    first, second = run(tmp_path, "exit", "0"), run(tmp_path, "exit", "0")
    assert first[0] == second[0] == 0
    assert probe.read_text().splitlines() == ["imported"]  # the server's import; neither child imported again
    pids = {line.split("pid ")[1] for line in (first[1], second[1])}
    assert len(pids) == 2 and str(os.getpid()) not in pids  # each run a process of its own
    assert "warmprobe" not in sys.modules  # nor did the caller import it


def test_the_exit_status_and_output_are_those_of_python_dash_m(probe, tmp_path):
    assert run(tmp_path, "exit", "3")[0] == 3
    status, log = run(tmp_path, "raise")
    assert status == 1 and "Traceback" in log and 'KeyError: "the probe\'s own failure"' in log
    assert run(tmp_path, "signal")[0] == -15


def test_the_child_sees_the_environment_given_and_not_the_callers_secrets(probe, tmp_path):
    status, log = run(tmp_path, "env")
    assert status == 0 and "False yes" in log


def test_a_child_past_its_time_limit_is_killed_and_the_server_serves_the_next(probe, tmp_path):
    marker = tmp_path / "sleeper.pid"
    with pytest.raises(warm_process.Stopped, match="ran past 3 s"):
        run(tmp_path, "sleep", str(marker), timeout_s=3)
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped by the server
    assert run(tmp_path, "exit", "0")[0] == 0


def test_a_server_that_died_is_replaced_on_the_next_run(probe, tmp_path):
    assert run(tmp_path, "exit", "0")[0] == 0
    (server,) = warm_process._servers.values()
    server.process.kill()
    server.process.wait()
    assert run(tmp_path, "exit", "0")[0] == 0
    assert probe.read_text().splitlines() == ["imported", "imported"]  # a second server, importing once more


def test_other_installed_code_gets_a_fresh_server_which_imports_it_anew(probe, tmp_path):
    assert run(tmp_path, "exit", "0", code="plugins-v1")[0] == 0
    assert run(tmp_path, "exit", "0", code="plugins-v1")[0] == 0
    assert probe.read_text().splitlines() == ["imported"]
    assert run(tmp_path, "exit", "0", code="plugins-v2")[0] == 0  # a plugin was upgraded: what it imported is stale
    assert probe.read_text().splitlines() == ["imported", "imported"]
    assert len(warm_process._servers) == 1  # the old server was ended, not kept beside the new one


def test_a_child_that_ends_before_its_caller_reads_the_pid_is_not_waited_for_until_the_time_limit(
    probe, tmp_path, monkeypatch
):
    """Under load the server's two answers (the pid, then the status) reach the pipe before the caller reads
    the first: reading the pid must not swallow the status, or the wait for it sees nothing and times out."""
    answer = warm_process._Server._answer

    def slow_reader(server):
        time.sleep(1)  # the child, forked from a warm server, has long exited by now
        return answer(server)

    monkeypatch.setattr(warm_process._Server, "_answer", slow_reader)
    started = time.monotonic()
    assert run(tmp_path, "exit", "0", timeout_s=20)[0] == 0
    assert time.monotonic() - started < 10
