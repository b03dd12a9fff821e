"""SQuAD-format JSON (BioBERT's BioASQ factoid data) into the ``extractive-qa`` schema.

BioBERT distributes BioASQ 7b factoid as SQuAD v1.1 JSON,
``{"data": [{"paragraphs": [{"context", "qas": [{"id", "question", "answers": [{"text",
"answer_start"}]}]}]}]}``, one paragraph per (question, snippet) pair, after dropping the
questions whose answer is not found in any snippet (about 30%). Every ``qas`` entry becomes one
example with its own id (BioBERT's ``<question id>_<nnn>``, one per snippet): ``context`` is
the paragraph, the answers keep their texts and offsets (checked against the context centrally).
Grouping a question's snippets back together for strict/lenient accuracy and MRR is the
metric's job, not the reader's.

Files are looked for as ``train.json`` / ``BioASQ-train-factoid-7b.json``, ``dev.json`` and
``test.json`` / ``BioASQ-test-factoid-7b.json``. BioBERT has no dev file, so dev is optional.
BioBERT's test file carries no answers (BioASQ scores test predictions against the golden
``7B_golden.json`` lists with strict/lenient accuracy and MRR): a question without an
``answers`` key gets empty answer lists. Anything else of the wrong shape is a DataFormatError
with the line of the JSON object it is in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biolm.dataset_io import DataFormatError
from biolm.errors import Where
from biolm.specs import AdapterSpec
from plugins.datasets.readers.sentence_common import line_of, load_located_json, split_files

CANDIDATES = {
    "train": ("train.json", "BioASQ-train-factoid-7b.json"),
    "dev": ("dev.json",),
    "test": ("test.json", "BioASQ-test-factoid-7b.json"),
}


def read_squad(directory: Path) -> dict[str, list[dict]]:
    files = split_files(directory, CANDIDATES, optional=("dev",))
    return {split: read_squad_file(path) for split, path in files.items()}


_KIND_NAMES = {list: "a list", str: "a string", int: "an integer"}


def _field(obj: object, key: str, kind: type, path: Path, parent_line: int, default: object = None) -> Any:
    """``obj[key]``, which must be of ``kind``; ``obj`` must be a JSON object."""
    line = line_of(obj, parent_line)
    if not isinstance(obj, dict):
        raise DataFormatError(path, f'expected an object with "{key}", found {type(obj).__name__}', line)
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise DataFormatError(path, f'expected "{key}" as {_KIND_NAMES[kind]}, got {value!r:.60}', line)
    return value


def read_squad_file(path: Path) -> list[dict]:
    data = load_located_json(path)
    examples = []
    for article in _field(data, "data", list, path, 1):
        for paragraph in _field(article, "paragraphs", list, path, line_of(data)):
            at = line_of(paragraph, line_of(article))
            context = _field(paragraph, "context", str, path, at)
            for qa in _field(paragraph, "qas", list, path, at):
                qa_line = line_of(qa, at)
                texts, starts, answer_lines = [], [], []
                for answer in _field(qa, "answers", list, path, qa_line, default=[]):
                    answer_line = line_of(answer, qa_line)
                    starts.append(_field(answer, "answer_start", int, path, answer_line))
                    texts.append(_field(answer, "text", str, path, answer_line))
                    answer_lines.append(f"{path}:{answer.key_line('answer_start')}")  # a LocatedDict by now
                examples.append(
                    {
                        "id": _field(qa, "id", str, path, qa_line),
                        "question": _field(qa, "question", str, path, qa_line),
                        "context": context,
                        "answers": {"text": texts, "answer_start": starts},
                        "_where": Where(
                            f"{path}:{qa_line}",
                            items=answer_lines,
                            fields={"context": f"{path}:{at}", "question": f"{path}:{qa_line}"},
                        ),
                    }
                )
    return examples


ADAPTERS: dict[str, AdapterSpec] = {
    "bioasq-factoid": AdapterSpec(
        schema="extractive-qa",
        reader="plugins.datasets.readers.squad:read_squad",
        default_path="BioASQ-factoid/biobert",
        optional_splits=("dev",),
    ),
}
