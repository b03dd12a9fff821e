"""BLURB-mini: the shipped demo data loads, says it is demo data, regenerates exactly, and aggregates like BLURB.

No database and no downloaded data: everything read here ships in plugins/datasets/demo/.
"""

from __future__ import annotations

import dataclasses
import json
import re
import statistics
from pathlib import Path

import pytest

from biolm.aggregation import aggregate
from biolm.canonical_jsonl import read_canonical_jsonl
from biolm.dataset_io import DataFormatError, load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager
from plugins.benchmarks import blurb, blurb_mini
from plugins.datasets import demo_catalogue
from plugins.datasets.demo import generate
from plugins.datasets.readers.demo import ADAPTERS, DEMO_DATA_DIR

SPECS = {spec.slug: spec for spec in demo_catalogue.biolm_datasets()}
DEMO_NOTICE = "invented demo data, not a real benchmark; scores mean nothing about real performance"
SHIPPED_SCRIPTS = {"generate.py", "README.md"}


def shipped_data_files() -> list[Path]:
    return sorted(
        path
        for path in DEMO_DATA_DIR.rglob("*")
        if path.is_file() and path.name not in SHIPPED_SCRIPTS and "__pycache__" not in path.parts
    )


def load(slug: str):
    return load_dataset_files(SPECS[slug], DEMO_DATA_DIR / slug)


# --- the datasets --------------------------------------------------------------------------------


def test_the_catalogue_has_one_demo_dataset_per_blurb_task_type():
    assert sorted(spec.task_type for spec in SPECS.values()) == sorted(g.slug for g in blurb.GROUPS)
    assert set(SPECS) == set(ADAPTERS)


@pytest.mark.parametrize("slug", sorted(SPECS))
def test_each_demo_dataset_loads_with_its_declared_sizes_and_every_label(slug):
    spec = SPECS[slug]
    loaded = load(slug)
    assert loaded.sizes == {split.name: split.size for split in spec.splits}
    assert loaded.label_set == sorted(spec.labels)
    assert loaded.notes == []
    assert {name: len(rows) for name, rows in loaded.to_datasetdict().items()} == loaded.sizes


def test_demo_split_sizes_are_those_the_task_asks_for():
    sizes = {slug: tuple(split.size for split in spec.splits) for slug, spec in SPECS.items()}
    assert sizes == generate.SIZES
    assert {split.unit for spec in SPECS.values() for split in spec.splits} == {"examples"}


def test_every_demo_dataset_is_labelled_as_demo_data():
    for spec in SPECS.values():
        spec.validate()
        assert spec.demo is True, spec.slug
        assert spec.name.startswith("Demo"), spec.slug
        assert DEMO_NOTICE in spec.description.lower(), spec.slug
        assert spec.source.startswith("written by the biolm project"), spec.slug
        assert spec.licence == "CC0 1.0 (invented demo data)", spec.slug
        assert spec.domain == "biomedical" and spec.access == "public"
        assert spec.adapter is ADAPTERS[spec.slug]


def test_demo_metrics_are_the_blurb_metrics_of_their_task_type():
    blurb_metric = {}
    for group in blurb.GROUPS:
        metrics = {e.metric for e in blurb.ENTRIES if e.key in group.members}
        (blurb_metric[group.slug],) = metrics
    for spec in SPECS.values():
        assert spec.metric == blurb_metric[spec.task_type], spec.slug


def test_only_the_document_classification_set_is_multi_label():
    multi = {slug for slug, spec in SPECS.items() if spec.adapter.multi_label}
    assert multi == {"demo-doc-classification"}
    labels_per_abstract = [len(row["labels"]) for row in load("demo-doc-classification").splits["train"]]
    assert 0 in labels_per_abstract and max(labels_per_abstract) >= 2


def test_demo_adapters_read_from_the_package_not_from_the_data_directory():
    for slug, adapter in ADAPTERS.items():
        assert adapter.default_path == str(DEMO_DATA_DIR / slug)
        assert (DEMO_DATA_DIR / slug / "train.jsonl").is_file()
    assert Path(demo_catalogue.__file__).resolve().parent / "demo" == DEMO_DATA_DIR


def test_relation_spans_cover_the_chemical_and_gene_placeholders():
    for rows in load("demo-relation").splits.values():
        for row in rows:
            text = row["text"]
            assert text[row["head"]["start"] : row["head"]["end"]] == "@CHEMICAL$"
            assert text[row["tail"]["start"] : row["tail"]["end"]] == "@GENE$"
            assert (row["head"]["type"], row["tail"]["type"]) == ("CHEMICAL", "GENE")


def test_similarity_scores_are_between_0_and_4_and_spread_over_the_range():
    scores = [row["score"] for rows in load("demo-similarity").splits.values() for row in rows]
    assert min(scores) == 0.0 and max(scores) == 4.0
    assert statistics.pstdev(scores) > 1.0


def test_dev_and_test_ner_mentions_include_names_never_seen_in_training():
    loaded = load("demo-ner")

    def mentions(rows):
        found = set()
        for row in rows:
            for i, tag in enumerate(row["tags"]):
                if tag == "B":
                    end = i + 1
                    while end < len(row["tags"]) and row["tags"][end] == "I":
                        end += 1
                    found.add(" ".join(row["tokens"][i:end]).lower())
        return found

    train = mentions(loaded.splits["train"])
    test = mentions(loaded.splits["test"])
    assert test - train, "every test mention was seen in training: NER would be memorisation"
    assert test & train


def test_no_labelled_text_appears_in_two_splits():
    def key(row):
        return " ".join(row["tokens"]) if "tokens" in row else json.dumps([row.get("text"), row.get("text_pair")])

    for slug in SPECS:
        loaded = load(slug)
        seen: dict[str, str] = {}
        for split, rows in loaded.splits.items():
            for row in rows:
                if "tags" in row and set(row["tags"]) == {"O"}:
                    continue  # entity-free boilerplate sentences may repeat, as in real abstracts
                assert seen.setdefault(key(row), split) == split, (slug, row["id"])


# --- the files ----------------------------------------------------------------------------------


def test_every_shipped_data_file_says_it_is_demo_data():
    files = shipped_data_files()
    assert {p.relative_to(DEMO_DATA_DIR).as_posix() for p in files} == {
        *(f"{slug}/{split}.jsonl" for slug in SPECS for split in ("train", "dev", "test")),
        "corpus.txt",
    }
    for path in files:
        if path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                assert row["id"].startswith(f"{path.parent.name}-"), (path, row["id"])
                assert row.get("document_id", "demo-").startswith("demo-"), (path, row["id"])
    assert "invented" in (DEMO_DATA_DIR / "corpus.txt").read_text(encoding="utf-8").splitlines()[0].lower()
    assert "invented demo data" in (DEMO_DATA_DIR / "README.md").read_text(encoding="utf-8")


def test_each_jsonl_line_has_exactly_the_schema_fields():
    from biolm.schemas import get_schema

    for slug, spec in SPECS.items():
        fields = list(get_schema(spec.adapter.schema).fields)
        for path in sorted((DEMO_DATA_DIR / slug).glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                assert list(json.loads(line)) == fields, path


def test_regenerating_the_demo_data_gives_byte_identical_files(tmp_path):
    written = generate.generate(tmp_path)
    assert sorted(p.relative_to(tmp_path) for p in written) == sorted(
        p.relative_to(DEMO_DATA_DIR) for p in shipped_data_files()
    )
    for path in written:
        shipped = DEMO_DATA_DIR / path.relative_to(tmp_path)
        assert path.read_bytes() == shipped.read_bytes(), f"{shipped} differs from generate.py's output"


def test_the_demo_data_stays_small():
    assert sum(path.stat().st_size for path in shipped_data_files()) < 1_500_000


def test_the_pretraining_corpus_is_a_few_hundred_sentences_of_distinct_documents():
    lines = (DEMO_DATA_DIR / "corpus.txt").read_text(encoding="utf-8").splitlines()
    assert all(line.strip() for line in lines)
    assert len(set(lines)) == len(lines) >= 100
    sentences = sum(len(re.findall(r"[.?!](?: |$)", line)) for line in lines)
    assert 300 <= sentences <= 1000
    assert len({word.lower() for line in lines for word in line.split()}) > 500


# --- the reader -----------------------------------------------------------------------------------


def write_split_files(directory: Path, train: str, dev: str | None = None, test: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    good = (DEMO_DATA_DIR / "demo-qa" / "dev.jsonl").read_text(encoding="utf-8")
    for name, text in (("train", train), ("dev", dev or good), ("test", test or good)):
        (directory / f"{name}.jsonl").write_text(text, encoding="utf-8")
    return directory


QA_LINE = '{"id": "q1", "text": "Is it?", "text_pair": "It is.", "labels": ["yes"]}\n'


def load_qa_copy(tmp_path: Path):
    spec = dataclasses.replace(SPECS["demo-qa"], adapter=ADAPTERS["demo-qa"])
    return load_dataset_files(spec, tmp_path / "demo-qa")


def test_a_line_that_is_not_json_is_reported_with_file_and_line(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE + '{"id": "q2", "text": \n')
    with pytest.raises(DataFormatError, match=r"demo-qa/train\.jsonl:2: invalid JSON"):
        load_qa_copy(tmp_path)


def test_a_line_that_is_not_an_object_is_reported_with_file_and_line(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE + "\n" + '["q2", "Is it?"]\n')
    with pytest.raises(DataFormatError, match=r"train\.jsonl:3: expected one JSON object per line, found an array"):
        load_qa_copy(tmp_path)


def test_an_example_missing_a_field_is_reported_with_file_and_line(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE + '{"id": "q2", "text": "Is it?", "labels": ["no"]}\n')
    with pytest.raises(DataFormatError, match=r"train\.jsonl:2: example has fields .* expected .*text_pair"):
        load_qa_copy(tmp_path)


def test_an_unknown_label_is_reported_with_file_and_line(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE, dev=QA_LINE.replace('"yes"', '"perhaps"'))
    with pytest.raises(DataFormatError, match=r"dev\.jsonl:1: unknown label 'perhaps'"):
        load_qa_copy(tmp_path)


def test_a_key_repeated_within_a_line_is_reported(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE.replace('"id": "q1"', '"id": "q1", "id": "q2"'))
    with pytest.raises(DataFormatError, match=r"train\.jsonl:1: the key 'id' appears twice"):
        load_qa_copy(tmp_path)


def test_bytes_that_are_not_utf8_are_reported_with_file_and_line(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE)
    (tmp_path / "demo-qa" / "train.jsonl").write_bytes(QA_LINE.encode() + b'{"id": "q\xff"}\n')
    with pytest.raises(DataFormatError, match=r"train\.jsonl:2: not UTF-8 text"):
        load_qa_copy(tmp_path)


def test_the_reserved_where_key_is_refused(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE.replace('"id"', '"_where": "x", "id"'))
    with pytest.raises(DataFormatError, match=r"train\.jsonl:1: the key '_where' is reserved"):
        load_qa_copy(tmp_path)


def test_a_missing_split_file_names_the_files_looked_for(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE)
    (tmp_path / "demo-qa" / "test.jsonl").unlink()
    with pytest.raises(DataFormatError, match=r"no test file: looked for 'test\.jsonl' or 'test\.jsonl\.gz'"):
        load_qa_copy(tmp_path)


def test_an_empty_split_file_is_reported(tmp_path):
    write_split_files(tmp_path / "demo-qa", QA_LINE)
    (tmp_path / "demo-qa" / "test.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"test\.jsonl: file is empty"):
        load_qa_copy(tmp_path)


def test_blank_lines_are_skipped_and_examples_remember_their_line(tmp_path):
    write_split_files(tmp_path, "\n" + QA_LINE + "\n")
    splits = read_canonical_jsonl(tmp_path)
    assert [row["_where"] for row in splits["train"]] == [f"{tmp_path / 'train.jsonl'}:2"]


# --- the benchmark ---------------------------------------------------------------------------------


def test_blurb_mini_validates_and_is_labelled_as_demo():
    (spec,) = blurb_mini.biolm_benchmarks()
    spec.validate()
    assert spec.slug == "blurb-mini"
    assert spec.name == "BLURB-mini (demo data)"
    assert DEMO_NOTICE in spec.description.lower()
    assert spec.published == ()
    assert {entry.dataset for entry in spec.entries} == set(SPECS)
    for entry in spec.entries:
        assert entry.metric == SPECS[entry.dataset].metric, entry.key


def test_blurb_mini_aggregates_with_the_shape_of_blurb():
    mini, real = blurb_mini.AGGREGATION, blurb.AGGREGATION
    assert [(g.slug, g.name) for g in mini.groups] == [(g.slug, g.name) for g in real.groups]
    assert mini.primary == real.primary == "blurb-score"
    assert [(s.slug, s.method, s.members, s.weights) for s in mini.summaries] == [
        (s.slug, s.method, s.members, s.weights) for s in real.summaries
    ]
    for group in mini.groups:
        (member,) = group.members
        assert SPECS[member].task_type == group.slug


def test_the_blurb_mini_score_is_the_mean_over_the_six_task_types():
    (spec,) = blurb_mini.biolm_benchmarks()
    scores = dict(zip(spec.entry_keys(), (60.0, 70.0, 50.0, 80.0, 90.0, 40.0), strict=True))
    outcome = aggregate(spec, scores)
    assert outcome.score == pytest.approx(65.0)
    assert outcome.groups["ner"] == 60.0
    assert aggregate(spec, {k: v for k, v in scores.items() if k != "demo-qa"}).score is None


def test_the_demo_plugins_load_through_the_plugin_manager():
    pm = get_plugin_manager(
        default_plugins=(
            "plugins.tasks.metrics",
            "plugins.tasks.task_types",
            "plugins.datasets.demo_catalogue",
            "plugins.protocols.papers",  # blurb-mini names BLURB's protocol, a contribution like the others
            "plugins.benchmarks.blurb_mini",
        ),
        load_entrypoints=False,
    )
    contributions = collect_contributions(pm)
    assert contributions.problems == []
    assert set(contributions.datasets) == set(SPECS)
    assert set(contributions.benchmarks) == {"blurb-mini"}
    for spec in contributions.datasets.values():
        assert spec.task_type in contributions.task_types
