"""Pretraining recipes as the papers describe them.

The settings record what each paper reports, so a reproduced model can be
compared with the published one on equal terms.
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import RecipeSpec

MLM = "workers.engine.pretrain.objectives:masked_language_model"

# PubMedBERT's settings (Gu et al. 2021, sections 3 and 6.1), which its adversarial variant extends.
PUBMEDBERT = {
    "architecture": "bert:base",
    "vocabulary": "wordpiece",
    "vocab_size": 30522,
    "lowercase": True,
    "block_size": 512,
    "mask_rate": 0.15,
    "batch_size": 8192,
    "learning_rate": 6e-4,
    "warmup_ratio": 0.1,
    "steps": 62500,
    "preprocessors": ["drop-empty", "sentences"],
}

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
        implementation=MLM,
    ),
    RecipeSpec(
        slug="pubmedbert",
        name="PubMedBERT: from scratch, in-domain vocabulary, WWM",
        description=(
            "BERT-base MLM (whole-word, 15%) + NSP from scratch on PubMed abstracts with a 30,522-entry uncased "
            "PubMed WordPiece vocabulary; peak learning rate 6e-4, 10% warm-up, 62,500 steps of 8,192 (Gu et al. "
            "2021, sections 3 and 6.1)."
        ),
        objectives=("mlm-whole-word", "nsp"),
        settings=PUBMEDBERT,
        citation="Gu et al. 2021, Domain-Specific Language Model Pretraining for Biomedical NLP, ACM HEALTH.",
        implementation=MLM,
    ),
    RecipeSpec(
        slug="pubmedbert-adversarial",
        name="PubMedBERT + adversarial pretraining (ALUM)",
        description=(
            "PubMedBERT's recipe with ALUM's adversarial term (Gu et al. 2021, section 2.4 and Table 9): the input "
            "embeddings are perturbed within 1e-5 (noise 1e-5, one l-infinity step of 1e-3) to maximise the "
            "symmetric KL of the MLM predictions, and 10 x that divergence is added to the loss."
        ),
        objectives=("mlm-whole-word", "nsp", "adversarial"),
        settings={
            **PUBMEDBERT,
            "adversarial_alpha": 10.0,
            "adversarial_epsilon": 1e-5,
            "adversarial_step_size": 1e-3,
            "adversarial_noise": 1e-5,
            "adversarial_steps": 1,
        },
        citation=(
            "Gu et al. 2021, section 2.4; Liu et al. 2020, Adversarial Training for Large Neural Language "
            "Models, arXiv:2004.08994."
        ),
        implementation=MLM,
    ),
    RecipeSpec(
        slug="biobert-continual",
        name="BioBERT-style continual pretraining from a general checkpoint",
        description=(
            "Continue a BERT checkpoint's MLM + NSP on biomedical text with its own vocabulary (Gu et al. 2021, "
            "section 3: BioBERT ran 1M further steps of 192 sequences; give the checkpoint with --model)."
        ),
        objectives=("mlm", "nsp"),
        settings={
            "continual": True,
            "block_size": 512,
            "mask_rate": 0.15,
            "batch_size": 192,
            "learning_rate": 1e-4,
            "steps": 1000000,
            "preprocessors": ["drop-empty", "sentences"],
        },
        citation="Lee et al. 2020, BioBERT: a pre-trained biomedical language representation model, Bioinformatics.",
        implementation=MLM,
    ),
    RecipeSpec(
        slug="roberta-biomedical",
        name="RoBERTa with dynamic masking and a domain BPE vocabulary",
        description=(
            "RoBERTa-base MLM with dynamic masking from scratch on PubMed/PMC/MIMIC-III with a 50k byte-level BPE "
            "vocabulary; batches of 8,192, 500k steps, peak 6e-4 after 5% warm-up (Lewis et al. 2020, section 5.1)."
        ),
        objectives=("mlm-dynamic",),
        settings={
            "architecture": "roberta:base",
            "vocabulary": "byte-bpe",
            "vocab_size": 50265,
            "block_size": 510,
            "mask_rate": 0.15,
            "batch_size": 8192,
            "learning_rate": 6e-4,
            "warmup_ratio": 0.05,
            "steps": 500000,
            "preprocessors": ["drop-empty"],
        },
        citation="Lewis et al. 2020, Pretrained Language Models for Biomedical and Clinical Tasks, ClinicalNLP.",
        implementation=MLM,
    ),
    *(
        RecipeSpec(
            slug=f"bioformer-{size}",
            name=f"Bioformer {size.upper()}: compact BERT, WWM + NSP",
            description=(
                f"Bioformer {size.upper()} from scratch with a cased 32,768-entry WordPiece vocabulary, whole-word "
                f"masking (15%) and NSP, {length}-token inputs, 2M steps of 256 (Fang et al. 2023, Table 1). The paper "
                "gives no learning rate; BERT's 1e-4 is used."
            ),
            objectives=("mlm-whole-word", "nsp"),
            settings={
                "architecture": f"bioformer:{size}",
                "vocabulary": "wordpiece",
                "vocab_size": 32768,
                "lowercase": False,
                "block_size": length,
                "mask_rate": 0.15,
                "batch_size": 256,
                "learning_rate": 1e-4,
                "steps": 2000000,
                "preprocessors": ["drop-empty", "sentences"],
            },
            citation=(
                "Fang et al. 2023, Bioformer: an efficient transformer language model for biomedical text mining."
            ),
            implementation=MLM,
        )
        for size, length in (("8l", 512), ("16l", 1024))
    ),
    RecipeSpec(
        slug="gatortron",
        name="GatorTron: Megatron-BERT with MLM + SOP",
        description=(
            "Megatron-BERT (GatorTron-base) from scratch with a byte-level BPE vocabulary learned on the corpus, "
            "MLM (15%) + sentence-order prediction, after GatorTron's cleaning and sentence detection (Yang et al. "
            "2022). The paper gives no batch, steps or learning rate; the engine's defaults apply."
        ),
        objectives=("mlm", "sop"),
        settings={
            "architecture": "megatron-bert:gatortron-base",
            "vocabulary": "byte-bpe",
            "vocab_size": 50176,
            "block_size": 512,
            "mask_rate": 0.15,
            "preprocessors": ["gatortron-clean", "sentences"],
        },
        citation="Yang et al. 2022, A large language model for electronic health records, npj Digital Medicine.",
        implementation=MLM,
    ),
    RecipeSpec(
        slug="lewis2020-distillation",
        name="Task-agnostic distillation of a large teacher into a pretrained student",
        description=(
            "Lewis et al. 2020, section 7: the student (an MLM-pretrained base model, --model; or an architecture from "
            "scratch) mimics a --teacher on dynamic MLM: 5.0 x MLM cross-entropy + 2.0 x KL at temperature 2 + "
            "1.0 x cosine of last hidden states through a learned projection; 50k steps of 8,192, 5e-4, 5% warm-up."
        ),
        objectives=("mlm-dynamic", "distillation"),
        settings={
            "architecture": "roberta:base",
            "block_size": 510,
            "mask_rate": 0.15,
            "batch_size": 8192,
            "learning_rate": 5e-4,
            "warmup_ratio": 0.05,
            "steps": 50000,
            "temperature": 2.0,
            "alpha_mlm": 5.0,
            "alpha_kl": 2.0,
            "alpha_cos": 1.0,
            "preprocessors": ["drop-empty"],
        },
        citation="Lewis et al. 2020, Pretrained Language Models for Biomedical and Clinical Tasks, ClinicalNLP.",
        implementation=MLM,
    ),
    RecipeSpec(
        slug="clinical-longformer",
        name="Clinical-Longformer / BigBird: continual MLM at 4,096 tokens",
        description=(
            "Continual MLM on MIMIC-III notes at 4,096 tokens from a general checkpoint converted to a long model "
            "(python -m workers.engine convert-long, then --model): 200,000 steps of 6 x 3 sequences at 3e-5, "
            "after the cleaning of Li et al. 2022 (section 3.2)."
        ),
        objectives=("mlm",),
        settings={
            "continual": True,
            "block_size": 4096,
            "mask_rate": 0.15,
            "batch_size": 18,
            "learning_rate": 3e-5,
            "steps": 200000,
            "preprocessors": ["clinical-longformer-clean"],
        },
        citation="Li et al. 2022, Clinical-Longformer and Clinical-BigBird: Transformers for long clinical sequences.",
        implementation=MLM,
    ),
)


@hookimpl
def biolm_pretraining_recipes() -> list[RecipeSpec]:
    return list(RECIPES)
