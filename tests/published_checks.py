"""Checks shared by the tests that recompute a paper's printed summaries from its per-dataset numbers.

A printed summary must be reproduced within half a unit of its last printed digit. Where the
paper's own rounding makes that impossible, the case is listed explicitly in the test module's
``ROUNDING_EXCEPTIONS`` as ``{(model, summary): (computed, printed, reason)}`` and checked here to
miss by the stated amount and by no more than rounding can explain.
"""

from __future__ import annotations

import pytest

from biolm.aggregation import aggregate
from biolm.specs import BenchmarkSpec, PublishedModelSpec

RoundingExceptions = dict[tuple[str, str], tuple[float, float, str]]


def published_model(spec: BenchmarkSpec, slug: str) -> PublishedModelSpec:
    return next(m for m in spec.published if m.slug == slug)


def computed_summaries(spec: BenchmarkSpec, slug: str) -> dict[str, float | None]:
    """Group and summary scores of a published row, as the platform aggregates them."""
    result = aggregate(spec, published_model(spec, slug).scores)
    return {**result.groups, **result.summaries}


def check_printed_summary(
    spec: BenchmarkSpec, slug: str, summary: str, exceptions: RoundingExceptions, tolerance: float
) -> None:
    computed = computed_summaries(spec, slug)[summary]
    printed = published_model(spec, slug).reported_summaries[summary]
    assert computed is not None
    if (slug, summary) in exceptions:  # the details are checked by check_rounding_exception
        assert abs(computed - printed) > tolerance, (slug, summary, computed, printed)
    else:
        assert abs(computed - printed) <= tolerance, (slug, summary, computed, printed)


def check_rounding_exception(
    spec: BenchmarkSpec, case: tuple[str, str], exceptions: RoundingExceptions, tolerance: float
) -> None:
    """The exception really misses the tolerance, by the amount stated, and by no more than rounding."""
    slug, summary = case
    computed_stated, printed_stated, reason = exceptions[case]
    computed = computed_summaries(spec, slug)[summary]
    printed = published_model(spec, slug).reported_summaries[summary]
    assert reason
    assert printed == printed_stated
    assert computed == pytest.approx(computed_stated, abs=1e-9)
    assert abs(computed - printed) > tolerance, "no longer an exception: remove it from ROUNDING_EXCEPTIONS"
    # Rounded inputs (each off by at most the tolerance) cannot move a mean by more than twice it here.
    assert abs(computed - printed) <= 2 * tolerance


# The papers' titles, as their texts open (official_data.paper finds a paper by them).
GU_ET_AL_2021 = "Domain-Specific Language Model Pretraining for Biomedical Natural Language Processing"
FANG_ET_AL_2023 = "Bioformer: an efficient transformer language model for biomedical text mining"
YANG_ET_AL_2022 = "A Large Language Model for Electronic Health Records"
LEWIS_ET_AL_2020 = "Pretrained Language Models for Biomedical and Clinical Tasks"

# What each paper says of the sizes the published rows cite it for, exactly as its text prints it.
SIZE_STATEMENTS = {
    GU_ET_AL_2021: (
        "Prior work in biomedical pretraining uses BERT-BASE only",
        "For head-to-head comparison, we also use BERT-BASE in pretraining PubMedBERT",
    ),
    FANG_ET_AL_2023: (
        "Bioformer <sub>8L</sub>\tBioformer <sub>16L</sub>\tBioBERT <sub>Base-v1.1</sub>\tPubMedBERT",
        "Number of parameters\t43M\t42M\t110M\t110M",
    ),
    YANG_ET_AL_2022: (
        "ClinicalBERT has 110 million parameters",
        "ClinicalBERT (trained with 110 million parameters)",
        "BioBERT (345 million parameters)",
        "BioMegatron (1.2 billion parameters)",
        "<td>GatorTron-base</td>\n<td>24</td>\n<td>1024</td>\n<td>16</td>\n<td>345 million</td>",
        "<td>GatorTron-medium</td>\n<td>48</td>\n<td>2560</td>\n<td>40</td>\n<td>3.9 billion</td>",
        "<td>GatorTron-large</td>\n<td>56</td>\n<td>3584</td>\n<td>56</td>\n<td>8.9 billion</td>",
    ),
    LEWIS_ET_AL_2020: (
        "We pretrain a variety of models based on the RoBERTa-base and RoBERTa-large architectures",
        "We initialize our models with the RoBERTa checkpoints, except when we use a domain-specific vocabulary",
        "Both the general-purpose (RoBERTa) and domain-specific vocabularies contain 50k subword units",
        "We use our pretrained base",  # Section 7.1: "... model as the student network"
    ),
}


def check_size_statements(official_data, title: str) -> None:
    """Each sentence or table row a published size cites is in the paper's text, as quoted."""
    text = official_data.paper(title).read_text(encoding="utf-8")
    for statement in SIZE_STATEMENTS[title]:
        assert statement in text, (title, statement)


def sizes_of(spec: BenchmarkSpec) -> dict[str, tuple[int | None, str]]:
    """Each published row's (parameters, parameters_source)."""
    return {m.slug: (m.parameters, m.parameters_source) for m in spec.published}
