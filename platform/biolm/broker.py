"""The Celery broker settings the platform and the database-free workers share.

Both sides must agree on the transport: with the embedded filesystem broker of the demo, on the
folders; with Redis, on a visibility timeout longer than any job, so a running task's message
is not handed to a second worker while the first still works on it. And on the GPU task's name.
"""

from __future__ import annotations

import ssl
from pathlib import Path

DEFAULT_URL = "filesystem://"
DEFAULT_VISIBILITY_TIMEOUT_S = 24 * 3600
GPU_TASK = "biolm.worker.run_job"
"""The GPU worker's one task: the platform sends it by this name (it never imports the worker), the worker
registers it under it. Its arguments are the job's id and token; the claim returns the job's spec."""


REDIS_TRANSPORT = "biolm.redis_transport:Transport"
UNACKED_KEYS = {"unacked_key": "unacked", "unacked_index_key": "unacked_index", "unacked_mutex_key": "unacked_mutex"}


def transport(url: str) -> str | None:
    """The kombu transport class for ``url``: biolm's Redis transport for ``redis://`` and ``rediss://`` (a worker
    outlives a Redis restart while it runs a job, :mod:`biolm.redis_transport`), else None: the scheme decides."""
    return REDIS_TRANSPORT if url.startswith(("redis://", "rediss://")) else None


def use_ssl(url: str, ca_file: str = "") -> dict | None:
    """Celery's ``broker_use_ssl`` for ``url``: for ``rediss://``, a server certificate that must verify, against
    ``ca_file`` when one is named (a private CA's), else the system's trusted CAs; None for any other scheme.

    Named here because kombu sets TLS defaults only when it picks the transport itself, and then does not
    verify the server at all (``CERT_NONE``, with a warning): a GPU host would hand its worker secret's jobs
    to whoever answers on the broker's address.
    """
    if not url.startswith("rediss://"):
        return None
    options: dict = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    if ca_file:
        options["ssl_ca_certs"] = ca_file
    return options


def transport_options(
    url: str, var_dir: Path, visibility_timeout_s: int = DEFAULT_VISIBILITY_TIMEOUT_S, holder: str = ""
) -> dict:
    """Kombu's transport options for ``url``; a filesystem broker's folders are created under ``var_dir``.

    A data holder's workers (``holder``) keep the messages they hold unacknowledged under keys named for it
    (``held-<holder>.unacked``), not in the ``unacked`` hash every other worker shares: every Redis key they
    touch then starts ``held-<holder>``, so a Redis user allowed only those keys (docs/operators.md, "Hosting
    gated clinical data") serves them, and the platform's GPU hosts' user, allowed none, never sees their jobs.
    """
    if not url.startswith("filesystem://"):
        options: dict = {"visibility_timeout": visibility_timeout_s}
        if holder:
            prefix = f"held-{holder}."
            options |= {key: prefix + value for key, value in UNACKED_KEYS.items()}
        return options
    root = Path(var_dir) / "celery-broker"
    for sub in ("out", "processed", "control"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(root / "out"),
        "data_folder_out": str(root / "out"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
        "store_processed": False,
    }
