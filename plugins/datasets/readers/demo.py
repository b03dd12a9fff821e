"""The shipped BLURB-mini demo data, read by the core's canonical JSON Lines reader.

The demo data ships inside this package so that ``make demo`` needs no downloaded data: its
adapters' ``default_path`` is the absolute folder ``DEMO_DATA_DIR / <slug>`` (an absolute default
path is used as is, a relative one is taken under BIOLM_DATA_DIR), and the same folder is each
adapter's ``samples`` for the plugin contract check.

Everything under :data:`DEMO_DATA_DIR` is invented demo data (plugins/datasets/demo/generate.py
regenerates it byte for byte); scores on it mean nothing about real performance.
"""

from __future__ import annotations

from pathlib import Path

from biolm.canonical_jsonl import READER
from biolm.specs import AdapterSpec

DEMO_DATA_DIR = Path(__file__).resolve().parents[1] / "demo"


def _demo(schema: str, slug: str, multi_label: bool = False) -> AdapterSpec:
    folder = str(DEMO_DATA_DIR / slug)
    return AdapterSpec(schema=schema, reader=READER, default_path=folder, multi_label=multi_label, samples=folder)


ADAPTERS: dict[str, AdapterSpec] = {
    "demo-ner": _demo("token-tagging", "demo-ner"),
    "demo-pico": _demo("token-tagging", "demo-pico"),
    "demo-relation": _demo("relation", "demo-relation"),
    "demo-similarity": _demo("regression", "demo-similarity"),
    "demo-doc-classification": _demo("classification", "demo-doc-classification", multi_label=True),
    "demo-qa": _demo("classification", "demo-qa"),
}
