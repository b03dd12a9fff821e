"""A pretraining corpus of real biomedical text from the datasets' training and dev splits only.

``python -m bench.biomedical_corpus OUT [--data DIR]`` writes one document per line:

* HoC (train, dev): each abstract's sentences, joined in order;
* PubMedQA (PQA-L fold 0 train and dev): each question's context paragraphs;
* the BLURB NER sets (BC2GM, BC5-chem, BC5-disease, JNLPBA, NCBI-disease; train): sentences
  detokenised back to text, ten to a document;
* BIOSSES (train): both sentences of each pair.

No test split is read, so the contamination report of a model pretrained on it measures only the
overlap that the datasets' own splits share (the same abstract's sentences across splits, shared
boilerplate). The pretraining benchmark and issue 10's done-when check both use it.

The datasets are read from ``--data``, else from where every benchmark and the engine find
them (``BIOLM_DATA_DIR``, else ``../shared/data``: :func:`bench.common.data_dir`).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

NER_SETS = ("BC2GM", "BC5-chem", "BC5-disease", "JNLPBA", "NCBI-disease")
SENTENCES_PER_DOCUMENT = 10

_NO_SPACE_BEFORE = re.compile(r" ([.,;:!?%)\]])")
_NO_SPACE_AFTER = re.compile(r"([(\[]) ")


def detokenise(tokens: list[str]) -> str:
    """Whitespace-tokenised text back to ordinary spacing around punctuation."""
    text = " ".join(tokens)
    return _NO_SPACE_AFTER.sub(r"\1", _NO_SPACE_BEFORE.sub(r"\1", text))


def _tsv_rows(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        yield from csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)


def hoc_abstracts(data: Path) -> Iterator[str]:
    for split in ("train", "dev"):
        abstracts: dict[str, list[str]] = {}
        for row in _tsv_rows(data / "HoC" / "blurb" / f"{split}.tsv"):
            abstracts.setdefault(row["index"].split("_s")[0], []).append(row["sentence"])
        yield from (" ".join(sentences) for sentences in abstracts.values())


def pubmedqa_contexts(data: Path) -> Iterator[str]:
    for split in ("train_set", "dev_set"):
        questions = json.loads((data / "PubMedQA" / "blurb" / "pqal_fold0" / f"{split}.json").read_text("utf-8"))
        yield from (" ".join(q["CONTEXTS"]) for q in questions.values())


def ner_sentences(data: Path) -> Iterator[str]:
    for name in NER_SETS:
        sentences, tokens = [], []
        for line in (data / name / "blurb" / "train.tsv").read_text(encoding="utf-8").splitlines():
            if line.strip():
                tokens.append(line.split("\t")[0])
                continue
            if tokens:
                sentences.append(detokenise(tokens))
                tokens = []
            if len(sentences) == SENTENCES_PER_DOCUMENT:
                yield " ".join(sentences)
                sentences = []
        if tokens:
            sentences.append(detokenise(tokens))
        if sentences:
            yield " ".join(sentences)


def biosses_sentences(data: Path) -> Iterator[str]:
    for row in _tsv_rows(data / "BIOSSES" / "blurb" / "train.tsv"):
        yield f"{row['sent1']} {row['sent2']}"


def source_files(data: Path) -> list[Path]:
    """Every official file the corpus reads, so a caller can say which one is missing before starting."""
    return [
        *(data / "HoC" / "blurb" / f"{split}.tsv" for split in ("train", "dev")),
        *(data / "PubMedQA" / "blurb" / "pqal_fold0" / f"{split}.json" for split in ("train_set", "dev_set")),
        *(data / name / "blurb" / "train.tsv" for name in NER_SETS),
        data / "BIOSSES" / "blurb" / "train.tsv",
    ]


def missing(data: Path | None = None) -> str | None:
    """One line naming the first source file that is absent under ``data`` (default: the official data), or None."""
    from bench.common import missing_data

    return missing_data(*source_files(data_folder(data)))


def data_folder(data: Path | None) -> Path:
    from bench.common import data_dir

    return data_dir() if data is None else Path(data)


def documents(data: Path | None = None) -> Iterator[str]:
    data = data_folder(data)
    for source in (hoc_abstracts, pubmedqa_contexts, ner_sentences, biosses_sentences):
        for document in source(data):
            text = " ".join(document.split())
            if text:
                yield text


def write_corpus(out: Path, data: Path | None = None) -> dict:
    """Write the corpus to ``out`` (one document per line); returns its document and byte counts."""
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for document in documents(data):
            handle.write(document + "\n")
            count += 1
    return {"path": str(out), "documents": count, "bytes": out.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.biomedical_corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=Path, default=None, help="the official datasets (default: BIOLM_DATA_DIR)")
    args = parser.parse_args(argv)
    absent = missing(args.data)
    if absent:
        print(f"error: {absent}", file=sys.stderr)
        return 1
    print(json.dumps(write_corpus(args.out, args.data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
