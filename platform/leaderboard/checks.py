"""A system check for the collected static files: without DEBUG every page names its CSS and scripts by the
hashed names that ``collectstatic`` writes to a manifest. A site started before collecting serves the source
files under their own names instead (:mod:`biolm_site.static_storage`), uncompressed and briefly cached; the
warning says so when the process starts, with the command to run."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core import checks
from django.core.files.storage import storages

MANIFEST_STORAGE = "ManifestFilesMixin"


def uses_manifest() -> bool:
    """Whether static files are named from a manifest (whitenoise's or Django's manifest storage)."""
    return any(cls.__name__ == MANIFEST_STORAGE for cls in type(storages["staticfiles"]).__mro__)


def static_manifest_collected(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A warning when the manifest storage is on and STATIC_ROOT holds no manifest yet: a warning, not an error,
    since an error would stop every command, ``collectstatic`` itself included."""
    if not uses_manifest():
        return []
    storage = storages["staticfiles"]
    manifest = Path(settings.STATIC_ROOT) / storage.manifest_name
    if manifest.is_file():
        return []
    return [
        checks.Warning(
            f"no static files manifest at {manifest}: pages name the source files, unhashed and uncompressed, "
            "until the static files are collected",
            hint="run `python manage.py collectstatic --noinput` (make demo and the Dockerfile do) after every upgrade",
            id="biolm.W001",
        )
    ]
