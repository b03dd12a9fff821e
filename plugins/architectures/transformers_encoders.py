"""Encoder families biolm can build, as Hugging Face config presets.

Each preset is the keyword arguments of the family's ``transformers`` config
class: ``tiny`` (2 layers, hidden 64) exists for tests on a CPU, the others are
the published sizes. Parameter counts are deliberately absent: the engine
computes them from the built model, so a typo here cannot mislabel a model.

Sources: BERT base/large (Devlin et al. 2019); Bioformer 8L/16L (Fang et al.
2023, Table 1: 8L/512H/8A and 16L/384H/6A, vocabulary 32,768); GatorTron
base/medium/large (Yang et al. 2022, Table 3: 24/1024/16, 48/2560/40, 56/3584/56);
Clinical-Longformer and Clinical-BigBird at 4,096 tokens (Li et al. 2022).
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import ArchitectureSpec

_TINY = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 128}


def _size(layers: int, hidden: int, heads: int, **extra: object) -> dict[str, object]:
    return {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": 4 * hidden,
        **extra,
    }


ARCHITECTURES = (
    ArchitectureSpec(
        slug="bert",
        name="BERT",
        model_type="bert",
        description="Bidirectional Transformer encoder with WordPiece vocabulary (BERT, BioBERT, PubMedBERT).",
        presets={
            "tiny": {**_TINY, "vocab_size": 1024, "max_position_embeddings": 512},
            "base": _size(12, 768, 12),
            "large": _size(24, 1024, 16),
        },
        citation="Devlin et al. 2019, BERT: Pre-training of Deep Bidirectional Transformers, NAACL.",
    ),
    ArchitectureSpec(
        slug="bioformer",
        name="Bioformer (compact BERT)",
        model_type="bert",
        description=(
            "Deep-and-narrow compact BERT with a 32,768 cased WordPiece biomedical vocabulary (Fang et al. 2023)."
        ),
        presets={
            "tiny": {**_TINY, "vocab_size": 1024},
            "8l": _size(8, 512, 8, vocab_size=32768),
            "16l": _size(16, 384, 6, vocab_size=32768, max_position_embeddings=1024),
        },
        max_sequence_length=512,
        citation="Fang et al. 2023, Bioformer: an efficient transformer language model for biomedical text mining.",
    ),
    ArchitectureSpec(
        slug="roberta",
        name="RoBERTa",
        model_type="roberta",
        description=(
            "BERT trained with dynamic masking and a byte-level BPE vocabulary (the models of Lewis et al. 2020)."
        ),
        presets={
            "tiny": {**_TINY, "vocab_size": 1024, "max_position_embeddings": 514},
            "base": _size(12, 768, 12, max_position_embeddings=514, vocab_size=50265),
            "large": _size(24, 1024, 16, max_position_embeddings=514, vocab_size=50265),
        },
        citation="Liu et al. 2019, RoBERTa: A Robustly Optimized BERT Pretraining Approach.",
    ),
    ArchitectureSpec(
        slug="longformer",
        name="Longformer",
        model_type="longformer",
        description="Sliding-window plus global attention for inputs up to 4,096 tokens (Clinical-Longformer).",
        presets={
            "tiny": {**_TINY, "vocab_size": 1024, "attention_window": [32, 32], "max_position_embeddings": 1026},
            "base": _size(12, 768, 12, attention_window=512, max_position_embeddings=4098, vocab_size=50265),
        },
        max_sequence_length=4096,
        citation="Beltagy et al. 2020, Longformer: The Long-Document Transformer.",
    ),
    ArchitectureSpec(
        slug="big-bird",
        name="BigBird",
        model_type="big_bird",
        description="Block-sparse attention (random, window, global) for inputs up to 4,096 tokens (Clinical-BigBird).",
        presets={
            "tiny": {**_TINY, "vocab_size": 1024, "block_size": 16, "num_random_blocks": 2},
            "base": _size(12, 768, 12, max_position_embeddings=4096, vocab_size=50358),
        },
        max_sequence_length=4096,
        citation="Zaheer et al. 2020, Big Bird: Transformers for Longer Sequences, NeurIPS.",
    ),
    ArchitectureSpec(
        slug="megatron-bert",
        name="Megatron-BERT (GatorTron)",
        model_type="megatron-bert",
        description=(
            "BERT with pre-layer-norm blocks as trained by Megatron-LM; the GatorTron family (Yang et al. 2022)."
        ),
        presets={
            "tiny": {**_TINY, "vocab_size": 1024},
            "gatortron-base": _size(24, 1024, 16, vocab_size=50176),
            "gatortron-medium": _size(48, 2560, 40, vocab_size=50176),
            "gatortron-large": _size(56, 3584, 56, vocab_size=50176),
        },
        citation="Yang et al. 2022, A large language model for electronic health records, npj Digital Medicine.",
    ),
)


@hookimpl
def biolm_architectures() -> list[ArchitectureSpec]:
    return list(ARCHITECTURES)
