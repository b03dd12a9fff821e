"""Shared by the hostile-input tests: one real tiny checkpoint that each test copies before breaking."""

from __future__ import annotations

from pathlib import Path

import pytest
from checkpoints import tiny_bert


@pytest.fixture(scope="session")
def good(tmp_path_factory) -> Path:
    """A complete, valid checkpoint (config, safetensors, tokenizer); never modified by a test."""
    return tiny_bert(tmp_path_factory.mktemp("good") / "tiny-bert", ["aspirin inhibits cyclooxygenase"] * 5, 120)
