"""Tiny BERT checkpoints for tests: a real Hugging Face directory (config, safetensors, tokenizer) in a second."""

from __future__ import annotations

from pathlib import Path

from workers.engine.vocabulary import train_wordpiece

DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"


def demo_texts() -> list[str]:
    """The BLURB-mini training files' lines, for a vocabulary that covers the demo datasets."""
    return [line for path in sorted(DEMO.glob("*/train.jsonl")) for line in path.read_text().splitlines()]


def tiny_bert(directory: Path, texts: list[str], vocab_size: int, hidden: int = 16, positions: int = 512) -> Path:
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = train_wordpiece(texts, vocab_size)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=2 * hidden, max_position_embeddings=positions)  # fmt: skip
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
