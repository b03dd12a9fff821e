"""``relation``: a text, two typed entity spans (character offsets, end exclusive) and a label.

BLURB distributes ChemProt, DDI and GAD with each entity already replaced by a dummy such as
``@CHEMICAL$`` or, for two overlapping mentions, ``@CHEM-GENE$`` (Gu et al. 2021, section 5); such a
dummy matches :data:`PLACEHOLDER`. The BLURB readers find the entities through it, and the
engine's relation formulation leaves text that is dummified already as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from datasets import Value

from biolm.errors import DataFormatError, locate
from biolm.schemas.base import Schema, check_text

PLACEHOLDER = re.compile(r"@[A-Z]+(?:-[A-Z]+)*\$")

_SPAN = {"start": Value("int32"), "end": Value("int32"), "type": Value("string")}


def _check_span(span: Mapping, text: str, where: str, name: str) -> tuple[int, int]:
    start, end = span.get("start"), span.get("end")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        raise DataFormatError(
            locate(where, field=name),
            f"{name} span [{start}, {end}) is out of range for a text of {len(text)} characters",
        )
    return start, end


class RelationSchema(Schema):
    name = "relation"

    @property
    def fields(self) -> dict[str, Any]:
        return {"id": Value("string"), "text": Value("string"), "head": _SPAN, "tail": _SPAN, "label": Value("string")}

    label_field = "label"

    def validate(self, row: dict, where: str, multi_label: bool) -> list[str]:
        check_text(row["text"], where, "text")
        head = _check_span(row["head"], row["text"], where, "head")
        tail = _check_span(row["tail"], row["text"], where, "tail")
        if head != tail and head[0] < tail[1] and tail[0] < head[1]:
            raise DataFormatError(
                where, f"head {list(head)} and tail {list(tail)} spans overlap without being identical"
            )
        return [row["label"]]

    def withhold_gold(self, row: dict, placeholder: str) -> dict:
        return {**row, "label": placeholder}

    def texts(self, rows: Sequence[dict]) -> Iterator[str]:
        for row in rows:
            yield row["text"]

    def gold(self, rows: Sequence[dict], multi_label: bool) -> list:
        return [row["label"] for row in rows]

    def length(self, row: Mapping[str, Any]) -> int:
        return len(row["text"])

    def sample(self) -> list[dict]:
        rows = [
            ("Aspirin inhibits COX-1 in platelets .", (0, 7, "CHEMICAL"), (17, 22, "GENE"), "CPR:4"),
            ("Cisplatin was given with EGFR testing .", (0, 9, "CHEMICAL"), (25, 29, "GENE"), "false"),
            ("Imatinib blocks BCR-ABL activity .", (0, 8, "CHEMICAL"), (16, 23, "GENE"), "CPR:4"),
            ("Metformin and AMPK were both measured .", (0, 9, "CHEMICAL"), (14, 18, "GENE"), "false"),
        ]
        return [
            {
                "id": f"r{i}",
                "text": text,
                "head": {"start": head[0], "end": head[1], "type": head[2]},
                "tail": {"start": tail[0], "end": tail[1], "type": tail[2]},
                "label": label,
            }
            for i, (text, head, tail, label) in enumerate(rows)
        ]
