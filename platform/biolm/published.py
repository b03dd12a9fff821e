"""Read a paper's published results table from a JSON file into specs.

Built-in benchmark plugins keep the numbers they transcribe from papers in
JSON beside their module (data, not code), in this shape::

    {
      "source": "Gu et al. 2021, Table 6",
      "models": [
        {"slug": "pubmedbert", "name": "PubMedBERT", "architecture": "bert",
         "parameters": 110000000, "parameters_source": "Fang et al. 2023, Table 1",
         "vocabulary": "PubMed WordPiece (uncased)",
         "pretraining_corpus": "PubMed abstracts", "max_sequence_length": 512,
         "hf_checkpoint": "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract",
         "scores": {"bc5-chem": 93.33, ...},
         "reported_summaries": {"blurb-score": 81.10},
         "notes": ""}
      ]
    }

Errors name the file and the model so a typo is found without a debugger.
"""

from __future__ import annotations

import json
from pathlib import Path

from biolm.spec_checks import SpecError
from biolm.specs import PublishedModelSpec

_FIELDS = set(PublishedModelSpec.__dataclass_fields__)


def load_published(path: Path) -> tuple[str, tuple[PublishedModelSpec, ...]]:
    """Return ``(source, models)`` read from ``path``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise SpecError(f"{path}: expected an object with a 'models' list")
    models = []
    for index, row in enumerate(data["models"]):
        if not isinstance(row, dict):
            raise SpecError(f"{path}: models[{index}] is not an object")
        unknown = sorted(set(row) - _FIELDS)
        if unknown:
            raise SpecError(f"{path}: models[{index}] has unknown fields {unknown}; expected some of {sorted(_FIELDS)}")
        try:
            models.append(PublishedModelSpec(**row))
        except TypeError as exc:
            raise SpecError(f"{path}: models[{index}] ({row.get('slug', '?')}): {exc}") from exc
    return str(data.get("source", "")), tuple(models)
