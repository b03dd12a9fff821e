"""Models belong to whoever registered them: no submission or registration changes another user's model.

Also the slugs and names a user may give: validated, never silently cut, never able to read backwards.
"""

from __future__ import annotations

import pytest
from checkpoints import tiny_bert
from django.core.management import CommandError, call_command
from hostile_inputs import copy_checkpoint, edit_config

from registry.models import LanguageModel
from submissions.submitting import SubmissionError, SubmissionRequest, submit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def isolated(artefact_store):
    return artefact_store


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One checkpoint directory both users can read, as on a shared cluster file system."""
    return tiny_bert(tmp_path_factory.mktemp("shared") / "bio-bert", ["aspirin inhibits cyclooxygenase"] * 5, 120)


def submit_as(owner, model, **options):
    return submit(
        SubmissionRequest(owner=owner, benchmark="blurb-mini", model=model, datasets=("demo-ner",), **options)
    )


def test_another_users_submission_of_the_same_checkpoint_becomes_their_own_model(alice, bob, shared):
    first = submit_as(alice, shared, private=True, name="Alice's BERT").language_model
    second = submit_as(bob, shared, name="Bob's BERT").language_model
    assert second.pk != first.pk and second.owner == bob and second.slug == "bio-bert-2"
    first.refresh_from_db()
    assert (first.owner, first.name, first.visibility) == (alice, "Alice's BERT", LanguageModel.Visibility.PRIVATE)


def test_the_same_users_same_content_reuses_their_model(alice, shared, tmp_path):
    first = submit_as(alice, shared).language_model
    copy = copy_checkpoint(shared, tmp_path / "elsewhere")  # the same files in another folder
    again = submit_as(alice, copy).language_model
    assert again.pk == first.pk and LanguageModel.objects.filter(owner=alice).count() == 1


def test_a_slug_asked_for_that_is_someone_elses_is_refused_before_anything_is_copied(alice, bob, shared, isolated):
    submit_as(alice, shared, slug="alices-model")
    with pytest.raises(SubmissionError, match=r"the slug 'alices-model' is taken by another model; choose another"):
        submit_as(bob, shared, slug="alices-model")
    model = LanguageModel.objects.get(slug="alices-model")
    assert model.owner == alice and model.submissions.count() == 1
    assert str(shared) not in "the slug 'alices-model' is taken by another model"  # no other user's path is shown


def test_register_model_never_changes_another_users_model(alice, bob, shared, tmp_path):
    call_command("register_model", str(shared), "--owner", "alice", "--private", "--name", "Mine")
    with pytest.raises(CommandError, match="the slug 'bio-bert' is taken by another model"):
        call_command("register_model", str(shared), "--owner", "bob", "--slug", "bio-bert")
    call_command("register_model", str(shared), "--owner", "bob")  # a name-derived slug: made unique
    alices = LanguageModel.objects.get(slug="bio-bert")
    assert (alices.owner, alices.name, alices.visibility) == (alice, "Mine", LanguageModel.Visibility.PRIVATE)
    assert LanguageModel.objects.get(slug="bio-bert-2").owner == bob


def test_an_owner_registering_their_checkpoint_again_after_training_updates_it(alice, shared, tmp_path):
    mine = copy_checkpoint(shared, tmp_path / "growing")
    call_command("register_model", str(mine), "--owner", "alice")
    edit_config(mine, hidden_dropout_prob=0.2)  # new content at the same place
    call_command("register_model", str(mine), "--owner", "alice")
    assert LanguageModel.objects.filter(owner=alice).count() == 1


@pytest.mark.parametrize(
    "slug",
    ["../../etc/passwd", "has space", "model\u202egpj", "zero\u200bwidth", "a" * 10_000, "-leading", "trailing_",
     "dots.in.slug", "", "UPPER/lower", "semi;colon"],
)  # fmt: skip
def test_a_bad_slug_is_refused_and_nothing_is_stored(alice, shared, slug):
    with pytest.raises(SubmissionError, match=r"is not valid: a slug is 1 to 150 letters, digits, '-' or '_'"):
        submit_as(alice, shared, slug=slug)
    assert not LanguageModel.objects.filter(owner=alice).exists()
    with pytest.raises(CommandError, match="is not valid"):
        call_command("register_model", str(shared), f"--slug={slug}")


def test_a_good_slug_is_kept_exactly(alice, shared):
    assert submit_as(alice, shared, slug="My_Model-2").language_model.slug == "My_Model-2"


def test_a_long_name_is_refused_not_cut(alice, shared):
    with pytest.raises(SubmissionError, match=r"the model's name is 300 characters long, over the limit of 200"):
        submit_as(alice, shared, name="n" * 300)
    assert not LanguageModel.objects.filter(owner=alice).exists()


def test_bidirectional_overrides_and_control_characters_are_stripped_from_names(alice, shared):
    model = submit_as(alice, shared, name="Bio\u202eTREB\u202c\x07 model\u2066").language_model
    assert model.name == "BioTREB model"


def test_a_name_of_only_invisible_characters_is_refused(alice, shared):
    with pytest.raises(SubmissionError, match="the model's name is empty"):
        submit_as(alice, shared, name="\u202e\u202c ")
