"""Build a throwaway plugin distribution from files and pip-install it into a target directory.

Third-party plugin tests install a real distribution (entry points and all) without touching the
test environment: the target directory goes on ``PYTHONPATH``/``sys.path`` only where a test puts it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"

[project.entry-points.biolm]
{entry_points}
{extra}"""


def write_distribution(
    source: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    entry_points: Mapping[str, str],
    extra: str = "",
) -> Path:
    """Write ``files`` (relative path -> text) and a pyproject declaring ``entry_points`` under ``source``."""
    for relative, text in files.items():
        path = source / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    points = "\n".join(f'{key} = "{value}"' for key, value in entry_points.items())
    (source / "pyproject.toml").write_text(
        PYPROJECT.format(name=name, version=version, entry_points=points, extra=extra), encoding="utf-8"
    )
    return source


def install_distribution(
    source: Path,
    target: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    entry_points: Mapping[str, str],
    extra: str = "",
) -> Path:
    """Write the distribution (:func:`write_distribution`) under ``source``, pip-install it into ``target``."""
    write_distribution(source, name, version, files, entry_points, extra)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return target
