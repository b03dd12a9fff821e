"""The Django SECRET_KEY: given, or generated once and kept, never a public default.

A key in the repository would let anyone forge sessions and password-reset links on every
site that forgot to set one. So a missing key is generated (``secrets.token_urlsafe``) into a
file readable by its owner only, created exclusively so two processes starting together agree
on one key, and read back at every start.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

# The placeholder .env.example ships: a key that is in the repository is no secret.
PLACEHOLDERS = frozenset({"change-me-to-a-long-random-string"})


def secret_key(configured: str | None, path: Path, generate: bool = True, name: str = "SECRET_KEY") -> str:
    """``configured`` (the variable ``name``) when set; else the key stored at ``path``, generated on first use."""
    if configured is not None:
        if not configured.strip():
            raise ImproperlyConfigured(f"{name} is set but blank; set a long random string or unset it")
        if configured.strip() in PLACEHOLDERS:
            raise ImproperlyConfigured(f"{name} is the placeholder from .env.example; set a long random string")
        return configured
    if path.exists():
        stored = path.read_text(encoding="utf-8").strip()
        if not stored:
            raise ImproperlyConfigured(f"{path} holds no key; delete it to generate a new one, or set {name}")
        return stored
    if not generate:
        raise ImproperlyConfigured(f"{name} is not set (and BIOLM_GENERATE_SECRET_KEY=0 forbids generating one)")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process generated it first: use theirs
        return secret_key(None, path, generate, name)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(secrets.token_urlsafe(64) + "\n")
    return path.read_text(encoding="utf-8").strip()
