"""``make bench`` finds the official data as everything else does, and says so in one line when it is absent.

The benchmarks once hard-coded ``../shared/data``: with the data elsewhere the pretraining
benchmark ended in a ``FileNotFoundError`` traceback. Now every benchmark reads
``BIOLM_DATA_DIR`` (as the engine does), and one whose data is missing writes a JSON marked
``skipped`` with the missing path and lets the run go on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench import biomedical_corpus, common

ROOT = Path(__file__).resolve().parents[1]


def test_the_benchmarks_data_folder_is_biolm_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("BIOLM_DATA_DIR", str(tmp_path))
    assert common.data_dir() == tmp_path
    assert common.dataset_directory("bc5-chem") == tmp_path / "BC5-chem" / "blurb"


def test_the_corpus_names_the_first_missing_official_file(monkeypatch, tmp_path):
    monkeypatch.setenv("BIOLM_DATA_DIR", str(tmp_path))
    reason = biomedical_corpus.missing()
    assert reason is not None and str(tmp_path / "HoC" / "blurb" / "train.tsv") in reason
    assert "BIOLM_DATA_DIR" in reason


def test_the_corpus_is_read_from_biolm_data_dir(monkeypatch, tmp_path):
    """A file under BIOLM_DATA_DIR is what the corpus reads, not one under ../shared/data."""
    monkeypatch.setenv("BIOLM_DATA_DIR", str(tmp_path))
    biosses = tmp_path / "BIOSSES" / "blurb"
    biosses.mkdir(parents=True)
    (biosses / "train.tsv").write_text("index\tsent1\tsent2\tscore\n0\tAlpha  binds.\tBeta binds.\t2.0\n")
    assert list(biomedical_corpus.biosses_sentences(common.data_dir())) == ["Alpha  binds. Beta binds."]


def test_a_benchmark_without_its_data_is_skipped_in_one_line_and_in_its_json(tmp_path):
    empty = tmp_path / "no-data"
    empty.mkdir()
    environment = {**os.environ, "BIOLM_DATA_DIR": str(empty), "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "inference_throughput", "--out", str(tmp_path / "out")],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stderr
    skipped_lines = [line for line in completed.stdout.splitlines() if "skipped:" in line]
    assert len(skipped_lines) == 1 and str(empty / "BC5-chem" / "blurb") in skipped_lines[0]
    written = json.loads((tmp_path / "out" / "inference_throughput.json").read_text())
    assert str(empty / "BC5-chem" / "blurb") in written["skipped"]
    assert written["name"] == "inference_throughput"
