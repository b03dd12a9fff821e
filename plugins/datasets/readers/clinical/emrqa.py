"""emrQA (medication, relation, heart disease) in SQuAD format into the ``extractive-qa`` schema.

emrQA itself is one ``data.json`` generated from the i2b2 annotations (contexts as lists of
lines, questions as lists of paraphrases, answers as line/token positions), with no split.
Everyone evaluates the SQuAD conversion of Yue et al. 2020 (CliniRC,
github.com/sunlab-osu/CliniRC), which Li et al. 2022 use too: ``{"data": [{"title", "paragraphs":
[{"context", "qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}`` with
train/dev/test files per subset, named ``medication-train.json``, ``relation-dev.json``,
``risk-dataset-test.json`` and so on (``risk-dataset`` is the heart-disease subset). We read
those, or ``train.json``/``dev.json``/``test.json`` in a directory of their own (option
``prefix`` gives the subset's file prefix). The raw ``data.json`` is not accepted: a question
that is a list is reported as such, with a pointer to the conversion.

Contexts are whole clinical notes (often thousands of words) and are kept whole; each question
is one example, ids are the file's question ids, answers are checked against their context
centrally. A JSON object of the wrong shape is a DataFormatError with the JSON path and the
line of the question it belongs to (found by its id; the line of the file's start otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from biolm.dataset_io import DataFormatError
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import SPLITS, LineIndex, decode_utf8


def read_emrqa(directory: Path, prefix: str = "") -> dict[str, list[dict]]:
    splits = {}
    for split in SPLITS:
        names = (f"{prefix}-{split}.json", f"{split}.json") if prefix else (f"{split}.json",)
        path = next((directory / name for name in names if (directory / name).exists()), None)
        if path is None:
            raise DataFormatError(directory, f"missing the {split} split: looked for {' or '.join(names)}")
        splits[split] = _read_file(path)
    return splits


class _Locator:
    """Lines of the questions, found by searching the ids in file order (one pass over the text).

    Each search looks only a bounded distance ahead (a context and its questions fit easily), so an
    id written differently from ``json.dumps`` costs a little, never a rescan of a large file.
    """

    REACH = 4_000_000

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines = LineIndex(text)
        self._cursor = 0

    def line_of(self, qa_id: str) -> int:
        for needle in (json.dumps(qa_id, ensure_ascii=False), json.dumps(qa_id)):
            found = self._text.find(needle, self._cursor, self._cursor + self.REACH)
            if found >= 0:
                self._cursor = found + len(needle)
                return self._lines.line(found)
        return self.here()

    def here(self) -> int:
        return self._lines.line(self._cursor)


def _read_file(path: Path) -> list[dict]:
    text = decode_utf8(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    locate = _Locator(text)
    examples = []
    for a, article in enumerate(_get(data, "data", list, path, "", 1)):
        for p, paragraph in enumerate(_get(article, "paragraphs", list, path, f"data[{a}]", locate.here())):
            where = f"data[{a}].paragraphs[{p}]"
            context = _get(paragraph, "context", str, path, where, locate.here())
            for q, qa in enumerate(_get(paragraph, "qas", list, path, where, locate.here())):
                qa_where = f"{where}.qas[{q}]"
                raw_id = qa.get("id") if isinstance(qa, dict) else None
                qa_id = str(raw_id) if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
                line = locate.line_of(qa_id) if qa_id is not None else locate.here()
                if qa_id is None:
                    raise DataFormatError(path, f'{qa_where} needs an "id" (string), got {raw_id!r:.60}', line)
                question = _get(qa, "question", str, path, qa_where, line)
                texts, starts = [], []
                for n, answer in enumerate(_get(qa, "answers", list, path, qa_where, line)):
                    starts.append(_get(answer, "answer_start", int, path, f"{qa_where}.answers[{n}]", line))
                    texts.append(_get(answer, "text", str, path, f"{qa_where}.answers[{n}]", line))
                examples.append(
                    {
                        "id": qa_id,
                        "question": question,
                        "context": context,
                        "answers": {"text": texts, "answer_start": starts},
                        "_where": f"{path}:{line}",
                    }
                )
    return examples


_KINDS = {list: "a list", str: "a string", int: "an integer"}


def _get(obj: Any, key: str, kind: type, path: Path, where: str, line: int) -> Any:
    place = f"{where}." if where else ""
    if not isinstance(obj, dict):
        raise DataFormatError(path, f"{where or 'the file'} must be a JSON object with {key!r}", line)
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        hint = ""
        if key == "question" and isinstance(value, list):
            hint = " (this looks like the raw emrQA data.json; convert it to SQuAD format with CliniRC first)"
        raise DataFormatError(path, f"{place}{key} must be {_KINDS[kind]}, got {value!r:.60}{hint}", line)
    return value


ADAPTERS: dict[str, AdapterSpec] = {
    slug: AdapterSpec(
        schema="extractive-qa",
        reader="plugins.datasets.readers.clinical.emrqa:read_emrqa",
        options={"prefix": prefix},
        default_path="emrQA/squad",
    )
    for slug, prefix in (
        ("emrqa-medication", "medication"),
        ("emrqa-relation", "relation"),
        ("emrqa-heart-disease", "risk-dataset"),
    )
}
