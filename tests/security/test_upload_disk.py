"""An upload cannot fill the disk: refused by its declared length before its body is read, and kept off the reserve.

Issue 29 measured a 1 GiB upload written whole to ``var/tmp`` before its 400. Here a real gunicorn
is sent, over a raw socket, the headers of an upload that declares 1 TiB (over any archive limit)
or 4 GiB (which would leave the disk under its reserve: the site's ``BIOLM_DISK_RESERVE_BYTES`` is
the free space less 64 MiB), followed by 64 KiB of its body and nothing more. The answer must come
at once, a 413 with the reason beside the checkpoint field (the API's JSON, the form's page), and
``var/tmp`` must hold no file: nothing was waited for, nothing written. ``manage.py submit`` is
refused the same way when the checkpoint would not fit.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from live_site import LiveSite, SignedIn

from bench.harness import wait_until
from jobs.models import Job
from submissions.models import Submission

pytestmark = [pytest.mark.slow, pytest.mark.backend, pytest.mark.once]  # the disk's reserve, not the database
TIB, GIB, MIB = 1 << 40, 1 << 30, 1 << 20
BOUNDARY = "biolm-test-boundary"
SENT = 64 * 1024  # of the body, before the client waits for the answer
TOO_LARGE = ("larger than", "a checkpoint archive may be (BIOLM_ARCHIVE_MAX_BYTES); upload a smaller checkpoint")
NO_ROOM = ("does not fit", "in reserve (BIOLM_DISK_RESERVE_BYTES); try again later")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    directory = tmp_path_factory.mktemp("disk-site")
    reserve = shutil.disk_usage(directory).free - 64 * MIB  # a 4 GiB upload would leave less than this
    running = LiveSite(directory, {"BIOLM_DISK_RESERVE_BYTES": str(reserve)}).start(plugins=False)
    yield running
    running.stop()


def declare(site: LiveSite, path: str, length: int, headers: dict[str, str]) -> tuple[int, dict, str, float]:
    """Send the head of a multipart upload declaring ``length`` bytes, and :data:`SENT` of them; the answer.

    The answer's status, headers, body and the seconds it took; the socket's timeout fails a server
    that waits for the rest of the body.
    """
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {length}\r\n{head}\r\n"
    ).encode()
    part = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="checkpoint"; filename="huge.tar.gz"\r\n'
        "Content-Type: application/gzip\r\n\r\n"
    ).encode()
    body = part + b"\0" * (SENT - len(part))
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", site.port), timeout=20) as connection:
        connection.sendall(request + body)
        answer = b""
        while chunk := connection.recv(65536):  # the server closes the connection: the body is never read
            answer += chunk
    seconds = time.monotonic() - started
    head_text, _, content = answer.partition(b"\r\n\r\n")
    status_line, *lines = head_text.decode("latin-1").split("\r\n")
    fields = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
    return int(status_line.split()[1]), fields, content.decode(), seconds


def form_headers(user: SignedIn) -> dict[str, str]:
    return {"Cookie": f"sessionid={user.session}; csrftoken={user.csrf}"}


@pytest.mark.parametrize(
    ("length", "words"), [(TIB, TOO_LARGE), (4 * GIB, NO_ROOM)], ids=["over-the-archive-limit", "into-the-reserve"]
)
def test_an_api_upload_refused_by_its_declared_length_is_answered_413_at_once_and_writes_nothing(site, length,
                                                                                                   words):  # fmt: skip
    status, headers, content, seconds = declare(site, "/api/v1/submissions", length, site.users["alice"].api_headers)
    assert status == 413, content
    assert headers["content-type"] == "application/json"
    sentence = json.loads(content)["errors"]["checkpoint"][0]
    assert sentence.startswith("the upload is " if words is TOO_LARGE else "the upload (4.0\xa0GB) does not fit")
    assert all(word in sentence for word in words), sentence
    assert seconds < 15  # a cold worker imports the site first; one waiting for the body would hit the 20 s timeout
    assert site.files_in_tmp() == []


@pytest.mark.parametrize(
    ("length", "words"), [(TIB, TOO_LARGE), (4 * GIB, NO_ROOM)], ids=["over-the-archive-limit", "into-the-reserve"]
)
def test_a_form_upload_refused_by_its_declared_length_shows_why_beside_the_checkpoint_and_writes_nothing(
    site, length, words
):
    status, headers, content, seconds = declare(site, "/submit/", length, form_headers(site.users["alice"]))
    assert status == 413, content
    assert headers["content-type"].startswith("text/html")
    beside = re.search(r'<p class="field-error errorlist" id="err-checkpoint">(.*?)</p>', content, re.S)
    assert beside, content
    assert all(word in beside.group(1).replace("&#x27;", "'") for word in words), beside.group(1)
    assert "The submission was not queued" in content and 'name="csrfmiddlewaretoken"' in content
    assert seconds < 15  # a cold worker imports the site first; one waiting for the body would hit the 20 s timeout
    assert site.files_in_tmp() == []


def test_the_shell_is_refused_a_checkpoint_that_would_leave_the_disk_under_its_reserve(
    alice, artefact_store, tiny_bert_checkpoint, settings
):
    settings.BIOLM_DISK_RESERVE_BYTES = shutil.disk_usage(artefact_store).total  # more than any disk has free
    with pytest.raises(CommandError) as refused:
        call_command("submit", "--benchmark", "blurb-mini", "--datasets", "demo-qa", "--owner", "alice",
                     "--model", str(tiny_bert_checkpoint))  # fmt: skip
    assert f"{tiny_bert_checkpoint} (" in str(refused.value) and "does not fit" in str(refused.value)
    assert "(BIOLM_DISK_RESERVE_BYTES); try again later" in str(refused.value)
    assert not Submission.objects.exists() and not Job.objects.exists()
    assert not [p for p in Path(artefact_store).rglob("*") if p.is_file()]


@pytest.fixture(scope="module")
def room_for_one(tmp_path_factory):
    """A site with room for one 4 GiB upload beyond its reserve, not two: 2 GiB to spare either way."""
    directory = tmp_path_factory.mktemp("room-for-one")
    reserve = shutil.disk_usage(directory).free - 6 * GIB
    running = LiveSite(directory, {"BIOLM_DISK_RESERVE_BYTES": str(reserve)}, workers=2).start(plugins=False)
    yield running
    running.stop()


def start_upload(site: LiveSite, length: int, headers: dict[str, str]) -> socket.socket:
    """The head of an API upload declaring ``length`` bytes and :data:`SENT` of them, its connection left open."""
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = (
        f"POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; "
        f"boundary={BOUNDARY}\r\nContent-Length: {length}\r\n{head}\r\n"
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="checkpoint"; filename="big.tar.gz"\r\n\r\n'
    ).encode()
    connection = socket.create_connection(("127.0.0.1", site.port), timeout=20)
    connection.sendall(request + b"\0" * SENT)
    return connection


def reserved(site: LiveSite) -> list[Path]:
    return sorted((site.var / "upload-reservations").glob("*.bytes"))


def test_two_uploads_at_once_must_together_leave_the_reserve_free(room_for_one):
    site, headers = room_for_one, room_for_one.users["alice"].api_headers
    first = start_upload(site, 4 * GIB, headers)
    try:
        (reservation,) = wait_until(lambda: reserved(site), 30, "the first upload's reservation")
        assert int(reservation.read_text()) == 4 * GIB
        status, _, content, seconds = declare(site, "/api/v1/submissions", 4 * GIB, headers)
        assert status == 413, content
        sentence = json.loads(content)["errors"]["checkpoint"][0]
        assert "does not fit" in sentence and "4.0\xa0GB of it promised to uploads being received" in sentence
        assert seconds < 15
    finally:
        first.close()  # cut off mid-body: its reservation goes with its request
    wait_until(lambda: not reserved(site), 30, "the cut-off upload's reservation released")
    second = start_upload(site, 4 * GIB, headers)  # alone again, it fits: let in and read
    try:
        wait_until(lambda: reserved(site), 30, "the second upload's reservation")
    finally:
        second.close()
    wait_until(lambda: not reserved(site), 30, "the second upload's reservation released")
