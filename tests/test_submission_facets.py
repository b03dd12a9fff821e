"""What a submitter states of how a model was pretrained (issue 30): pretraining domain, vocabulary and base model.

The form, the API and ``manage.py submit`` all hand them to ``submit()``; they are the model's facets, so the
leaderboard's filters match a submitted model as they match a published one. A base model makes the
initialisation continual; "from scratch" beside a base model is refused, beside the base model field.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from checkpoints import tiny_bert
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from accounts.tokens import create_token
from registry.models import LanguageModel
from submissions.models import Submission
from submissions.submitting import SubmissionError, SubmissionRequest, submit

pytestmark = pytest.mark.django_db
BASE = "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(
        tmp_path_factory.mktemp("checkpoints") / "tiny-bert", ["aspirin inhibits cyclooxygenase in platelets"] * 5, 120
    )


@pytest.fixture(scope="module")
def archive(checkpoint, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("archives") / "tiny-bert.tar.gz"
    with tarfile.open(path, "w:gz") as handle:
        handle.add(checkpoint, arcname=".")
    return path


@pytest.fixture(autouse=True)
def uploads(artefact_store, settings) -> Path:
    settings.FILE_UPLOAD_TEMP_DIR = artefact_store / "tmp"
    settings.FILE_UPLOAD_TEMP_DIR.mkdir(exist_ok=True)
    return artefact_store


def form_post(client, archive: Path, **changes):
    data = {
        "source": "checkpoint", "benchmark": "blurb-mini", "datasets": ["blurb-mini:demo-ner"], "preview": "true",
        "name": "My PubMed BERT", "licence": "mit", **changes,
    }  # fmt: skip
    with archive.open("rb") as handle:
        return client.post("/submit/", {**data, "checkpoint": handle})


def test_the_form_states_domain_vocabulary_and_base_model_and_the_leaderboard_filters_find_the_model(
    client, alice, archive
):
    client.force_login(alice)
    response = form_post(client, archive, pretraining_domain="pubmed", vocabulary_kind="general", base_model=BASE)
    assert response.status_code == 302, response.content.decode()[:2000]
    model = Submission.objects.get().language_model
    assert (model.pretraining_domain, model.vocabulary_kind, model.base_model, model.initialisation) == (
        "pubmed", "general", BASE, "continual"
    )  # fmt: skip
    model.visibility = LanguageModel.Visibility.PUBLIC
    model.save()
    found = LanguageModel.objects.public().filter(pretraining_domain="pubmed", vocabulary_kind="general",
                                                  initialisation="continual")  # fmt: skip
    assert model in found  # what the leaderboard's domain, vocabulary and start filters select (tables.apply)
    page = client.get(model.get_absolute_url()).content.decode()
    assert f"continued pretraining from {BASE}" in page and "continual pretraining" in page


def test_unstated_facts_stay_unstated_and_from_scratch_is_taken_only_as_stated(client, alice, archive):
    client.force_login(alice)
    form_post(client, archive, initialisation="scratch", vocabulary_kind="domain")
    model = Submission.objects.get().language_model
    assert (model.initialisation, model.vocabulary_kind, model.base_model, model.pretraining_domain) == (
        "scratch", "domain", "", ""
    )  # fmt: skip


def test_from_scratch_beside_a_base_model_is_refused_beside_the_base_model_and_nothing_is_queued(
    client, alice, archive
):
    client.force_login(alice)
    response = form_post(client, archive, initialisation="scratch", base_model=BASE)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="err-base_model"' in page and "pretrained from scratch has no base model" in page
    assert not Submission.objects.exists() and not LanguageModel.objects.filter(owner=alice).exists()


def test_the_form_suggests_the_sites_models_as_base_models(client, alice):
    LanguageModel.objects.create(slug="pubmedbert", namespace="microsoft", address_name="pubmedbert",
                                 name="PubMedBERT", origin=LanguageModel.Origin.REPORTED)  # fmt: skip
    LanguageModel.objects.create(slug="hidden", name="Hidden BERT", owner=alice,
                                 visibility=LanguageModel.Visibility.PRIVATE)  # fmt: skip
    client.force_login(alice)
    page = client.get("/submit/").content.decode()
    datalist = page.split('<datalist id="base-models">', 1)[1].split("</datalist>", 1)[0]
    assert '<option value="microsoft/pubmedbert">' in datalist and '<option value="PubMedBERT">' in datalist
    assert "Hidden BERT" not in datalist  # a private model is never suggested
    assert 'list="base-models"' in page and '<label for="id_pretraining_domain">' in page
    assert '<label for="id_vocabulary_kind">' in page and "inherited from a general-domain model" in page


def test_the_api_takes_the_facts_and_refuses_an_unknown_domain(alice, archive):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {create_token(alice, 'script')[1]}")

    def post(**fields):
        with archive.open("rb") as handle:
            data = {"benchmark": "blurb-mini", "datasets": "demo-ner", "preview": "true", "licence": "mit", **fields}
            return client.post("/api/v1/submissions", {**data, "checkpoint": handle}, format="multipart")

    refused = post(pretraining_domain="mars")
    assert refused.status_code == 400 and "pretraining_domain" in refused.json()["errors"]
    response = post(pretraining_domain="clinical", vocabulary_kind="domain", base_model=BASE)
    assert response.status_code == 201, response.content
    model = Submission.objects.get().language_model
    stated = (model.pretraining_domain, model.vocabulary_kind, model.initialisation)
    assert stated == ("clinical", "domain", "continual")


def test_manage_py_submit_takes_the_facts(alice, checkpoint):
    call_command("submit", "--model", str(checkpoint), "--benchmark", "blurb-mini", "--datasets", "demo-ner",
                 "--owner", "alice", "--preview", "--domain", "pmc", "--base-model", BASE,
                 stdout=io.StringIO())  # fmt: skip
    model = Submission.objects.get().language_model
    assert (model.pretraining_domain, model.base_model, model.initialisation) == ("pmc", BASE, "continual")
    with pytest.raises(CommandError, match="has no base model"):
        call_command("submit", "--model", str(checkpoint), "--benchmark", "blurb-mini", "--owner", "alice",
                     "--initialisation", "scratch", "--base-model", BASE, "--rerun", stdout=io.StringIO())  # fmt: skip


def test_submit_refuses_a_value_outside_the_filters_choices_beside_its_field(alice, checkpoint):
    with pytest.raises(SubmissionError) as refused:
        submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, vocabulary_kind="own"))
    assert refused.value.field == "vocabulary_kind" and "domain, general" in str(refused.value)


def test_the_model_page_shows_the_given_url_as_its_paper_or_code_not_paper_none(client, alice):
    model = LanguageModel.objects.create(slug="mine", name="Mine", owner=alice, homepage="https://example.org/code")
    page = client.get(model.get_absolute_url()).content.decode()
    assert '<a href="https://example.org/code"' in page and "<dt>Paper or code</dt>" in page
    assert "<dt>Paper</dt>" not in page and "none: evaluated here" not in page
