"""The formulation choices a user can make about a task: tagging scheme, CRF, relation markers, snippets, QA windows.

They are part of the job contract (:class:`biolm.contract.FinetuneJob` carries them) because the
papers' ablations (Gu et al. 2021, Tables 7-9) show they move scores by points, so a result must
name the ones it ran with. The engine's formulations read them; no Django and no torch here, so a
spec can be checked where it is built.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any

from biolm.contract.errors import ContractError
from biolm.contract.values import changed_settings, known_settings

TAGGING_SCHEMES = ("bio", "bioul", "io")
PICO_ELEMENTS = ("multi", "single")
RELATION_REPRESENTATIONS = ("dummify", "markers")
RELATION_FEATURES = ("cls", "cls+markers")
LONG_DOCUMENT_STRATEGIES = ("truncate", "snippets", "full")
SNIPPET_POOLINGS = ("max", "mean")


def _option(default: Any, help_text: str) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class TaskOptions:
    """The formulation choices a user can make; defaults are BLURB's (Gu et al. 2021, section 6.2).

    Each one is a command-line flag of ``python -m workers.engine finetune`` and part of the
    results' provenance, because the papers' ablations (Gu et al. 2021, Tables 7-9) show they move
    scores by points.
    """

    tagging_scheme: str = _option(
        "bio", "Token tasks: bio, bioul or io (tagging-scheme ablation of Gu et al. 2021, Table 11)."
    )
    crf: bool = _option(False, "Token tasks: a linear-chain CRF over the linear head's scores.")
    crf_learning_rate: float = _option(
        1e-3, "Token tasks with --crf: the CRF transitions' learning rate (at 1e-5..5e-5 they would barely move)."
    )
    pico_elements: str = _option(
        "multi",
        "PICO: multi (one sigmoid per element, a word may carry several, Gu et al. 2021, section 5) "
        "or single (one softmax tag per word, as the BLURB files).",
    )
    relation_representation: str = _option(
        "dummify", "Relations: dummify (@GENE$ for each entity, BLURB) or markers ([E1] ... [/E1], GatorTron)."
    )
    relation_features: str = _option(
        "cls", "Relations: cls ([CLS] vector) or cls+markers ([CLS] + both entities' start markers, Yang et al. 2022)."
    )
    long_documents: str = _option(
        "truncate", "Sequence tasks: truncate, snippets (512-token snippets + pooling) or full (up to 4096)."
    )
    snippet_pooling: str = _option(
        "max", "How snippet [CLS] vectors are pooled: max or mean (Li et al. 2022, section 3.5)."
    )
    snippet_length: int = _option(512, "Tokens per snippet, special tokens included.")
    max_snippets: int = _option(8, "Snippets per document at most (8 x 512 = 4096, the long models' length).")
    max_question_length: int = _option(64, "Extractive QA: question tokens kept (Yang et al. 2022).")
    qa_window: int = _option(
        446,
        "Extractive QA: tokens per context window, [CLS] and [SEP]s included "
        "(Yang et al. 2022: 446, so 443 of context).",
    )
    qa_stride: int = _option(396, "Extractive QA: context tokens between window starts (Yang et al. 2022).")
    max_answer_length: int = _option(32, "Extractive QA: tokens in a predicted answer at most (Yang et al. 2022).")
    n_best: int = _option(5, "Extractive QA: ranked answers kept per question (lenient accuracy and MRR use 5).")

    def __post_init__(self) -> None:
        choices = {
            "tagging_scheme": TAGGING_SCHEMES,
            "pico_elements": PICO_ELEMENTS,
            "relation_representation": RELATION_REPRESENTATIONS,
            "relation_features": RELATION_FEATURES,
            "long_documents": LONG_DOCUMENT_STRATEGIES,
            "snippet_pooling": SNIPPET_POOLINGS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be one of {', '.join(allowed)}, not {getattr(self, name)!r}")
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value <= 0:
                raise ValueError(f"--{item.name.replace('_', '-')} must be positive, not {value}")
        if self.relation_features == "cls+markers" and self.relation_representation != "markers":
            raise ValueError("--relation-features cls+markers needs --relation-representation markers")
        if self.qa_stride > self.qa_window:
            raise ValueError(
                f"--qa-stride {self.qa_stride} is longer than --qa-window {self.qa_window}: text would be skipped"
            )

    @classmethod
    def from_json(cls, data: object) -> TaskOptions:
        """The options of a JSON object; an unknown option or a bad value is a :class:`ContractError`."""
        values = known_settings(cls, data, "task_options", "task option", "the options")
        try:
            return cls(**values)
        except ValueError as exc:
            raise ContractError(str(exc), "task_options") from None

    def to_json(self) -> dict[str, Any]:
        """Only the options that differ from the defaults (BLURB's)."""
        return changed_settings(self)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
