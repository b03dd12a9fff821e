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
