"""``token-tagging``: NER, de-identification and PICO, as words with one tag per word.

A word in several PICO elements (Gu et al. 2021, section 5) joins its tags with ``|``
(``I-PAR|I-INT``); each part must be a label of the dataset. Papers count these splits in
entity mentions (B tags) or PICO elements (non-O words), not sentences (:meth:`count`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from datasets import Sequence as FeatureSequence
from datasets import Value

from biolm.errors import DataFormatError, locate
from biolm.schemas.base import Schema

ELEMENT_SEPARATOR = "|"


class TokenTaggingSchema(Schema):
    name = "token-tagging"

    @property
    def fields(self) -> dict[str, Any]:
        return {
            "id": Value("string"),
            "document_id": Value("string"),
            "tokens": FeatureSequence(Value("string")),
            "tags": FeatureSequence(Value("string")),
        }

    def validate(self, row: dict, where: str, multi_label: bool) -> list[str]:
        tokens, tags = row["tokens"], row["tags"]
        if not tokens:
            raise DataFormatError(where, "a sentence with no tokens")
        if len(tokens) != len(tags):
            raise DataFormatError(where, f"{len(tokens)} tokens but {len(tags)} tags; expected one tag per token")
        for index, token in enumerate(tokens):
            if not isinstance(token, str) or not token or any(c.isspace() for c in token):
                raise DataFormatError(locate(where, item=index), f"token {token!r} is empty or contains white space")
        # Each part of a joined tag must be a known label; "O" or a repeat inside a join is a mistake.
        parts = []
        for index, tag in enumerate(tags):
            if ELEMENT_SEPARATOR not in tag:
                parts.append(tag)
                continue
            joined = tag.split(ELEMENT_SEPARATOR)
            if "" in joined or "O" in joined or len(set(joined)) != len(joined):
                raise DataFormatError(
                    locate(where, item=index), f"tag {tag!r}: join distinct element tags with '|', without O"
                )
            parts.extend(joined)
        return parts

    def label_location(self, row: dict, label: str, where: str) -> str:
        """The line of the first tag that is (or joins) ``label``."""
        for index, tag in enumerate(row["tags"]):
            if label in tag.split(ELEMENT_SEPARATOR):
                return locate(where, item=index)
        return str(where)

    def withhold_gold(self, row: dict, placeholder: str) -> dict:
        return {**row, "tags": [placeholder] * len(row["tokens"])}

    def texts(self, rows: Sequence[dict]) -> Iterator[str]:
        for row in rows:
            yield " ".join(row["tokens"])

    def gold(self, rows: Sequence[dict], multi_label: bool) -> list:
        return [list(row["tags"]) for row in rows]

    def length(self, row: Mapping[str, Any]) -> int:
        return len(row["tokens"])

    def count(self, rows: Sequence[dict], unit: str) -> int:
        """ "mentions" are B tags, "PICO elements" non-O words, anything else examples."""
        if unit == "mentions":
            return sum(1 for row in rows for tag in row["tags"] if tag == "B" or tag.startswith("B-"))
        if unit == "PICO elements":
            return sum(1 for row in rows for tag in row["tags"] if tag != "O")
        return len(rows)

    def sample(self) -> list[dict]:
        sentences = [
            ("Aspirin reduces fever in adults .", "B-Chemical O B-Disease O O O"),
            ("Patients with lung cancer received cisplatin .", "O O B-Disease I-Disease O B-Chemical O"),
            ("No adverse events were seen .", "O O O O O O"),
            ("Ibuprofen and paracetamol relieve headache .", "B-Chemical O B-Chemical O B-Disease O"),
        ]
        return [
            {"id": f"s{i}", "document_id": f"d{i // 2}", "tokens": text.split(), "tags": tags.split()}
            for i, (text, tags) in enumerate(sentences)
        ]
