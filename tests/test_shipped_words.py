"""What the shipped files say: papers cited by authors and year, no one machine's folders.

The papers the platform is built from are stored in a folder under numbered file names; those
numbers and names are a storage detail no user knows, so no tracked file may cite a paper by its
file number or name a file of that folder. Nor may a tracked file hold an absolute path of one
machine (a home directory, a workspace, the data or papers folder): data is found through
BIOLM_DATA_DIR, and text refers to "the official data folder" instead.

"Seed" also means a random seed throughout the code (``--seed``, "5 seeds", "seed 42"); only the
word followed by a three-digit, zero-padded paper number is refused. The patterns are assembled
from pieces so that this file does not match them itself.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_SEED = "se" + "ed"
# The word (or its plural) followed by a paper's file number: "<word> 004", "<word>s 000-004", "<word>001".
PAPER_NUMBER = re.compile(r"\b" + _SEED + r"s?[ \t-]?" + "0" + r"0\d", re.IGNORECASE)
# A file of the papers folder: three digits, an underscore and 16 hex digits ("NNN_<hex>.txt").
PAPERS_FOLDER_FILE = re.compile(r"(?<![\w])\d{3}_" + "[0-9a-f]" + r"{16}(?![0-9a-zA-Z])")
# An absolute path of one machine: a workspace or home directory, or any absolute path into a
# shared data or papers folder. Relative paths ("../shared/data", the documented default) pass.
_NOT_A_PATH_START = r"(?<![\w.~/:-])"
ABSOLUTE_PATH = re.compile(
    _NOT_A_PATH_START
    + r"(?:/(?:"
    + "wo"
    + r"rk|ho"
    + r"me/[\w.-]+|Us"
    + r"ers/[\w.-]+)/|/(?:[\w.-]+/)*shared/(?:da"
    + r"ta|se"
    + r"eds)\b|[A-Za-z]:\\Us"
    + r"ers\\)"
)

CHECKS = {
    "cites a paper by its file number": PAPER_NUMBER,
    "names a file of the papers folder": PAPERS_FOLDER_FILE,
    "holds an absolute path of one machine": ABSOLUTE_PATH,
}


@cache
def tracked_text_files() -> tuple[tuple[str, str], ...]:
    """(path, text) of every git-tracked text file; binary and absent files are left out."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("git or the repository's .git is not available: cannot list the tracked files")
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=120)
    if listing.returncode != 0:
        pytest.skip(f"git ls-files failed: {listing.stderr.decode(errors='replace').strip()}")
    files = []
    for name in listing.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        files.append((name, data.decode("utf-8", errors="replace")))
    return tuple(files)


def violations(pattern: re.Pattern, files) -> list[str]:
    found = []
    for name, text in files:
        for number, line in enumerate(text.splitlines(), start=1):
            for match in pattern.finditer(line):
                found.append(f"{name}:{number}: {match.group(0)!r} in {line.strip()[:160]!r}")
    return found


def assert_none(check: str) -> None:
    files = tracked_text_files()
    assert files, "git ls-files listed no text file"
    found = violations(CHECKS[check], files)
    assert not found, f"{len(found)} line(s) {check}:\n" + "\n".join(found)


def test_no_shipped_file_names_a_paper_by_its_file_number():
    assert_none("cites a paper by its file number")


def test_no_shipped_file_names_a_file_of_the_papers_folder():
    assert_none("names a file of the papers folder")


def test_no_shipped_file_holds_an_absolute_path_of_one_machine():
    assert_none("holds an absolute path of one machine")


def test_the_checks_read_the_tracked_text_files_and_leave_binaries_out():
    files = dict(tracked_text_files())
    assert {"README.md", "pyproject.toml", "Makefile", ".env.example"} <= set(files)
    assert len(files["README.md"].splitlines()) > 100
    assert all("\0" not in text for text in files.values())


PAPER = " 0" + "04"


@pytest.mark.parametrize(
    ("line", "check"),
    [
        (f"as {_SEED}{PAPER} section 6.2 says", "cites a paper by its file number"),
        (f"({_SEED.capitalize()}{PAPER}, Table 3)", "cites a paper by its file number"),
        (f"the {_SEED}s 0" + "01 and 004", "cites a paper by its file number"),
        (f"{_SEED}s 0" + "00-004", "cites a paper by its file number"),
        (f"{_SEED.upper()}0" + "01", "cites a paper by its file number"),
        ("read 0" + "04_de92c2f240eb10d4.txt first", "names a file of the papers folder"),
        ("/wo" + "rk/shared/data/README.md", "holds an absolute path of one machine"),
        ("see /ho" + "me/alice/papers", "holds an absolute path of one machine"),
        ("(/Us" + "ers/bob/data)", "holds an absolute path of one machine"),
        ("/srv/biolm/shared/se" + "eds/x", "holds an absolute path of one machine"),
        ("/mnt/shared/da" + "ta/HoC", "holds an absolute path of one machine"),
    ],
)
def test_a_violation_is_reported_with_its_file_and_line(line, check):
    found = violations(CHECKS[check], [("docs/example.md", f"first line\n{line}\n")])
    assert len(found) == 1 and found[0].startswith("docs/example.md:2: "), found


@pytest.mark.parametrize(
    "line",
    [
        f"--{_SEED} 42 and 5 {_SEED}s",
        f"{_SEED} 0 is the first {_SEED}",
        f"first_{_SEED} = 0; n_{_SEED}s = 10; {_SEED}s=1",
        f"{_SEED}ed by ({_SEED}, step)",
        "Gu et al. 2021, section 6.2",
        "BIOLM_DATA_DIR=../shared/da" + "ta",
        "https://example.org/ho" + "me/page and ~/models/roberta-base",
        "run 2021_0123456789abcdef12 of a 64-hex digest " + "0" * 64,
    ],
)
def test_random_seeds_relative_paths_and_urls_pass(line):
    for check, pattern in CHECKS.items():
        assert not violations(pattern, [("x.py", line)]), check
