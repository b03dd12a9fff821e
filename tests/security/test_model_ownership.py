"""Models belong to whoever registered them: no submission or registration changes another user's model.

Also the slugs and names a user may give: validated, never silently cut, never able to read backwards; and
the addresses models get (``owner/name``): a name taken by another user's private model is not discovered
by taking it (no ``-2``), nor by its address or its old URL, which answer anyone who may not see it the
404 of a model that does not exist.
"""

from __future__ import annotations

import pytest
from checkpoints import tiny_bert
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse
from hostile_inputs import copy_checkpoint, edit_config

from registry.models import LanguageModel
from submissions.submitting import SubmissionError, SubmissionRequest, submit

MISSING = "no-such-model-anywhere"

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
    assert second.pk != first.pk and second.owner == bob and second.address == "bob/bobs-bert"
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
    alices = LanguageModel.objects.get(owner=alice)
    with pytest.raises(CommandError, match=f"the slug '{alices.slug}' is taken by another model"):
        call_command("register_model", str(shared), "--owner", "bob", "--slug", alices.slug)
    call_command("register_model", str(shared), "--owner", "bob", "--name", "Mine")  # the same name: bob's own
    alices.refresh_from_db()
    assert (alices.owner, alices.name, alices.visibility) == (alice, "Mine", LanguageModel.Visibility.PRIVATE)
    assert alices.address == "alice/mine"
    assert LanguageModel.objects.get(namespace="bob", address_name="mine").owner == bob


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


# --- addresses: owner/name --------------------------------------------------------------------------------


def test_a_checkpoint_named_like_another_users_private_model_gets_its_own_address_and_reveals_nothing(
    client, alice, bob, shared
):
    alices = submit_as(alice, shared, private=True).language_model
    bobs = submit_as(bob, shared).language_model  # the same folder name, so the same name: no "-2"
    assert (alices.address, bobs.address) == ("alice/bio-bert", "bob/bio-bert")
    assert "-2" not in bobs.slug and alices.slug not in bobs.slug
    client.force_login(bob)
    missing = client.get(f"/models/alice/{MISSING}/")
    for url in ("/models/alice/bio-bert/", f"/models/{alices.slug}/"):  # the address, and the old URL
        hidden = client.get(url)
        assert hidden.status_code == missing.status_code == 404 and b"bio-bert" not in hidden.content
    api_missing = client.get(f"/api/v1/models/alice/{MISSING}")
    for url in ("/api/v1/models/alice/bio-bert", f"/api/v1/models/{alices.slug}"):
        hidden = client.get(url)
        assert hidden.status_code == api_missing.status_code == 404 and hidden.json() == api_missing.json()
    assert client.get("/models/bob/bio-bert/").status_code == 200


def test_an_upload_named_like_another_users_private_model_is_not_renumbered(alice, bob, shared):
    """The finding: bob's upload of ``minilm.tar.gz`` used to become ``minilm-2``, telling him alice's exists."""
    alices = submit_as(alice, shared, private=True, label="minilm.tar.gz").language_model
    bobs = submit_as(bob, shared, private=True, label="minilm.tar.gz").language_model
    assert (alices.address, bobs.address) == ("alice/minilm", "bob/minilm")
    assert bobs.checkpoint == "upload:minilm.tar.gz" and not bobs.slug.startswith("minilm-2")


def test_a_submitted_models_address_is_its_owners_and_named_from_the_typed_name(alice, shared, tmp_path):
    named = submit_as(alice, shared, name="My BioBERT v2").language_model
    assert named.address == "alice/my-biobert-v2" and named.get_absolute_url() == "/models/alice/my-biobert-v2/"
    other = copy_checkpoint(shared, tmp_path / "from-the-folder")
    edit_config(other, hidden_dropout_prob=0.2)  # other weights, and a typed name with no letter or digit
    assert submit_as(alice, other, name="\u2603").language_model.address == "alice/from-the-folder"


def test_a_second_model_under_a_name_the_owner_already_uses_is_numbered_within_their_own_namespace(
    alice, shared, tmp_path
):
    first = submit_as(alice, shared, name="Tiny").language_model
    other = copy_checkpoint(shared, tmp_path / "other")
    edit_config(other, hidden_dropout_prob=0.2)  # other weights
    second = submit_as(alice, other, name="Tiny").language_model
    assert (first.address, second.address) == ("alice/tiny", "alice/tiny-2")


def test_an_old_model_url_redirects_to_its_address_for_whoever_may_see_it_and_is_404_for_anyone_else(
    client, alice, bob, staff, shared
):
    model = submit_as(alice, shared, private=True, name="Secret").language_model
    old_page, old_api = f"/models/{model.slug}/", f"/api/v1/models/{model.slug}"
    for user in (alice, staff):
        client.force_login(user)
        page, api = client.get(old_page), client.get(old_api)
        assert (page.status_code, page["Location"]) == (301, "/models/alice/secret/")
        assert (api.status_code, api["Location"]) == (301, "/api/v1/models/alice/secret")
        assert client.get(page["Location"]).status_code == client.get(api["Location"]).status_code == 200
    for user in (bob, None):
        client.logout()
        if user is not None:
            client.force_login(user)
        assert client.get(old_page).status_code == client.get(f"/models/{MISSING}/").status_code == 404
        assert client.get(old_api).json() == client.get(f"/api/v1/models/{MISSING}").json()
        assert client.get(old_api).status_code == 404


@pytest.mark.parametrize("username", ["papers", "Papers"])
def test_no_one_signs_up_as_the_reported_models_namespace(client, username):
    password = "a-long-pass-93"
    form = {"username": username, "email": "p@example.org", "password1": password, "password2": password}
    response = client.post(reverse("account_signup"), form)
    assert response.status_code == 200 and not get_user_model().objects.exists()
    assert "Username can not be used" in response.content.decode()
