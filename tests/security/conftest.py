"""Shared by the hostile-input tests: one real tiny checkpoint that each test copies before breaking."""

from __future__ import annotations

from pathlib import Path

import pytest
from checkpoints import tiny_bert
from hostile_inputs import EXTENDED_HEADERS, tar_with_extended_header


@pytest.fixture(scope="session")
def good(tmp_path_factory) -> Path:
    """A complete, valid checkpoint (config, safetensors, tokenizer); never modified by a test."""
    return tiny_bert(tmp_path_factory.mktemp("good") / "tiny-bert", ["aspirin inhibits cyclooxygenase"] * 5, 120)


@pytest.fixture(scope="session")
def hostile_headers(tmp_path_factory) -> dict[str, Path]:
    """Each extended tar header (long name, long link, pax, pax global) declaring 256 MiB, as a 255 KiB .tar.gz."""
    folder = tmp_path_factory.mktemp("hostile-headers")
    return {case: tar_with_extended_header(folder / f"{kind.decode()}-header.tar.gz", kind, 256 << 20)
            for case, kind in EXTENDED_HEADERS.items()}  # fmt: skip
