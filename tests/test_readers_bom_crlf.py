"""Every reader family reads a copy saved by a Windows editor (a UTF-8 BOM, CRLF line endings) exactly as the original.

Each family is read twice: from its files, and from a copy whose every text file starts with a
byte-order mark and ends its lines with CRLF (gzipped files too). The examples and the content
fingerprint must be the same. Formats whose annotations are character offsets into the text
(brat, the i2b2 2012/2014 XML) get the BOM only: CRLF would move every offset, so such a copy is
not the same data. Also: a line of unbounded length is an error naming the file and line, not a
read of the whole file into memory.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from official_data import official

from biolm.dataset_io import DataFormatError, load_dataset_files, read_lines
from biolm.plugins import collect_contributions, get_plugin_manager

TESTS = Path(__file__).parent
DATASETS = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets
BOM = b"\xef\xbb\xbf"

FAMILIES = [
    # (dataset, files, CRLF too): files given as a string are a folder in the official data folder (BIOLM_DATA_DIR)
    ("bc4chemd", TESTS / "fixtures/token_tagging/bc4chemd", True),  # CoNLL
    ("chemprot", "ChemProt/blurb", True),  # relation TSV
    ("biosses", "BIOSSES/blurb", True),
    ("hoc", "HoC/blurb", True),
    ("pubmedqa", "PubMedQA/blurb", True),  # JSON
    ("bioasq", "BioASQ/blurb", True),
    ("litcovid", TESTS / "fixtures/sentence_level/litcovid", True),  # CSV
    ("bioasq-factoid", TESTS / "fixtures/sentence_level/bioasq-factoid", True),  # SQuAD JSON
    ("ohsumed", TESTS / "fixtures/sentence_level/ohsumed", True),  # one file per document
    ("mednli", TESTS / "fixtures/clinical/mednli", True),  # JSON lines
    ("i2b2-2010", TESTS / "fixtures/clinical/i2b2-2010", True),  # .txt + .con (line:token offsets)
    ("i2b2-2010-re", TESTS / "fixtures/clinical/i2b2_2010_re", True),
    ("n2c2-2019-sts", TESTS / "fixtures/clinical/n2c2-2019-sts", True),
    ("mimic-aki", TESTS / "fixtures/clinical/mimic-aki", True),
    ("emrqa-medication", TESTS / "fixtures/clinical/emrqa/medication", True),
    ("i2b2-2006-deid", TESTS / "fixtures/clinical/i2b2-2006", True),  # inline XML
    ("n2c2-2018-ade", TESTS / "fixtures/clinical/n2c2-2018", False),  # brat: character offsets
    ("i2b2-2012", TESTS / "fixtures/clinical/i2b2-2012", False),  # XML with character offsets
    ("i2b2-2014-deid", TESTS / "fixtures/clinical/i2b2-2014", False),
    ("demo-ner", TESTS.parent / "plugins/datasets/demo/demo-ner", True),  # canonical JSON lines
]


def windows_copy(source: Path, target: Path, crlf: bool) -> Path:
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        if not path.is_file() or path.suffix == ".md":
            continue
        gzipped = path.suffix == ".gz"
        data = gzip.decompress(path.read_bytes()) if gzipped else path.read_bytes()
        if crlf:
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        data = BOM + data
        path.write_bytes(gzip.compress(data) if gzipped else data)
    return target


@pytest.mark.parametrize(
    ("dataset", "files", "crlf"),
    [pytest.param(*f, id=f[0], marks=pytest.mark.official_data if isinstance(f[1], str) else ()) for f in FAMILIES],
)
def test_a_bom_and_crlf_copy_gives_the_same_examples_and_fingerprint(tmp_path, dataset, files, crlf):
    files = official(files) if isinstance(files, str) else files
    spec = DATASETS[dataset]
    original = load_dataset_files(spec, files)
    copy = load_dataset_files(spec, windows_copy(files, tmp_path / "copy", crlf))
    assert copy.splits == original.splits
    assert copy.fingerprint == original.fingerprint


def test_a_line_without_end_is_an_error_naming_file_and_line_not_a_read_of_the_whole_file(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"first\tline\n" + b"x" * 300)
    with pytest.raises(DataFormatError, match=r"train\.tsv:2: a line longer than 100 bytes"):
        list(read_lines(path, max_line_bytes=100))
    assert [line for _, line in read_lines(path, max_line_bytes=1000)] == ["first\tline", "x" * 300]
