"""``regression``: a text pair with a real-valued score (BIOSSES, clinical STS)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from datasets import Value

from biolm.errors import DataFormatError, locate
from biolm.schemas.base import Schema, check_text


class RegressionSchema(Schema):
    name = "regression"

    @property
    def fields(self) -> dict[str, Any]:
        return {"id": Value("string"), "text": Value("string"), "text_pair": Value("string"), "score": Value("float32")}

    def validate(self, row: dict, where: str, multi_label: bool) -> list[str]:
        check_text(row["text"], where, "text")
        check_text(row["text_pair"], where, "text_pair")
        score = row["score"]
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise DataFormatError(locate(where, field="score"), f"score must be a finite number, got {score!r}")
        return []

    def withhold_gold(self, row: dict, placeholder: str) -> dict:
        return {**row, "score": 0.0}

    def texts(self, rows: Sequence[dict]) -> Iterator[str]:
        for row in rows:
            yield row["text"]
            yield row["text_pair"]

    def gold(self, rows: Sequence[dict], multi_label: bool) -> list:
        return [float(row["score"]) for row in rows]

    def length(self, row: Mapping[str, Any]) -> int:
        return len(row["text"]) + len(row.get("text_pair") or "")

    def sample(self) -> list[dict]:
        pairs = [
            ("Aspirin reduces fever.", "Fever is reduced by aspirin.", 4.0),
            ("Aspirin reduces fever.", "The weather was cold.", 0.0),
            ("Cisplatin treats lung cancer.", "Lung cancer is treated with cisplatin.", 3.5),
            ("Ibuprofen relieves pain.", "Pain is a common symptom.", 1.5),
        ]
        return [{"id": f"p{i}", "text": a, "text_pair": b, "score": s} for i, (a, b, s) in enumerate(pairs)]
