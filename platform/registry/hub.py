"""The Hugging Face Hub as a source of checkpoints: resolve ``org/name@revision`` to a commit, then fetch it.

A submission by Hub id is resolved at submit, within ``BIOLM_HUB_TIMEOUT_S``: the revision (a branch,
tag or commit) becomes a commit hash, and the repository's file list is checked against the same
allow-list an uploaded archive meets (:mod:`biolm.checkpoint_files`), so a repository that could only
be refused later (no safetensors, too large, no config) is refused beside the field, with nothing
written. The fetch itself (:func:`fetch`) is the first job of the submission's graph, on the platform's
CPU worker (:mod:`jobs.hub_fetch`): ``snapshot_download`` of exactly the allowed files at that commit,
then the intake's checks, unchanged.

Two kinds of failure, as the job's rules need them:

* :class:`HubRefused`: the submitter's (an unknown repository, a revision not found, a gated one
  without a token, a token the Hub refuses, pickled weights only, over the size cap): said once, not retried;
* :class:`HubUnavailable`: the Hub's (its 5xx, a time-out, no connection): the platform's, so the
  fetch job is retried and, failing for good, refunded.

Every call names the endpoint (``BIOLM_HUB_ENDPOINT``), since ``huggingface_hub`` reads ``HF_ENDPOINT``
once, at import. A token is passed to the library and nowhere else: no message carries it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx2
from django.conf import settings
from huggingface_hub import HfApi, constants, get_hf_file_metadata, hf_hub_url, snapshot_download
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from biolm.checkpoint_files import PICKLE_SUFFIXES
from biolm.name_patterns import HUB_ID_RE

REVISION_RE = re.compile(r"^[\w.\-/]{1,200}$")  # a branch, tag or commit, as git allows them (no spaces, no ..)
CONVERSION_HINT = (
    "convert them to safetensors first: load the model with transformers and save it again with "
    "save_pretrained(..., safe_serialization=True), then push model.safetensors to the repository "
    "(or open the Hub's own conversion pull request: https://huggingface.co/spaces/safetensors/convert)"
)


class HubRefused(ValueError):
    """The repository cannot be evaluated as given: the submitter's to fix, never retried.

    ``field``: what to fix, ``hub`` (the id or revision) or ``hub_token`` (the token the Hub refused).
    """

    def __init__(self, message: str, field: str = "hub") -> None:
        super().__init__(message)
        self.field = field


class HubUnavailable(RuntimeError):
    """The Hub did not answer (5xx, a time-out, no connection): the platform's, retried."""


@dataclass(frozen=True)
class HubReference:
    """What a submitter typed: ``org/name``, and the revision after ``@`` (``main`` when none)."""

    repository: str
    revision: str = "main"

    @classmethod
    def parse(cls, text: str) -> HubReference:
        text = (text or "").strip()
        repository, _, revision = text.partition("@")
        repository = repository.strip().removeprefix("https://huggingface.co/").strip("/")
        if not HUB_ID_RE.match(repository) or ".." in repository:
            raise HubRefused(
                f"{text[:80]!r} is not a Hugging Face Hub model id: give org/name, optionally @revision "
                "(a branch, tag or commit), such as dmis-lab/biobert-base-cased-v1.2@main"
            )
        revision = revision.strip() or "main"
        if not REVISION_RE.match(revision) or ".." in revision:
            raise HubRefused(f"{revision[:80]!r} is not a revision: give a branch, tag or commit after the @")
        return cls(repository, revision)

    def __str__(self) -> str:
        return f"{self.repository}@{self.revision}"


@dataclass(frozen=True)
class HubCheckpoint:
    """A repository at one commit: the files biolm will fetch (path, bytes), and what its card says."""

    repository: str
    commit: str
    files: tuple[tuple[str, int], ...]
    gated: bool = False
    licence: str = ""
    base_model: str = ""

    @property
    def size(self) -> int:
        return sum(size for _, size in self.files)

    def __str__(self) -> str:
        return f"{self.repository}@{self.commit[:12]}"


def resolve(reference: HubReference, token: str = "", *, access: bool = True) -> HubCheckpoint:
    """The repository at ``reference``'s revision as a commit, its allowed files checked; or a named refusal.

    ``access``: also check that a gated repository's files can be read with ``token`` (the form's pre-fill,
    which reads only the public listing and card, does not)."""
    _online()
    api = HfApi(endpoint=settings.BIOLM_HUB_ENDPOINT)
    try:
        info = api.model_info(
            reference.repository, revision=reference.revision, files_metadata=True, token=token or False,
            timeout=settings.BIOLM_HUB_TIMEOUT_S,
        )  # fmt: skip
    except Exception as exc:
        raise _named(exc, reference.repository, reference.revision, token) from None
    siblings = [(s.rfilename, int(s.size or 0)) for s in info.siblings or []]
    card = info.card_data.to_dict() if info.card_data is not None else {}
    checkpoint = HubCheckpoint(
        repository=reference.repository,
        commit=info.sha,
        files=_allowed(reference, siblings),
        gated=bool(info.gated),
        licence=_card_text(card.get("license")),
        base_model=_card_text(card.get("base_model")),
    )
    if access and (checkpoint.gated or token):
        check_access(checkpoint, token)
    return checkpoint


def check_access(checkpoint: HubCheckpoint, token: str) -> None:
    """A gated (or private) repository's files can be read with ``token``: asked of its ``config.json``, once."""
    if checkpoint.gated and not token:
        raise HubRefused(
            f"{checkpoint.repository} is gated on the Hub: accept its conditions on its page, then give a Hub "
            "token of yours that can read it (a fine-grained read token is enough)"
        )
    url = hf_hub_url(checkpoint.repository, "config.json", revision=checkpoint.commit,
                     endpoint=settings.BIOLM_HUB_ENDPOINT)  # fmt: skip
    try:
        get_hf_file_metadata(url, token=token or False, timeout=settings.BIOLM_HUB_TIMEOUT_S)
    except Exception as exc:
        raise _named(exc, checkpoint.repository, checkpoint.commit, token) from None


def fetch(checkpoint: HubCheckpoint, target: Path, token: str = "") -> Path:
    """Download exactly ``checkpoint``'s allowed files, at its commit, into ``target``; the folder they are in."""
    _online()
    try:
        folder = snapshot_download(
            checkpoint.repository, revision=checkpoint.commit, allow_patterns=[path for path, _ in checkpoint.files],
            local_dir=target, endpoint=settings.BIOLM_HUB_ENDPOINT, token=token or False,
            etag_timeout=settings.BIOLM_HUB_TIMEOUT_S, max_workers=4,
        )  # fmt: skip
    except Exception as exc:
        raise _named(exc, checkpoint.repository, checkpoint.commit, token) from None
    shutil.rmtree(Path(folder) / ".cache", ignore_errors=True)  # the library's own records, not the checkpoint's
    return Path(folder)


def _allowed(reference: HubReference, siblings: list[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """The files of the repository that a checkpoint may hold, the checks an upload gets made on the listing:
    a config, safetensors weights (pickles alone are refused, named, with how to convert), the size cap."""
    allow = settings.BIOLM_CHECKPOINT_FILES
    kept = tuple((path, size) for path, size in siblings if allow.kind_of(PurePosixPath(path)) is not None)
    names = {PurePosixPath(path).name for path, _ in kept}
    if not any(path.endswith(".safetensors") for path, _ in kept):
        pickles = [path for path, _ in siblings if PurePosixPath(path).suffix.lower() in PICKLE_SUFFIXES]
        if pickles:
            raise HubRefused(
                f"{reference}: its weights are pickled only ({', '.join(pickles[:5])}), and biolm reads "
                f"safetensors only, because loading a pickle runs code: {CONVERSION_HINT}"
            )
        raise HubRefused(f"{reference}: holds no weights (no .safetensors file): push the model's weights first")
    if "config.json" not in names:
        raise HubRefused(f"{reference}: holds no config.json, so it is not a transformers checkpoint")
    total, cap = sum(size for _, size in kept), settings.BIOLM_ARCHIVE_LIMITS.max_total_bytes
    if total > cap:
        raise HubRefused(
            f"{reference}: its checkpoint files are {total / 1e9:,.2f} GB, over this site's cap of "
            f"{cap / 1e9:,.2f} GB (BIOLM_ARCHIVE_MAX_BYTES)"
        )
    return kept


def _named(exc: BaseException, repository: str, revision: str, token: str) -> Exception:
    """The library's exception as a refusal in the submitter's words, or as the Hub's unavailability."""
    if isinstance(exc, HubRefused | HubUnavailable):
        return exc
    if isinstance(exc, RevisionNotFoundError):
        return HubRefused(f"{repository} has no revision {revision!r} on the Hub: give a branch, tag or commit it has")
    if isinstance(exc, GatedRepoError):
        if not token:
            return HubRefused(
                f"{repository} is gated on the Hub: accept its conditions on its page, then give a Hub token of "
                "yours that can read it"
            )
        return HubRefused(
            f"the Hub refused your token for {repository}: it has no access to this gated repository (accept "
            "its conditions on its page with the same account, or give a token with read access)",
            "hub_token",
        )
    if isinstance(exc, RepositoryNotFoundError):
        private = "" if token else " (a private repository needs a Hub token of yours that can read it)"
        return HubRefused(f"no model repository {repository} on the Hub{private}")
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        status = exc.response.status_code
        if status in (401, 403) and token:
            return HubRefused(
                f"the Hub refused your token for {repository} ({status}): it is invalid, expired or cannot read "
                "this repository; make a new read token on your Hub settings page",
                "hub_token",
            )
        if status >= 500 or status == 429:
            return HubUnavailable(f"the Hub answered {status} for {repository}")
        return HubRefused(_scrubbed(f"the Hub refused {repository}@{revision} ({status})", token))
    if isinstance(exc, httpx2.TransportError | LocalEntryNotFoundError | TimeoutError | ConnectionError):
        return HubUnavailable(
            f"the Hub at {settings.BIOLM_HUB_ENDPOINT} did not answer for {repository} ({type(exc).__name__})"
        )
    if isinstance(exc, OfflineModeIsEnabled):
        return HubUnavailable(f"this site runs with HF_HUB_OFFLINE=1, so it cannot reach the Hub for {repository}")
    return HubUnavailable(_scrubbed(f"fetching {repository} from the Hub failed: {type(exc).__name__}: {exc}", token))


def _online() -> None:
    if constants.is_offline_mode():
        raise HubUnavailable(
            "this site runs with HF_HUB_OFFLINE=1, so models cannot be taken from the Hub; an operator unsets it"
        )


def _card_text(value: object) -> str:
    """A card field as one line: the first of a list (``base_model`` may list several), trimmed to fit its column."""
    if isinstance(value, list | tuple):
        value = value[0] if value else ""
    return " ".join(str(value or "").split())[:100]


def _scrubbed(message: str, token: str) -> str:
    return message.replace(token, "[token]") if token else message
