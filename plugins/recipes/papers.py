"""Pretraining recipes as the seed papers describe them.

The settings record what each paper reports, so a reproduced model can be
compared with the published one on equal terms.
"""

from __future__ import annotations

import pluggy

from biolm.specs import RecipeSpec

hookimpl = pluggy.HookimplMarker("biolm")

RECIPES = (
    RecipeSpec(
        slug="tiny",
        name="Tiny BERT from scratch (tests and the demo)",
        description=(
            "A 2-layer BERT with a 2,048-entry WordPiece vocabulary learned on the corpus, whole-word MLM; "
            "small enough to pretrain in minutes on two CPU cores."
        ),
        objectives=("mlm-whole-word",),
        settings={
            "architecture": "bert:tiny",
            "vocabulary": "wordpiece",
            "vocab_size": 2048,
            "block_size": 128,
            "batch_size": 32,
            "learning_rate": 1e-3,
            "warmup_ratio": 0.06,
            "mask_rate": 0.15,
            "steps": 300,
            "checkpoint_every": 50,
            "eval_every": 25,
            "heldout_share": 0.05,
            "preprocessors": ["drop-empty"],
        },
        implementation="workers.engine.pretrain.objectives:masked_language_model",
    ),
    RecipeSpec(
        slug="pubmedbert",
        name="PubMedBERT: from scratch, in-domain vocabulary, WWM",
        description="BERT MLM + NSP from scratch on PubMed abstracts with a PubMed WordPiece vocabulary (seed 004).",
        objectives=("mlm-whole-word", "nsp"),
        settings={"mask_rate": 0.15, "vocabulary": "wordpiece-uncased-30522", "batch_size": 8192, "steps": 62500},
        citation="Gu et al. 2021, Domain-Specific Language Model Pretraining for Biomedical NLP, ACM HEALTH.",
    ),
    RecipeSpec(
        slug="roberta-biomedical",
        name="RoBERTa with dynamic masking and a domain BPE vocabulary",
        description="RoBERTa MLM with dynamic masking, from scratch or continual, on PubMed/PMC/MIMIC-III (seed 001).",
        objectives=("mlm-dynamic",),
        settings={"mask_rate": 0.15, "vocabulary": "bpe-50k-domain", "steps": 500000, "batch_size": 8192},
        citation="Lewis et al. 2020, Pretrained Language Models for Biomedical and Clinical Tasks, ClinicalNLP.",
    ),
    RecipeSpec(
        slug="bioformer",
        name="Bioformer: compact BERT, WWM + NSP",
        description="Compact BERT from scratch with whole-word masking (20 duplications) and NSP (seed 003).",
        objectives=("mlm-whole-word", "nsp"),
        settings={"mask_rate": 0.15, "dupe_factor": 20, "batch_size": 256, "steps": 2000000},
        citation="Fang et al. 2023, Bioformer: an efficient transformer language model for biomedical text mining.",
    ),
    RecipeSpec(
        slug="gatortron",
        name="GatorTron: Megatron-BERT with MLM + SOP",
        description="Megatron-BERT from scratch on clinical notes, PubMed and Wikipedia with MLM and SOP (seed 002).",
        objectives=("mlm", "sop"),
        settings={"mask_rate": 0.15, "vocabulary": "bpe-from-scratch"},
        citation="Yang et al. 2022, A large language model for electronic health records, npj Digital Medicine.",
    ),
    RecipeSpec(
        slug="clinical-longformer",
        name="Clinical-Longformer / BigBird: continual MLM at 4,096 tokens",
        description="Continual MLM from the general checkpoints on MIMIC-III notes at 4,096 tokens (seed 000).",
        objectives=("mlm",),
        settings={"mask_rate": 0.15, "max_sequence_length": 4096, "steps": 200000},
        citation="Li et al. 2022, Clinical-Longformer and Clinical-BigBird: Transformers for long clinical sequences.",
    ),
)


@hookimpl
def biolm_pretraining_recipes() -> list[RecipeSpec]:
    return list(RECIPES)
