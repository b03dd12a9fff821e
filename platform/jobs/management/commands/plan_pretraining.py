"""``manage.py plan_pretraining --recipe R [--architecture A] --gpus N [--nodes M] [--parallelism P] [--gpu-memory S]``.

Prints the memory plan of a recipe's run (``biolm.memory_plan``): parallelism, micro-batch,
accumulation and the bytes per GPU behind them, so a run that cannot fit is refused before it
waits in a queue. A refusal is one sentence naming the fix, with exit status 1. No database and no
torch: the plan is arithmetic over the plugins' presets.
"""

from __future__ import annotations

import argparse
import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from biolm.memory_plan import PARALLELISMS, PlanRefused, parse_memory, plan_for_recipe
from biolm.plugins import collect_contributions, get_plugin_manager

DEFAULT_GPU_MEMORY = "80GB"


class Command(BaseCommand):
    help = "Plan a pretraining run's memory per GPU: parallelism, micro-batch and accumulation, or why it cannot fit."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--recipe", required=True, help="A pretraining recipe (manage.py plugins lists them).")
        parser.add_argument(
            "--architecture", help="SLUG:PRESET, e.g. megatron-bert:gatortron-large (default: the recipe's)."
        )
        parser.add_argument("--gpus", type=int, default=1, help="GPUs per node (default 1).")
        parser.add_argument("--nodes", type=int, default=1, help="Nodes (default 1).")
        parser.add_argument(
            "--parallelism", choices=PARALLELISMS, help="ddp, fsdp, or auto (default: the recipe's, else auto)."
        )
        parser.add_argument(
            "--gpu-memory", default=DEFAULT_GPU_MEMORY,
            help="Each card's memory: 80GB (GB = 10^9 bytes, as cards are sold), 80GiB or bytes (default 80GB).",
        )  # fmt: skip
        parser.add_argument(
            "--activation-checkpointing", action=argparse.BooleanOptionalAction, default=None,
            help="Recompute each layer in the backward pass (default: the recipe's, else off).",
        )  # fmt: skip
        parser.add_argument(  # not --settings, which is Django's
            "--recipe-settings",
            help="JSON object over the recipe's settings (pretrain's --settings): '{\"batch_size\": 64}'.",
        )

    def handle(self, *args, **options) -> None:
        try:
            memory = parse_memory(options["gpu_memory"])
        except ValueError:
            raise CommandError(
                f"--gpu-memory {options['gpu_memory']!r}: expected a card's memory like 80GB, 141GB, 80GiB "
                "or a number of bytes"
            ) from None
        for flag in ("gpus", "nodes"):
            if options[flag] < 1:
                raise CommandError(f"--{flag} must be at least 1, not {options[flag]}")
        contributions = collect_contributions(
            get_plugin_manager(load_entrypoints=settings.BIOLM_LOAD_ENTRYPOINT_PLUGINS)
        )
        recipe = contributions.recipes.get(options["recipe"])
        if recipe is None:
            known = ", ".join(sorted(contributions.recipes))
            raise CommandError(f"--recipe {options['recipe']!r}: unknown recipe; known: {known}")
        recipe_settings = {**recipe.settings, **_overrides(options["recipe_settings"])}
        try:
            plan = plan_for_recipe(
                recipe_settings, options["architecture"], options["gpus"], options["nodes"], options["parallelism"],
                memory, activation_checkpointing=options["activation_checkpointing"], contributions=contributions,
            )  # fmt: skip
        except PlanRefused as refusal:
            raise CommandError(f"recipe {recipe.slug}: {refusal}") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"recipe {recipe.slug}\n{plan.describe()}")


def _overrides(text: str | None) -> dict:
    if text is None:
        return {}
    try:
        overrides = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"--recipe-settings must be a JSON object: {exc}") from None
    if not isinstance(overrides, dict):
        raise CommandError("--recipe-settings must be a JSON object")
    return overrides
