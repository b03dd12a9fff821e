"""``manage.py register_model DIR``: a pretrained (or any local) checkpoint becomes a LanguageModel."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from registry.models import LanguageModel
from workers.engine.__main__ import main
from workers.engine.architectures import count_parameters, load_config

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, official_data) -> Path:
    train_set = official_data("PubMedQA", "blurb", "pqal_fold0", "train_set.json")
    corpus = tmp_path_factory.mktemp("corpus") / "pubmedqa.txt"
    entries = json.loads(train_set.read_text())
    corpus.write_text("\n".join(" ".join(e["CONTEXTS"]) for e in entries.values()) + "\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("model") / "tiny-pubmedqa"
    args = ["pretrain", "--recipe", "tiny", "--corpus", str(corpus), "--steps", "5", "--out", str(out),
            "--settings", json.dumps({"eval_every": 5, "contamination_datasets": []})]  # fmt: skip
    assert main(args) == 0
    return out


def test_a_pretrained_checkpoint_is_registered_with_its_recipe_corpus_and_report(pretrained, alice):
    call_command("register_model", str(pretrained), "--owner", alice.username, "--private")
    model = LanguageModel.objects.get(namespace=alice.username, address_name="tiny-pubmedqa")  # from its folder
    report = json.loads((pretrained / "pretraining.json").read_text())
    assert model.parameter_count == count_parameters(load_config(pretrained))
    assert model.architecture.slug == "bert" and model.recipe.slug == "tiny"
    assert model.checkpoint == str(pretrained.resolve()) and model.owner == alice
    assert model.visibility == LanguageModel.Visibility.PRIVATE and model.origin == LanguageModel.Origin.REPRODUCED
    assert report["corpus"]["fingerprint"] in model.pretraining_corpus
    assert model.pretraining == report


def test_registering_again_updates_and_a_taken_slug_or_an_incomplete_directory_is_refused(pretrained, tmp_path):
    call_command("register_model", str(pretrained), "--name", "First")
    out = io.StringIO()
    call_command("register_model", str(pretrained), "--name", "Second", stdout=out)
    assert "already registered as papers/first" in out.getvalue()  # no owner: under papers, named as typed
    assert LanguageModel.objects.get(slug="first").name == "First"  # the same content: the same model
    other = tmp_path / "tiny-pubmedqa"
    other.mkdir()
    (other / "config.json").write_text((pretrained / "config.json").read_text())
    with pytest.raises(CommandError, match=r"not a complete checkpoint: missing weights .* a tokenizer"):
        call_command("register_model", str(other))
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (other / name).write_bytes((pretrained / name).read_bytes())
    with pytest.raises(CommandError, match="the slug 'first' is taken by another model; choose another"):
        call_command("register_model", str(other), "--slug", "first")
    call_command("register_model", str(other), "--name", "First")  # a name-derived address is numbered instead
    assert LanguageModel.objects.get(slug="first-2").checkpoint == str(other)
