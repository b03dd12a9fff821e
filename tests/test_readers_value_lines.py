"""Every reader family names the line that holds a bad value, not the first line of its example.

A CoNLL sentence spans one line per token, a JSON entry one line per key, a CSV record with a
quoted note many lines, and annotation formats keep labels in a file of their own. For each
family one value is made invalid on a line of its own, and the error must name that file and
that line. Where an example is one line the check still pins the line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from official_data import official

from biolm.dataset_io import DataFormatError, load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixtures"
DATASETS = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets

# (family, dataset, source directory, file to edit, text to replace, replacement, marker on the bad value's line);
# a source given as a string is a folder in the official data folder (BIOLM_DATA_DIR), a Path one of the repository's
CASES = [
    ("conll", "bc4chemd", FIXTURES / "token_tagging/bc4chemd", "train.tsv", None, "X-BAD", "X-BAD"),
    ("relation-tsv", "chemprot", "ChemProt/blurb", "dev.tsv", "\tCPR:4\n", "\tCPR:99\n", "CPR:99"),
    ("biosses", "biosses", "BIOSSES/blurb", "dev.tsv", None, "not-a-score", "not-a-score"),
    ("hoc", "hoc", "HoC/blurb", "dev.tsv", "0_0,1_0,", "0_0,1_7,", "1_7"),
    ("pubmedqa-json", "pubmedqa", "PubMedQA/blurb", "pqal_fold0/dev_set.json",
     '"final_decision": "no"', '"final_decision": "perhaps"', '"perhaps"'),
    ("bioasq-tsv", "bioasq", "BioASQ/blurb", "dev.tsv", "\tno\n", "\tperhaps\n", "\tperhaps"),
    ("litcovid-csv", "litcovid", FIXTURES / "sentence_level/litcovid", "BC7-LitCovid-Train.csv",
     "Prevention;Transmission", "Prevention;Astrology", "Astrology"),
    ("squad-json", "bioasq-factoid", FIXTURES / "sentence_level/bioasq-factoid", "BioASQ-train-factoid-7b.json",
     '"answer_start": ', '"answer_start": 1', '"answer_start": 1'),
    ("mednli-jsonl", "mednli", FIXTURES / "clinical/mednli", "mli_train_v1.jsonl",
     '"gold_label": "entailment"', '"gold_label": "perhaps"', '"perhaps"'),
    ("i2b2-concepts", "i2b2-2010", FIXTURES / "clinical/i2b2-2010", "train/beth/concept/record-101.con",
     't="problem"', 't="astrology"', "astrology"),
    ("i2b2-relations", "i2b2-2010-re", FIXTURES / "clinical/i2b2_2010_re", "train/beth/rel/record-301.rel",
     'r="PIP"', 'r="XYZ"', "XYZ"),
    ("sts-tsv", "n2c2-2019-sts", FIXTURES / "clinical/n2c2-2019-sts", "clinicalSTS2019.train.txt",
     "\t3.5\n", "\tmany\n", "\tmany"),
    ("notes-csv", "mimic-aki", FIXTURES / "clinical/mimic-aki", "train.csv",
     '"Pt with hypotension requiring pressors; oliguric, Cr 1.0 -> 2.1.",1',
     '"Pt with hypotension requiring pressors;\noliguric, Cr 1.0 -> 2.1.",7', '2.1.",7'),
    ("inline-xml", "i2b2-2006-deid", FIXTURES / "clinical/i2b2-2006", "deid_surrogate_train_all_version2.xml",
     '<PHI TYPE="ID">', '<PHI TYPE="ASTROLOGY">', "ASTROLOGY"),
    ("brat", "n2c2-2018-ade", FIXTURES / "clinical/n2c2-2018", "test/200.ann", "\tDrug 33 41", "\tAstro 33 41",
     "Astro"),
    ("offset-xml", "i2b2-2014-deid", FIXTURES / "clinical/i2b2-2014", "test/210-01.xml",
     '<LOCATION id="P1" start="25" end="44" text="Hickory Bend Clinic" TYPE="HOSPITAL"',
     '<ASTROLOGY id="P1" start="25" end="44" text="Hickory Bend Clinic" TYPE="STARS"', "ASTROLOGY"),
    ("canonical-jsonl", "demo-ner", TESTS.parent / "plugins/datasets/demo/demo-ner", "train.jsonl",
     '"O"]', '"X-BAD"]', "X-BAD"),
]  # fmt: skip


def marked_line(path: Path, marker: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if marker in line)


def break_conll_tag(path: Path) -> int:
    """Give the third token of the second sentence an unknown tag; the line of that token."""
    lines = path.read_text(encoding="utf-8").split("\n")
    sentence_starts = [i for i, line in enumerate(lines) if line and (i == 0 or not lines[i - 1])]
    target = sentence_starts[1] + 2
    token = lines[target].split("\t")[0]
    lines[target] = f"{token}\tX-BAD"
    path.write_text("\n".join(lines), encoding="utf-8")
    return target + 1


def break_second_row(path: Path, value: str) -> int:
    """Replace the last column of the file's second data row (after a header, if any)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    target = 2
    fields = lines[target].split("\t")
    lines[target] = "\t".join([*fields[:-1], value])
    path.write_text("\n".join(lines), encoding="utf-8")
    return target + 1


@pytest.mark.parametrize(
    ("family", "dataset", "source", "file", "old", "new", "marker"),
    [
        pytest.param(*case, id=case[0], marks=pytest.mark.official_data if isinstance(case[2], str) else ())
        for case in CASES
    ],
)
def test_the_error_names_the_line_that_holds_the_bad_value(tmp_path, family, dataset, source, file, old, new, marker):
    directory = shutil.copytree(official(source) if isinstance(source, str) else source, tmp_path / "data")
    path = directory / file
    if family == "conll":
        line = break_conll_tag(path)
    elif family == "biosses":
        line = break_second_row(path, new)
    else:
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{path} has no {old!r} to replace"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        line = marked_line(path, marker)
    with pytest.raises(DataFormatError) as excinfo:
        load_dataset_files(DATASETS[dataset], directory)
    assert excinfo.value.where == f"{path}:{line}", excinfo.value


def test_a_document_file_with_no_text_is_named(tmp_path):
    """OHSUMed (one file per abstract, the category its folder): an empty abstract has no line to name."""
    directory = shutil.copytree(FIXTURES / "sentence_level/ohsumed", tmp_path / "data")
    path = sorted((directory / "training" / "C01").iterdir())[0]
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as excinfo:
        load_dataset_files(DATASETS["ohsumed"], directory)
    assert (excinfo.value.where, excinfo.value.message) == (str(path), "file is empty")
