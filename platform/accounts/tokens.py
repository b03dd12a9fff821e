"""Create, check and revoke API tokens (:class:`accounts.models.ApiToken`).

Tokens are 256 random bits, prefixed ``biolm_`` so that secret scanners and people recognise
them; only their SHA-256 is stored. SHA-256 rather than a slow password hash is right here: a
token has full entropy, so there is nothing to guess, and every API call checks one.
"""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from accounts.models import ApiToken

TOKEN_PREFIX = "biolm_"
SHOWN_PREFIX = 12  # "biolm_" and six characters of the secret


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def create_token(user, name: str) -> tuple[ApiToken, str]:
    """A new token for ``user``: its row and the token itself, which is shown once and never again."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name.strip()[:100] or "token", prefix=raw[:SHOWN_PREFIX],
                                    key_hash=hash_token(raw))  # fmt: skip
    return token, raw


def user_for_token(raw: str):
    """The active user whose unrevoked token ``raw`` is, or None; records when the token was last used."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=hash_token(raw), revoked_at__isnull=True).first()
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:  # one write a minute at most
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def revoke_token(user, token_id: int) -> bool:
    """Revoke ``user``'s token ``token_id``; False if they have no such active token."""
    return bool(
        ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    )
