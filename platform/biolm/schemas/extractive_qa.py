"""``extractive-qa``: a question, its context and SQuAD-style answers found in the context."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from datasets import Sequence as FeatureSequence
from datasets import Value

from biolm.errors import DataFormatError, locate
from biolm.schemas.base import Schema, check_text


class ExtractiveQASchema(Schema):
    name = "extractive-qa"

    @property
    def fields(self) -> dict[str, Any]:
        return {
            "id": Value("string"),
            "question": Value("string"),
            "context": Value("string"),
            "answers": {"text": FeatureSequence(Value("string")), "answer_start": FeatureSequence(Value("int32"))},
        }

    def validate(self, row: dict, where: str, multi_label: bool) -> list[str]:
        check_text(row["question"], where, "question")
        check_text(row["context"], where, "context")
        answers = row["answers"]
        if len(answers["text"]) != len(answers["answer_start"]):
            raise DataFormatError(locate(where, field="answers"), "answers need one answer_start per answer text")
        for index, (text, start) in enumerate(zip(answers["text"], answers["answer_start"], strict=True)):
            if not (start >= 0 and row["context"][start : start + len(text)] == text):
                raise DataFormatError(
                    locate(where, item=index, field="answers"),
                    f"answer {text[:40]!r} is not found at offset {start} of its context",
                )
        return []

    def withhold_gold(self, row: dict, placeholder: str) -> dict:
        return {**row, "answers": {"text": [], "answer_start": []}}

    def texts(self, rows: Sequence[dict]) -> Iterator[str]:
        """Each question, and each note once however many questions it has."""
        contexts: set[str] = set()
        for row in rows:
            yield row["question"]
            if row["context"] not in contexts:
                contexts.add(row["context"])
                yield row["context"]

    def gold(self, rows: Sequence[dict], multi_label: bool) -> list:
        """The acceptable answers of each question."""
        return [list(row["answers"]["text"]) for row in rows]

    def length(self, row: Mapping[str, Any]) -> int:
        return len(row["context"]) + len(row["question"])

    def sample(self) -> list[dict]:
        context = "The patient was given aspirin 81 mg daily for chest pain. Metformin was stopped."
        questions = [
            ("What dose of aspirin was given?", "81 mg"),
            ("Which medication was stopped?", "Metformin"),
            ("Why was aspirin given?", "chest pain"),
        ]
        return [
            {
                "id": f"a{i}",
                "question": question,
                "context": context,
                "answers": {"text": [answer], "answer_start": [context.index(answer)]},
            }
            for i, (question, answer) in enumerate(questions)
        ]
