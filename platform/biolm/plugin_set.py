"""Noticing that the installed plugins changed, and bringing a running process up to date with them.

Workers run for weeks; plugins are installed, upgraded and removed meanwhile. A fresh process
(each engine run is one) sees the new set by itself, but a long-lived one does not: the
interpreter read its site folders' ``.pth`` files once, at start-up, so an editable install
(``pip install -e``, what ``startplugin`` suggests) is invisible to it, and modules of an upgraded
plugin stay imported at their old version. The CPU worker that scores predictions would then
fail every job on a new plugin's dataset until someone restarted it.

:func:`fingerprint` summarises the installed plugin set (every ``biolm`` entry point, its
distribution, version and file list); :func:`ensure_current` compares it with the set this
process last loaded and, when it changed, refreshes the process: import caches are invalidated,
``.pth`` files the interpreter has not processed are processed, and the modules of plugins that
changed or went away are dropped so that the next import reads the new code. Collecting
contributions afterwards (:func:`biolm.plugins.collect_contributions`) then sees the new set.
It is cheap enough to call before every job.

No Django here: the platform's workers and the GPU worker's checks share it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import logging
import os
import site
import sys
import threading
from dataclasses import dataclass

from biolm.hookspecs import PROJECT_NAME

logger = logging.getLogger("biolm.plugins")

PROTECTED = frozenset({"biolm", "plugins", "workers"})  # the platform's own packages are never dropped


@dataclass(frozen=True)
class InstalledPlugin:
    """One ``biolm`` entry point as installed now."""

    name: str
    value: str  # "module" or "module:attribute"
    distribution: str
    version: str
    files: str  # a digest of the distribution's RECORD: changes when it is reinstalled

    @property
    def label(self) -> str:
        return f"{self.distribution or self.name} {self.version}".strip()

    @property
    def top_module(self) -> str:
        return self.value.partition(":")[0].partition(".")[0]


def installed() -> dict[str, InstalledPlugin]:
    """Every ``biolm`` entry point installed now, read afresh from the site folders."""
    importlib.invalidate_caches()
    found: dict[str, InstalledPlugin] = {}
    for point in importlib.metadata.entry_points(group=PROJECT_NAME):
        dist = getattr(point, "dist", None)
        record = (dist.read_text("RECORD") or "") if dist is not None else ""
        found[point.name] = InstalledPlugin(
            name=point.name,
            value=point.value,
            distribution=dist.metadata["Name"] if dist is not None else "",
            version=dist.version if dist is not None else "",
            files=hashlib.sha256(record.encode()).hexdigest()[:12],
        )
    return found


def fingerprint(plugins: dict[str, InstalledPlugin] | None = None) -> str:
    """A short digest of the installed plugin set: equal sets, equal fingerprints."""
    plugins = installed() if plugins is None else plugins
    rows = sorted((p.name, p.value, p.distribution, p.version, p.files) for p in plugins.values())
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


_lock = threading.Lock()
_loaded: dict[str, InstalledPlugin] | None = None  # what this process last loaded


def ensure_current() -> list[str]:
    """Refresh this process if the installed plugins changed since it last looked; what changed, in words.

    The first call only records the set (a process that just started already sees it), after
    processing any ``.pth`` file installed since the interpreter started.
    """
    global _loaded
    with _lock:
        now = installed()
        if _loaded is None:
            _process_new_path_files()
            _loaded = installed()
            return []
        if fingerprint(now) == fingerprint(_loaded):
            return []
        changes = describe_changes(_loaded, now)
        _process_new_path_files()
        for stale in _changed(_loaded, now):
            _drop_modules(stale.top_module)
        importlib.invalidate_caches()
        _loaded = installed()
        logger.warning("the installed plugins changed (%s): reloaded them", "; ".join(changes))
        return changes


def describe_changes(before: dict[str, InstalledPlugin], after: dict[str, InstalledPlugin]) -> list[str]:
    """``biolm-acme 0.2 installed``, ``biolm-acme 0.2 -> 0.3``, ``biolm-acme 0.2 removed``, ``... reinstalled``."""
    changes = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old is None:
            changes.append(f"{new.label} installed")
        elif new is None:
            changes.append(f"{old.label} removed")
        elif old.version != new.version:
            changes.append(f"{old.label} -> {new.version}")
        elif old != new:
            changes.append(f"{new.label} reinstalled")
    return changes


def _changed(before: dict[str, InstalledPlugin], after: dict[str, InstalledPlugin]) -> list[InstalledPlugin]:
    return [old for name, old in before.items() if after.get(name) != old]


def _drop_modules(top: str) -> None:
    """Forget ``top`` and its submodules, so that the next import reads the installed code."""
    if not top or top in PROTECTED:
        return
    for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
        del sys.modules[name]


def site_folders() -> list[str]:
    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user:
        folders.append(user)
    return [folder for folder in folders if os.path.isdir(folder)]


def _process_new_path_files() -> None:
    """Do what start-up does for each ``.pth`` file, for the lines this process has not done yet.

    A path line adds its folder to ``sys.path`` unless it is there; an ``import`` line (an
    editable install's finder) runs unless the module it imports is already imported.
    """
    for folder in site_folders():
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".pth"):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    lines = handle.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                _process_line(folder, name, line)


def _process_line(folder: str, name: str, line: str) -> None:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return
    if stripped.startswith(("import ", "import\t")):
        module = stripped.split(None, 1)[1].split(";")[0].split(",")[0].strip()
        if module in sys.modules:
            return
        try:
            exec(stripped)  # what site.addpackage does with the same line at start-up
        except Exception as exc:
            logger.warning("%s in %s: %s", name, folder, exc)
        return
    path = os.path.abspath(os.path.join(folder, stripped))
    if os.path.exists(path) and path not in sys.path:
        sys.path.append(path)


def compare(required: dict[str, str], here: dict[str, InstalledPlugin] | None = None) -> tuple[list[str], list[str]]:
    """Which of a job's plugins (``{name: "distribution version"}``) are missing here, and which differ in version."""
    here = installed() if here is None else here
    missing = [f"{name} ({label})" for name, label in sorted(required.items()) if name not in here]
    differing = [
        f"{name}: the job was submitted with {label}, this worker has {here[name].label}"
        for name, label in sorted(required.items())
        if name in here and here[name].label != label
    ]
    return missing, differing


def lacking_message(missing: list[str], worker: str) -> str:
    """What a worker says when it cannot run a job for want of plugins."""
    return (
        f"worker {worker} lacks the plugin{'s' if len(missing) > 1 else ''} {', '.join(missing)} that this job "
        "needs: install it where the workers run (they load newly installed plugins before each job, "
        "no restart needed); the job is retried"
    )
