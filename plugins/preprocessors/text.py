"""Corpus preprocessors: the minimal cleaning the papers apply before pretraining.

Each preprocessor takes and returns an iterable of documents (strings), so they
compose and stream over corpora far larger than memory.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterable, Iterator

from biolm import hookimpl
from biolm.specs import PreprocessorSpec

_MIMIC_PLACEHOLDER = re.compile(r"\[\*\*.*?\*\*\]", re.DOTALL)
_NOT_ALNUM_OR_PUNCT = re.compile(r"[^0-9A-Za-z\s!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]")
_SPACES = re.compile(r"\s+")


def clinical_longformer_clean(documents: Iterable[str]) -> Iterator[str]:
    """Li et al. 2022, Section 3.1: drop MIMIC de-identification placeholders (``[**...**]``),
    replace characters other than alphanumerics and punctuation with a space, lower-case,
    and collapse white space. Documents left empty are dropped."""
    for text in documents:
        text = _MIMIC_PLACEHOLDER.sub(" ", text)
        text = _NOT_ALNUM_OR_PUNCT.sub(" ", text)
        text = _SPACES.sub(" ", text.lower()).strip()
        if text:
            yield text


def drop_empty_documents(documents: Iterable[str]) -> Iterator[str]:
    """Lewis et al. 2020, Section 3: empty abstracts and paragraphs are removed before pretraining."""
    for text in documents:
        if text.strip():
            yield text


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffd]")
_UNICODE_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]")


def gatortron_clean(documents: Iterable[str]) -> Iterator[str]:
    """Yang et al. 2022, "Preprocessing": drop empty and duplicated documents, remove what is not valid text
    (control characters; U+FFFD, which is what invalid UTF-8 decodes to when the corpus is read with
    ``invalid_utf8: replace``), and normalise special characters: HTML entities to their characters
    (``&amp;`` to ``&``) and Unicode spaces (``\xa0``) to a space.

    Duplicates are exact (after cleaning), remembered as 16-byte digests: memory grows with the
    number of distinct documents, not their text.
    """
    seen: set[bytes] = set()
    for text in documents:
        text = html.unescape(text)
        text = _UNICODE_SPACES.sub(" ", text)
        text = _CONTROL.sub("", text)
        text = _SPACES.sub(" ", text).strip()
        if not text:
            continue
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
        if digest in seen:
            continue
        seen.add(digest)
        yield text


# Abbreviations common in biomedical and clinical text after which a period does not end a sentence.
_ABBREVIATIONS = frozenset(
    [
        "al",
        "approx",
        "ca",
        "cf",
        "dr",
        "e.g",
        "eq",
        "eqs",
        "etc",
        "fig",
        "figs",
        "i.e",
        "jr",
        "mr",
        "mrs",
        "ms",
        "no",
        "nos",
        "pp",
        "prof",
        "ref",
        "refs",
        "sr",
        "st",
        "suppl",
        "tab",
        "vol",
        "vs",
        "inc",
        "ltd",
        "co",
        "dept",
        "univ",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ]
)
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: a boundary is . ! or ? then space then a capital, digit or opening bracket.

    Not after an abbreviation (``Fig.``, ``et al.``, ``e.g.``), a single initial (``J. Smith``) or a
    decimal point. Rule-based on purpose: no model to download, and the same split everywhere.
    """
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        before = text[start : match.start()].rstrip("\"')]")
        last = before.rsplit(None, 1)[-1] if before.split() else ""
        word = last.rstrip(".!?").lower().lstrip("(")
        if last.endswith(".") and (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        sentences.append(text[start : match.start()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [sentence for sentence in sentences if sentence]


def segment_sentences(documents: Iterable[str]) -> Iterator[str]:
    """One sentence per line inside each document (``\n`` between sentences), for NSP and SOP.

    The pair builder of those objectives reads the lines as the document's sentences.
    """
    for text in documents:
        sentences = split_sentences(_SPACES.sub(" ", text).strip())
        if sentences:
            yield "\n".join(sentences)


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
            slug="gatortron-clean",
            name="GatorTron minimal cleaning",
            description=(
                "Drop empty and duplicate documents, remove invalid characters, unescape HTML entities, "
                "turn Unicode spaces into spaces (Yang et al. 2022)."
            ),
            implementation="plugins.preprocessors.text:gatortron_clean",
        ),
        PreprocessorSpec(
            slug="sentences",
            name="Sentence segmentation",
            description="One sentence per line within each document (abbreviation-aware), for NSP and SOP.",
            implementation="plugins.preprocessors.text:segment_sentences",
        ),
        PreprocessorSpec(
            slug="drop-empty",
            name="Drop empty documents",
            description="Skip documents with no non-space character.",
            implementation="plugins.preprocessors.text:drop_empty_documents",
        ),
    ]
