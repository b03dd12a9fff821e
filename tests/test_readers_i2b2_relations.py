"""The i2b2 2010 relation reader, on an invented corpus in the real release layout and format.

tests/fixtures/clinical/i2b2_2010_re/ has two training records (beth and partners subdirectories
with txt/, concept/ and rel/, as in ``concept_assertion_relation_training_data``) and one test
record (txt/, concepts/ and rel/, as in the reference standard). Between them they use all eight
relation types, a concept across a line break with a relation, test-treatment pairs (no
candidates) and a problem-problem relation whose first argument comes later in the line. No
name, date or number in them belongs to a real patient. Malformed-input tests copy the fixture,
break one thing and check the error names the file, the line and what was expected.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path

import pytest

from biolm.dataset_io import DataFormatError, LoadedDataset, load_dataset_files
from plugins.datasets import clinical
from plugins.datasets.readers.clinical import ADAPTERS
from plugins.datasets.readers.clinical.i2b2_relations import read_i2b2_2010_relations

FIXTURE = Path(__file__).parent / "fixtures" / "clinical" / "i2b2_2010_re"
SPECS = {spec.slug: spec for spec in clinical.DATASETS}
SLUG = "i2b2-2010-re"
LABELS = ["PIP", "TeCP", "TeRP", "TrAP", "TrCP", "TrIP", "TrNAP", "TrWP", "false"]

# Every candidate of the fixture: id -> (head words, head type, tail words, tail type, label).
EXPECTED = {
    "train": {
        "record-401-5-0_0-4_6": ("Metformin", "treatment", "acute renal failure", "problem", "TrNAP"),
        "record-401-5-8_9-4_6": ("a creatinine", "test", "acute renal failure", "problem", "TeRP"),
    },
    "dev": {
        "record-301-4-11_13-9_9": ("chronic kidney disease", "problem", "hypertension", "problem", "PIP"),
        "record-301-4-9_9-17_17": ("hypertension", "problem", "dyspnea", "problem", "false"),
        "record-301-4-11_13-17_17": ("chronic kidney disease", "problem", "dyspnea", "problem", "false"),
        "record-301-5-0_2-4_5": ("A chest x-ray", "test", "pulmonary edema", "problem", "TeRP"),
        "record-301-5-10_11-4_5": ("intravenous furosemide", "treatment", "pulmonary edema", "problem", "TrIP"),
        "record-301-6-0_0-5_5": ("Lisinopril", "treatment", "hyperkalemia", "problem", "TrCP"),
    },
    "test": {
        "0001-3-4_4-6_7": ("warfarin", "treatment", "atrial fibrillation", "problem", "TrAP"),
        "0001-3-4_4-10_11": ("warfarin", "treatment", "a rash", "problem", "TrCP"),
        "0001-3-6_7-10_11": ("atrial fibrillation", "problem", "a rash", "problem", "false"),
        "0001-4-0_1-4_4": ("An echocardiogram", "test", "thrombus", "problem", "TeRP"),
        "0001-4-0_1-13_15": ("An echocardiogram", "test", "her bleeding risk", "problem", "false"),
        "0001-4-7_7-4_4": ("heparin", "treatment", "thrombus", "problem", "false"),
        "0001-4-4_4-13_15": ("thrombus", "problem", "her bleeding risk", "problem", "false"),
        "0001-4-7_7-13_15": ("heparin", "treatment", "her bleeding risk", "problem", "TrNAP"),
        "0001-5-1_1-2_3": ("metoprolol", "treatment", "her tachycardia", "problem", "TrWP"),
        "0001-5-1_1-14_14": ("metoprolol", "treatment", "palpitations", "problem", "false"),
        "0001-5-7_9-2_3": ("a Holter monitor", "test", "her tachycardia", "problem", "false"),
        "0001-5-2_3-14_14": ("her tachycardia", "problem", "palpitations", "problem", "false"),
        "0001-5-7_9-14_14": ("a Holter monitor", "test", "palpitations", "problem", "TeCP"),
    },
}

TRAIN_TXT = Path("train") / "partners" / "txt" / "record-401.txt"
TRAIN_CON = Path("train") / "partners" / "concept" / "record-401.con"
TRAIN_REL = Path("train") / "partners" / "rel" / "record-401.rel"
TEST_REL = Path("test") / "rel" / "0001.rel"
TEST_CON = Path("test") / "concepts" / "0001.con"


def load(directory: Path = FIXTURE, **options: object) -> LoadedDataset:
    adapter = ADAPTERS[SLUG]
    if options:
        adapter = dataclasses.replace(adapter, options={**adapter.options, **options})
    return load_dataset_files(dataclasses.replace(SPECS[SLUG], adapter=adapter), directory)


def copy(tmp_path: Path) -> Path:
    target = tmp_path / "i2b2_2010_re"
    shutil.copytree(FIXTURE, target)
    return target


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def error(directory: Path, where: Path, line: int | None, *expected: str, **options: object) -> DataFormatError:
    with pytest.raises(DataFormatError) as info:
        load(directory, **options)
    assert info.value.where == (f"{where}:{line}" if line is not None else str(where))
    for words in expected:
        assert words in info.value.message
    return info.value


def described(row: dict) -> tuple[str, str, str, str, str]:
    text, head, tail = row["text"], row["head"], row["tail"]
    return (
        text[head["start"] : head["end"]],
        head["type"],
        text[tail["start"] : tail["end"]],
        tail["type"],
        row["label"],
    )


# --- loading ----------------------------------------------------------------------------------


def test_every_typed_concept_pair_of_a_line_is_one_example_labelled_from_the_rel_file():
    dataset = load()
    assert dataset.sizes == {"train": 2, "dev": 6, "test": 13}
    assert dataset.label_set == LABELS == sorted(SPECS[SLUG].labels)
    for split, expected in EXPECTED.items():
        assert {row["id"]: described(row) for row in dataset.splits[split]} == expected


def test_an_example_is_the_sentence_line_with_character_spans_of_its_two_concepts():
    row = next(row for row in load().splits["test"] if row["id"] == "0001-4-7_7-13_15")
    assert row == {
        "id": "0001-4-7_7-13_15",
        "text": "An echocardiogram showed no thrombus , and heparin was not given because of her bleeding risk .",
        "head": {"start": 43, "end": 50, "type": "treatment"},
        "tail": {"start": 76, "end": 93, "type": "problem"},
        "label": "TrNAP",
    }


def test_examples_point_at_the_line_of_the_text_file_they_come_from():
    splits = read_i2b2_2010_relations(FIXTURE)  # validation strips _where, so ask the reader itself
    where = {row["id"]: row["_where"] for rows in splits.values() for row in rows}
    assert where["0001-5-7_9-14_14"] == f"{FIXTURE / 'test' / 'txt' / '0001.txt'}:5"
    assert where["record-301-6-0_0-5_5"] == f"{FIXTURE / 'train' / 'beth' / 'txt' / 'record-301.txt'}:6"


def test_the_first_rel_argument_is_the_head_even_when_it_comes_later_in_the_line():
    # record-301.rel: c="chronic kidney disease" 4:11 4:13||r="PIP"||c="hypertension" 4:9 4:9
    dev = {row["id"]: row for row in load().splits["dev"]}
    assert described(dev["record-301-4-11_13-9_9"])[::2] == ("chronic kidney disease", "hypertension", "PIP")
    assert "record-301-4-9_9-11_13" not in dev


def test_an_unrelated_pair_puts_the_test_or_treatment_first_and_two_problems_in_line_order():
    test = {row["id"]: described(row) for row in load().splits["test"]}
    # "her tachycardia" comes before "a Holter monitor" in the line, but the test is the head.
    assert test["0001-5-7_9-2_3"] == ("a Holter monitor", "test", "her tachycardia", "problem", "false")
    assert test["0001-5-2_3-14_14"][::2] == ("her tachycardia", "palpitations", "false")


def test_treatment_test_pairs_are_candidates_only_with_pairs_all_as_in_blue():
    dataset = load(pairs="all")
    assert dataset.sizes == {"train": 3, "dev": 7, "test": 15}
    extra = {
        split: {row["id"]: described(row) for row in rows if row["id"] not in EXPECTED[split]}
        for split, rows in dataset.splits.items()
    }
    assert extra == {
        "train": {"record-401-5-0_0-8_9": ("Metformin", "treatment", "a creatinine", "test", "false")},
        "dev": {"record-301-5-0_2-10_11": ("A chest x-ray", "test", "intravenous furosemide", "treatment", "false")},
        "test": {
            "0001-4-0_1-7_7": ("An echocardiogram", "test", "heparin", "treatment", "false"),
            "0001-5-1_1-7_9": ("metoprolol", "treatment", "a Holter monitor", "test", "false"),
        },
    }


def test_a_relation_with_a_concept_across_a_line_break_is_left_out_and_logged(caplog):
    with caplog.at_level(logging.INFO, logger="plugins.datasets.readers.clinical"):
        dataset = load()
    assert not any("4_4" in row["id"] and row["id"].startswith("record-401-4") for row in dataset.splits["train"])
    assert (
        f"{FIXTURE / TRAIN_TXT}: left out 1 concept(s) across a line break, 1 relation(s) not within one line"
        in caplog.text
    )


def test_dev_is_carved_out_by_record_and_matches_the_i2b2_2010_concept_dataset():
    relations = load()
    concept_spec = dataclasses.replace(SPECS["i2b2-2010"], adapter=ADAPTERS["i2b2-2010"])
    concepts = load_dataset_files(concept_spec, FIXTURE)  # the same files, read for concepts
    assert {row["document_id"] for row in concepts.splits["dev"]} == {"record-301"}
    assert {row["id"].rsplit("-", 3)[0] for row in relations.splits["dev"]} == {"record-301"}


def test_a_dev_directory_is_used_when_there_is_one(tmp_path):
    directory = copy(tmp_path)
    (directory / "dev").mkdir()
    shutil.move(directory / "train" / "beth", directory / "dev" / "beth")
    assert load(directory).sizes == {"train": 2, "dev": 6, "test": 13}


def test_a_relation_line_repeated_with_the_same_type_is_one_example(tmp_path):
    directory = copy(tmp_path)
    rel = directory / TEST_REL
    rel.write_text(rel.read_text() + 'c="a rash" 3:10 3:11||r="TrCP"||c="warfarin" 3:4 3:4\n')
    test = {row["id"]: row["label"] for row in load(directory).splits["test"]}
    assert len(test) == 13 and test["0001-3-4_4-10_11"] == "TrCP"


def test_an_empty_rel_file_makes_every_candidate_false(tmp_path):
    directory = copy(tmp_path)
    (directory / TEST_REL).write_text("")
    assert {row["label"] for row in load(directory).splits["test"]} == {"false"}


# --- malformed input --------------------------------------------------------------------------


def test_a_rel_line_that_does_not_parse_is_reported_with_file_and_line(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TRAIN_REL, '||r="TeRP"||', '||r="TeRP"|')
    error(directory, directory / TRAIN_REL, 3, 'expected a relation line c="<text>" <line>:<token>')


def test_a_relation_to_a_concept_absent_from_the_con_file_is_reported(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TEST_REL, 'c="a rash" 3:10 3:11', 'c="rash" 3:11 3:11')
    error(directory, directory / TEST_REL, 2, 'c="rash" 3:11 3:11 is not a concept of', "0001.con")


def test_a_relation_offset_beyond_the_text_is_reported(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TEST_REL, 'c="palpitations" 5:14 5:14', 'c="palpitations" 9:14 9:14')
    error(directory, directory / TEST_REL, 6, "offset 9:14 is beyond the 5 lines of 0001.txt")


def test_a_relation_token_beyond_its_line_is_reported(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TEST_REL, 'c="palpitations" 5:14 5:14', 'c="palpitations" 5:14 5:16')
    error(directory, directory / TEST_REL, 6, "offset 5:16 is out of range", "has 16 tokens")


def test_a_relation_argument_whose_words_differ_from_the_text_is_reported(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TEST_REL, 'c="heparin" 4:7 4:7', 'c="warfarin" 4:7 4:7')
    error(directory, directory / TEST_REL, 4, "c=\"warfarin\" does not match the tokens 'heparin'")


def test_a_relation_between_types_its_type_does_not_link_is_reported(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TEST_REL, 'r="TeRP"||c="thrombus"', 'r="TrAP"||c="thrombus"')
    error(directory, directory / TEST_REL, 3, "TrAP must link a treatment and a problem, got test and problem")


def test_a_relation_between_a_test_and_a_treatment_is_reported(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TEST_REL, 'c="thrombus" 4:4 4:4', 'c="heparin" 4:7 4:7')
    error(directory, directory / TEST_REL, 3, "TeRP must link a test and a problem, got test and treatment")


def test_a_relation_of_a_concept_with_itself_is_reported(tmp_path):
    directory = copy(tmp_path)
    rel = directory / TEST_REL
    rel.write_text(rel.read_text() + 'c="a rash" 3:10 3:11||r="PIP"||c="a rash" 3:10 3:11\n')
    error(directory, rel, 7, "PIP links concept 3:10 3:11 to itself")


def test_a_pair_with_two_relation_types_is_reported_unless_conflicts_first(tmp_path, caplog):
    directory = copy(tmp_path)
    rel = directory / TEST_REL
    rel.write_text(rel.read_text() + 'c="warfarin" 3:4 3:4||r="TrWP"||c="atrial fibrillation" 3:6 3:7\n')
    error(directory, rel, 7, "TrWP between 3:4 3:4 and 3:6 3:7 conflicts with TrAP on line 1", "conflicts='first'")
    with caplog.at_level(logging.INFO, logger="plugins.datasets.readers.clinical"):
        test = {row["id"]: row["label"] for row in load(directory, conflicts="first").splits["test"]}
    assert test["0001-3-4_4-6_7"] == "TrAP"
    assert "1 conflicting relation line(s)" in caplog.text


def test_a_record_without_its_rel_file_names_the_file_looked_for(tmp_path):
    directory = copy(tmp_path)
    (directory / TEST_REL).unlink()
    found = error(directory, directory / "test" / "txt" / "0001.txt", None, "no relation file for this record")
    assert str(directory / TEST_REL) in found.message


def test_a_broken_concept_line_is_reported_with_the_con_file_and_line(tmp_path):
    directory = copy(tmp_path)
    edit(directory / TRAIN_CON, 'c="metformin" 5:0 5:0||t="treatment"', 'c="metformin" 5:0||t="treatment"')
    error(directory, directory / TRAIN_CON, 3, 'expected a concept line c="<text>" <line>:<token>')


def test_a_span_annotated_with_two_concept_types_is_reported(tmp_path):
    directory = copy(tmp_path)
    con = directory / TEST_CON
    con.write_text(con.read_text() + 'c="thrombus" 4:4 4:4||t="test"\n')
    error(directory, con, 12, "concept 4:4 4:4 is a test here but a problem on line 5")


def test_without_a_test_directory_the_split_is_missing(tmp_path):
    directory = copy(tmp_path)
    shutil.rmtree(directory / "test")
    error(directory, directory, None, "missing the test split", "test/")


def test_an_unknown_pairs_option_is_reported(tmp_path):
    error(FIXTURE, FIXTURE, None, "adapter option pairs='some' is not one of ['typed', 'all']", pairs="some")


# --- the user's own copy ----------------------------------------------------------------------


def test_the_real_release_gives_the_relations_blue_counts(official_data):
    directory = official_data(ADAPTERS[SLUG].default_path)  # licence-restricted: the user's copy, if any
    dataset = load(directory)
    assert dataset.label_set == LABELS
    # BLUE (Peng et al. 2019, Table 1) counts 6,293 test relations; ours can only be lower by the
    # relations left out (across lines), which the log counts.
    positives = sum(row["label"] != "false" for row in dataset.splits["test"])
    assert 6200 <= positives <= 6293
