"""The static files' storage: the collected, hashed and compressed files once ``collectstatic`` has run, and the
source files under their own names until then, instead of a 500 on every page.

Without DEBUG, pages name each stylesheet and script through the manifest that ``collectstatic`` writes
(``site.3f2a9c1b7e4d.css``, gzipped beside it, cached for ten years as immutable). A site started
before anyone collected (``manage.py runserver`` on a fresh checkout) had no manifest, and
``{% static %}`` raised "Missing staticfiles manifest entry" on every page. Now such a site names the
files by their own names, WhiteNoise serves them from the apps' folders (``WHITENOISE_USE_FINDERS``,
set in the settings when no manifest is there), and the system check ``biolm.W001`` says at start-up
which command makes them hashed and compressed. The choice is made once, when the process starts: a
manifest written by another process later is read at the next start, as after every upgrade.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class CollectedOrSourceStaticFiles(CompressedManifestStaticFilesStorage):
    """The manifest's hashed names when this process found a manifest, else each file's own name."""

    def stored_name(self, name: str) -> str:
        if not self.hashed_files:  # never collected when this process started (collectstatic fills it in-process)
            return name
        return super().stored_name(name)
