"""Where the tests find the official files: the datasets' own files and the papers that publish them.

Neither is in the repository. The dataset files are looked for in the folder that ``BIOLM_DATA_DIR``
names, else in ``../shared/data`` beside the checkout (the default of the platform's settings and of
the engine, so a test and the code it runs look in the same place); the papers in the folder that
``BIOLM_PAPERS_DIR`` names, else in ``../shared/seeds``. A test asks for a path with :func:`official`
or :func:`paper` (or the ``official_data`` fixture of conftest.py) when it runs: an absent path skips
the test, with a reason that names the path and the variable, instead of failing it. Such tests carry
the ``official_data`` marker (``pytest -m official_data`` selects them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the checkout
DATA_VARIABLE = "BIOLM_DATA_DIR"
PAPERS_VARIABLE = "BIOLM_PAPERS_DIR"
HINTS = {
    DATA_VARIABLE: "set BIOLM_DATA_DIR to the folder holding the official dataset files",
    PAPERS_VARIABLE: "set BIOLM_PAPERS_DIR to the folder holding the papers' texts",
}


def data_dir() -> Path:
    """The official data folder: ``BIOLM_DATA_DIR``, else ``../shared/data`` beside the checkout."""
    return Path(os.environ.get(DATA_VARIABLE, ROOT.parent / "shared" / "data"))


def papers_dir() -> Path:
    """The papers' folder: ``BIOLM_PAPERS_DIR``, else ``../shared/seeds`` beside the checkout."""
    return Path(os.environ.get(PAPERS_VARIABLE, ROOT.parent / "shared" / "seeds"))


def require(path: Path | str, variable: str = DATA_VARIABLE) -> Path:
    """``path`` if it exists; otherwise the running test is skipped, naming ``path`` and ``variable``."""
    path = Path(path)
    if not path.exists():
        pytest.skip(f"official {'data' if variable == DATA_VARIABLE else 'paper'} missing: {path} ({HINTS[variable]})")
    return path


def official(*parts: str) -> Path:
    """``parts`` under the official data folder (a file or a folder); the test is skipped if it is absent."""
    return require(data_dir().joinpath(*parts), DATA_VARIABLE)


def paper(title: str) -> Path:
    """The text of the paper titled ``title`` in the papers' folder (found by its opening lines: the
    folder's file names are a storage detail that no tracked file names); the test is skipped if absent."""
    folder = require(papers_dir(), PAPERS_VARIABLE)
    for path in sorted(folder.iterdir()):
        if path.suffix in (".txt", ".md") and path.is_file():
            with path.open(encoding="utf-8", errors="replace") as handle:
                if title in handle.read(4096):
                    return path
    return require(folder / f"<the paper titled {title!r}>", PAPERS_VARIABLE)


def data_env(**extra: str) -> dict[str, str]:
    """The environment for a child process (engine CLI, manage.py) that reads the official files itself:
    this process's, with ``BIOLM_DATA_DIR`` set to the folder the skip was decided on."""
    return {**os.environ, DATA_VARIABLE: str(data_dir()), **extra}


class OfficialData:
    """What the ``official_data`` fixture gives: ``official_data("HoC", "blurb", "train.tsv")`` is
    :func:`official`, ``.paper(title)`` :func:`paper`, ``.root`` the folder, ``.env()`` :func:`data_env`."""

    def __call__(self, *parts: str) -> Path:
        return official(*parts)

    @property
    def root(self) -> Path:
        return data_dir()

    @staticmethod
    def paper(title: str) -> Path:
        return paper(title)

    @staticmethod
    def env(**extra: str) -> dict[str, str]:
        return data_env(**extra)
