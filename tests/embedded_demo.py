"""A platform on its embedded defaults in a folder of a test's own, driven through ``manage.py`` as ``make demo`` is.

tests/test_demo_loop.py and tests/browser/test_submitters_web.py run ``manage.py demo`` this way: a
SQLite file and the filesystem broker under the folder, no third-party plugins, nothing from a hub,
and none of the caller's own platform variables (``DATABASE_URL`` of CI's PostgreSQL pass included).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KEPT = ("PATH", "HOME", "LANG", "TMPDIR", "STATIC_ROOT")  # STATIC_ROOT: the test session's collected files


def skip_on_postgres() -> None:
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("the demo runs on its embedded defaults (SQLite, filesystem broker): CI's second pass")


def environment(folder: Path, **extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in KEPT} | {
        "BIOLM_VAR_DIR": str(folder / "var"),
        "DATABASE_URL": f"sqlite:///{folder / 'demo.sqlite3'}",
        "HF_HUB_OFFLINE": "1",
        "BIOLM_LOAD_ENTRYPOINT_PLUGINS": "0",
        **extra,
    }


def manage_in(env: dict[str, str], timeout_s: float = 900) -> Callable[..., str]:
    """``manage(*arguments)``: runs ``manage.py`` in ``env``, asserts it succeeded, and returns its stdout."""

    def manage(*arguments: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=timeout_s)  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return result.stdout

    return manage


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
