"""API tokens: what a script presents instead of a password to submit through ``/api/v1/submissions``.

A token is shown once, when it is created, and only its SHA-256 is kept: a leaked database
gives nobody a usable token. Its first characters (``prefix``) stay readable so that its owner
can tell their tokens apart on the profile page. A revoked token is kept (with when it was
revoked) rather than deleted, so the profile can say why a script stopped working.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What its owner calls it, e.g. 'lab cluster'.")
    prefix = models.CharField(max_length=12, help_text="The token's first characters, to tell tokens apart.")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token; the token is not kept.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
