"""The leaderboard's filter facets of a model, read from the words that describe it.

Readers filter by pretraining domain, vocabulary kind and whether a model was pretrained from
scratch or continued from a general checkpoint (Gu et al. 2021's central comparison). Papers
describe these in prose ("Initialised from BERT-base; pretrained on PubMed and PMC"), and that
prose is what the published tables and a checkpoint's pretraining report give us, so the facets
are derived from it once, when the model is saved, and stored for filtering. A plugin's published
row may still state a facet outright; the words are only the fallback.
"""

from __future__ import annotations

import re

DOMAINS = ("pubmed", "pmc", "clinical", "general")
VOCABULARIES = ("domain", "general")
INITIALISATIONS = ("scratch", "continual")

_CLINICAL = re.compile(r"\b(mimic|clinical|ehr|health records?|uf health|patient notes?)\b", re.I)
_PMC = re.compile(r"\b(pmc|full[- ]text)\b", re.I)
_PUBMED = re.compile(r"\b(pubmed|biomedical|semantic scholar|medline)\b", re.I)
_CONTINUAL = re.compile(r"(initiali[sz]ed from|continual|further (pre)?trained|continued pretraining)", re.I)
_SCRATCH = re.compile(r"(from scratch|random initiali[sz]ation|randomly initiali[sz]ed)", re.I)
_GENERAL_VOCABULARY = re.compile(
    r"(bert's vocabulary|original bert|wiki \+ books|general-purpose|web crawl|roberta byte-level)", re.I
)
_DOMAIN_VOCABULARY = re.compile(r"(pubmed|pmc|scivocab|biomedical|clinical|gatortron|learnt on|trained on)", re.I)


_NEGATED = re.compile(r"\bno [^;.,]*", re.I)  # "no biomedical or clinical pretraining" names no domain


def pretraining_domain(corpus: str) -> str:
    """The most specific domain the corpus names: clinical text outranks full text, which outranks abstracts."""
    corpus = _NEGATED.sub("", corpus)
    if not corpus.strip():
        return ""
    for name, pattern in (("clinical", _CLINICAL), ("pmc", _PMC), ("pubmed", _PUBMED)):
        if pattern.search(corpus):
            return name
    return "general"


def initialisation(corpus: str, vocabulary: str = "") -> str:
    """Continual when the corpus says it started from a checkpoint; scratch when it says so, or implies it.

    A vocabulary learnt on the domain implies scratch (an initialiser's embeddings would not fit it),
    and a general-domain model (BERT itself) is where continual pretraining starts.
    """
    if _CONTINUAL.search(corpus):
        return "continual"
    if _SCRATCH.search(corpus) or _SCRATCH.search(vocabulary):
        return "scratch"
    if corpus.strip() and pretraining_domain(corpus) == "general":
        return "scratch"
    if _DOMAIN_VOCABULARY.search(vocabulary) and not _GENERAL_VOCABULARY.search(vocabulary):
        return "scratch"
    return ""


def vocabulary_kind(vocabulary: str, corpus: str) -> str:
    """Domain or general; a continued model without a stated vocabulary keeps its initialiser's (general)."""
    if _GENERAL_VOCABULARY.search(vocabulary):
        return "general"
    if _DOMAIN_VOCABULARY.search(vocabulary):
        return "domain"
    start = initialisation(corpus)
    if start == "continual" or pretraining_domain(corpus) == "general":
        return "general"
    if start == "scratch" and not vocabulary.strip():
        return "domain"
    return ""


def facets(vocabulary: str, corpus: str) -> dict[str, str]:
    """``{pretraining_domain, vocabulary_kind, initialisation}``; an empty value means the words do not say."""
    return {
        "pretraining_domain": pretraining_domain(corpus),
        "vocabulary_kind": vocabulary_kind(vocabulary, corpus),
        "initialisation": initialisation(corpus, vocabulary),
    }
