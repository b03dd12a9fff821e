"""A submitter's Hugging Face token, kept only for as long as its Hub fetch job may need it.

A gated or private repository is read with its submitter's own token. It is encrypted with Fernet
(AES-128-CBC with an HMAC-SHA256, from the ``cryptography`` library) under ``BIOLM_HUB_TOKEN_KEY``, or,
when that is unset, a key derived from ``SECRET_KEY`` by HKDF-SHA256 (so a copy of the database alone
reads no token). It lives in its own row (:class:`jobs.models.HubToken`), never in the job's spec, its
claim, its log or an error message: the fetch runs where the database is (the platform's CPU
worker), which reads it here. It is deleted when the fetch job ends, retries included
(:func:`forget_finished`, each tick, and at once on success), or when its submitter revokes it.
"""

from __future__ import annotations

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from jobs.models import HubToken, Job

FINISHED = (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED)


def keep(job: Job, token: str) -> None:
    """Keep ``token`` for ``job`` (a Hub fetch job), encrypted."""
    HubToken.objects.update_or_create(job=job, defaults={"ciphertext": _fernet().encrypt(token.encode()).decode()})


def token_for(job: Job) -> str:
    """The token kept for ``job``, or "" when none is (a public repository, or revoked)."""
    held = HubToken.objects.filter(job=job).values_list("ciphertext", flat=True).first()
    if held is None:
        return ""
    try:
        return _fernet().decrypt(held.encode()).decode()
    except InvalidToken:  # the key changed since: as if revoked, and the fetch says a token is needed
        return ""


def forget(job_ids) -> int:
    """Delete the tokens of these jobs; how many there were."""
    deleted, _ = HubToken.objects.filter(job_id__in=list(job_ids)).delete()
    return deleted


def forget_finished() -> int:
    """Delete every token whose fetch job has ended (succeeded, failed for good, cancelled)."""
    deleted, _ = HubToken.objects.filter(job__status__in=FINISHED).delete()
    return deleted


def held_for(submission) -> bool:
    """Whether a token is still kept for one of ``submission``'s jobs (its page offers to revoke it)."""
    return HubToken.objects.filter(job__submission=submission).exists()


def revoke(submission) -> int:
    """The submitter takes their token back before the fetch ends: the fetch then runs, or fails, without it."""
    deleted, _ = HubToken.objects.filter(job__submission=submission).delete()
    return deleted


@functools.cache
def _key(configured: str, secret: str) -> bytes:
    if configured:
        return configured.encode()
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"biolm hub tokens").derive(secret.encode())
    return base64.urlsafe_b64encode(derived)


def _fernet() -> Fernet:
    return Fernet(_key(settings.BIOLM_HUB_TOKEN_KEY, settings.SECRET_KEY))
