"""Data holders' credentials: made once, shown once, kept only as a SHA-256.

A holder's workers beat, and claim its jobs, with a credential of their own instead of the platform's
``BIOLM_WORKER_SECRET`` (:mod:`jobs.api`), so a GPU host of the platform's, which holds that secret,
can neither register on a holder's queue nor claim a job from it. The credential is 32 random bytes;
a SHA-256 of it is enough to check one (nobody can guess its way back from the hash), and a leaked
database row then gives no worker access.
"""

from __future__ import annotations

import hashlib
import secrets

from biolm.placement import HOLDER_CREDENTIAL_PREFIX, HOLDER_NAME, holder_named_by
from registry.models import DataHolder, Dataset


class HolderError(ValueError):
    """An operator's request about holders that cannot be done; the message says why and what to do."""


def digest(credential: str) -> str:
    return hashlib.sha256(credential.encode()).hexdigest()


def new_credential(holder: str) -> str:
    """A fresh credential for ``holder``'s workers (its prefix names the holder, for whoever finds one lying about)."""
    return f"{HOLDER_CREDENTIAL_PREFIX}{holder}.{secrets.token_urlsafe(32)}"


def holder_with(credential: str) -> DataHolder | None:
    """The holder whose workers' credential ``credential`` is, or None (compared as digests, in constant time)."""
    name = holder_named_by(credential)
    holder = DataHolder.objects.filter(name=name).first() if name else None
    expected = holder.credential_sha256 if holder is not None else digest(secrets.token_hex(16))
    if holder is None or not secrets.compare_digest(expected, digest(credential)):
        return None
    return holder


def add_holder(name: str, title: str = "") -> tuple[DataHolder, str]:
    """A new holder and its workers' credential, which is shown now and never again."""
    if not HOLDER_NAME.match(name):
        raise HolderError(f"{name!r} is not a holder name: lower-case letters, digits and '-', at most 40")
    if DataHolder.objects.filter(name=name).exists():
        raise HolderError(f"holder {name!r} exists; `manage.py holders rotate {name}` gives it a new credential")
    credential = new_credential(name)
    return DataHolder.objects.create(name=name, title=title, credential_sha256=digest(credential)), credential


def rotate(holder: DataHolder) -> str:
    """A new credential for ``holder``: the old one stops working at once (its workers need the new one)."""
    credential = new_credential(holder.name)
    DataHolder.objects.filter(pk=holder.pk).update(credential_sha256=digest(credential))
    return credential


def bindable(slugs: list[str]) -> list[Dataset]:
    """The datasets ``slugs`` names, each restricted (a public one has nothing to keep in), or why not."""
    datasets = []
    for slug in slugs:
        dataset = Dataset.objects.filter(slug=slug).first()
        if dataset is None:
            raise HolderError(f"no dataset {slug!r}; `manage.py datasets` lists them")
        if dataset.access != Dataset.Access.RESTRICTED:
            raise HolderError(f"{slug} is public: only a restricted dataset (a data use agreement's) is held")
        datasets.append(dataset)
    return datasets
