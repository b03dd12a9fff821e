"""Readers of official dataset distribution formats, one module per format family.

Each module declares ``ADAPTERS: dict[slug, AdapterSpec]`` next to the readers they
name; the catalogue modules (plugins/datasets/*.py) attach them to their specs.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable, Mapping

from biolm.specs import AdapterSpec, DatasetSpec

READER_MODULES = (
    "conll",
    "ebm_nlp",
    "relation_tsv",
    "biosses",
    "hoc",
    "pubmedqa",
    "bioasq",
    "litcovid",
    "squad",
    "ohsumed",
    "clinical",
)


def all_adapters() -> dict[str, AdapterSpec]:
    """Every reader module's ADAPTERS, merged (a slug declared twice is a programming error)."""
    merged: dict[str, AdapterSpec] = {}
    for name in READER_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        clash = set(merged) & set(module.ADAPTERS)
        if clash:
            raise ValueError(f"adapters for {sorted(clash)} are declared twice (readers.{name})")
        merged.update(module.ADAPTERS)
    return merged


def with_adapters(specs: Iterable[DatasetSpec], *adapters: Mapping[str, AdapterSpec]) -> tuple[DatasetSpec, ...]:
    """The specs with their adapters attached; a slug with no adapter keeps ``adapter=None``."""
    merged: dict[str, AdapterSpec] = {}
    for mapping in adapters:
        merged.update(mapping)
    return tuple(dataclasses.replace(s, adapter=merged[s.slug]) if s.slug in merged else s for s in specs)
