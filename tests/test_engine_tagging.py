"""Token-tagging formulations: BIO/BIOUL/IO schemes, the optional CRF, and multi-element PICO.

Scheme conversions are checked against seqeval's entity reading (an independent
implementation of conlleval's chunking), the CRF against brute-force enumeration of every
tag path, and the formulation end to end on tiny models with real BLURB slices.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from seqeval.metrics.sequence_labeling import get_entities

from biolm.dataset_io import DataFormatError, validate_examples
from biolm.plugins import collect_contributions, get_plugin_manager
from plugins.datasets.readers.conll import read_conll_file
from workers.engine.__main__ import main
from workers.engine.crf import LinearChainCRF, pack_labelled
from workers.engine.encoding import IGNORE, LabelSpace, decode_token_tagging, encode_token_tagging
from workers.engine.formulations import ModelSource, TaskOptions
from workers.engine.formulations.token_tagging import CRFTagger, MultiElementTagger, TokenTagging
from workers.engine.runs import FinetuneSpec, prepare
from workers.engine.tagging_schemes import (
    allowed_transitions,
    convert,
    entity_types,
    scheme_labels,
    split_tag,
)
from workers.engine.task import Task
from workers.engine.tokenization import train_wordpiece
from workers.engine.training import Hyperparameters, TrainingContext, predict, train


@pytest.fixture(scope="module")
def datasets() -> dict[str, Task]:
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    return {slug: Task.of(contributions, slug) for slug in contributions.datasets}


# --- schemes --------------------------------------------------------------------------------------


def seqeval_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """seqeval's default-mode entities; BIOUL's U/L read as IOBES's S/E, which seqeval knows."""
    renamed = [{"U": "S", "L": "E"}.get(t[0], t[0]) + t[1:] if t != "O" else t for t in tags]
    return set(get_entities(renamed))


def well_formed_bio(rng: random.Random, types: list[str | None], length: int) -> list[str]:
    tags, i = [], 0
    while i < length:
        if rng.random() < 0.4:
            kind = rng.choice(types)
            span = min(rng.randint(1, 4), length - i)
            for j in range(span):
                prefix = "B" if j == 0 else "I"
                tags.append(prefix if kind is None else f"{prefix}-{kind}")
            i += span
        else:
            tags.append("O")
            i += 1
    return tags


TYPE_SETS = [[None], ["Chemical", "Disease"], ["PAR"]]


def test_bio_to_each_scheme_and_back_is_the_identity_on_well_formed_bio():
    rng = random.Random("roundtrip")
    for _ in range(400):
        gold = well_formed_bio(rng, rng.choice(TYPE_SETS), rng.randint(1, 20))
        assert convert(gold, "bio") == gold
        bioul = convert(gold, "bioul")
        assert convert(bioul, "bio") == gold
        assert seqeval_spans(bioul) == seqeval_spans(gold)
        for _kind, start, end in seqeval_spans(gold):  # seqeval's ends are inclusive
            prefixes = [split_tag(t)[0] for t in bioul[start : end + 1]]
            assert prefixes == (["U"] if start == end else ["B", *["I"] * (end - start - 1), "L"])


def merge_adjacent(spans: set[tuple[str, int, int]]) -> set[tuple[str, int, int]]:
    """What IO can express: same-type entities that touch become one (seqeval's inclusive ends)."""
    merged: list[list] = []
    for kind, start, end in sorted(spans, key=lambda s: s[1]):
        if merged and merged[-1][0] == kind and merged[-1][2] + 1 == start:
            merged[-1][2] = end
        else:
            merged.append([kind, start, end])
    return {tuple(m) for m in merged}


def test_io_round_trip_keeps_entities_except_that_adjacent_same_type_entities_merge():
    rng = random.Random("io")
    for _ in range(400):
        gold = well_formed_bio(rng, rng.choice(TYPE_SETS), rng.randint(1, 20))
        io = convert(gold, "io")
        assert all(t == "O" or t[0] == "I" for t in io)
        assert seqeval_spans(convert(io, "bio")) == merge_adjacent(seqeval_spans(gold))


def test_io_cannot_separate_adjacent_entities_of_one_type_but_keeps_a_type_change():
    gold = ["B-X", "I-X", "B-X", "O", "B-Y", "B-X"]
    io = convert(gold, "io")
    assert io == ["I-X", "I-X", "I-X", "O", "I-Y", "I-X"]
    assert convert(io, "bio") == ["B-X", "I-X", "I-X", "O", "B-Y", "B-X"]
    assert len(seqeval_spans(gold)) == 4 and len(seqeval_spans(convert(io, "bio"))) == 3
    untyped = ["B", "B", "I", "O", "B"]
    assert convert(untyped, "io") == ["I", "I", "I", "O", "I"]
    assert convert(convert(untyped, "io"), "bio") == ["B", "I", "I", "O", "B"]


def test_any_tag_sequence_converts_to_the_entities_conlleval_reads_in_it():
    """Ill-formed input (an entity opened by I-, a type change inside a run) keeps seqeval's entities."""
    rng = random.Random("ill-formed")
    vocabularies = [["O", "B", "I"], ["O", "B-X", "I-X", "B-Y", "I-Y"], ["O", "I-PAR", "I-INT", "I-OUT"]]
    for _ in range(400):
        tags = [rng.choice(vocab) for vocab in [rng.choice(vocabularies)] for _ in range(rng.randint(1, 15))]
        expected = seqeval_spans(tags)
        assert seqeval_spans(convert(tags, "bio")) == expected
        assert seqeval_spans(convert(tags, "bioul")) == expected
        assert convert(convert(tags, "bioul"), "bio") == convert(tags, "bio")


def test_bioul_marks_single_and_last_words():
    assert convert(["B", "I", "I", "O", "B", "B"], "bioul") == ["B", "I", "L", "O", "U", "U"]
    assert convert(["O", "I-X", "I-X", "B-Y"], "bioul") == ["O", "B-X", "L-X", "U-Y"]


def test_label_spaces_list_o_first_then_each_type_in_the_schemes_order():
    assert scheme_labels(entity_types(("B", "I", "O")), "bioul") == ("O", "B", "I", "L", "U")
    assert scheme_labels(entity_types(("O", "I-PAR", "I-INT")), "bio") == ("O", "B-PAR", "I-PAR", "B-INT", "I-INT")
    assert scheme_labels(entity_types(("O", "B-Chem", "I-Chem", "B-Dis", "I-Dis")), "io") == ("O", "I-Chem", "I-Dis")
    with pytest.raises(ValueError, match="mix untyped"):
        entity_types(("O", "B", "B-X"))
    with pytest.raises(ValueError, match="not a tag"):
        split_tag("X-Chemical")


@pytest.mark.parametrize("scheme", ["bio", "bioul"])
def test_converted_gold_only_uses_transitions_the_crf_allows(scheme):
    names = scheme_labels(["X", "Y"], scheme)
    allowed = allowed_transitions(names, scheme)
    index = {name: i for i, name in enumerate(names)}
    rng = random.Random(scheme)
    for _ in range(200):
        tags = convert([rng.choice(["O", "B-X", "I-X", "B-Y", "I-Y"]) for _ in range(12)], scheme)
        assert all(allowed[index[a]][index[b]] for a, b in itertools.pairwise(tags))
    assert not allowed[index["O"]][index["I-X"]] and not allowed[index["B-X"]][index["I-Y"]]
    if scheme == "bioul":
        assert not allowed[index["B-X"]][index["O"]] and not allowed[index["O"]][index["L-X"]]
        assert allowed[index["U-X"]][index["B-Y"]] and allowed[index["I-X"]][index["L-X"]]


# --- the CRF --------------------------------------------------------------------------------------


def brute_force(
    crf: LinearChainCRF, emissions: torch.Tensor, allowed: torch.Tensor
) -> tuple[float, list[int], dict[tuple[int, ...], float]]:
    """log Z, the best path and every allowed path's score, by enumeration (independent of crf.py)."""
    start, end, trans = crf.start.detach(), crf.end.detach(), crf.transitions.detach()
    length, k = emissions.shape
    scores = {}
    for path in itertools.product(range(k), repeat=length):
        if not all(allowed[a, b] for a, b in itertools.pairwise(path)):
            continue
        total = start[path[0]] + end[path[-1]] + sum(emissions[t, y] for t, y in enumerate(path))
        total = total + sum(trans[a, b] for a, b in itertools.pairwise(path))
        scores[path] = float(total)
    log_z = math.log(sum(math.exp(s) for s in scores.values()))
    return log_z, list(max(scores, key=scores.get)), scores


def test_crf_log_partition_and_viterbi_equal_brute_force_enumeration():
    torch.manual_seed(0)
    k = 3
    allowed = torch.tensor([[True, True, False], [True, True, True], [True, False, True]])
    crf = LinearChainCRF(k, allowed)
    with torch.no_grad():
        for parameter in (crf.start, crf.end, crf.transitions):
            parameter.normal_(0, 1)
    lengths = [5, 3, 1, 4]
    emissions = torch.randn(len(lengths), max(lengths), k) * 2
    mask = torch.arange(max(lengths)).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    tags = torch.tensor([[0, 1, 2, 2, 0], [1, 0, 0, 0, 0], [2, 0, 0, 0, 0], [0, 1, 0, 1, 0]])
    nll = crf.nll(emissions, tags, mask)
    nll.sum().backward()  # the loss trains the transitions
    assert crf.transitions.grad is not None and bool(crf.transitions.grad.abs().sum() > 0)
    with torch.no_grad():
        log_z = crf.log_partition(emissions, mask)
    paths = crf.viterbi(emissions, mask)
    for row, length in enumerate(lengths):
        expected_z, expected_path, scores = brute_force(crf, emissions[row, :length], allowed)
        assert float(log_z[row]) == pytest.approx(expected_z, rel=1e-5)
        assert paths[row] == expected_path
        gold = tuple(tags[row, :length].tolist())
        assert float(nll.detach()[row]) == pytest.approx(expected_z - scores[gold], rel=1e-4, abs=1e-4)
    forbidden = torch.tensor([[0, 2, 2, 2, 0]])  # 0 -> 2 is not allowed: (practically) impossible
    with torch.no_grad():
        assert float(crf.nll(emissions[:1], forbidden, mask[:1])) > 1000


def test_crf_runs_in_float32_under_bf16_autocast():
    torch.manual_seed(1)
    crf = LinearChainCRF(4)
    emissions = torch.randn(2, 6, 4).to(torch.bfloat16)
    mask = torch.ones(2, 6, dtype=torch.bool)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        under_autocast = crf.log_partition(emissions, mask)
    assert under_autocast.dtype == torch.float32
    assert torch.allclose(under_autocast, crf.log_partition(emissions.float(), mask), atol=1e-5)


def test_pack_labelled_moves_each_words_first_sub_token_to_the_left_in_order():
    scores = torch.arange(2 * 6, dtype=torch.float).view(2, 6, 1)
    labels = torch.tensor([[IGNORE, 1, IGNORE, 2, IGNORE, IGNORE], [IGNORE, 0, 1, IGNORE, 2, IGNORE]])
    packed, tags, mask = pack_labelled(scores, labels, IGNORE)
    assert mask.tolist() == [[True, True, False], [True, True, True]]
    assert packed.squeeze(-1)[mask].tolist() == [1.0, 3.0, 7.0, 8.0, 10.0]
    assert tags.tolist() == [[1, 2, 0], [0, 1, 2]]


# --- the formulation on real data ---------------------------------------------------------------


def write_slice(source: Path, target: Path, sentences: dict[str, int]) -> Path:
    """The first sentences of each split's BLURB file, as the same token<TAB>tag files."""
    target.mkdir(parents=True, exist_ok=True)
    for split, count in sentences.items():
        blocks = (source / f"{split}.tsv").read_text(encoding="utf-8").split("\n\n")[:count]
        (target / f"{split}.tsv").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def ncbi_slice(tmp_path_factory, official_data) -> Path:
    return write_slice(
        official_data("NCBI-disease", "blurb"), tmp_path_factory.mktemp("ncbi"), {"train": 80, "dev": 30, "test": 30}
    )


def formulation_on(prepared, **options) -> TokenTagging:
    return TokenTagging(prepared.task, prepared.labels, prepared.tokenizer, TaskOptions(**options), 24)


def test_default_bio_path_encodes_and_decodes_exactly_as_the_shared_encoding_functions(ncbi_slice, tmp_path):
    prepared = prepare(
        FinetuneSpec.build(dataset="ncbi-disease", out=tmp_path, architecture="bert:tiny", data_dir=ncbi_slice)
    )
    formulation = formulation_on(prepared)  # max_length 24: many sentences become several windows
    rows = prepared.data.splits["train"]
    features = formulation.encode(rows)
    reference = encode_token_tagging(rows, prepared.tokenizer, prepared.labels, 24)
    assert [vars(f) for f in features] == [vars(f) for f in reference]
    assert len(features) > len(rows)
    rng = np.random.default_rng(0)
    logits = [rng.normal(size=(len(f), 3)).astype(np.float32) for f in features]
    assert formulation.decode(features, logits, rows, None) == decode_token_tagging(
        features, logits, rows, prepared.labels
    )
    model = formulation.build_model(prepared.source)
    assert type(model).__name__ == "BertForTokenClassification" and model.config.num_labels == 3
    assert formulation.describe() == {
        "name": "token-tagging",
        "tagging_scheme": "bio",
        "crf": False,
        "crf_learning_rate": None,
        "crf_transitions": None,
        "multi_element": False,
        "model_labels": ["O", "B", "I"],
        "predictions_scheme": "bio",
    }


@pytest.mark.parametrize("scheme", ["bioul", "io"])
def test_other_schemes_train_on_converted_tags_and_predict_back_in_bio(ncbi_slice, tmp_path, scheme):
    prepared = prepare(
        FinetuneSpec.build(dataset="ncbi-disease", out=tmp_path, architecture="bert:tiny", data_dir=ncbi_slice)
    )
    formulation = formulation_on(prepared, tagging_scheme=scheme)
    rows = prepared.data.splits["dev"]
    features = formulation.encode(rows)
    names = formulation.tags.names
    assert names == {"bioul": ("O", "B", "I", "L", "U"), "io": ("O", "I")}[scheme]
    # a model that predicts every converted gold tag exactly
    perfect = []
    for feature in features:
        logits = np.zeros((len(feature), len(names)), dtype=np.float32)
        for position, target in enumerate(feature.labels):
            if target != IGNORE:
                logits[position, target] = 1.0
        perfect.append(logits)
    predicted = formulation.decode(features, perfect, rows, None)
    gold = [row["tags"] for row in rows]
    if scheme == "bioul":
        assert predicted == gold
        assert formulation.score(rows, predicted, perfect)["entity-f1"] == 100.0
    else:  # IO can only lose boundaries between touching entities
        assert [merge_adjacent(seqeval_spans(p)) for p in predicted] == [merge_adjacent(seqeval_spans(g)) for g in gold]
        assert all(t in ("O", "B", "I") for p in predicted for t in p)
    assert formulation.describe()["tagging_scheme"] == scheme


def test_crf_decoding_uses_the_models_trained_transitions(ncbi_slice, tmp_path):
    prepared = prepare(
        FinetuneSpec.build(dataset="ncbi-disease", out=tmp_path, architecture="bert:tiny", data_dir=ncbi_slice)
    )
    formulation = formulation_on(prepared, crf=True)
    rows = prepared.data.splits["test"][:5]
    features = formulation.encode(rows)
    model = formulation.build_model(prepared.source)
    assert isinstance(model, CRFTagger)
    rng = np.random.default_rng(1)
    logits = [rng.normal(size=(len(f), 3)).astype(np.float32) for f in features]
    with torch.no_grad():
        model.crf.transitions.zero_()
        model.crf.start.zero_()
        model.crf.end.zero_()
    neutral = formulation.decode(features, logits, rows, model)
    # with neutral scores Viterbi is the per-word argmax except where BIO forbids O -> I
    argmax = decode_token_tagging(features, logits, rows, formulation.tags)
    assert neutral != argmax  # the BIO constraint (no O -> I) changed some words
    with torch.no_grad():
        model.crf.transitions[:, 0] += 50.0  # starting in O and every transition into O now dominate
        model.crf.start[0] += 50.0
    assert all(set(p) == {"O"} for p in formulation.decode(features, logits, rows, model))
    with pytest.raises(TypeError, match="trained CRF"):
        formulation.decode(features, logits, rows, model.tagger)


def test_crf_model_trains_end_to_end_via_the_cli_on_a_real_ncbi_slice(ncbi_slice, tmp_path):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "ncbi-disease", "--data-dir", str(ncbi_slice)]
    args += ["--grid", "single", "--seeds", "1", "--epochs", "1", "--max-length", "64"]
    assert main([*args, "--crf", "--tagging-scheme", "bioul", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["formulation"]["crf"] is True and results["formulation"]["tagging_scheme"] == "bioul"
    assert results["runs"][0]["metrics"]["test"]["entity-f1"] is not None
    assert math.isfinite(results["runs"][0]["train"]["final_loss"])
    assert {t for sentence in results["predictions"]["42"] for t in sentence} <= {"O", "B", "I"}


def test_crf_model_trains_end_to_end_via_the_cli_on_demo_ner(tmp_path, capsys):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-ner", "--grid", "single", "--seeds", "1"]
    assert main([*args, "--epochs", "1", "--crf", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["formulation"]["crf"] is True and results["formulation"]["model_labels"] == ["O", "B", "I"]
    assert "demo-ner: test entity-f1" in capsys.readouterr().out


# --- PICO: several elements per word ------------------------------------------------------------

OVERLAP_ROWS = [
    {
        "id": "s1",
        "document_id": "d1",
        "tokens": ["insulin", "in", "diabetic", "patients", "on", "insulin", "improved", "HbA1c"],
        "tags": ["I-INT", "O", "I-PAR", "I-PAR", "I-PAR", "I-PAR|I-INT", "O", "I-OUT"],
    },
    {"id": "s2", "document_id": "d1", "tokens": ["placebo", "arm"], "tags": ["I-INT|I-PAR", "O"]},
]


def pico_formulation(datasets, **options) -> TokenTagging:
    tokenizer = train_wordpiece([" ".join(r["tokens"]) for r in OVERLAP_ROWS] * 5, vocab_size=120)
    spec = datasets["ebm-pico"]
    labels = LabelSpace(("O", "I-PAR", "I-INT", "I-OUT"))
    return TokenTagging(spec, labels, tokenizer, TaskOptions(**options), 16)


def test_a_word_in_two_elements_is_encoded_predicted_and_scored_per_element(datasets):
    formulation = pico_formulation(datasets)
    assert formulation.multi_element and formulation.elements == ("I-PAR", "I-INT", "I-OUT")
    features = formulation.encode(OVERLAP_ROWS)
    targets = [t for f in features for t in f.labels if t != IGNORE]
    assert targets == [2, 0, 1, 1, 1, 3, 0, 4, 3, 0]  # bitmasks: PAR=1, INT=2, OUT=4
    perfect = []
    for feature in features:
        logits = np.full((len(feature), 3), -5.0, dtype=np.float32)
        for position, mask in enumerate(feature.labels):
            if mask != IGNORE:
                logits[position, [bool(mask >> j & 1) for j in range(3)]] = 5.0
        perfect.append(logits)
    predicted = formulation.decode(features, perfect, OVERLAP_ROWS, None)
    assert predicted[0][5] == "I-PAR|I-INT" and predicted[1][0] == "I-PAR|I-INT"
    assert formulation.score(OVERLAP_ROWS, predicted, perfect) == {"token-macro-f1": 100.0}
    # drop INT from the overlapping word: INT gets P=1, R=2/3 (F1 0.8), PAR and OUT stay perfect
    predicted[0][5] = "I-PAR"
    assert formulation.score(OVERLAP_ROWS, predicted, perfect)["token-macro-f1"] == pytest.approx(
        100 * (1 + 0.8 + 1) / 3
    )


def test_multi_element_loss_is_binary_cross_entropy_over_labelled_words_and_elements(datasets):
    formulation = pico_formulation(datasets)
    features = formulation.encode(OVERLAP_ROWS)
    torch.manual_seed(0)
    model = formulation.build_model(ModelSource(architecture="bert:tiny", vocab_size=len(formulation.tokenizer)))
    assert isinstance(model, MultiElementTagger) and model.config.num_labels == 3
    model.eval()
    batch = formulation.collate(features, formulation.tokenizer.pad_token_id)
    output = model(**batch)
    logits, expected, count = output.logits.detach(), 0.0, 0
    for row, feature in enumerate(features):
        for position, mask in enumerate(feature.labels):
            if mask == IGNORE:
                continue
            for j in range(3):
                x, y = float(logits[row, position, j]), mask >> j & 1
                expected += -(y * math.log(1 / (1 + math.exp(-x))) + (1 - y) * math.log(1 / (1 + math.exp(x))))
                count += 1
    assert float(output.loss.detach()) == pytest.approx(expected / count, rel=1e-5)


def test_multi_element_pico_refuses_single_tag_choices_and_single_pico_refuses_joined_tags(datasets):
    with pytest.raises(ValueError, match="--pico-elements single"):
        pico_formulation(datasets, crf=True)
    with pytest.raises(ValueError, match="--pico-elements single"):
        pico_formulation(datasets, tagging_scheme="bioul")
    single = pico_formulation(datasets, pico_elements="single")
    assert not single.multi_element and single.describe()["tagging_scheme"] == "bio"
    with pytest.raises(ValueError, match="joins several tags; add --pico-elements multi"):
        single.encode(OVERLAP_ROWS)
    with pytest.raises(ValueError, match="--pico-elements must be one of multi, single"):
        TaskOptions(pico_elements="both")


def test_validation_accepts_element_tags_joined_with_a_bar_and_rejects_malformed_joins(datasets):
    spec = datasets["ebm-pico"].dataset
    rows = [dict(row) for row in OVERLAP_ROWS]
    assert validate_examples(spec, {"test": rows}) == ["I-INT", "I-OUT", "I-PAR", "O"]
    for bad, message in [("I-PAR|O", "without O"), ("I-PAR|I-PAR", "distinct"), ("I-PAR|I-FOO", "unknown label")]:
        row = {"id": "x", "document_id": "x", "tokens": ["a", "b"], "tags": ["O", bad]}
        with pytest.raises(DataFormatError, match=message):
            validate_examples(spec, {"test": [row]})


def test_demo_pico_trains_with_one_sigmoid_per_element_via_the_cli(tmp_path):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-pico", "--grid", "single", "--seeds", "1"]
    assert main([*args, "--epochs", "1", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["formulation"]["multi_element"] is True
    assert results["formulation"]["model_labels"] == ["I-PAR", "I-INT", "I-OUT"]
    words = {t for sentence in results["predictions"]["42"] for t in sentence}
    assert words and all(t == "O" or set(t.split("|")) <= {"I-PAR", "I-INT", "I-OUT"} for t in words)
    assert 0 <= results["runs"][0]["metrics"]["test"]["token-macro-f1"] <= 100


def test_real_ebm_pico_slice_trains_and_scores_as_element_sets(datasets, official_data):
    path = official_data("EBM-PICO", "blurb", "test.tsv")
    rows = read_conll_file(path, "test", docstart="pmid")[:90]
    for row in rows:
        row.pop("_where")
    train_rows, eval_rows = rows[:60], rows[60:]
    tokenizer = train_wordpiece((" ".join(r["tokens"]) for r in train_rows), vocab_size=600)
    spec = datasets["ebm-pico"]
    formulation = TokenTagging(spec, LabelSpace(("O", "I-PAR", "I-INT", "I-OUT")), tokenizer, TaskOptions(), 64)
    torch.manual_seed(0)
    model = formulation.build_model(ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer)))
    features = formulation.encode(train_rows)
    pad = tokenizer.pad_token_id
    device = torch.device("cpu")
    stats = train(
        model, features, Hyperparameters(1e-3, 16, 2), 0, TrainingContext(device, None, pad, formulation.collate)
    )
    assert math.isfinite(stats.final_loss)
    eval_features = formulation.encode(eval_rows)
    logits, _ = predict(
        model, eval_features, TrainingContext(device, None, pad, formulation.collate, eval_batch_size=32)
    )
    assert all(x.shape == (len(f), 3) for x, f in zip(logits, eval_features, strict=True))
    predicted = formulation.decode(eval_features, logits, eval_rows, model)
    assert [len(p) for p in predicted] == [len(r["tokens"]) for r in eval_rows]
    score = formulation.score(eval_rows, predicted, logits)["token-macro-f1"]
    # the same score from an independent count: per element, words predicted and gold
    f1s = []
    for element in ("I-PAR", "I-INT", "I-OUT"):
        gold = [element in t.split("|") for r in eval_rows for t in r["tags"]]
        pred = [element in t.split("|") for p in predicted for t in p]
        tp = sum(g and p for g, p in zip(gold, pred, strict=True))
        f1s.append(200 * tp / (sum(gold) + sum(pred)) if sum(gold) + sum(pred) else 0.0)
    assert score == pytest.approx(sum(f1s) / 3)


def test_crf_transitions_train_at_their_own_learning_rate(ncbi_slice, tmp_path):
    """At a BLURB learning rate the encoder moves slowly; the CRF's transitions move at --crf-learning-rate."""
    from workers.engine.training import parameter_groups

    prepared = prepare(
        FinetuneSpec.build(dataset="ncbi-disease", out=tmp_path, architecture="bert:tiny", data_dir=ncbi_slice)
    )
    hp = Hyperparameters(learning_rate=1e-5, batch_size=16, epochs=1)
    moved = {}
    for rate in (1e-5, 1e-2):
        formulation = formulation_on(prepared, crf=True, crf_learning_rate=rate)
        torch.manual_seed(0)
        model = formulation.build_model(prepared.source)
        groups = parameter_groups(model, hp)
        crf_group = next(g for g in groups if any(p is model.crf.transitions for p in g["params"]))
        assert crf_group["lr"] == rate and crf_group["weight_decay"] == 0.0
        assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
        before = model.crf.transitions.detach().clone()
        features = formulation.encode(prepared.data.splits["train"][:64])
        train(model, features, hp, 0, TrainingContext(torch.device("cpu"), None, 0, formulation.collate))
        allowed = torch.isfinite(before)
        moved[rate] = (model.crf.transitions.detach() - before)[allowed].abs().max().item()
    assert moved[1e-2] > 100 * moved[1e-5]
