"""The engine takes its memory plan on the GPU it runs on: ``auto``'s parallelism and the plan's accumulation.

On this CPU-only machine the card is the one thing stood in for: ``torch.cuda.get_device_properties`` reports
the memory of an 80 GB card, and everything else (the model, its config, the plan) is real.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from distributed_pretraining import tiny_model

from biolm.memory_plan import PlanRefused
from workers.engine.architectures import build_config
from workers.engine.pretrain.loop import LoopSettings
from workers.engine.pretrain.run import plan_on_device

CUDA = torch.device("cuda", 0)


@pytest.fixture
def card_of(monkeypatch):
    def install(total_memory: int) -> None:
        card = SimpleNamespace(total_memory=total_memory)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: card)

    return install


def test_on_a_cpu_the_loop_keeps_its_settings_and_no_plan_is_taken():
    loop = LoopSettings(steps=1, batch_size=32, accumulation=4)
    assert plan_on_device(loop, tiny_model(), 32, {}, torch.device("cpu"), 2) == (loop, None)


def test_a_tiny_model_on_an_80_gb_card_replicates_in_one_micro_batch_per_rank(card_of, monkeypatch):
    card_of(80 * 10**9)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    loop, planned = plan_on_device(LoopSettings(steps=1, batch_size=32, accumulation=8), tiny_model(), 32, {}, CUDA, 4)
    assert planned == "ddp" and loop.accumulation == 1  # 8 sequences per rank fit at once
    named, _ = plan_on_device(LoopSettings(steps=1, batch_size=32, accumulation=8), tiny_model(), 32,
                              {"accumulation": 8}, CUDA, 4)  # fmt: skip
    assert named.accumulation == 8  # the recipe's own accumulation stands


def test_a_model_too_large_for_the_card_stops_before_any_work_with_the_plans_sentence(card_of, monkeypatch):
    from transformers import AutoModelForMaskedLM

    card_of(80 * 10**9)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    with torch.device("meta"):
        large = AutoModelForMaskedLM.from_config(build_config("megatron-bert:gatortron-large"))
    loop = LoopSettings(steps=1, batch_size=32, parallelism="ddp")
    with pytest.raises(PlanRefused, match="needs fsdp"):
        plan_on_device(loop, large, 512, {"architecture": "megatron-bert:gatortron-large"}, CUDA, 1)
