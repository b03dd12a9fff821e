"""Serve plotly.js from the installed ``plotly`` package as the static file ``vendor/plotly.min.js``.

The leaderboard's charts must draw on hospital networks that block CDNs, so the platform serves
plotly.js itself. The PyPI package ``plotly`` already ships the exact plotly.js build it writes
figures for (``plotly/package_data/plotly.min.js``); a finder hands that file to staticfiles instead
of a 4.8 MB copy committed to the repository, which would drift from the Python package's version.
Being a finder, it serves the file through every path staticfiles has: ``findstatic``, the dev
server, WhiteNoise's ``WHITENOISE_USE_FINDERS`` and ``collectstatic`` (which then compresses it).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.contrib.staticfiles import finders, utils
from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_DIR = "vendor"
PLOTLY_FILE = "plotly.min.js"
PLOTLY_STATIC_PATH = f"{PLOTLY_STATIC_DIR}/{PLOTLY_FILE}"


def plotly_package_data() -> Path | None:
    """The ``package_data`` folder of the installed plotly, found without importing plotly (it is large)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "package_data"


class _OneFileStorage(FileSystemStorage):
    """plotly's ``package_data`` folder, of which only plotly.min.js is listed (not its widget bundle
    and datasets: ``collectstatic`` would publish them otherwise)."""

    prefix = PLOTLY_STATIC_DIR  # collectstatic and WhiteNoise put a storage's files under its prefix


class PlotlyFinder(BaseFinder):
    """Finds ``vendor/plotly.min.js`` in the installed ``plotly`` package, and nothing else."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.location = plotly_package_data()
        self.storage = _OneFileStorage(location=self.location) if self.location else None

    def _file(self) -> Path | None:
        if self.location is None:
            return None
        path = self.location / PLOTLY_FILE
        return path if path.is_file() else None

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        """Say so at startup (``manage.py check``) when the charts would have no plotly.js to load."""
        if self._file() is None:
            return [
                Error(
                    f"The plotly package's {PLOTLY_FILE} is not installed: leaderboard charts cannot be drawn.",
                    hint="pip install -r requirements.lock (plotly is a dependency of biolm).",
                    obj="biolm_site.static_finders.PlotlyFinder",
                    id="biolm_site.E001",
                )
            ]
        return []

    # RemovedInDjango61Warning: Django 6.1 drops the `all` keyword; then ``find(self, path, find_all=False)``.
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:
        """The absolute path of ``vendor/plotly.min.js`` (a one-item list when ``find_all``), else no match."""
        if kwargs:
            find_all = self._check_deprecated_find_param(find_all=find_all, **kwargs)
        if self.location is not None and str(self.location) not in finders.searched_locations:
            finders.searched_locations.append(str(self.location))  # what `findstatic -v 2` reports
        found = self._file()
        match = str(found) if found is not None and path.replace("\\", "/") == PLOTLY_STATIC_PATH else None
        if find_all:
            return [match] if match else []
        return match or []

    def list(self, ignore_patterns: list[str] | None) -> Iterator[tuple[str, FileSystemStorage]]:
        """``plotly.min.js`` with the storage whose prefix puts it at ``vendor/``, unless it is ignored."""
        if self._file() is None or self.storage is None:
            return
        if ignore_patterns and utils.matches_patterns(PLOTLY_FILE, ignore_patterns):
            return
        yield PLOTLY_FILE, self.storage
