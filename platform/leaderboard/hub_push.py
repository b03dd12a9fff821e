"""A model's biolm results, proposed to its Hugging Face Hub repository as a pull request on its model card.

For a model submitted by Hub id (:attr:`LanguageModel.hub_id`), ``manage.py push_results`` opens a pull
request, with a token its owner gives at that time, that carries the model's results in the card's
``model-index`` (:mod:`leaderboard.hub_card`, the same values as the "copy for your model card" block of its
page) and, for datasets with a Hub id, the Hub's ``.eval_results/`` files. The card is read from the
repository first and only its ``model-index`` changes: the README's text, its other metadata and any result
another source published stay as they were (biolm's own earlier values are replaced, by their source URL).
A pull request is a proposal: the repository's owner merges it, or not. Every call names the endpoint
(``BIOLM_HUB_ENDPOINT``); the token goes to the library and nowhere else.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from huggingface_hub import CommitOperationAdd, HfApi, ModelCard, hf_hub_download
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

from leaderboard import hub_card
from registry.models import LanguageModel

README = "README.md"


class PushRefused(ValueError):
    """The results cannot be proposed; the message says why and what to do instead."""


@dataclass(frozen=True)
class Pushed:
    pull_request: str  # its URL on the Hub
    values: int  # how many model-index values it carries
    files: tuple[str, ...]


def push_results(model: LanguageModel, token: str, site_url: str) -> Pushed:
    """Open the pull request on ``model``'s Hub repository; its URL, or :class:`PushRefused`."""
    if not model.hub_id:
        raise PushRefused(
            f"{model.address} was not submitted by Hub id, so biolm knows no repository of it: copy the "
            "model-index block from its page into your card instead"
        )
    if not token:
        raise PushRefused("give a Hub token with write access to the repository in HF_TOKEN")
    page_url = f"{site_url.rstrip('/')}{model.get_absolute_url()}"
    values = hub_card.card_values(model)
    if not values:
        raise PushRefused(f"{model.address} has no published full-protocol result on biolm yet: nothing to propose")
    files = {README: _card_with_results(model, page_url, values, token).encode("utf-8")}
    files.update(
        {path: text.encode("utf-8") for path, text in hub_card.hub_eval_files(model, page_url, values).items()}
    )
    api = HfApi(endpoint=settings.BIOLM_HUB_ENDPOINT)
    try:
        info = api.create_commit(
            model.hub_id, operations=[CommitOperationAdd(path, data) for path, data in files.items()],
            commit_message=f"Add biolm results ({len(values)} values) to the model card",
            commit_description=f"The results biolm reproduced for this model, each linking its result on {page_url}.",
            create_pr=True, token=token,
        )  # fmt: skip
    except HfHubHTTPError as exc:
        raise PushRefused(_refusal(model, exc)) from None
    return Pushed(info.pr_url or "", len(values), tuple(files))


def _card_with_results(model: LanguageModel, page_url: str, values: list, token: str) -> str:
    """The repository's card as it is on its main branch, with biolm's values in its ``model-index``."""
    with tempfile.TemporaryDirectory(prefix="biolm-card-") as folder:
        try:
            path = hf_hub_download(model.hub_id, README, endpoint=settings.BIOLM_HUB_ENDPOINT, token=token,
                                   local_dir=folder, etag_timeout=settings.BIOLM_HUB_TIMEOUT_S)  # fmt: skip
            card = ModelCard(Path(path).read_text(encoding="utf-8"))
        except EntryNotFoundError:
            card = ModelCard(f"---\n---\n# {model.hub_id}\n")
        except HfHubHTTPError as exc:
            raise PushRefused(_refusal(model, exc)) from None
    site = page_url.split("/models/", 1)[0]
    kept = [r for r in card.data.eval_results or [] if not (r.source_url or "").startswith(site)]
    card.data.eval_results = kept + hub_card.eval_results(model, page_url, values)
    card.data.model_name = card.data.model_name or hub_card.card_name(model)
    return str(card)


def _refusal(model: LanguageModel, exc: HfHubHTTPError) -> str:
    status = exc.response.status_code if exc.response is not None else 0
    if status in (401, 403):
        return (f"the Hub refused the token for {model.hub_id} ({status}): opening a pull request needs a token "
                "with write access to the repository (or to pull requests on it)")  # fmt: skip
    if status == 404:
        return f"no model repository {model.hub_id} on the Hub any more"
    return f"the Hub answered {status or type(exc).__name__} for {model.hub_id}: try again later"
