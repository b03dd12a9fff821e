"""``/submit/``: the submission form queues a checkpoint or a recipe through ``submissions.submitting.submit``, or shows
each refusal beside its field and leaves no row, no stored file and no upload behind."""

from __future__ import annotations

import datetime as dt
import io
import json
import pickle
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from checkpoints import tiny_bert
from django.test import Client
from django.urls import reverse

from biolm.intake_limits import ArchiveLimits
from biolm.protocols import PREVIEW
from jobs.models import Job
from registry.models import LanguageModel
from submissions.models import Submission
from submissions.submitting import SubmissionRequest, submit

pytestmark = pytest.mark.django_db
BLURB_MINI = ["demo-ner", "demo-pico", "demo-relation", "demo-similarity", "demo-doc-classification", "demo-qa"]
URL = "/submit/"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(
        tmp_path_factory.mktemp("checkpoints") / "tiny-bert", ["aspirin inhibits cyclooxygenase in platelets"] * 5, 120
    )


@pytest.fixture(autouse=True)
def platform_dirs(artefact_store, settings) -> Path:
    """Uploads land where the intake unpacks (var/tmp, as in production), under the test's own folder."""
    settings.FILE_UPLOAD_TEMP_DIR = artefact_store / "tmp"
    settings.FILE_UPLOAD_TEMP_DIR.mkdir(exist_ok=True)
    return artefact_store


@pytest.fixture
def signed_in(client, alice) -> Client:
    client.force_login(alice)
    return client


def archive_of(directory: Path, path: Path, extra: list[tuple[str, bytes]] = ()) -> Path:
    """A .tar.gz of a checkpoint folder, the way a researcher packs it (tar czf x.tar.gz tiny-bert/), plus extras."""
    with tarfile.open(path, "w:gz") as handle:
        handle.add(directory, arcname=directory.name)
        for name, content in extra:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            handle.addfile(info, io.BytesIO(content))
    return path


def values(**changes) -> dict:
    data = {
        "source": "checkpoint",
        "benchmark": "blurb-mini",
        "datasets": [f"blurb-mini:{slug}" for slug in BLURB_MINI],
        "preview": "false",
        "name": "My BioBERT",
        "description": "Pretrained on PubMed abstracts.",
        "licence": "apache-2.0",
        "homepage": "https://example.org/paper",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def send(client: Client, path: Path | None = None, field: str = "checkpoint", **changes):
    data = values(**changes)
    if path is None:
        return client.post(URL, data)
    with path.open("rb") as handle:
        return client.post(URL, {**data, field: handle})


def assert_nothing_left(root: Path) -> None:
    assert not Submission.objects.exists() and not Job.objects.exists()
    assert not LanguageModel.objects.filter(origin=LanguageModel.Origin.REPRODUCED).exists()
    store = root / "store"
    assert not store.exists() or not [p for p in store.rglob("*") if p.is_file()]
    assert list((root / "tmp").iterdir()) == []  # neither the upload nor a scratch folder


def error_beside(response, field: str) -> str:
    """The sentence shown beside ``field`` (its ``err-<field>`` paragraph), as text."""
    html = response.content.decode()
    found = re.search(rf'<p class="field-error errorlist" id="err-{field}">(.*?)</p>', html, re.S)
    assert found, f"no error beside {field}"
    return found.group(1)


def test_anonymous_visitors_are_sent_to_sign_in_first(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login")) and "next=/submit/" in response["Location"]


def test_the_form_offers_benchmarks_with_their_datasets_all_ticked_recipes_and_the_quota(signed_in, settings):
    settings.BIOLM_SUBMISSIONS_PER_DAY = 7
    response = signed_in.get(URL)
    html = response.content.decode()
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    assert 'name="csrfmiddlewaretoken"' in html and 'enctype="multipart/form-data"' in html
    for slug in BLURB_MINI:
        assert f'value="blurb-mini:{slug}" data-dataset="{slug}" checked' in html
    assert 'data-benchmark="blurb"' in html  # every benchmark's datasets, grouped, for browsers without scripts
    assert '<option value="tiny">' in html
    assert (
        'accept=".zip,.tar.gz,.tgz,.tar' in html and 'list="licences"' in html and '<option value="apache-2.0">' in html
    )
    assert "never ranked beside full-protocol results" in html
    assert "You can make 7 more submissions in the next 24 hours, of 7 a day." in html
    assert re.search(r'<script defer src="/static/submissions/submit\.[0-9a-f]{12}\.js">', html)
    assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*\bnonce=)", html), "an inline script without the nonce"


def test_a_benchmark_in_the_address_is_chosen(signed_in):
    html = signed_in.get(URL, {"benchmark": "blurb-mini"}).content.decode()
    assert '<option value="blurb-mini" selected>' in html


def test_a_benchmark_whose_data_is_not_imported_is_offered_disabled_with_what_it_needs_and_the_command(signed_in):
    html = signed_in.get(URL).content.decode()
    option = re.search(r'<option value="blurb"([^>]*)>([^<]*)</option>', html)
    assert option and " disabled" in option.group(1) and "selected" not in option.group(1)
    assert "its data is not imported here" in option.group(2)
    reason = re.search(r'<li data-benchmark="blurb">(.*?)</li>', html, re.S).group(1)
    assert reason.startswith("BLURB needs bc5-chem, bc5-disease, ncbi-disease, bc2gm,")
    assert '<code class="command">manage.py import_dataset bc5-chem bc5-disease ncbi-disease ' in reason
    assert '<option value="blurb-mini" selected>BLURB-mini (demo data)</option>' in html  # its data is imported


@pytest.mark.parametrize("asked", ["", "blurb"], ids=["no-choice", "a-benchmark-that-cannot-run"])
def test_the_form_chooses_the_first_benchmark_that_can_run(signed_in, asked):
    html = signed_in.get(URL, {"benchmark": asked} if asked else {}).content.decode()
    assert re.findall(
        r'<option value="([^"]+)"[^>]*\bselected', html.split('id="id_benchmark"')[1].split("</select>")[0]
    ) == ["blurb-mini"]


def test_a_post_naming_a_benchmark_without_its_data_is_refused_beside_it_and_queues_nothing(
    signed_in, checkpoint, tmp_path, platform_dirs
):
    response = send(signed_in, archive_of(checkpoint, tmp_path / "m.tar.gz"), benchmark="blurb",
                    datasets=["blurb:ncbi-disease", "blurb:bc5-chem"])  # fmt: skip
    assert response.status_code == 200
    assert error_beside(response, "benchmark") == (
        "blurb needs ncbi-disease, bc5-chem imported on this site, and they are not: an operator imports them with "
        "manage.py import_dataset ncbi-disease bc5-chem, or choose a benchmark or datasets whose data is imported"
    )
    assert_nothing_left(platform_dirs)


def test_an_archive_packed_from_inside_the_checkpoint_folder_with_tar_is_accepted(signed_in, checkpoint, tmp_path):
    archive = tmp_path / "inside.tar.gz"
    subprocess.run(["tar", "-czf", str(archive), "-C", str(checkpoint), "."], check=True)
    with tarfile.open(archive) as packed:
        names = packed.getnames()
    assert names[0] == "." and "./config.json" in names  # what tar makes of it: the folder itself, then ./ names
    response = send(signed_in, archive, datasets=["blurb-mini:demo-qa"])
    assert response.status_code == 302, error_beside(response, "checkpoint")
    submission = Submission.objects.get()
    assert submission.jobs.filter(kind=Job.Kind.FINETUNE).count() == 1
    assert submission.language_model.content_sha256


def test_a_dot_dot_behind_a_dot_slash_is_still_refused(signed_in, checkpoint, tmp_path, platform_dirs):
    archive = tmp_path / "inside.tar.gz"
    subprocess.run(["tar", "-czf", str(archive), "-C", str(checkpoint), "."], check=True)
    with tarfile.open(archive) as packed:
        members = [(info, packed.extractfile(info).read() if info.isfile() else None) for info in packed]
    escaping = tarfile.TarInfo("./../evil")
    escaping.size = 4
    with tarfile.open(archive, "w:gz") as repacked:
        for info, content in [*members, (escaping, b"evil")]:
            repacked.addfile(info, io.BytesIO(content) if content is not None else None)
    response = send(signed_in, archive, datasets=["blurb-mini:demo-qa"])
    assert "member &#x27;./../evil&#x27; would be written outside the archive" in error_beside(response, "checkpoint")
    assert_nothing_left(platform_dirs)
    assert not (tmp_path / "evil").exists()


def test_the_form_shows_how_to_pack_a_checkpoint_and_fetch_only_its_files(signed_in):
    html = signed_in.get(URL).content.decode()
    assert "<code>tar -czf model.tar.gz -C path/to/checkpoint .</code>" in html
    assert (
        '<code>huggingface-cli download ORG/NAME --include "*.json" "*.safetensors" "*.txt" "*.model" --local-dir '
        in html.replace("&quot;", '"')
    )


def test_a_checkpoint_upload_queues_its_jobs_privately_and_opens_its_page(signed_in, alice, checkpoint, tmp_path,
                                                                           platform_dirs):  # fmt: skip
    response = send(signed_in, archive_of(checkpoint, tmp_path / "my-model.tar.gz"))
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("submissions:detail", args=[submission.pk])
    model = submission.language_model
    assert model.address == "alice/my-biobert" and model.name == "My BioBERT" and model.owner == alice  # as typed
    assert model.visibility == LanguageModel.Visibility.PRIVATE
    assert (model.description, model.licence, model.homepage) == (
        "Pretrained on PubMed abstracts.", "apache-2.0", "https://example.org/paper"
    )  # fmt: skip
    assert not submission.preview
    finetunes = submission.jobs.filter(kind=Job.Kind.FINETUNE).order_by("pk")
    assert [job.dataset.slug for job in finetunes] == BLURB_MINI and submission.jobs.count() == 2 * len(BLURB_MINI)
    assert all(job.spec["overrides"] == {} and not job.spec["preview"] for job in finetunes)
    assert list((platform_dirs / "tmp").iterdir()) == []  # the upload and its linked copy are gone
    page = signed_in.get(response["Location"]).content.decode()
    assert "Submitted: 12 jobs are queued" in page


def test_the_quick_preview_marks_the_submission_and_runs_one_grid_point_and_one_seed(signed_in, checkpoint, tmp_path):
    send(signed_in, archive_of(checkpoint, tmp_path / "quick.tar.gz"), preview="true",
         datasets=["blurb-mini:demo-ner", "blurb-mini:demo-qa"])  # fmt: skip
    submission = Submission.objects.get()
    assert submission.preview
    finetunes = submission.jobs.filter(kind=Job.Kind.FINETUNE)
    assert sorted(job.dataset.slug for job in finetunes) == ["demo-ner", "demo-qa"] and submission.jobs.count() == 4
    assert all(job.spec["overrides"] == PREVIEW and job.spec["preview"] for job in finetunes)
    assert all(job.spec.get("preview") for job in submission.jobs.filter(kind=Job.Kind.SCORE))


def test_ticks_under_another_benchmarks_heading_do_not_count(signed_in, checkpoint, tmp_path):
    send(
        signed_in, archive_of(checkpoint, tmp_path / "m.tar.gz"), datasets=["blurb:ncbi-disease", "blurb-mini:demo-qa"]
    )
    assert [job.dataset.slug for job in Job.objects.filter(kind=Job.Kind.FINETUNE)] == ["demo-qa"]


def test_a_recipe_and_corpus_queue_a_pretraining_job_that_the_evaluation_waits_for(signed_in, tmp_path,
                                                                                    platform_dirs):  # fmt: skip
    corpus = tmp_path / "pubmed-sample.txt"
    corpus.write_text("Aspirin inhibits cyclooxygenase.\nBRCA1 mutations raise the risk of cancer.\n")
    response = send(signed_in, corpus, field="corpus", source="recipe", recipe="tiny", steps="20",
                    datasets=["blurb-mini:demo-ner"])  # fmt: skip
    assert response.status_code == 302
    submission = Submission.objects.get()
    pretrain = submission.jobs.get(kind=Job.Kind.PRETRAIN)
    assert pretrain.spec["recipe"] == "tiny" and pretrain.spec["steps"] == 20
    assert (platform_dirs / "store" / pretrain.spec["corpus"]["name"]).read_text() == corpus.read_text()
    assert list(submission.jobs.get(kind=Job.Kind.FINETUNE).depends_on.all()) == [pretrain]
    assert submission.language_model.pretraining_corpus == "pubmed-sample.txt"  # its name, not a server path
    assert list((platform_dirs / "tmp").iterdir()) == []


def test_steps_left_empty_mean_the_recipes_own(signed_in, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("one document\n")
    send(signed_in, corpus, field="corpus", source="recipe", recipe="tiny", datasets=["blurb-mini:demo-qa"])
    assert Job.objects.get(kind=Job.Kind.PRETRAIN).spec["steps"] is None


def hostile_traversal(checkpoint: Path, tmp_path: Path) -> Path:
    return archive_of(checkpoint, tmp_path / "evil.tar.gz", extra=[("../evil", b"written outside")])


def pickled_weights(checkpoint: Path, tmp_path: Path) -> Path:
    return archive_of(checkpoint, tmp_path / "pickled.tar.gz", extra=[
        ("tiny-bert/pytorch_model.bin", pickle.dumps({"state_dict": {"weight": [0.0]}}, protocol=4))
    ])  # fmt: skip


def broken_tokenizer(checkpoint: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "notok"
    folder.mkdir()
    for path in checkpoint.iterdir():
        if path.name not in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
            (folder / path.name).write_bytes(path.read_bytes())
    (folder / "tokenizer.json").write_text("{not json")
    return archive_of(folder, tmp_path / "notok.tar.gz")


def plain_file(checkpoint: Path, tmp_path: Path) -> Path:
    path = tmp_path / "weights.safetensors"
    path.write_bytes((checkpoint / "model.safetensors").read_bytes())
    return path


def good_archive(checkpoint: Path, tmp_path: Path) -> Path:
    return archive_of(checkpoint, tmp_path / "fine.tar.gz")


@pytest.mark.parametrize(
    ("build", "changes", "field", "sentence"),
    [
        (good_archive, {"licence": ""}, "licence", "name the licence the weights are released under"),
        (good_archive, {"homepage": "javascript:alert(1)"}, "homepage", "must be an http:// or https:// address"),
        (good_archive, {"name": ""}, "name", "give the model a name"),
        (good_archive, {"datasets": ["blurb:ncbi-disease"]}, "datasets", "tick at least one of BLURB-mini"),
        (hostile_traversal, {}, "checkpoint", "evil.tar.gz: member &#x27;../evil&#x27; would be written outside"),
        (pickled_weights, {}, "checkpoint", "pickled files are refused, because loading a pickle runs code"),
        (broken_tokenizer, {}, "checkpoint", "notok.tar.gz: its tokenizer does not load"),
        (plain_file, {}, "checkpoint", "weights.safetensors is not an archive; pack the checkpoint"),
        (None, {}, "checkpoint", "choose the checkpoint to upload"),
        (None, {"source": "recipe", "recipe": "tiny"}, "corpus", "choose the corpus to upload"),
        (None, {"source": "recipe"}, "recipe", "choose the recipe to pretrain"),
    ],
    ids=str.split(
        "no-licence javascript-url no-name no-dataset traversal pickle tokenizer not-archive no-file "
        "no-corpus no-recipe"
    ),
)
def test_a_refusal_is_shown_beside_its_field_keeps_the_other_values_and_leaves_nothing(
    signed_in, checkpoint, tmp_path, platform_dirs, build, changes, field, sentence
):
    path = build(checkpoint, tmp_path) if build else None
    response = send(signed_in, path, **changes)
    assert response.status_code == 200
    assert sentence in error_beside(response, field)
    html = response.content.decode()
    assert "The submission was not queued" in html and f'href="#id_{field}"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    if field != "name":
        assert 'value="My BioBERT"' in html
    if field != "licence":
        assert 'value="apache-2.0"' in html
    assert_nothing_left(platform_dirs)
    assert not (tmp_path / "evil").exists() and not (platform_dirs / "evil").exists()


def test_an_upload_over_the_archive_limit_is_stopped_as_it_arrives(signed_in, settings, tmp_path, platform_dirs):
    settings.BIOLM_ARCHIVE_LIMITS = ArchiveLimits(max_total_bytes=1000, max_members=2)
    big = tmp_path / "huge.tar.gz"
    big.write_bytes(b"\0" * (3 << 19))  # over the archive limit, the request as a whole within what is read
    response = send(signed_in, big)
    assert "huge.tar.gz is larger than 1.0\xa0MB, and a checkpoint may hold at most 1000\xa0bytes" in error_beside(
        response, "checkpoint"
    ) and "BIOLM_ARCHIVE_MAX_BYTES" in error_beside(response, "checkpoint")
    assert_nothing_left(platform_dirs)


def test_a_post_declaring_more_than_the_archive_limit_is_answered_413_without_reading_its_body(
    signed_in, settings, tmp_path, platform_dirs
):
    settings.BIOLM_ARCHIVE_LIMITS = ArchiveLimits(max_total_bytes=1000, max_members=2)
    big = tmp_path / "huge.tar.gz"
    big.write_bytes(b"\0" * (3 << 20))
    response = send(signed_in, big)
    assert response.status_code == 413
    assert "larger than the 1.0\xa0MB a checkpoint archive may be (BIOLM_ARCHIVE_MAX_BYTES)" in error_beside(
        response, "checkpoint"
    )
    assert "The submission was not queued" in response.content.decode()
    assert_nothing_left(platform_dirs)


def test_over_the_daily_quota_the_form_says_when_a_slot_frees_and_refuses(signed_in, alice, settings, checkpoint,
                                                                          tmp_path):  # fmt: skip
    settings.BIOLM_SUBMISSIONS_PER_DAY = 1
    first = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-qa",)))
    frees = f"{first.created_at + dt.timedelta(days=1):%Y-%m-%d %H:%M} UTC"
    page = signed_in.get(URL).content.decode()
    assert "You have made 1 submission in the last 24 hours, the daily quota." in page and frees in page
    response = send(signed_in, archive_of(checkpoint, tmp_path / "again.tar.gz"), datasets=["blurb-mini:demo-ner"])
    html = response.content.decode()
    top = re.search(r'<div class="error-summary".*?</ul>', html, re.S).group(0)
    assert "the daily quota; the next slot frees at " + frees in top
    assert Submission.objects.count() == 1 and Job.objects.count() == 2


def test_the_same_weights_again_lead_to_the_earlier_submission_and_queue_nothing(signed_in, checkpoint, tmp_path):
    first = send(signed_in, archive_of(checkpoint, tmp_path / "twice.tar.gz"))
    jobs = Job.objects.count()
    again = send(
        signed_in,
        archive_of(checkpoint, tmp_path / "renamed.tar.gz"),
        name="Another name",
        preview="false",
        datasets=["blurb-mini:demo-ner"],
    )  # a subset of what runs already
    assert again.status_code == 302 and again["Location"] == first["Location"]
    assert Submission.objects.count() == 1 and Job.objects.count() == jobs
    page = signed_in.get(again["Location"]).content.decode()
    assert "Reused: these weights were already evaluated on this benchmark with the same settings" in page


def test_the_pages_script_gets_the_address_to_go_to_and_the_message_waits_for_that_page(signed_in, checkpoint,
                                                                                        tmp_path):  # fmt: skip
    with archive_of(checkpoint, tmp_path / "xhr.tar.gz").open("rb") as handle:
        response = signed_in.post(URL, {**values(), "checkpoint": handle}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    submission = Submission.objects.get()
    assert response.status_code == 200
    assert json.loads(response.content) == {"location": reverse("submissions:detail", args=[submission.pk])}
    assert (
        "Submitted: 12 jobs are queued"
        in signed_in.get(reverse("submissions:detail", args=[submission.pk])).content.decode()
    )


def test_a_post_without_the_csrf_token_is_refused_and_queues_nothing(alice, checkpoint, tmp_path, platform_dirs):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    with archive_of(checkpoint, tmp_path / "forged.tar.gz").open("rb") as handle:
        response = client.post(URL, {**values(), "checkpoint": handle})
    assert response.status_code == 403
    assert_nothing_left(platform_dirs)
