"""Which model a published number belongs to: its address (``owner/name``, the Hub's where it is on the Hub,
else ``papers/<name>``), its canonical name, its Hub id, and the model it is another version of."""

from __future__ import annotations

from dataclasses import dataclass

from biolm.column_limits import CHECKPOINT_MAX, LANGUAGE_MODEL_SLUG_MAX, NAMESPACE_MAX
from biolm.name_patterns import ADDRESS_RE
from biolm.spec_checks import SpecError, check_length, require_text

PAPERS_NAMESPACE = "papers"  # where a reported model without a Hugging Face organisation lives


@dataclass(frozen=True)
class ModelIdentity:
    """The one model a published row is a number of, whichever paper printed it.

    Papers name one checkpoint differently ("BioBERT v1.1 (+PubMed)", "BioBERT-Base v1.1"); each row
    names its identity, so every paper's numbers for a checkpoint land on one model page. ``address``
    is the Hub's ``owner/name`` where the checkpoint is on the Hub (``dmis-lab/biobert-v1.1``), else
    ``papers/<name>``; ``name`` is the canonical name shown everywhere; ``hf_id`` the Hub id, if any.
    ``version_of`` names the address of another identity this one is a version of (BioBERT-Large
    beside BioBERT-Base v1.1): the two stay two models, linked on both pages.
    """

    address: str
    name: str
    hf_id: str = ""
    version_of: str = ""

    @property
    def namespace(self) -> str:
        return self.address.split("/", 1)[0]

    @property
    def address_name(self) -> str:
        return self.address.split("/", 1)[1]

    @property
    def slug(self) -> str:
        """The internal key (compare's ?models=, the API's slug): the address, lower case, '/' as '--'; under
        ``papers/`` its name alone, as a reported model's key was before identities."""
        if self.namespace == PAPERS_NAMESPACE:
            return self.address_name.lower()
        return self.address.lower().replace("/", "--")

    def check(self, what: str) -> None:
        """Refuse an address that is not owner/name, or a name, Hub id or link too long to store."""
        for name in ("address", "version_of"):
            value = getattr(self, name)
            if (value or name == "address") and not (isinstance(value, str) and ADDRESS_RE.match(value)):
                raise SpecError(f"{what}: identity {name} must be owner/name (letters, digits, - _ .), got {value!r}")
        if len(self.slug) > LANGUAGE_MODEL_SLUG_MAX or len(self.namespace) > NAMESPACE_MAX:
            raise SpecError(f"{what}: identity address {self.address!r} is too long")
        if self.version_of == self.address:
            raise SpecError(f"{what}: identity {self.address!r} cannot be a version of itself")
        require_text(self.name, f"{what}: identity name")
        check_length(self.hf_id, CHECKPOINT_MAX, f"{what}: identity hf_id")
