"""The web process's memory stays flat for every hostile upload (issue 29 measured 800 MB for a 255 KiB .tar.gz).

A real gunicorn with one sync worker, so every request meets the same process, on a site of its own
(:mod:`live_site`). Before each upload the worker's peak resident size is reset (``5`` written to
``/proc/<pid>/clear_refs``); after the answer, its peak (``VmHWM``) may exceed the resident size it
started from by less than 64 MB. Each case goes through the form and through the API, is refused
with its sentence, and leaves nothing under ``var/tmp``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests
from hostile_inputs import member, tar_bz2_bomb, tar_with, tar_with_many_members, zip_with_many_members
from live_site import LiveSite

from biolm.intake_limits import MIB

pytestmark = [pytest.mark.slow, pytest.mark.backend, pytest.mark.once]  # the web process's memory, not its database
GROWTH_LIMIT = 64 * MIB
HEADER_REFUSED = r"header of 268,435,456 bytes, over the 65,536 tar headers may hold, refused unread"
CASES = {
    "long name": HEADER_REFUSED.replace("header", "GNU long-name header", 1),
    "long link": HEADER_REFUSED.replace("header", "GNU long-link header", 1),
    "pax": HEADER_REFUSED.replace("header", "pax header", 1),
    "pax global": HEADER_REFUSED.replace("header", "pax global header", 1),
    "many members (tar)": "more than 2,000 files and folders, the limit (BIOLM_ARCHIVE_MAX_FILES)",
    "many members (zip)": "its zip directory lists 50,000 files in",
    "bzip2 bomb": "expands more than 100 times",  # 1 GiB of zeros in 860 bytes; tarfile alone inflated 1.7 GB
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    running = LiveSite(tmp_path_factory.mktemp("memory-site"), {"BIOLM_DISK_RESERVE_BYTES": "0"}, workers=1).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def uploads(hostile_headers, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("many-members")
    return {
        **hostile_headers,
        "many members (tar)": tar_with_many_members(folder / "many.tar.gz", 50_000),
        "many members (zip)": zip_with_many_members(folder / "many.zip", 50_000),
        "bzip2 bomb": tar_bz2_bomb(folder / "bomb.tar.gz", 1 << 30),
    }


def send_form(site: LiveSite, upload: Path) -> requests.Response:
    alice = site.users["alice"]
    fields = {
        "csrfmiddlewaretoken": alice.csrf,
        "source": "checkpoint",
        "benchmark": "blurb-mini",
        "datasets": "blurb-mini:demo-ner",
        "preview": "false",
        "name": "Hostile",
        "licence": "apache-2.0",
    }
    with upload.open("rb") as handle:
        files = {"checkpoint": (upload.name, handle)}
        return requests.post(
            f"{site.url}/submit/", cookies=alice.cookies, data=fields, files=files, allow_redirects=False, timeout=300
        )


def send_api(site: LiveSite, upload: Path) -> requests.Response:
    fields = {"benchmark": "blurb-mini", "datasets": "demo-ner", "licence": "apache-2.0"}
    with upload.open("rb") as handle:
        return requests.post(f"{site.url}/api/v1/submissions", headers=site.users["alice"].api_headers, data=fields,
                             files={"checkpoint": (upload.name, handle)}, timeout=300)  # fmt: skip


ROUTES = {"form": (send_form, 200), "API": (send_api, 400)}


def the_worker(site: LiveSite) -> int:
    """gunicorn's one worker process, the one that handles every request."""
    master = site.process.pid
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    assert len(children) == 1, f"expected one gunicorn worker, found {children}"
    return int(children[0])


def kilobytes(pid: int, field: str) -> int:
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith(field))
    return int(line.split()[1])


def peak_growth(pid: int, send) -> tuple[int, requests.Response]:
    """Bytes by which the process's peak resident size rose above where it stood while ``send()`` ran."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak (VmHWM) starts again from the resident size
    before = kilobytes(pid, "VmRSS")
    response = send()
    return (kilobytes(pid, "VmHWM") - before) * 1024, response


@pytest.mark.parametrize("route", list(ROUTES))
def test_each_hostile_upload_grows_the_web_process_by_less_than_64_mb_and_leaves_nothing(
    site, uploads, route, tmp_path
):
    send, refused_status = ROUTES[route]
    warm_up = tar_with(tmp_path / "warm-up.tar.gz", [(member("model/notes.txt"), b"first request: imports load")])
    assert "notes.txt is not a file a checkpoint holds" in send(site, warm_up).text
    worker = the_worker(site)
    grown = {}
    for case, sentence in CASES.items():
        grown[case], response = peak_growth(worker, lambda upload=uploads[case]: send(site, upload))
        assert response.status_code == refused_status, (case, response.status_code, response.text[-2000:])
        assert sentence in response.text, (case, response.text[-2000:])
        assert site.files_in_tmp() == [], f"{case}: the upload left files in var/tmp"
    print(f"\npeak growth of the web process through the {route}, MB: "
          + ", ".join(f"{case} {grown[case] / 1e6:.1f}" for case in CASES))  # fmt: skip
    assert max(grown.values()) < GROWTH_LIMIT, grown
    assert the_worker(site) == worker, "the gunicorn worker was replaced (killed for memory?)"


def test_the_measurement_can_fail_tarfile_reading_a_256_mib_header_whole_grows_a_process_by_hundreds_of_mb(
    hostile_headers,
):
    """The measurement itself, on what biolm no longer does: tarfile reading the long name in a child process."""
    code = (
        "import sys, tarfile; from pathlib import Path\n"
        "def kb(field): return int(next(l for l in Path('/proc/self/status').read_text().splitlines() "
        "if l.startswith(field)).split()[1])\n"
        "Path('/proc/self/clear_refs').write_text('5'); before = kb('VmRSS')\n"
        "with tarfile.open(sys.argv[1], 'r|*') as archive: next(iter(archive))\n"
        "print((kb('VmHWM') - before) * 1024)\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(hostile_headers["long name"])], capture_output=True,
                            text=True, timeout=120, check=True)  # fmt: skip
    print(f"\npeak growth of a process reading the 256 MiB long name with tarfile: {int(result.stdout) / 1e6:.0f} MB")
    assert int(result.stdout) > 4 * GROWTH_LIMIT
