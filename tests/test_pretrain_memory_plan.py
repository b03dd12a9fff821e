"""The pretraining memory plan (biolm.memory_plan): what it refuses, what it chooses, and that its arithmetic
agrees with the engine's models (the analytic parameter count against the meta-device count)."""

from __future__ import annotations

import dataclasses
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from django.core.management import call_command
from django.core.management.base import CommandError
from transformers import CONFIG_MAPPING, AutoModelForPreTraining

from biolm import memory_plan
from biolm.memory_plan import (
    FAMILY_DEFAULTS,
    FUSED_ATTENTION_MODEL_TYPES,
    PlanRefused,
    choose_micro_batch,
    model_dims,
    parse_memory,
    plan_for_recipe,
    plan_memory,
)
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.architectures import attention_implementation, build_config, count_parameters
from workers.engine.pretrain.loop import LoopSettings

ROOT = Path(__file__).resolve().parent.parent
GB80, GB141 = 80 * 10**9, 141 * 10**9
LARGE = "megatron-bert:gatortron-large"


@pytest.fixture(scope="module")
def contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


@pytest.fixture(scope="module")
def gatortron(contributions):
    return dict(contributions.recipes["gatortron"].settings)


def large_dims(contributions):
    return model_dims(LARGE, contributions=contributions)


def test_gatortron_large_with_ddp_on_80_gb_cards_is_refused_with_needs_fsdp(contributions, gatortron):
    with pytest.raises(PlanRefused) as refused:
        plan_for_recipe(gatortron, LARGE, 8, 1, "ddp", GB80, contributions=contributions)
    message = str(refused.value)
    assert re.fullmatch(
        r"megatron-bert:gatortron-large \(8\.84 billion parameters\) at 512 tokens does not fit replicated on an "
        r"80 GB GPU \(needs \d+\.\d GiB per GPU\): needs fsdp",
        message,
    ), message
    needed = float(re.search(r"needs (\d+\.\d) GiB", message).group(1))
    assert needed > 16 * 8.8e9 / 2**30  # at least ZeRO's 16 bytes a parameter, replicated


def test_fsdp_on_too_few_80_gb_cards_names_the_minimum_which_fits_while_one_fewer_does_not(contributions, gatortron):
    with pytest.raises(PlanRefused) as refused:
        plan_for_recipe(gatortron, LARGE, 2, 1, "fsdp", GB80, contributions=contributions)
    message = str(refused.value)
    minimum = int(re.search(r"needs at least (\d+) GPUs of 80 GB with fsdp", message).group(1))
    assert minimum == 3, message
    assert "(4 to divide the global batch of 32)" in message  # 32 sequences do not split over 3
    dims = large_dims(contributions)
    batch = minimum * (minimum - 1)  # divisible by both counts, so only memory decides
    fitting = plan_memory(dims, block_size=512, global_batch=batch, gpus_per_node=minimum, parallelism="fsdp",
                          gpu_memory_bytes=GB80)  # fmt: skip
    assert fitting.total_bytes <= fitting.usable_bytes
    with pytest.raises(PlanRefused, match=f"needs at least {minimum} GPUs of 80 GB with fsdp$"):
        plan_memory(dims, block_size=512, global_batch=batch, gpus_per_node=minimum - 1, parallelism="fsdp",
                    gpu_memory_bytes=GB80)  # fmt: skip


def test_gatortron_large_needs_two_141_gb_cards_with_fsdp(contributions, gatortron):
    with pytest.raises(PlanRefused, match=r"needs at least 2 GPUs of 141 GB with fsdp$"):
        plan_for_recipe(gatortron, LARGE, 1, 1, "auto", GB141, contributions=contributions)
    assert plan_for_recipe(gatortron, LARGE, 2, 1, "auto", GB141, contributions=contributions).parallelism == "fsdp"


@pytest.mark.parametrize(
    ("recipe", "architecture", "gpus", "nodes", "memory"),
    [
        ("tiny", None, 1, 1, GB80),
        ("pubmedbert", None, 8, 1, GB80),
        ("pubmedbert", None, 4, 2, 24 * 10**9),
        ("roberta-biomedical", None, 8, 4, GB80),
        ("gatortron", LARGE, 8, 1, GB80),
        ("gatortron", LARGE, 4, 2, GB141),
        ("clinical-longformer", "longformer:base", 6, 1, GB80),
        ("bioformer-16l", None, 2, 1, 16 * 2**30),
    ],
)
def test_micro_batch_times_accumulation_times_ranks_is_the_global_batch(contributions, recipe, architecture, gpus,
                                                                         nodes, memory):  # fmt: skip
    settings = contributions.recipes[recipe].settings
    plan = plan_for_recipe(settings, architecture, gpus, nodes, "auto", memory, contributions=contributions)
    assert plan.micro_batch * plan.accumulation * plan.ranks == plan.global_batch == settings.get("batch_size", 32)
    assert plan.total_bytes <= plan.usable_bytes
    share, doubled = plan.global_batch // plan.ranks, 2 * plan.micro_batch
    doubled_fits = plan.total_bytes + plan.activation_bytes_per_sequence * plan.micro_batch <= plan.usable_bytes
    assert plan.micro_batch == share or share % doubled or not doubled_fits  # the largest power of two that fits


def test_auto_replicates_a_tiny_model_and_shards_gatortron_large(contributions, gatortron):
    tiny = plan_for_recipe(
        contributions.recipes["tiny"].settings, None, 2, 1, "auto", GB80, contributions=contributions
    )
    large = plan_for_recipe(gatortron, LARGE, 8, 1, "auto", GB80, contributions=contributions)
    assert (tiny.parallelism, large.parallelism) == ("ddp", "fsdp")
    assert tiny.replicated_bytes is None and large.replicated_bytes > GB80
    assert "chosen by auto" in large.describe()


def test_a_global_batch_not_divisible_by_the_ranks_is_refused_naming_both_numbers(contributions):
    settings = {**contributions.recipes["tiny"].settings, "batch_size": 30}
    with pytest.raises(PlanRefused) as refused:
        plan_for_recipe(settings, None, 4, 2, "auto", GB80, contributions=contributions)
    message = str(refused.value)
    assert "global batch of 30 sequences does not divide among 8 GPUs (2 nodes x 4)" in message
    assert message.count(". ") == 0 and "\n" not in message  # one sentence


def test_activation_checkpointing_lowers_activation_bytes_and_raises_the_micro_batch(contributions, gatortron):
    plain = plan_for_recipe(gatortron, LARGE, 4, 1, "fsdp", GB80, contributions=contributions)
    checkpointed = plan_for_recipe(
        gatortron, LARGE, 4, 1, "fsdp", GB80, activation_checkpointing=True, contributions=contributions
    )
    assert checkpointed.activation_bytes_per_sequence < plain.activation_bytes_per_sequence / 5
    assert checkpointed.micro_batch > plain.micro_batch and checkpointed.accumulation < plain.accumulation
    assert "activation checkpointing on" in checkpointed.describe()


def test_a_card_too_small_even_fully_sharded_is_told_to_checkpoint_activations(contributions, gatortron):
    with pytest.raises(PlanRefused, match=r"even fully sharded .*: needs activation_checkpointing$"):
        plan_for_recipe(gatortron, LARGE, 8, 1, "fsdp", 12 * 10**9, contributions=contributions)


def test_the_micro_batch_is_the_whole_share_or_a_power_of_two_dividing_it():
    assert choose_micro_batch(24, 24) == 24
    assert choose_micro_batch(24, 12) == 8
    assert choose_micro_batch(32, 31) == 16
    assert choose_micro_batch(9, 4) == 3  # odd: no power of two above 1 divides it
    assert choose_micro_batch(7, 6) == 1


ENGINE_PRESETS = [
    "bert:tiny", "bert:base", "bert:large", "bioformer:8l", "bioformer:16l", "roberta:base", "roberta:large",
    "longformer:tiny", "longformer:base", "big-bird:tiny", "big-bird:base", "megatron-bert:tiny",
    "megatron-bert:gatortron-base", "megatron-bert:gatortron-medium", "megatron-bert:gatortron-large",
]  # fmt: skip


@pytest.mark.parametrize("name", ENGINE_PRESETS)
def test_the_analytic_parameter_count_agrees_with_the_engines_meta_device_count(contributions, name):
    analytic = model_dims(name, contributions=contributions).parameter_count()
    assert analytic == pytest.approx(count_parameters(name), rel=0.01)


@pytest.mark.parametrize("name", ["bert:base", "roberta:base", "megatron-bert:gatortron-base", "big-bird:tiny"])
def test_the_trained_parameter_count_agrees_with_the_pretraining_model(contributions, name):
    with torch.device("meta"):
        model = AutoModelForPreTraining.from_config(build_config(name))
    measured = sum(p.numel() for p in model.parameters())  # tied decoder counted once
    assert model_dims(name, contributions=contributions).pretraining_parameter_count() == pytest.approx(
        measured, rel=0.01
    )


def test_the_plan_imports_neither_torch_nor_transformers_nor_django():
    script = (
        "import sys; from biolm.memory_plan import plan_for_recipe; "
        "plan_for_recipe({'architecture': 'megatron-bert:gatortron-large'}, None, 8, 1, 'auto', 80 * 10**9); "
        "print(sorted(m for m in ('torch', 'transformers', 'django') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": "platform:.", "PATH": ""}, cwd=ROOT)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_the_family_defaults_are_transformers_config_defaults():
    for model_type, defaults in FAMILY_DEFAULTS.items():
        config = CONFIG_MAPPING[model_type]()
        assert {key: getattr(config, key) for key in defaults} == defaults, model_type


def test_fused_attention_is_assumed_exactly_where_the_engine_runs_sdpa(contributions):
    for slug, spec in contributions.architectures.items():
        fused = attention_implementation(build_config(f"{slug}:tiny")) == "sdpa"
        assert (spec.model_type in FUSED_ATTENTION_MODEL_TYPES) == fused, slug
        assert model_dims(f"{slug}:tiny", contributions=contributions).fused_attention == fused


def test_the_plan_falls_back_on_the_engines_defaults():
    defaults = {f.name: f.default for f in dataclasses.fields(LoopSettings)}
    assert defaults["batch_size"] == memory_plan.DEFAULT_BATCH_SIZE
    assert defaults["mask_rate"] == memory_plan.DEFAULT_MASK_RATE


def test_a_recipe_from_scratch_gets_the_learned_vocabulary_and_block_positions_as_in_the_engine(contributions):
    settings = {"architecture": "bert:base", "vocab_size": 12000, "block_size": 256, "config": {"num_hidden_layers": 3}}
    plan = plan_for_recipe(settings, None, 1, 1, "auto", GB80, contributions=contributions)
    config = build_config("bert:base", num_hidden_layers=3, vocab_size=12000, max_position_embeddings=258)
    with torch.device("meta"):
        model = AutoModelForPreTraining.from_config(config)
    assert plan.parameters == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("text", "expected"),
    [("80GB", 80 * 10**9), ("141GB", 141 * 10**9), ("80GiB", 80 * 2**30), ("80 gib", 80 * 2**30),
     ("85899345920", 85899345920), ("1.5TB", 1_500_000_000_000)],
)  # fmt: skip
def test_memory_sizes_read_as_people_write_them(text, expected):
    assert parse_memory(text) == expected


@pytest.mark.parametrize("text", ["", "80XB", "eighty GB", "-1GB", "0", "GB"])
def test_a_memory_size_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError, match=r"expected e\.g\. 80GB|more than 0 bytes"):
        parse_memory(text)


# No database: without the backend marker pytest-django blocks it, so these also show that the command needs none.
def test_the_management_command_prints_the_plan():
    out = io.StringIO()
    call_command("plan_pretraining", "--recipe", "gatortron", "--architecture", LARGE, "--gpus", "8", stdout=out)
    text = out.getvalue()
    assert "micro-batch 4 x accumulation 1 x 8 ranks = 32 sequences per optimiser step" in text
    assert "parallelism fsdp (chosen by auto" in text and "of 80 GB (74.5 GiB)" in text
    assert re.search(r"total\s+\d+\.\d GiB", text)


def test_the_management_command_refuses_with_exit_status_1():
    with pytest.raises(CommandError) as refused:
        call_command("plan_pretraining", "--recipe", "gatortron", "--architecture", LARGE, "--gpus", "8",
                     "--parallelism", "ddp", stdout=io.StringIO())  # fmt: skip
    assert refused.value.returncode == 1
    assert str(refused.value).startswith("recipe gatortron: megatron-bert:gatortron-large")
    assert str(refused.value).endswith(": needs fsdp")


@pytest.mark.parametrize(("flag", "value"), [("--gpu-memory", "lots"), ("--gpus", "0")])
def test_the_management_command_names_a_bad_flag(flag, value):
    with pytest.raises(CommandError, match=f"^{flag} "):
        call_command("plan_pretraining", "--recipe", "gatortron", flag, value, stdout=io.StringIO())
