"""``collectstatic`` once per test run, as a deployment runs it before serving (tests/conftest.py).

Pages name their scripts and stylesheets through the manifest storage (settings.STORAGES), which
knows a file only once ``collectstatic`` has hashed it into STATIC_ROOT: without it every page that
uses ``{% static %}`` fails. So the test session collects first, into the settings' own STATIC_ROOT,
and the tests see the same hashed, compressed files that production serves.

Two pytest processes (xdist) share one STATIC_ROOT, and one may already serve pages while the
other starts: collecting again would rewrite the manifest under its feet. So the collection runs
under a file lock, and is skipped when STATIC_ROOT already holds the collection of exactly these
source files (a fingerprint of their names, sizes and modification times, written beside the
manifest once collectstatic has finished).
"""

from __future__ import annotations

import fcntl
import hashlib
from pathlib import Path

FINGERPRINT = ".collected-sources"
LOCK = ".collectstatic.lock"


def sources_fingerprint() -> str:
    """A hash of every file the finders hand collectstatic (its name, size and mtime) and of the storage backend."""
    from django.apps import apps
    from django.conf import settings
    from django.contrib.staticfiles.finders import get_finders

    ignore = apps.get_app_config("staticfiles").ignore_patterns
    digest = hashlib.sha256(settings.STORAGES["staticfiles"]["BACKEND"].encode())
    entries = []
    for finder in get_finders():
        for path, storage in finder.list(ignore):
            stat = Path(storage.path(path)).stat()
            entries.append(f"{getattr(storage, 'prefix', None) or ''}/{path}\t{stat.st_size}\t{stat.st_mtime_ns}")
    for entry in sorted(entries):
        digest.update(entry.encode() + b"\n")
    return digest.hexdigest()


def collect_static_once() -> bool:
    """Run ``collectstatic`` into STATIC_ROOT unless it already holds these sources; True when it ran."""
    from django.conf import settings
    from django.contrib.staticfiles.storage import staticfiles_storage
    from django.core.management import call_command
    from django.utils.functional import empty

    root = Path(settings.STATIC_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        fingerprint = sources_fingerprint()
        marker = root / FINGERPRINT
        if marker.is_file() and marker.read_text() == fingerprint and (root / "staticfiles.json").is_file():
            return False
        call_command("collectstatic", interactive=False, verbosity=0)
        marker.write_text(fingerprint)
    staticfiles_storage._wrapped = empty  # a storage made before now read an empty manifest: make it again
    return True
