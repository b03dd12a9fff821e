"""The checkpoint checks run in a threaded web server (the demo's), so they must hold when threads race."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Eight threads check one config at the same instant, in a fresh interpreter where transformers
# has not resolved a name yet: the moment two first submissions reach a fresh web process.
RACE = textwrap.dedent(
    """
    import sys, threading
    sys.path[:0] = ["platform", "."]
    from biolm.intake_limits import CheckpointLimits
    from workers.engine import checkpoint_checks
    raw = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
           "intermediate_size": 64, "vocab_size": 100}
    barrier, errors = threading.Barrier(8), []
    def check():
        barrier.wait()
        try:
            checkpoint_checks._build_config(raw, CheckpointLimits(), {"bert"})
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=check) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(errors[0] if errors else "ok")
    """
)


@pytest.mark.slow
def test_eight_threads_checking_their_first_configs_at_once_all_get_transformers_whole():
    # Without the lock around the first import, two of three fresh interpreters failed here
    # with "cannot import name 'CONFIG_MAPPING' from 'transformers'".
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", RACE], cwd=ROOT, capture_output=True, text=True, timeout=300,
                              env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})  # fmt: skip
        assert done.stdout.strip().splitlines()[-1:] == ["ok"], done.stdout + done.stderr
