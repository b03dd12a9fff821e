"""BLURB BioASQ 7b yes/no (``{train,dev,test}.tsv``) into the ``classification`` schema.

Four tab-separated columns and no header: ``question_id<TAB>question<TAB>passage<TAB>label``,
where the passage is the question's gold snippets joined with spaces (BLURB's preprocessor) and
the label is ``yes`` or ``no``. Each example is ``text`` = question, ``text_pair`` = passage,
``labels`` = ``[label]``, with the BioASQ question id as its id. The 670/75/140 split is
BLURB's (its question-id lists sit next to the files as ``*_id.tsv``; they are not needed).
"""

from __future__ import annotations

from pathlib import Path

from biolm.dataset_io import read_tsv
from biolm.specs import AdapterSpec
from plugins.datasets.readers.sentence_common import split_files


def read_bioasq_yesno(directory: Path) -> dict[str, list[dict]]:
    files = split_files(directory, {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",)})
    return {split: _read_questions(path) for split, path in files.items()}


def _read_questions(path: Path) -> list[dict]:
    return [
        {"id": qid, "text": question, "text_pair": passage, "labels": [label], "_where": f"{path}:{line}"}
        for line, (qid, question, passage, label) in read_tsv(path, 4)
    ]


ADAPTERS: dict[str, AdapterSpec] = {
    "bioasq": AdapterSpec(
        schema="classification",
        reader="plugins.datasets.readers.bioasq:read_bioasq_yesno",
        default_path="BioASQ/blurb",
    ),
}
