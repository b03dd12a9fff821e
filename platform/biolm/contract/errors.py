"""The one error a contract document raises: what is wrong, and where in the document."""

from __future__ import annotations


class ContractError(ValueError):
    """A job spec or results document that cannot be accepted; the message names the setting and the fix.

    ``field`` is the document's field it concerns (``overrides``, ``dataset``, ``code``, ...), so a
    submission form can show the sentence beside the input it came from; ``setting`` the setting
    inside it (``seeds`` of ``overrides``), when there is one.
    """

    def __init__(self, message: str, field: str | None = None, setting: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.setting = setting
