"""Relation formulations: dummification, entity markers, windows around the entities, the [CLS]+marker head.

Expected strings and token lists are written out by hand; the BLURB equivalence is checked against
the existing SequenceClassification path on real ChemProt rows. Tiny models, real data, no mocks.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification

from biolm.dataset_io import load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.__main__ import main
from workers.engine.architectures import build_config
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import ModelSource, TaskOptions, formulation_class
from workers.engine.formulations.relation import (
    MARKERS,
    MarkerRelationClassifier,
    RelationClassification,
    Span,
    dummify,
    mark,
    window,
)
from workers.engine.formulations.sequence import SequenceClassification
from workers.engine.task import Task
from workers.engine.tokenization import train_wordpiece
from workers.engine.training import Hyperparameters, TrainingContext, predict, seed_everything, train

CLINICAL = Path(__file__).parent / "fixtures" / "clinical"
CONTRIBUTIONS = collect_contributions(get_plugin_manager(load_entrypoints=False))
DATASETS = {slug: Task.of(CONTRIBUTIONS, slug) for slug in CONTRIBUTIONS.datasets}  # slug -> Task
MARKED = TaskOptions(relation_representation="markers", relation_features="cls+markers")
CPU = torch.device("cpu")

SENTENCE = "Metformin was held for acute renal failure ."
WORDS = " ".join(f"w{i}" for i in range(100))  # 100 single-token words, for windows


def tokenizer_for(*texts: str):
    """A WordPiece vocabulary large enough that every word of ``texts`` is one token."""
    return train_wordpiece(list(texts) * 5, vocab_size=2000)


def row(text: str, head: tuple[int, int, str], tail: tuple[int, int, str], label: str = "yes") -> dict:
    spans = [dict(zip(("start", "end", "type"), span, strict=True)) for span in (head, tail)]
    return {"id": "r", "text": text, "head": spans[0], "tail": spans[1], "label": label}


def formulation(tokenizer, options: TaskOptions = MARKED, max_length: int = 64, slug: str = "i2b2-2010-re"):
    labels = LabelSpace(("yes", "no"))
    return RelationClassification(DATASETS[slug], labels, tokenizer, options, max_length)


def tokens(tokenizer, feature) -> list[str]:
    return tokenizer.convert_ids_to_tokens(feature.input_ids)


# --- dummification ----------------------------------------------------------------------------


def test_dummify_replaces_each_entity_by_its_upper_cased_type_and_returns_the_dummies_spans():
    text, head, tail = dummify(SENTENCE, Span(0, 9, "treatment"), Span(23, 42, "problem"))
    assert text == "@TREATMENT$ was held for @PROBLEM$ ."
    assert text[head.start : head.end] == "@TREATMENT$" and text[tail.start : tail.end] == "@PROBLEM$"


def test_dummify_handles_a_head_that_comes_after_the_tail():
    text, head, tail = dummify(SENTENCE, Span(23, 42, "problem"), Span(0, 9, "Drug"))
    assert text == "@DRUG$ was held for @PROBLEM$ ."
    assert (head.start, head.end, tail.start, tail.end) == (20, 29, 0, 6)


def test_dummify_replaces_adjacent_entities_separately():
    text, head, tail = dummify("low potassium today", Span(0, 3, "Strength"), Span(3, 13, "Drug"))
    assert text == "@STRENGTH$@DRUG$ today"
    assert (text[head.start : head.end], text[tail.start : tail.end]) == ("@STRENGTH$", "@DRUG$")


def test_dummify_merges_nested_and_overlapping_entities_into_one_head_tail_dummy():
    nested = dummify("heparin-induced thrombocytopenia .", Span(0, 32, "ADE"), Span(0, 7, "Drug"))
    assert nested == ("@ADE-DRUG$ .", Span(0, 10, "ADE"), Span(0, 10, "Drug"))
    crossing = dummify("a b c d", Span(2, 5, "x"), Span(4, 7, "other type"))
    assert crossing[0] == "a @X-OTHER-TYPE$"


def test_already_dummified_blurb_text_is_left_unchanged():
    text = "@GENE$ inhibitors include @CHEMICAL$ (Iressa)."
    head, tail = Span(26, 36, "CHEMICAL"), Span(0, 6, "GENE")
    assert dummify(text, head, tail) == (text, head, tail)
    merged = "Inhibition of @CHEM-GENE$ activity."
    same = (Span(14, 25, "CHEMICAL"), Span(14, 25, "GENE"))
    assert dummify(merged, *same) == (merged, *same)


# --- markers ----------------------------------------------------------------------------------


def test_markers_surround_the_head_with_e1_and_the_tail_with_e2_whatever_their_order():
    assert mark(SENTENCE, Span(0, 9, "t"), Span(23, 42, "p")) == (
        "[E1]Metformin[/E1] was held for [E2]acute renal failure[/E2] ."
    )
    assert mark(SENTENCE, Span(23, 42, "p"), Span(0, 9, "t")) == (
        "[E2]Metformin[/E2] was held for [E1]acute renal failure[/E1] ."
    )


def test_adjacent_nested_and_identical_entities_get_properly_ordered_markers():
    assert mark("lowpotassium", Span(0, 3, "a"), Span(3, 12, "b")) == "[E1]low[/E1][E2]potassium[/E2]"
    assert mark("heparin-induced rash", Span(0, 20, "ADE"), Span(0, 7, "Drug")) == (
        "[E1][E2]heparin[/E2]-induced rash[/E1]"
    )
    assert mark("heparin-induced rash", Span(0, 7, "Drug"), Span(0, 20, "ADE")) == (
        "[E2][E1]heparin[/E1]-induced rash[/E2]"
    )
    assert mark("x @CHEM-GENE$ y", Span(2, 13, "CHEMICAL"), Span(2, 13, "GENE")) == (
        "x [E1][E2]@CHEM-GENE$[/E2][/E1] y"
    )


def test_marker_tokens_are_spliced_around_the_entity_tokens_and_positions_point_at_the_start_markers():
    tokenizer = tokenizer_for(SENTENCE)
    feature = formulation(tokenizer).encode([row(SENTENCE, (23, 42, "problem"), (0, 9, "treatment"))])[0]
    expected = ["[CLS]", "[E2]", "metformin", "[/E2]", "was", "held", "for", "[E1]", "acute", "renal", "failure"]
    assert tokens(tokenizer, feature) == [*expected, "[/E1]", ".", "[SEP]"]
    assert feature.markers == (7, 1)
    assert [tokens(tokenizer, feature)[i] for i in feature.markers] == ["[E1]", "[E2]"]


def test_an_entity_starting_where_a_piece_ends_is_marked_from_the_next_piece():
    text = "heparin-induced rash"
    tokenizer = tokenizer_for(text)
    feature = formulation(tokenizer).encode([row(text, (0, 7, "Drug"), (8, 20, "ADE"))])[0]
    expected = ["[CLS]", "[E1]", "heparin", "[/E1]", "-", "[E2]", "induced", "rash", "[/E2]", "[SEP]"]
    assert tokens(tokenizer, feature) == expected


def test_identical_spans_put_both_markers_around_the_one_mention():
    text = "inhibition of @CHEM-GENE$ activity"
    tokenizer = tokenizer_for(text)
    feature = formulation(tokenizer).encode([row(text, (14, 25, "CHEMICAL"), (14, 25, "GENE"))])[0]
    expected = ["[CLS]", "inhibition", "of", "[E1]", "[E2]", "@", "chem", "-", "gene", "$", "[/E2]", "[/E1]"]
    assert tokens(tokenizer, feature) == [*expected, "activity", "[SEP]"]
    assert feature.markers == (3, 4)


def test_an_entity_boundary_inside_a_word_piece_marks_the_whole_piece():
    tokenizer = tokenizer_for("metformin was held")
    feature = formulation(tokenizer).encode([row("metformin was held", (3, 6, "a"), (14, 18, "b"))])[0]
    expected = ["[CLS]", "[E1]", "metformin", "[/E1]", "was", "[E2]", "held", "[/E2]", "[SEP]"]
    assert tokens(tokenizer, feature) == expected


def test_the_tokenizer_is_extended_once_and_every_formulation_encodes_alike():
    tokenizer = tokenizer_for(SENTENCE)
    size = len(tokenizer)
    example = [row(SENTENCE, (0, 9, "treatment"), (23, 42, "problem"))]
    first = formulation(tokenizer).encode(example)
    second = formulation(tokenizer).encode(example)
    assert len(tokenizer) == size + 4
    assert tokenizer.convert_tokens_to_ids(list(MARKERS)) == list(range(size, size + 4))
    assert first[0].input_ids == second[0].input_ids


# --- windows ----------------------------------------------------------------------------------


def test_window_keeps_the_prefix_when_both_entities_are_in_it_else_centres_on_them():
    assert window(20, [(2, 4), (6, 8)], 10) == list(range(10))  # as plain truncation would
    assert window(20, [(2, 4), (6, 10)], 10) == list(range(1, 11))  # truncation would lose token 10
    assert window(20, [(12, 13), (15, 16)], 9) == list(range(10, 19))
    assert window(20, [(16, 17), (18, 19)], 6) == list(range(14, 20))  # runs out on the right
    assert window(20, [(1, 2), (17, 18)], 8) == [0, 1, 2, 3, 16, 17, 18, 19]  # the middle goes


def test_a_long_input_keeps_both_entities_markers_in_a_window_around_them():
    tokenizer = tokenizer_for(WORDS)
    head, tail = WORDS.index("w80 "), WORDS.index("w85 ")
    feature = formulation(tokenizer, max_length=16).encode([row(WORDS, (head, head + 3, "a"), (tail, tail + 3, "b"))])
    expected = ["w78", "w79", "[E1]", "w80", "[/E1]", "w81", "w82", "w83", "w84", "[E2]", "w85", "[/E2]", "w86", "w87"]
    assert tokens(tokenizer, feature[0]) == ["[CLS]", *expected, "[SEP]"]
    assert feature[0].markers == (3, 10)


def test_entities_farther_apart_than_the_budget_keep_their_own_context_and_drop_the_middle():
    tokenizer = tokenizer_for(WORDS)
    head, tail = WORDS.index("w10 "), WORDS.index("w90 ")
    feature = formulation(tokenizer, max_length=12).encode([row(WORDS, (head, head + 3, "a"), (tail, tail + 3, "b"))])
    expected = ["w9", "[E1]", "w10", "[/E1]", "w11", "w89", "[E2]", "w90", "[/E2]", "w91"]
    assert tokens(tokenizer, feature[0]) == ["[CLS]", *expected, "[SEP]"]
    assert [tokens(tokenizer, feature[0])[i] for i in feature[0].markers] == ["[E1]", "[E2]"]


def test_a_dummified_entity_past_max_length_stays_in_the_input():
    tokenizer = tokenizer_for(WORDS, "@ problem $ test")
    head, tail = WORDS.index("w3 "), WORDS.index("w95 ")
    example = row(WORDS, (head, head + 2, "test"), (tail, tail + 3, "problem"))
    feature = formulation(tokenizer, TaskOptions(), max_length=12).encode([example])[0]
    expected = ["w2", "@", "test", "$", "w4", "w94", "@", "problem", "$", "w96"]
    assert tokens(tokenizer, feature) == ["[CLS]", *expected, "[SEP]"]
    assert feature.markers is None


# --- BLURB equivalence on real ChemProt ---------------------------------------------------------


@pytest.fixture(scope="module")
def chemprot(official_data):
    folder = official_data("ChemProt", "blurb", "train.tsv").parent
    spec = DATASETS["chemprot"]
    data = load_dataset_files(spec.dataset, folder)
    rows = data.splits["train"][:300]
    tokenizer = train_wordpiece((r["text"] for r in rows), vocab_size=2000)
    labels = LabelSpace(tuple(spec.dataset.labels) or tuple(data.label_set))
    return spec, labels, rows, data.splits["dev"][:100], tokenizer


def test_chemprot_goes_to_the_relation_formulation_and_classification_stays_with_sequences():
    assert formulation_class(DATASETS["chemprot"], TaskOptions()) is RelationClassification
    assert formulation_class(DATASETS["i2b2-2010-re"], MARKED) is RelationClassification
    assert formulation_class(DATASETS["hoc"], TaskOptions()) is SequenceClassification
    assert formulation_class(DATASETS["biosses"], TaskOptions()) is SequenceClassification


def test_dummify_cls_on_blurb_chemprot_encodes_and_builds_exactly_as_sequence_classification(chemprot):
    spec, labels, rows, _, tokenizer = chemprot
    size = len(tokenizer)
    relation = RelationClassification(spec, labels, tokenizer, TaskOptions(), 256)
    sequence = SequenceClassification(spec, labels, tokenizer, TaskOptions(), 256)
    ours, theirs = relation.encode(rows), sequence.encode(rows)
    assert len(tokenizer) == size  # dummification adds no tokens
    assert [f.input_ids for f in ours] == [f.input_ids for f in theirs]
    assert [f.labels for f in ours] == [f.labels for f in theirs]
    assert relation.collate(ours[:4], 0).keys() == sequence.collate(theirs[:4], 0).keys()
    source = ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer))
    seed_everything(3)
    a = relation.build_model(source).state_dict()
    seed_everything(3)
    b = sequence.build_model(source).state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_markers_on_chemprot_surround_the_dummies_and_a_tiny_model_trains_and_scores(chemprot):
    spec, labels, rows, dev, tokenizer = chemprot
    marked = RelationClassification(spec, labels, tokenizer, MARKED, 128)
    features = marked.encode(rows)
    for feature, example in zip(features, rows, strict=True):
        pieces = tokenizer.convert_ids_to_tokens(feature.input_ids)
        assert len(feature) <= 128 and sorted(p for p in pieces if p in MARKERS) == sorted(MARKERS)
        assert [pieces[i] for i in feature.markers] == ["[E1]", "[E2]"]
        for role, start, end in (("head", "[E1]", "[/E1]"), ("tail", "[E2]", "[/E2]")):
            inside = pieces[pieces.index(start) + 1 : pieces.index(end)]
            dummy = example["text"][example[role]["start"] : example[role]["end"]]
            assert "".join(p.removeprefix("##") for p in inside if p not in MARKERS) == dummy.lower()
    model = marked.build_model(ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer)))
    train(
        model,
        features,
        Hyperparameters(1e-3, 32, 1),
        1,
        TrainingContext(CPU, None, tokenizer.pad_token_id, marked.collate),
    )
    dev_features = marked.encode(dev)
    logits, _ = predict(
        model, dev_features, TrainingContext(CPU, None, tokenizer.pad_token_id, marked.collate, eval_batch_size=64)
    )
    predicted = marked.decode(dev_features, logits, dev, model)
    assert len(predicted) == len(dev) and set(predicted) <= set(labels.names)
    scores = marked.score(dev, predicted, logits)
    assert 0 <= scores["micro-f1"] <= 100 and "accuracy" in scores


# --- the [CLS] + marker head ------------------------------------------------------------------


def test_cls_markers_head_gives_batch_by_labels_logits_and_gradients_only_at_cls_and_start_markers():
    tokenizer = tokenizer_for(SENTENCE, WORDS)
    marked = formulation(tokenizer)
    examples = [
        row(SENTENCE, (0, 9, "treatment"), (23, 42, "problem"), "yes"),
        row(WORDS, (4, 6, "a"), (WORDS.index("w30 "), WORDS.index("w30 ") + 3, "b"), "no"),
    ]
    features = marked.encode(examples)
    model = marked.build_model(ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer)))
    assert isinstance(model, MarkerRelationClassifier)
    batch = marked.collate(features, tokenizer.pad_token_id)
    assert batch["marker_positions"].tolist() == [list(f.markers) for f in features]
    captured = {}

    def keep(module, inputs, output):
        output.last_hidden_state.retain_grad()
        captured["hidden"] = output.last_hidden_state

    model.encoder.register_forward_hook(keep)
    model.eval()  # no dropout: every feature's gradient is exact
    output = model(**batch)
    assert output.logits.shape == (2, 2) and output.loss.ndim == 0
    output.loss.backward()
    gradient = captured["hidden"].grad.abs().sum(dim=-1)  # (batch, length)
    for row_index, feature in enumerate(features):
        reached = set(torch.nonzero(gradient[row_index]).flatten().tolist())
        assert reached == {0, *feature.markers}


def test_cls_features_on_markers_use_the_architecture_classifier_and_collate_no_positions():
    tokenizer = tokenizer_for(SENTENCE)
    options = TaskOptions(relation_representation="markers", relation_features="cls")
    marked = formulation(tokenizer, options)
    features = marked.encode([row(SENTENCE, (0, 9, "treatment"), (23, 42, "problem"))])
    assert "marker_positions" not in marked.collate(features, 0)
    model = marked.build_model(ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer)))
    assert type(model).__name__ == "BertForSequenceClassification"
    assert model(**marked.collate(features, 0)).logits.shape == (1, 2)


@pytest.mark.parametrize("features", ["cls", "cls+markers"])
def test_a_checkpoint_without_the_markers_gets_its_embeddings_resized(tmp_path, features):
    tokenizer = tokenizer_for(SENTENCE)
    checkpoint = tmp_path / "checkpoint"
    config = build_config("bert", "tiny", vocab_size=len(tokenizer))
    AutoModelForSequenceClassification.from_config(config).save_pretrained(checkpoint)
    marked = formulation(tokenizer, TaskOptions(relation_representation="markers", relation_features=features))
    model = marked.build_model(ModelSource(model_dir=checkpoint))
    encoder = model.encoder if features == "cls+markers" else model
    assert encoder.get_input_embeddings().num_embeddings == len(tokenizer)
    batch = marked.collate(marked.encode([row(SENTENCE, (0, 9, "t"), (23, 42, "p"))]), 0)
    assert np.isfinite(model(**batch).logits.detach().numpy()).all()


def test_a_model_built_from_scratch_has_room_for_the_markers_even_if_sized_before_them():
    tokenizer = tokenizer_for(SENTENCE)
    source = ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer))  # as prepare() sizes it
    marked = formulation(tokenizer)
    model = marked.build_model(source)
    assert model.encoder.get_input_embeddings().num_embeddings == len(tokenizer) == source.vocab_size + 4
    assert model.encoder.config.vocab_size == len(tokenizer)


def test_a_span_outside_the_text_is_a_clear_error():
    tokenizer = tokenizer_for(SENTENCE)
    with pytest.raises(ValueError, match=r"'r': tail span 23:99 is not a non-empty range within the text's 44"):
        formulation(tokenizer).encode([row(SENTENCE, (0, 9, "t"), (23, 99, "p"))])


# --- the command line -------------------------------------------------------------------------


@pytest.mark.parametrize(("dataset", "fixture"), [("i2b2-2010-re", "i2b2_2010_re"), ("n2c2-2018-ade-re", "n2c2-2018")])
def test_cli_fine_tunes_clinical_relations_with_markers_and_the_cls_marker_head(tmp_path, dataset, fixture, capsys):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", dataset, "--data-dir", str(CLINICAL / fixture)]
    options = ["--relation-representation", "markers", "--relation-features", "cls+markers"]
    assert main([*args, *options, "--grid", "single", "--seeds", "1", "--epochs", "2", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["formulation"] == {
        "name": "relation-classification",
        "relation_representation": "markers",
        "relation_features": "cls+markers",
        "markers": list(MARKERS),
    }
    metric = results["metric"]
    assert metric in results["runs"][0]["metrics"]["test"]
    assert len(results["predictions"]["42"]) == results["data"]["sizes"]["test"]
    assert f"{dataset}: test {metric}" in capsys.readouterr().out


def test_cli_rejects_marker_features_without_markers(tmp_path, capsys):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "i2b2-2010-re", "--out", str(tmp_path)]
    with pytest.raises(SystemExit) as info:
        main([*args, "--relation-representation", "dummify", "--relation-features", "cls+markers"])
    assert info.value.code == 2
    assert "--relation-features cls+markers needs --relation-representation markers" in capsys.readouterr().err
