"""Task-agnostic distillation as Lewis et al. 2020 give it (section 7, after DistilBERT).

The student learns masked language modelling from the corpus and from a teacher at once, with
the loss weighted as the paper's:

* ``alpha_mlm`` (5.0) x the MLM cross-entropy on the masked positions;
* ``alpha_kl`` (2.0) x the KL divergence from the teacher's to the student's distribution over
  the vocabulary at those positions, both softened by temperature 2 and scaled by T^2 so its
  gradients keep their size (Hinton et al.);
* ``alpha_cos`` (1.0) x the cosine distance between the student's last hidden states, through a
  learned linear projection to the teacher's width, and the teacher's, at every real token.

The student shares the teacher's vocabulary (the KL term compares the same tokens). Each term
is a sum divided by the whole step's count (masked positions, or real tokens), so accumulation
and data parallelism give one big batch's gradients, as for plain MLM.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workers.engine.pretrain.masking import IGNORE
from workers.engine.pretrain.mlm import autocast, output_head


@dataclass
class Distillation:
    teacher: torch.nn.Module
    projection: torch.nn.Linear
    temperature: float = 2.0
    alpha_mlm: float = 5.0
    alpha_kl: float = 2.0
    alpha_cos: float = 1.0

    @classmethod
    def of(cls, teacher: torch.nn.Module, student_width: int, settings: dict) -> Distillation:
        teacher.eval()
        teacher.requires_grad_(False)
        projection = torch.nn.Linear(student_width, teacher.config.hidden_size)
        return cls(
            teacher,
            projection,
            float(settings.get("temperature", 2.0)),
            float(settings.get("alpha_mlm", 5.0)),
            float(settings.get("alpha_kl", 2.0)),
            float(settings.get("alpha_cos", 1.0)),
        )

    def to(self, device: torch.device) -> Distillation:
        self.teacher.to(device)
        self.projection.to(device)
        return self

    def loss(self, student, batch: dict, total_masked: int, total_tokens: int, device, dtype) -> torch.Tensor:
        labels = batch["labels"]
        selected = labels != IGNORE
        real = batch["attention_mask"].bool()
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask") if k in batch}
        head = output_head(student)
        with autocast(device, dtype):
            hidden = student.base_model(**inputs)[0]
            logits = getattr(head, "predictions", head)(hidden[selected])
            with torch.no_grad():
                teacher_hidden = self.teacher.base_model(**inputs)[0]
                teacher_head = output_head(self.teacher)
                teacher_logits = getattr(teacher_head, "predictions", teacher_head)(teacher_hidden[selected])
            projected = self.projection(hidden[real])
        t = self.temperature
        mlm = F.cross_entropy(logits.float(), labels[selected], reduction="sum") / total_masked
        kl = (
            F.kl_div(
                F.log_softmax(logits.float() / t, dim=-1),
                F.softmax(teacher_logits.float() / t, dim=-1),
                reduction="sum",
            )
            * (t * t)
            / total_masked
        )
        cosine = (1 - F.cosine_similarity(projected.float(), teacher_hidden[real].float(), dim=-1)).sum()
        return self.alpha_mlm * mlm + self.alpha_kl * kl + self.alpha_cos * cosine / total_tokens
