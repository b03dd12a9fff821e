"""Per-class test figures: the metric's own parts, aggregated, shown only for classes with enough test examples.

The counting functions (``class_counts``, ``entity_counts``, ``element_counts``) must pool back to
the metric they belong to, and each class's figure must equal the metric computed on that class
alone (the relation type as the only positive class, the entity type's mentions alone, the one
PICO element, the one hallmark). The engine's :func:`workers.engine.per_class_counts.per_class_figures`
is then run on BLURB-mini's test splits with known predictions (the relation set standing in for
ChemProt, the PICO set for EBM PICO, the document set for HoC, the NER set with its mentions typed
for a typed entity set such as JNLPBA's typed files), checked against scikit-learn,
against the ten-example threshold, and for anything per example in what it returns. The
official-data tests run the same on ChemProt, DDI and HoC's test files and on JNLPBA's typed test
file, and skip, naming the missing path, where the files are absent.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest
from checkpoints import demo_texts, tiny_bert
from contract_documents import results_document
from sklearn.metrics import precision_recall_fscore_support

from biolm.canonical_jsonl import read_canonical_jsonl
from biolm.contract import ResultsDocument
from biolm.dataset_io import LoadedDataset, fingerprint_of, load_dataset_files
from biolm.errors import DataFormatError
from biolm.plugins import collect_contributions, get_plugin_manager
from plugins.datasets.readers.conll import read_conll, read_crichton_test_types
from workers.engine.metrics import (
    average_micro_f1,
    class_counts,
    element_counts,
    entity_counts,
    entity_scores,
    macro_f1,
    micro_f1,
    token_macro_f1,
)
from workers.engine.metrics.common import scores_of, total
from workers.engine.per_class_counts import MIN_SUPPORT, per_class_figures
from workers.engine.run_settings import FinetuneSpec
from workers.engine.withheld import score_withheld

DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"
FIGURE_KEYS = {"name", "support", "precision", "recall", "f1"}


# -- the counting functions are the metrics' parts ---------------------------------------------------

RELATION_GOLD = ["CPR:3", "false", "CPR:4", "CPR:3", "false", "CPR:9", "CPR:4", "CPR:3", "false", "CPR:9"]
RELATION_PRED = ["CPR:3", "CPR:3", "CPR:4", "false", "false", "CPR:4", "CPR:4", "CPR:3", "CPR:9", "CPR:9"]


def test_relation_type_counts_pool_to_micro_f1_and_each_type_is_micro_f1_with_it_the_only_positive_class():
    counts = class_counts(RELATION_GOLD, RELATION_PRED, negative="false")
    assert list(counts) == ["CPR:3", "CPR:4", "CPR:9"]  # the negative class is no class of the metric
    pooled = micro_f1(RELATION_GOLD, RELATION_PRED, negative="false")
    assert scores_of(total(counts.values())).f1 == pytest.approx(pooled)
    p, r, f, support = precision_recall_fscore_support(
        RELATION_GOLD, RELATION_PRED, labels=list(counts), zero_division=0
    )
    for j, (name, count) in enumerate(counts.items()):
        assert scores_of(count).f1 == pytest.approx(micro_f1(RELATION_GOLD, RELATION_PRED, positive=name))
        assert scores_of(count) == pytest.approx((100 * p[j], 100 * r[j], 100 * f[j]))
        assert count.gold == support[j]


def test_ddi_types_leave_out_ddi_false_and_macro_f1_is_the_mean_of_their_f1():
    gold = ["DDI-false", "DDI-effect", "DDI-mechanism", "DDI-advise", "DDI-int", "DDI-effect", "DDI-false"]
    pred = ["DDI-effect", "DDI-effect", "DDI-advise", "DDI-advise", "DDI-false", "DDI-effect", "DDI-false"]
    labels = ["DDI-advise", "DDI-effect", "DDI-false", "DDI-int", "DDI-mechanism"]
    counts = class_counts(gold, pred, negative="DDI-false", labels=labels)
    assert list(counts) == ["DDI-advise", "DDI-effect", "DDI-int", "DDI-mechanism"]
    mean = statistics.fmean(scores_of(c).f1 for c in counts.values())
    assert mean == pytest.approx(macro_f1(gold, pred, negative="DDI-false", labels=labels))
    assert scores_of(total(counts.values())).f1 == pytest.approx(micro_f1(gold, pred, negative="DDI-false"))


TYPED_GOLD = [
    ["B-protein", "I-protein", "O", "B-DNA", "O", "B-cell_type"],
    ["O", "B-RNA", "I-RNA", "O", "B-protein", "O"],
]
TYPED_PRED = [
    ["B-protein", "I-protein", "O", "B-protein", "O", "B-cell_type"],  # DNA predicted as protein
    ["O", "B-RNA", "O", "O", "B-protein", "B-cell_line"],  # RNA cut short, a spurious cell line
]


def only(sentences: list[list[str]], type_: str) -> list[list[str]]:
    """The tags of one entity type, every other type's tags made O: that type's subset of the mentions."""
    return [[tag if tag.endswith(f"-{type_}") else "O" for tag in s] for s in sentences]


def test_entity_type_counts_pool_to_entity_f1_and_each_type_is_entity_f1_on_that_types_mentions():
    counts = entity_counts(TYPED_GOLD, TYPED_PRED)
    assert list(counts) == ["DNA", "RNA", "cell_line", "cell_type", "protein"]
    assert scores_of(total(counts.values())) == pytest.approx(entity_scores(TYPED_GOLD, TYPED_PRED))
    for type_, count in counts.items():
        assert scores_of(count) == pytest.approx(entity_scores(only(TYPED_GOLD, type_), only(TYPED_PRED, type_)))
    assert counts["protein"] == (2, 3, 2) and counts["DNA"] == (0, 0, 1) and counts["cell_line"] == (0, 1, 0)


PICO_GOLD = [["I-PAR", "I-PAR", "O", "I-INT"], ["O", "I-OUT", "I-OUT", "O"]]
PICO_PRED = [["I-PAR", "O", "O", "I-INT"], ["I-OUT", "I-OUT", "I-INT", "O"]]


def test_pico_element_counts_average_to_the_word_level_macro_f1_and_each_element_is_its_own_score():
    counts = element_counts(PICO_GOLD, PICO_PRED)
    assert list(counts) == ["INT", "OUT", "PAR"]
    assert statistics.fmean(scores_of(c).f1 for c in counts.values()) == pytest.approx(
        token_macro_f1(PICO_GOLD, PICO_PRED)
    )
    for element, count in counts.items():
        assert scores_of(count).f1 == pytest.approx(token_macro_f1(PICO_GOLD, PICO_PRED, labels=[f"I-{element}"]))
    sets = [[frozenset({"PAR", "INT"}), frozenset()], [frozenset({"OUT"}), frozenset({"PAR"})]]
    guessed = [[frozenset({"PAR"}), frozenset()], [frozenset({"OUT", "INT"}), frozenset({"PAR"})]]
    multi = element_counts(sets, guessed)
    assert multi == {"INT": (0, 1, 1), "OUT": (1, 1, 1), "PAR": (2, 2, 2)}
    assert statistics.fmean(scores_of(c).f1 for c in multi.values()) == pytest.approx(token_macro_f1(sets, guessed))


HALLMARK_GOLD = [frozenset({"angiogenesis"}), frozenset(), frozenset({"immune", "angiogenesis"}), frozenset({"immune"})]
HALLMARK_PRED = [frozenset({"angiogenesis"}), frozenset({"immune"}), frozenset({"immune"}), frozenset()]


def test_hoc_label_counts_pool_to_the_abstract_by_label_micro_f1_and_each_label_is_that_columns_score():
    counts = class_counts(HALLMARK_GOLD, HALLMARK_PRED)
    assert list(counts) == ["angiogenesis", "immune"]
    assert scores_of(total(counts.values())).f1 == pytest.approx(average_micro_f1(HALLMARK_GOLD, HALLMARK_PRED))
    for label, count in counts.items():
        column = [frozenset({label} & g) for g in HALLMARK_GOLD], [frozenset({label} & p) for p in HALLMARK_PRED]
        assert scores_of(count).f1 == pytest.approx(average_micro_f1(*column))


# -- the engine's figures on BLURB-mini's test splits --------------------------------------------------


@pytest.fixture(scope="module")
def contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600)


def demo_rows(dataset: str) -> list[dict]:
    rows = read_canonical_jsonl(DEMO / dataset)["test"]
    return [{k: v for k, v in row.items() if k != "_where"} for row in rows]


def loaded(spec, test_rows: list[dict]) -> LoadedDataset:
    splits = {"test": test_rows}
    return LoadedDataset(spec, splits, sorted(spec.labels), fingerprint_of(splits))


def job_results(tokenizer_dir: Path, dataset: str, predictions: dict[str, list]) -> ResultsDocument:
    spec = FinetuneSpec.build(model=tokenizer_dir, dataset=dataset, out=tokenizer_dir / "out", load_entrypoints=False)
    return ResultsDocument.from_json(results_document(spec.job, dict.fromkeys(predictions), predictions=predictions))


def cycled(gold: list[str], labels: list[str], every: int, offset: int) -> list[str]:
    """Gold, except every ``every``-th example (from ``offset``) takes the next label round ``labels``."""
    return [labels[(labels.index(g) + 1) % len(labels)] if i % every == offset else g for i, g in enumerate(gold)]


def assert_figure(figure, reference: tuple, j: int) -> None:
    """``figure`` equals column ``j`` of scikit-learn's precision_recall_fscore_support (0-1 scale)."""
    p, r, f, n = reference
    assert (figure.precision, figure.recall, figure.f1) == pytest.approx((100 * p[j], 100 * r[j], 100 * f[j]), abs=1e-3)
    assert figure.support == n[j]


def assert_aggregates_only(breakdown, rows: list[dict]) -> None:
    """Classes and counts, nothing per example: no example id, no list as long as the test split."""
    document = breakdown.to_json()
    assert set(document) == {"classes", "below_threshold", "min_support"}
    assert all(set(figure) == FIGURE_KEYS for figure in document["classes"])
    text = json.dumps(document)
    assert not any(row["id"] in text for row in rows)
    assert all(figure["support"] >= MIN_SUPPORT for figure in document["classes"])


def test_relation_figures_are_each_types_seed_mean_and_a_type_with_seven_test_examples_is_not_shown(
    contributions, tokenizer_dir
):
    rows = demo_rows("demo-relation")  # test: CPR:3 16, CPR:4 14, CPR:9 7, false 23
    gold = [row["label"] for row in rows]
    labels = ["CPR:3", "CPR:4", "CPR:9", "false"]
    predictions = {"42": cycled(gold, labels, 5, 0), "43": cycled(gold, labels, 4, 1)}
    data = loaded(contributions.datasets["demo-relation"], rows)
    breakdown = per_class_figures(job_results(tokenizer_dir, "demo-relation", predictions), tokenizer_dir, data, data)

    assert [(f.name, f.support) for f in breakdown.classes] == [("CPR:3", 16), ("CPR:4", 14)]
    assert breakdown.below_threshold == 1  # CPR:9, counted, never named
    for figure in breakdown.classes:
        per_seed = [
            precision_recall_fscore_support(gold, p, labels=[figure.name], zero_division=0)
            for p in predictions.values()
        ]
        expected = [statistics.fmean(100 * float(s[k][0]) for s in per_seed) for k in range(3)]
        assert (figure.precision, figure.recall, figure.f1) == pytest.approx(expected, abs=1e-3)
    assert_aggregates_only(breakdown, rows)


def test_a_class_shows_from_ten_test_examples_and_not_at_nine(contributions, tokenizer_dir):
    rows = demo_rows("demo-relation")
    falses = [i for i, row in enumerate(rows) if row["label"] == "false"]
    spec = contributions.datasets["demo-relation"]
    shown = {}
    for n_cpr9 in (9, 10):
        relabelled = [dict(row) for row in rows]
        for i in falses[: n_cpr9 - 7]:  # demo-relation's test has 7 CPR:9 pairs
            relabelled[i]["label"] = "CPR:9"
        gold = [row["label"] for row in relabelled]
        assert gold.count("CPR:9") == n_cpr9
        data = loaded(spec, relabelled)
        results = job_results(tokenizer_dir, "demo-relation", {"42": cycled(gold, sorted(set(gold)), 6, 2)})
        breakdown = per_class_figures(results, tokenizer_dir, data, data)
        shown[n_cpr9] = {f.name for f in breakdown.classes}
    assert "CPR:9" not in shown[9] and "CPR:9" in shown[10]


def test_pico_figures_are_each_elements_word_level_f1_and_average_to_the_recorded_score(contributions, tokenizer_dir):
    rows = demo_rows("demo-pico")
    predicted = [
        [("I-OUT" if tag == "I-INT" else tag) if (i + j) % 4 == 0 else tag for j, tag in enumerate(row["tags"])]
        for i, row in enumerate(rows)
    ]
    data = loaded(contributions.datasets["demo-pico"], rows)
    results = job_results(tokenizer_dir, "demo-pico", {"42": predicted})
    breakdown = per_class_figures(results, tokenizer_dir, data, data)

    assert sorted(f.name for f in breakdown.classes) == ["INT", "OUT", "PAR"]
    recorded = score_withheld(results, tokenizer_dir, data, data)["42"]["token-macro-f1"]
    assert statistics.fmean(f.f1 for f in breakdown.classes) == pytest.approx(recorded, abs=1e-3)
    words_gold = [tag for row in rows for tag in row["tags"]]
    words_pred = [tag for sentence in predicted for tag in sentence]
    for figure in breakdown.classes:
        element = [f"I-{figure.name}"]
        reference = precision_recall_fscore_support(words_gold, words_pred, labels=element, zero_division=0)
        assert_figure(figure, reference, 0)
    assert_aggregates_only(breakdown, rows)


def test_hoc_figures_are_per_hallmark_and_a_hallmark_in_nine_test_abstracts_is_not_shown(contributions, tokenizer_dir):
    rows = demo_rows("demo-doc-classification")  # "sustaining proliferative signaling" is in 9 test abstracts
    names = sorted({label for row in rows for label in row["labels"]})
    flipped = [{names[i % len(names)]} if i % 3 == 0 else set() for i in range(len(rows))]
    predicted = [sorted(set(row["labels"]) ^ flip) for row, flip in zip(rows, flipped, strict=True)]
    data = loaded(contributions.datasets["demo-doc-classification"], rows)
    results = job_results(tokenizer_dir, "demo-doc-classification", {"42": predicted})
    breakdown = per_class_figures(results, tokenizer_dir, data, data)

    shown = {f.name: f for f in breakdown.classes}
    assert "sustaining proliferative signaling" not in shown and breakdown.below_threshold == 1
    assert len(shown) == len(names) - 1
    gold_matrix = np.array([[name in row["labels"] for name in names] for row in rows])
    pred_matrix = np.array([[name in p for name in names] for p in predicted])
    reference = precision_recall_fscore_support(gold_matrix, pred_matrix, zero_division=0)
    for j, name in enumerate(names):
        if name in shown:
            assert_figure(shown[name], reference, j)
    assert_aggregates_only(breakdown, rows)


def test_untyped_entities_have_one_class_so_no_per_class_figures(contributions, tokenizer_dir):
    rows = demo_rows("demo-ner")  # BLURB's NER files strip the type: B/I/O only
    data = loaded(contributions.datasets["demo-ner"], rows)
    results = job_results(tokenizer_dir, "demo-ner", {"42": [row["tags"] for row in rows]})
    assert per_class_figures(results, tokenizer_dir, data, data) is None


def typed(rows: list[dict], types: list[str]) -> list[dict]:
    """BLURB-mini's NER rows with each mention given a type, round ``types`` in order (JNLPBA's typed files)."""
    made, k = [], -1
    for row in rows:
        tags = []
        for tag in row["tags"]:
            k += tag == "B"
            tags.append(tag if tag == "O" else f"{tag}-{types[k % len(types)]}")
        made.append({**row, "tags": tags})
    return made


def test_typed_entities_get_one_figure_per_type_equal_to_entity_f1_on_that_types_mentions(contributions, tokenizer_dir):
    rows = typed(demo_rows("demo-ner"), ["problem", "treatment", "test"])  # a typed NER set's own types
    gold = [row["tags"] for row in rows]
    # every third sentence's entities get the next type: a type error counts against both types
    swap = {"problem": "treatment", "treatment": "test", "test": "problem"}
    predicted = [[t if t == "O" or i % 3 else f"{t[:2]}{swap[t[2:]]}" for t in tags] for i, tags in enumerate(gold)]
    spec = contributions.datasets["i2b2-2010"]
    data = loaded(spec, rows)
    breakdown = per_class_figures(job_results(tokenizer_dir, "i2b2-2010", {"42": predicted}), tokenizer_dir, data, data)

    assert sorted(f.name for f in breakdown.classes) == ["problem", "test", "treatment"]
    for figure in breakdown.classes:
        expected = entity_scores(only(gold, figure.name), only(predicted, figure.name))
        assert (figure.precision, figure.recall, figure.f1) == pytest.approx(tuple(expected), abs=1e-3)
        assert figure.support == entity_counts(gold, gold)[figure.name].gold
    assert_aggregates_only(breakdown, rows)


# -- the official files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset", "folder", "negative", "expected"),
    [
        ("chemprot", "ChemProt", "false", {"CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"}),
        ("ddi", "DDI", "DDI-false", {"DDI-advise", "DDI-effect", "DDI-int", "DDI-mechanism"}),
    ],
)
def test_official_relation_types_on_the_real_test_split(
    dataset, folder, negative, expected, official_data, contributions, tokenizer_dir
):
    spec = contributions.datasets[dataset]
    rows = load_dataset_files(spec, official_data(folder, "blurb", "test.tsv").parent).splits["test"]
    gold = [row["label"] for row in rows]
    labels = sorted(set(gold))
    predicted = cycled(gold, labels, 7, 3)
    data = loaded(spec, rows)
    results = job_results(tokenizer_dir, dataset, {"42": predicted})
    breakdown = per_class_figures(results, tokenizer_dir, data, data)

    assert {f.name for f in breakdown.classes} == expected
    positives = [x for x in labels if x != negative]
    reference = precision_recall_fscore_support(gold, predicted, labels=positives, zero_division=0)
    for figure in breakdown.classes:
        assert_figure(figure, reference, positives.index(figure.name))
    assert_aggregates_only(breakdown, rows)


def test_official_hoc_hallmarks_on_the_real_test_split(official_data, contributions, tokenizer_dir):
    spec = contributions.datasets["hoc"]
    rows = load_dataset_files(spec, official_data("HoC", "blurb", "test.tsv").parent).splits["test"]
    predicted = [sorted(row["labels"])[:-1] if i % 5 == 0 else sorted(row["labels"]) for i, row in enumerate(rows)]
    data = loaded(spec, rows)
    breakdown = per_class_figures(job_results(tokenizer_dir, "hoc", {"42": predicted}), tokenizer_dir, data, data)

    assert len(breakdown.classes) + breakdown.below_threshold == 10  # HoC's ten hallmarks
    assert all(f.precision == 100.0 for f in breakdown.classes)  # only dropped labels: no false positive
    assert_aggregates_only(breakdown, rows)


def read_iob(path: Path) -> list[list[str]]:
    """The tags of a CoNLL-style file (token TAB tag), one list per sentence, document markers skipped."""
    sentences, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("-DOCSTART-"):
            if current:
                sentences.append(current)
            current = []
            continue
        current.append(line.rsplit("\t", 1)[-1])
    return [*sentences, current] if current else sentences


def test_official_jnlpba_entity_types_on_the_typed_test_file(official_data):
    gold = read_iob(official_data("JNLPBA", "crichton-IOB", "test.tsv"))
    # every tenth sentence predicted with each entity's type shifted round the five: a type error on both sides
    types = ["DNA", "RNA", "cell_line", "cell_type", "protein"]
    shift = {t: types[(k + 1) % 5] for k, t in enumerate(types)}
    pred = [[t if t == "O" or k % 10 else f"{t[:2]}{shift[t[2:]]}" for t in s] for k, s in enumerate(gold)]
    counts = entity_counts(gold, pred)
    assert list(counts) == types
    assert sum(c.gold for c in counts.values()) == 8662  # the test mentions the JNLPBA paper counts
    assert scores_of(total(counts.values())) == pytest.approx(entity_scores(gold, pred))
    for type_, count in counts.items():
        assert count.gold >= MIN_SUPPORT
        assert scores_of(count) == pytest.approx(entity_scores(only(gold, type_), only(pred, type_)))


# -- untyped predictions against typed gold (JNLPBA: BLURB merges GENIA's five types) ----------------

# Ten protein and nine DNA mentions, one sentence each ("x" words around the mention).
TYPED_SENTENCES = [["O", "B-protein", "I-protein", "O"]] * 10 + [["B-DNA", "O", "O", "O"]] * 9


def untyped(sentences: list[list[str]]) -> list[list[str]]:
    """BLURB's collapse: ``B-protein`` -> ``B``."""
    return [[t[0] if t != "O" else t for t in s] for s in sentences]


def jnlpba_like_predictions() -> list[list[str]]:
    """Untyped spans: proteins 0-5 exact (6), 6-7 cut short, 8-9 missed; DNA 0-2 exact (3), 3 too long, 4-8 missed."""
    pred = untyped(TYPED_SENTENCES)
    for k in (6, 7):
        pred[k] = ["O", "B", "O", "O"]  # right start, wrong end: no match
    for k in (8, 9):
        pred[k] = ["O", "O", "O", "B"]  # a span where there is none, and the protein missed
    pred[13] = ["B", "I", "O", "O"]  # DNA 3: longer than the gold span
    for k in range(14, 19):
        pred[k] = ["O"] * 4  # DNA 4-8 missed
    return pred


def test_untyped_spans_against_typed_gold_count_each_types_exact_matches_and_no_precision():
    gold = untyped(TYPED_SENTENCES)
    counts = entity_counts(gold, jnlpba_like_predictions(), typed_gold=TYPED_SENTENCES)
    # hand count (see jnlpba_like_predictions): 6 of 10 proteins, 3 of 9 DNA found exactly
    assert counts == {"DNA": (3, None, 9), "protein": (6, None, 10)}
    untyped_score = entity_scores(gold, jnlpba_like_predictions())  # the recorded score's recall pools the types
    assert untyped_score.recall == pytest.approx(100 * (6 + 3) / 19)


def test_typed_gold_must_have_the_same_sentences_and_words():
    gold = untyped(TYPED_SENTENCES)
    with pytest.raises(ValueError, match="typed"):
        entity_counts(gold, gold, typed_gold=TYPED_SENTENCES[:-1])
    with pytest.raises(ValueError, match="typed tags in sentence 0"):
        entity_counts(gold, gold, typed_gold=[s[:-1] for s in TYPED_SENTENCES])


def jnlpba_rows() -> tuple[list[dict], dict[str, list[str]]]:
    """Test rows as BLURB's JNLPBA files give them (untyped) and the typed tags the import keeps by example id."""
    rows = [
        {"id": f"test-{k}", "document_id": "1", "tokens": ["a", "b", "c", "d"], "tags": tags}
        for k, tags in enumerate(untyped(TYPED_SENTENCES))
    ]
    return rows, {row["id"]: typed for row, typed in zip(rows, TYPED_SENTENCES, strict=True)}


def test_jnlpba_figures_are_each_types_recall_from_ten_mentions_and_never_a_precision(contributions, tokenizer_dir):
    rows, types = jnlpba_rows()
    spec = contributions.datasets["jnlpba"]
    gold = LoadedDataset(spec, {"test": rows}, ["B", "I", "O"], fingerprint_of({"test": rows}), [], types)
    results = job_results(tokenizer_dir, "jnlpba", {"42": jnlpba_like_predictions(), "43": untyped(TYPED_SENTENCES)})
    breakdown = per_class_figures(results, tokenizer_dir, gold, gold)

    assert [f.name for f in breakdown.classes] == ["protein"]  # DNA's nine mentions are below the threshold
    assert breakdown.below_threshold == 1
    (protein,) = breakdown.classes
    assert protein.support == 10
    assert protein.recall == pytest.approx((60.0 + 100.0) / 2)  # seed 42 found 6 of 10, seed 43 all: the seed mean
    assert protein.precision is None and protein.f1 is None
    assert_aggregates_only(breakdown, rows)
    # without the typed copy the predictions have one class, the score itself: no figures
    plain = LoadedDataset(spec, {"test": rows}, ["B", "I", "O"], fingerprint_of({"test": rows}))
    assert per_class_figures(results, tokenizer_dir, plain, plain) is None


def write_jnlpba(root: Path, typed_lines: list[str] | None) -> Path:
    """A tiny JNLPBA distribution: blurb/{train,dev,test}.tsv and, when given, crichton-IOB/test.tsv."""
    blurb = root / "blurb"
    blurb.mkdir(parents=True)
    body = "".join(
        "-DOCSTART- 1\n\n" + "".join(f"{w}\t{t}\n" for w, t in zip("abcd", tags, strict=True)) + "\n"
        for tags in untyped(TYPED_SENTENCES)
    )
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        (blurb / name).write_text(body, encoding="utf-8")
    if typed_lines is not None:
        (root / "crichton-IOB").mkdir()
        (root / "crichton-IOB" / "test.tsv").write_text("".join(typed_lines), encoding="utf-8")
    return blurb


def typed_file_lines() -> list[str]:
    lines = []
    for tags in TYPED_SENTENCES:
        lines += ["-DOCSTART-\tO\n", "\n", *(f"{w}\t{t}\n" for w, t in zip("abcd", tags, strict=True)), "\n"]
    return lines


def test_the_import_keeps_typed_test_tags_beside_blurbs_files_and_the_fingerprint_does_not_change(
    contributions, tmp_path
):
    spec = contributions.datasets["jnlpba"]
    with_types = load_dataset_files(spec, write_jnlpba(tmp_path / "with", typed_file_lines()))
    without = load_dataset_files(spec, write_jnlpba(tmp_path / "without", None))
    assert without.test_types is None
    assert with_types.fingerprint == without.fingerprint and with_types.splits == without.splits
    assert [with_types.test_types[row["id"]] for row in with_types.splits["test"]] == TYPED_SENTENCES


def test_a_typed_test_file_that_does_not_align_is_refused_with_its_line_and_what_was_expected(contributions, tmp_path):
    lines = typed_file_lines()
    lines[4] = "c\tB-protein\n"  # line 5: the third word of the first sentence, whose BLURB tag is I
    blurb = write_jnlpba(tmp_path, lines)
    with pytest.raises(DataFormatError, match=r"crichton-IOB/test.tsv.*5.*expected token 'c' tagged I"):
        load_dataset_files(contributions.datasets["jnlpba"], blurb)


def test_official_jnlpba_typed_test_file_aligns_with_blurbs_and_gives_five_types_recall(official_data):
    blurb = official_data("JNLPBA", "blurb")
    official_data("JNLPBA", "crichton-IOB", "test.tsv")
    rows = read_conll(blurb, docstart="pmid")["test"]
    types = read_crichton_test_types(blurb, rows)
    gold = [row["tags"] for row in rows]
    typed_gold = [types[row["id"]] for row in rows]
    pred = [tags if k % 10 else ["O"] * len(tags) for k, tags in enumerate(gold)]  # every tenth sentence missed
    counts = entity_counts(gold, pred, typed_gold=typed_gold)
    assert list(counts) == ["DNA", "RNA", "cell_line", "cell_type", "protein"]
    assert sum(c.gold for c in counts.values()) == 8662  # the test mentions the JNLPBA paper counts
    assert all(c.gold >= MIN_SUPPORT and c.predicted is None for c in counts.values())
    for type_, count in counts.items():  # hand count: the type's mentions outside the missed sentences
        found = sum(1 for k, s in enumerate(typed_gold) if k % 10 for t in s if t == f"B-{type_}")
        assert count.tp == found
    assert sum(c.tp for c in counts.values()) * 100 / 8662 == pytest.approx(entity_scores(gold, pred).recall)
