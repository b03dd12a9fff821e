"""What every canonical schema provides; one subclass per schema module."""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from biolm.errors import DataFormatError, locate


class Schema(abc.ABC):
    """One canonical example format: its fields, checks, texts, gold values and lengths."""

    name: ClassVar[str]

    @property
    @abc.abstractmethod
    def fields(self) -> dict[str, Any]:
        """``{field: datasets feature}``; a ``datasets.Features`` of these stores a split."""

    def features(self) -> Any:
        from datasets import Features

        return Features(self.fields)

    @abc.abstractmethod
    def validate(self, row: dict, where: str, multi_label: bool) -> list[str]:
        """Check one example (its fields are known to be exactly the schema's); return its labels.

        Raise :class:`DataFormatError` at ``where`` (``file:line``) naming what is wrong.
        """

    label_field: str | None = None  # the field holding the labels validate() returns

    def label_location(self, row: dict, label: str, where: str) -> str:
        """Where ``label`` is in the example at ``where``: the label field's line when the reader knows it."""
        return locate(where, field=self.label_field)

    @abc.abstractmethod
    def withhold_gold(self, row: dict, placeholder: str) -> dict:
        """The example with its gold replaced by a constant that tells nothing about it.

        This is how a test split leaves the platform: a worker predicts it but cannot score it or
        learn its labels. ``placeholder`` is a label of the dataset (``O`` for tagging) so the
        example stays valid for the schema.
        """

    @abc.abstractmethod
    def texts(self, rows: Sequence[dict]) -> Iterator[str]:
        """The texts a tokenizer learns its vocabulary from, each distinct long text once."""

    @abc.abstractmethod
    def gold(self, rows: Sequence[dict], multi_label: bool) -> list:
        """One gold value per example, in the form the schema's metrics take."""

    @abc.abstractmethod
    def length(self, row: Mapping[str, Any]) -> int:
        """How long an example is (words or characters), to point users at the longest inputs."""

    def count(self, rows: Sequence[dict], unit: str) -> int:
        """``rows`` counted in a paper's unit; examples unless the schema knows the unit."""
        return len(rows)

    @abc.abstractmethod
    def sample(self) -> list[dict]:
        """A few valid examples, for contract checks of formulations and metrics."""


def check_text(value: object, where: str, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(locate(where, field=name), f"{name} must be non-empty text, got {value!r}")
