"""PubMedQA PQA-L (BLURB setting) into the ``classification`` schema.

Files: ``pqal_fold<k>/train_set.json`` and ``pqal_fold<k>/dev_set.json`` (option ``fold``,
default 0, the fold BLURB uses) and ``test_set.json``, as written by PubMedQA's
``preprocess/split_dataset.py pqal``: one JSON object keyed by PMID. Each example is
``text`` = ``QUESTION``, ``text_pair`` = the ``CONTEXTS`` (the abstract without its
conclusion) joined with single spaces in their order, and ``labels`` = ``[final_decision]``.

``LONG_ANSWER`` is the abstract's conclusion, which usually states the answer: PubMedQA's
"reasoning-required" setting, the one BLURB reports, never shows it to the model, so it is
never read here. The MeSH terms, year and the section ``LABELS`` are ignored too.

JSON syntax errors are reported with file and line by ``read_json``; an entry whose fields are
missing or of the wrong type is reported with the line of its opening brace.
"""

from __future__ import annotations

from pathlib import Path

from biolm.dataset_io import DataFormatError
from biolm.errors import Where
from biolm.specs import AdapterSpec
from plugins.datasets.readers.sentence_common import line_of, load_located_json, split_files


def read_pubmedqa(directory: Path, fold: int = 0) -> dict[str, list[dict]]:
    candidates = {
        "train": (f"pqal_fold{fold}/train_set.json",),
        "dev": (f"pqal_fold{fold}/dev_set.json",),
        "test": ("test_set.json",),
    }
    files = split_files(directory, candidates)
    return {split: read_questions(path) for split, path in files.items()}


def read_questions(path: Path) -> list[dict]:
    data = load_located_json(path)
    if not isinstance(data, dict):
        raise DataFormatError(path, f"expected a JSON object keyed by PMID, found a {type(data).__name__}", 1)
    examples = []
    for pmid, entry in data.items():
        line = line_of(entry, line_of(data))
        if not isinstance(entry, dict):
            raise DataFormatError(path, f"entry {pmid}: expected an object, found {type(entry).__name__}", line)
        question, contexts, decision = entry.get("QUESTION"), entry.get("CONTEXTS"), entry.get("final_decision")
        if not isinstance(question, str):
            raise DataFormatError(path, f"entry {pmid}: expected QUESTION as a string", line)
        if not (isinstance(contexts, list) and contexts and all(isinstance(c, str) for c in contexts)):
            raise DataFormatError(path, f"entry {pmid}: expected CONTEXTS as a non-empty list of strings", line)
        if not isinstance(decision, str):
            raise DataFormatError(path, f"entry {pmid}: expected final_decision as a string (yes/no/maybe)", line)
        examples.append(
            {
                "id": pmid,
                "text": question,
                "text_pair": " ".join(contexts),
                "labels": [decision],
                "_where": Where(
                    f"{path}:{line}",
                    fields={
                        "labels": lambda entry=entry: f"{path}:{entry.key_line('final_decision')}",
                        "text": lambda entry=entry: f"{path}:{entry.key_line('QUESTION')}",
                        "text_pair": lambda entry=entry: f"{path}:{entry.key_line('CONTEXTS')}",
                    },
                ),
            }
        )
    return examples


ADAPTERS: dict[str, AdapterSpec] = {
    "pubmedqa": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.pubmedqa:read_pubmedqa",
        options={"fold": 0},
        default_path="PubMedQA/blurb",
    ),
}
