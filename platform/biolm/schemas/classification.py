"""``classification``: a text or a text pair with its labels (one, or several when multi-label).

``labels`` is always a list; a single-label dataset has exactly one per example. Pairs keep
both texts (``text_pair`` is ``""`` for single-text tasks).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from datasets import Sequence as FeatureSequence
from datasets import Value

from biolm.errors import DataFormatError, locate
from biolm.schemas.base import Schema, check_text


class ClassificationSchema(Schema):
    name = "classification"

    @property
    def fields(self) -> dict[str, Any]:
        return {
            "id": Value("string"),
            "text": Value("string"),
            "text_pair": Value("string"),
            "labels": FeatureSequence(Value("string")),
        }

    label_field = "labels"

    def validate(self, row: dict, where: str, multi_label: bool) -> list[str]:
        check_text(row["text"], where, "text")
        if not isinstance(row["text_pair"], str):
            raise DataFormatError(
                locate(where, field="text_pair"), "text_pair must be a string ('' for single-text tasks)"
            )
        labels = row["labels"]
        if not multi_label and len(labels) != 1:
            raise DataFormatError(locate(where, field="labels"), f"expected exactly one label, got {labels!r}")
        if len(set(labels)) != len(labels):
            raise DataFormatError(locate(where, field="labels"), f"repeated labels {labels!r}")
        return list(labels)

    def withhold_gold(self, row: dict, placeholder: str) -> dict:
        return {**row, "labels": [placeholder]}

    def texts(self, rows: Sequence[dict]) -> Iterator[str]:
        for row in rows:
            yield row["text"]
            if row.get("text_pair"):
                yield row["text_pair"]

    def gold(self, rows: Sequence[dict], multi_label: bool) -> list:
        if multi_label:
            return [frozenset(row["labels"]) for row in rows]
        return [row["labels"][0] for row in rows]

    def length(self, row: Mapping[str, Any]) -> int:
        return len(row["text"]) + len(row.get("text_pair") or "")

    def sample(self) -> list[dict]:
        pairs = [
            ("Does aspirin reduce fever?", "Aspirin reduced fever in all patients.", "yes"),
            ("Does cisplatin cure headache?", "Cisplatin had no effect on headache.", "no"),
            ("Is fever a symptom of influenza?", "Most influenza patients had fever.", "yes"),
            ("Does ibuprofen cause cancer?", "No association with cancer was found.", "no"),
        ]
        return [
            {"id": f"q{i}", "text": question, "text_pair": context, "labels": [label]}
            for i, (question, context, label) in enumerate(pairs)
        ]
