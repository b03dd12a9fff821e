"""Corpus preprocessors: the minimal cleaning the seed papers apply before pretraining.

Each preprocessor takes and returns an iterable of documents (strings), so they
compose and stream over corpora far larger than memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import pluggy

from biolm.specs import PreprocessorSpec

hookimpl = pluggy.HookimplMarker("biolm")

_MIMIC_PLACEHOLDER = re.compile(r"\[\*\*.*?\*\*\]", re.DOTALL)
_NOT_ALNUM_OR_PUNCT = re.compile(r"[^0-9A-Za-z\s!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]")
_SPACES = re.compile(r"\s+")


def clinical_longformer_clean(documents: Iterable[str]) -> Iterator[str]:
    """Seed 000, Section 3.1: drop MIMIC de-identification placeholders (``[**...**]``),
    replace characters other than alphanumerics and punctuation with a space, lower-case,
    and collapse white space. Documents left empty are dropped."""
    for text in documents:
        text = _MIMIC_PLACEHOLDER.sub(" ", text)
        text = _NOT_ALNUM_OR_PUNCT.sub(" ", text)
        text = _SPACES.sub(" ", text.lower()).strip()
        if text:
            yield text


def drop_empty_documents(documents: Iterable[str]) -> Iterator[str]:
    """Seed 001, Section 3: empty abstracts and paragraphs are removed before pretraining."""
    for text in documents:
        if text.strip():
            yield text


@hookimpl
def biolm_corpus_preprocessors() -> list[PreprocessorSpec]:
    return [
        PreprocessorSpec(
            slug="clinical-longformer-clean",
            name="Clinical-Longformer minimal cleaning",
            description="Remove MIMIC placeholders, keep alphanumerics and punctuation, lower-case, squeeze spaces.",
            implementation="plugins.preprocessors.text:clinical_longformer_clean",
        ),
        PreprocessorSpec(
            slug="drop-empty",
            name="Drop empty documents",
            description="Skip documents with no non-space character.",
            implementation="plugins.preprocessors.text:drop_empty_documents",
        ),
    ]
