"""The fault tests' harness: a process that will not stop is killed and its failure says where it was stuck.

A worker left running after a failed stop would hold its queue for the tests after it, so one hang
would fail them too, each for a reason that is not theirs.
"""

from __future__ import annotations

import signal
import textwrap

import pytest

from bench.harness import Platform, wait_until


def test_a_worker_that_ignores_sigterm_is_killed_and_the_failure_shows_its_stack(tmp_path):
    platform = Platform(tmp_path)  # nothing started: only its processes are used
    code = textwrap.dedent("""
        import signal, time
        from workers.runner.processes import dump_stacks_on_signal
        dump_stacks_on_signal()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        def never_stops():
            print("ready", flush=True)
            while True:
                time.sleep(0.05)
        never_stops()
    """)
    process = platform.spawn("stubborn", [platform.python, "-c", code])
    wait_until(lambda: "ready" in platform.log("stubborn"), 30, "the worker to start", interval=0.05)
    with pytest.raises(AssertionError) as failure:
        platform.kill("stubborn", signal.SIGTERM, grace_s=1)
    assert process.poll() == -signal.SIGKILL  # killed: nothing of it is left to hold a queue
    message = str(failure.value)
    assert "stubborn did not exit within 1 s of SIGTERM; killed." in message
    assert "workers.runner" in message and " state " in message  # its processes, with their state
    assert "never_stops" in message  # its stack, from its log
