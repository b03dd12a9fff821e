"""Pretraining objectives a recipe can name, built from the recipe's settings.

A recipe contribution names ``workers.engine.pretrain.objectives:masked_language_model`` as its
implementation; the engine calls it with the recipe's ``settings`` and ``objectives`` and trains
what it returns. Objective names:

* ``mlm``: BERT's masked language model, 15% (or ``mask_rate``), 80/10/10;
* ``mlm-whole-word``: whole words masked together (PubMedBERT, Bioformer);
* ``mlm-dynamic``: a new mask at every step (RoBERTa). biolm always draws masks per step (from
  a generator seeded by the step), so static masking as BERT's data preparation did it, with
  ``dupe_factor`` copies, is the one thing not reproduced; the name is accepted for the recipes
  that state it;
* ``mlm-rate-schedule``: the rate schedule of Gu et al. 2021, 5% rising to 25%;
* ``nsp``: next-sentence prediction beside MLM (BERT, PubMedBERT, Bioformer);
* ``sop``: sentence-order prediction beside MLM (GatorTron, after ALBERT). Both train on
  sentence pairs (the ``sentences`` preprocessor) and need a model with a sentence-pair head
  (BERT, Megatron-BERT, BigBird); the engine refuses them on RoBERTa or Longformer;
* ``distillation``: the task-agnostic distillation of Lewis et al. 2020 (section 7) from a ``--teacher``
  checkpoint (:mod:`workers.engine.pretrain.distillation`), MLM beside it;
* ``adversarial``: the adversarial pretraining of Gu et al. 2021 (section 2.4), ALUM's perturbation of the
  input embeddings (:mod:`workers.engine.pretrain.adversarial`), on top of MLM (and NSP/SOP).

An objective this module does not know is refused by name, so a recipe asking for one never
trains something else silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MLM_OBJECTIVES = frozenset({"mlm", "mlm-whole-word", "mlm-dynamic", "mlm-rate-schedule"})
PAIR_OBJECTIVES = frozenset({"nsp", "sop"})
OTHER_OBJECTIVES = frozenset({"distillation", "adversarial"})


@dataclass(frozen=True)
class MaskedLanguageModel:
    mask_rate: float = 0.15
    whole_word: bool = False
    rate_schedule: bool = False
    pairs: str | None = None  # "nsp" or "sop"
    distill: bool = False
    adversarial: bool = False

    def describe(self) -> dict:
        return {"objective": "masked-language-model", **self.__dict__}


def masked_language_model(settings: Mapping[str, object], objectives: Sequence[str]) -> MaskedLanguageModel:
    known = MLM_OBJECTIVES | PAIR_OBJECTIVES | OTHER_OBJECTIVES
    unknown = sorted(set(objectives) - known)
    if unknown:
        raise ValueError(
            f"objective(s) {', '.join(unknown)} are not masked-language-model objectives; "
            f"this implementation trains {', '.join(sorted(known))}"
        )
    if "distillation" in objectives and set(objectives) & PAIR_OBJECTIVES:
        raise ValueError("distillation trains on MLM only (Lewis et al. 2020, section 7), without NSP or SOP")
    if {"distillation", "adversarial"} <= set(objectives):
        raise ValueError("a recipe distils a teacher or trains adversarially (ALUM), not both: their losses differ")
    pairs = sorted(set(objectives) & PAIR_OBJECTIVES)
    if len(pairs) > 1:
        raise ValueError("a recipe trains NSP or SOP, not both: they are two labels for the same sentence pairs")
    rate = float(settings.get("mask_rate", 0.15))
    if not 0 < rate < 1:
        raise ValueError(f"mask_rate must be between 0 and 1, not {rate}")
    return MaskedLanguageModel(
        rate,
        "mlm-whole-word" in objectives,
        "mlm-rate-schedule" in objectives,
        pairs[0] if pairs else None,
        "distillation" in objectives,
        "adversarial" in objectives,
    )
