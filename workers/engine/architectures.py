"""Model families as Hugging Face configs: resolve a plugin's architecture, build, load and measure it.

The architectures come from plugins (``biolm_architectures``), each an
:class:`~biolm.specs.ArchitectureSpec` whose presets are keyword arguments of the
family's ``transformers`` config class. A model is named ``"SLUG[:PRESET]"`` on
command lines and in job specs (``"bert:tiny"``, ``"megatron-bert:gatortron-base"``).

Parameter counts are always measured on a built model, never typed: a config is
instantiated on PyTorch's ``meta`` device, where tensors have shapes but no
storage, so counting GatorTron-large (8.8 billion parameters) takes no memory
and a fraction of a second.

Attention implementation in transformers 5 (``_supports_sdpa`` on the model
classes): BERT and RoBERTa support ``torch.nn.functional.scaled_dot_product_attention``
("sdpa", also flash/flex attention); Longformer, BigBird and Megatron-BERT do
not and run "eager" (asking them for "sdpa" raises ``ValueError``).
:func:`attention_implementation` answers this from the installed package, so a
newer transformers that adds support is picked up without a change here.

Long-input families have constraints worth knowing:

* Longformer pads every batch to a multiple of ``attention_window`` (even, per
  layer) by itself. ``LongformerForSequenceClassification`` puts global
  attention on the first token ([CLS]/<s>) when no ``global_attention_mask`` is
  given; the token-classification head does not, so pass one
  (:func:`cls_global_attention_mask`) to give [CLS] global attention there.
* BigBird's block-sparse attention needs ``sequence_length >
  (5 + 2 * num_random_blocks) * block_size`` (tiny preset: 144 tokens; published
  base: 704). On shorter batches the model logs a warning and switches itself to
  full attention, *and stays switched* for every later batch, long ones included.
  :func:`bigbird_uses_block_sparse` predicts the switch, and
  :func:`restore_bigbird_attention` undoes it after a short batch.

No Django here (this module runs on GPU workers): only ``biolm.plugins`` and
``biolm.specs``, which are Django-free.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import CONFIG_MAPPING, AutoConfig, AutoModel, PretrainedConfig
from transformers.models.auto.modeling_auto import MODEL_MAPPING

from biolm.errors import first_line
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import ArchitectureSpec

if TYPE_CHECKING:
    from workers.engine.formulations.base import ModelSource

DEFAULT_PRESET = "tiny"

# Config keyword arguments that are not attributes of a default config yet are accepted.
_EXTRA_CONFIG_KWARGS = frozenset({"attn_implementation"})


class ArchitectureError(ValueError):
    """An architecture, preset or checkpoint directory that cannot be used; the message says what exists."""


# ---------------------------------------------------------------------------
# Resolving plugin architectures


@functools.cache
def available_architectures(load_entrypoints: bool = True) -> dict[str, ArchitectureSpec]:
    """Every architecture the loaded plugins contribute, by slug (computed once per process).

    Call ``available_architectures.cache_clear()`` after installing a plugin at run time.
    """
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=load_entrypoints))
    return dict(contributions.architectures)


def resolve_architecture(slug: str, *, load_entrypoints: bool = True) -> ArchitectureSpec:
    """The :class:`ArchitectureSpec` registered under ``slug``; the error lists the known slugs."""
    architectures = available_architectures(load_entrypoints)
    try:
        return architectures[slug]
    except KeyError:
        known = ", ".join(sorted(architectures)) or "none (no architecture plugin loaded)"
        raise ArchitectureError(f"unknown architecture {slug!r}; known architectures: {known}") from None


def parse_architecture(name: str) -> tuple[str, str | None]:
    """Split ``"SLUG[:PRESET]"`` into ``(slug, preset)``; preset is None when absent.

    >>> parse_architecture("megatron-bert:gatortron-base")
    ('megatron-bert', 'gatortron-base')
    >>> parse_architecture("bert")
    ('bert', None)
    """
    slug, sep, preset = name.strip().partition(":")
    if not slug or (sep and not preset) or ":" in preset:
        raise ArchitectureError(f"architecture name {name!r} must look like 'SLUG' or 'SLUG:PRESET' (e.g. 'bert:tiny')")
    return slug, (preset or None)


def resolve_preset(name: str, preset: str | None = None) -> tuple[ArchitectureSpec, str, Mapping[str, object]]:
    """The spec, the preset name and the preset's config kwargs for ``"SLUG[:PRESET]"``.

    ``preset`` may be given separately instead of in ``name``; giving two different
    presets is an error. Without either, the ``tiny`` preset is used.
    """
    slug, named_preset = parse_architecture(name)
    if named_preset and preset and named_preset != preset:
        raise ArchitectureError(f"{name!r} names preset {named_preset!r} but preset={preset!r} was also given")
    preset = named_preset or preset or DEFAULT_PRESET
    spec = resolve_architecture(slug)
    if preset not in spec.presets:
        known = ", ".join(spec.presets) or "none"
        raise ArchitectureError(f"architecture {slug!r} has no preset {preset!r}; its presets: {known}")
    return spec, preset, spec.presets[preset]


# ---------------------------------------------------------------------------
# Configs


def build_config(name: str, preset: str | None = None, **overrides: Any) -> PretrainedConfig:
    """A fresh config for ``"SLUG[:PRESET]"`` (default preset ``tiny``), with ``overrides`` applied last.

    The engine passes task settings through ``overrides`` (``num_labels``,
    ``id2label``, ``hidden_dropout_prob=0.1``, ...). A keyword the family's config
    class does not know raises :class:`ArchitectureError` instead of being stored
    silently, as ``AutoConfig.for_model`` would do with a typo.
    """
    spec, preset, kwargs = resolve_preset(name, preset)
    if spec.model_type not in CONFIG_MAPPING:
        raise ArchitectureError(
            f"architecture {spec.slug!r} has model_type {spec.model_type!r}, which the installed transformers "
            "does not know"
        )
    merged = {**kwargs, **overrides}
    _check_config_kwargs(spec, preset, merged)
    return AutoConfig.for_model(spec.model_type, **merged)


def _check_config_kwargs(spec: ArchitectureSpec, preset: str, kwargs: Mapping[str, object]) -> None:
    defaults = CONFIG_MAPPING[spec.model_type]()
    unknown = sorted(key for key in kwargs if key not in _EXTRA_CONFIG_KWARGS and not hasattr(defaults, key))
    if unknown:
        raise ArchitectureError(
            f"{spec.slug}:{preset}: {type(defaults).__name__} has no setting(s) {', '.join(unknown)}"
        )


def load_config(directory: str | Path) -> PretrainedConfig:
    """The config of a local Hugging Face checkpoint directory; never touches the network."""
    path = Path(directory)
    if not path.is_dir():
        raise ArchitectureError(f"checkpoint directory {str(path)!r} does not exist")
    if not (path / "config.json").is_file():
        present = ", ".join(sorted(p.name for p in path.iterdir())[:10]) or "nothing"
        raise ArchitectureError(
            f"{str(path)!r} is not a Hugging Face checkpoint: it has no config.json (it holds: {present})"
        )
    try:
        return AutoConfig.from_pretrained(path, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, TypeError, KeyError, RecursionError, OverflowError) as exc:
        raise ArchitectureError(f"{str(path)!r}: its config.json cannot be read: {first_line(exc)}") from None


# ---------------------------------------------------------------------------
# Measuring


def count_parameters(config_or_model: PretrainedConfig | torch.nn.Module | str) -> int:
    """The number of parameters, measured on a model (shared tensors counted once).

    Given a config (or an ``"SLUG[:PRESET]"`` name), the family's bare encoder
    (``AutoModel``: embeddings, layers and, for BERT-like families, the pooler; no
    task head) is built on the meta device, so no memory is allocated. That is the
    model size papers report. Given a model, its own parameters are counted,
    heads included.
    """
    if isinstance(config_or_model, str):
        config_or_model = build_config(config_or_model)
    if isinstance(config_or_model, PretrainedConfig):
        with torch.device("meta"):
            model = AutoModel.from_config(config_or_model)
    elif isinstance(config_or_model, torch.nn.Module):
        model = config_or_model
    else:
        raise TypeError(f"expected a transformers config, a torch module or a name, got {type(config_or_model)}")
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------------------
# Attention


def attention_implementation(config: PretrainedConfig) -> str:
    """``"sdpa"`` when the family's model class supports it in the installed transformers, else ``"eager"``.

    Pass it on as ``AutoModelFor...from_config(config, attn_implementation=...)`` or
    ``from_pretrained(..., attn_implementation=...)`` so the choice is explicit.
    """
    model_class = MODEL_MAPPING.get(type(config), None)
    return "sdpa" if getattr(model_class, "_supports_sdpa", False) else "eager"


def cls_global_attention_mask(input_ids: torch.Tensor) -> torch.Tensor:
    """A Longformer ``global_attention_mask`` giving global attention to the first token ([CLS]/<s>) only."""
    mask = torch.zeros_like(input_ids)
    mask[:, 0] = 1
    return mask


def bigbird_block_sparse_threshold(config: PretrainedConfig) -> int:
    """The longest sequence for which BigBird falls back to full attention: ``(5 + 2 * r) * block_size``."""
    return (5 + 2 * config.num_random_blocks) * config.block_size


def bigbird_uses_block_sparse(config: PretrainedConfig, sequence_length: int) -> bool:
    """Whether a BigBird model with ``config`` runs block-sparse attention on ``sequence_length`` tokens.

    False for full-attention configs and for sequences of at most
    :func:`bigbird_block_sparse_threshold` tokens, on which transformers
    switches the model to ``original_full`` attention.
    """
    if config.model_type != "big_bird":
        raise ArchitectureError(f"not a BigBird config (model_type {config.model_type!r})")
    return config.attention_type == "block_sparse" and sequence_length > bigbird_block_sparse_threshold(config)


def restore_bigbird_attention(model: torch.nn.Module) -> bool:
    """Put a BigBird model back to its config's attention type after a short batch switched it.

    Returns True when the model had fallen back (and was restored), False when
    nothing needed doing (including for models that are not BigBird).
    """
    base = getattr(model, "base_model", model)
    current = getattr(base, "attention_type", None)
    wanted = getattr(model.config, "attention_type", None)
    if getattr(model.config, "model_type", None) != "big_bird" or current is None or current == wanted:
        return False
    base.set_attention_type(wanted)
    return True


# Position ids of these families start after the padding index, so a checkpoint's inputs are that much shorter.
OFFSET_POSITION_MODEL_TYPES = frozenset(
    {
        "roberta",
        "roberta-prelayernorm",
        "xlm-roberta",
        "xlm-roberta-xl",
        "camembert",
        "longformer",
        "data2vec-text",
        "ibert",
        "mpnet",
    }
)


def model_max_tokens(source: ModelSource) -> int:
    """The longest input ``source``'s encoder takes, special tokens included.

    An architecture preset: its :class:`~biolm.specs.ArchitectureSpec` ``max_sequence_length``,
    capped by the preset's position embeddings (``longformer:tiny`` has 1,026 positions, so
    1,024 tokens). A checkpoint: ``max_position_embeddings``, minus ``pad_token_id + 1`` for
    RoBERTa-style families (Longformer included), whose first position id follows the padding
    index.
    """
    config = source.config()
    positions = getattr(config, "max_position_embeddings", None)
    limit = None
    if positions:
        offset = config.pad_token_id + 1 if config.model_type in OFFSET_POSITION_MODEL_TYPES else 0
        limit = int(positions) - offset
    if source.architecture is not None:
        spec, _, _ = resolve_preset(source.architecture)
        limit = spec.max_sequence_length if limit is None else min(limit, spec.max_sequence_length)
    if limit is None:
        name = source.architecture or source.model_dir
        raise ValueError(f"{name}: the config has no max_position_embeddings, so its length is unknown")
    return limit
