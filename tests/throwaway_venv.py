"""A throwaway virtualenv that behaves like a real site folder, and pip installs into it.

``pip install --target`` does not process ``.pth`` files, so an editable install there is never
seen; a virtualenv made with ``--without-pip`` is a real site folder (its ``.pth`` files are read
at start-up), and pip (this interpreter's, through ``--python``) installs into it as a plugin author
would. One ``.pth`` line lets it reach the test environment's packages (pluggy, setuptools for
``--no-build-isolation``), and nothing else.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHONPATH = f"{ROOT / 'platform'}:{ROOT}"  # biolm, workers and plugins, as the platform's processes have them


def own_interpreter(directory: Path) -> str:
    """A virtualenv whose site folder reaches this interpreter's packages (a ``.pth`` line), and nothing else."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = directory / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    Path(site, "biolm-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return str(python)


def pip_install(python: str, source: str | Path, editable: bool = False, compat: bool = False, pip: str = "") -> None:
    """pip-install ``source`` into ``python``'s site folder, as ``pip install [-e] SOURCE`` there would.

    ``compat`` asks setuptools for the path-line flavour of an editable install (a ``.pth`` naming
    the source folder) instead of the import-hook flavour (a ``.pth`` importing a finder) that it
    writes for a flat layout by default. ``pip`` is the interpreter that runs pip (this one unless given).
    """
    options = ["--config-settings", "editable_mode=compat"] if compat else []
    command = [pip or sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
               "--no-build-isolation", *options, *(["-e"] if editable else []), str(source)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}")


def platform_on_own_interpreter(tmp_path_factory):
    """A whole platform (web, CPU worker) on a throwaway virtualenv of its own, loading installed plugins, so a
    test can pip-install a plugin into it while it runs; PostgreSQL only (skipped before anything starts).

    A generator for a module-scoped fixture: ``yield from platform_on_own_interpreter(tmp_path_factory)``.
    """
    import os

    import pytest

    from bench.harness import POSTGRES_ONLY, Platform

    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip(POSTGRES_ONLY)  # before starting anything: a whole platform only to skip would waste a minute
    python = own_interpreter(tmp_path_factory.mktemp("venv"))
    running = Platform(tmp_path_factory.mktemp("platform"), timings={"BIOLM_LOAD_ENTRYPOINT_PLUGINS": "1"},
                       python=python)  # fmt: skip
    running.start(datasets=())
    try:
        yield running
    finally:
        running.stop()
