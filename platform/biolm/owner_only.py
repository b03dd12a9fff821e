"""Files the platform creates are readable by its own user only: umask 077 in every process it starts.

``var/`` holds what no other user of the machine may read: the SQLite database (sessions, API tokens,
job tokens), the generated secret key and worker secret, the logs of ``make demo``, uploads being
checked in ``var/tmp`` and the artefact store in ``var/media`` (private models' checkpoints). Under the
usual umask 022 each of these is created world-readable on a shared host. So every entry point (``manage.py``,
the WSGI and ASGI applications, the Celery apps, ``python -m workers.runner`` and ``python -m workers.engine``)
calls :func:`owner_only_files` before it creates anything, and the processes it starts inherit the mask.

It lives in the Django-free core so that the GPU workers and the engine, which import no Django, use
the same function. Files made before this (an older ``var/``) keep their modes: ``chmod -R go-rwx var``.
"""

from __future__ import annotations

import os

OWNER_ONLY_UMASK = 0o077  # no group or other bits: files 0600, folders 0700


def owner_only_files() -> int:
    """Set the process's umask to 077 (inherited by the processes it starts); the previous umask."""
    return os.umask(OWNER_ONLY_UMASK)
