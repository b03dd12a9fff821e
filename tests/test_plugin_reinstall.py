"""A plugin re-installed while a process lives runs its new code, and its content fingerprint says which code that is.

The installs are real (pip, into a throwaway virtualenv: tests/throwaway_venv.py). The process
that lives through them is a fresh interpreter of that virtualenv running tests/reinstall_steps.py,
never this one, since :func:`biolm.plugin_set.ensure_current` rewrites the ``sys.path``,
``sys.meta_path`` and ``sys.modules`` of the process it runs in.

The probe plugin's ``value()`` says which folder its code came from. Version 0.1.0 is installed
from folder ``a``, then a new version from folder ``b``: a worker that kept importing ``a``'s code
would record ``a``'s numbers under ``b``'s version.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import biolm
from biolm import plugin_set
from tests.distributions import write_distribution
from tests.throwaway_venv import PYTHONPATH, own_interpreter, pip_install

STEPS = Path(__file__).resolve().parent / "reinstall_steps.py"
NOTHING_LEFT = {"sys.path": [], "sys.meta_path": [], "sys.path_importer_cache": [], "sys.modules": []}
REPORT = ["report", "biolm_probe", "probe"]  # + the folders whose leftovers to look for


def probe(folder: Path, version: str, value: str) -> Path:
    """The source folder of ``biolm-probe`` ``version``, whose ``value()`` (in a submodule) returns ``value``."""
    files = {
        "biolm_probe/__init__.py": f'"""The probe plugin, {version}."""\n\nfrom biolm_probe.scores import value\n',
        "biolm_probe/scores.py": f"def value():\n    return {value!r}\n",
    }
    return write_distribution(folder, "biolm-probe", version, files, {"probe": "biolm_probe"})


def run_steps(python: str, steps: list[list], tmp_path: Path) -> list[dict]:
    """Run ``steps`` (see tests/reinstall_steps.py) in one fresh process of ``python``; its reports."""
    plan = tmp_path / f"plan-{len(list(tmp_path.glob('plan-*')))}.json"
    plan.write_text(json.dumps({"pip": sys.executable, "steps": steps}))
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPATH"] = PYTHONPATH  # and bytecode is written, as in a worker, so a stale .pyc could be read
    done = subprocess.run([python, str(STEPS), str(plan)], env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])["reports"]


def real(path: Path) -> str:
    return os.path.realpath(path)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("compat", "at_start", "version_b"),
    [
        pytest.param(False, True, "0.2.0", id="import-hook-flavour"),
        pytest.param(True, True, "0.2.0", id="path-line-flavour"),
        pytest.param(True, False, "0.2.0", id="path-line-flavour-installed-while-running"),
        pytest.param(False, True, "0.1.0", id="same-version-from-another-folder"),
    ],
)
def test_an_editable_plugin_reinstalled_from_another_folder_runs_that_folders_code(tmp_path, compat, at_start,
                                                                                   version_b):  # fmt: skip
    python = own_interpreter(tmp_path / "venv")
    a, b = probe(tmp_path / "a", "0.1.0", "code of a"), probe(tmp_path / "b", version_b, "code of b")
    if at_start:
        pip_install(python, a, editable=True, compat=compat)
    first, second = run_steps(python, [
        ["ensure"], *([] if at_start else [["install", str(a), True, compat], ["ensure"]]), [*REPORT, []],
        ["install", str(b), True, compat], ["ensure"], [*REPORT, [str(a)]],
    ], tmp_path)  # fmt: skip

    assert (first["value"], first["version"]) == ("code of a", "0.1.0")
    assert first["file"] == real(a / "biolm_probe" / "__init__.py")
    assert (second["value"], second["version"]) == ("code of b", version_b)
    assert second["file"] == real(b / "biolm_probe" / "__init__.py")
    changed = (
        f"code changed ({first['fingerprint']} -> {second['fingerprint']})" if version_b == "0.1.0" else "-> 0.2.0"
    )
    assert second["changes"] == [f"biolm-probe 0.1.0 {changed}"]
    assert second["left"] == {str(a): NOTHING_LEFT}


@pytest.mark.slow
@pytest.mark.parametrize("first_editable", [False, True], ids=["regular-then-regular", "editable-then-regular"])
def test_a_plugin_reinstalled_from_another_folder_without_editable_runs_the_new_code(tmp_path, first_editable):
    python = own_interpreter(tmp_path / "venv")
    a, b = probe(tmp_path / "a", "0.1.0", "code of a"), probe(tmp_path / "b", "0.2.0", "code of b")
    first, second = run_steps(python, [
        ["ensure"], ["install", str(a), first_editable, False], ["ensure"], [*REPORT, []],
        ["install", str(b), False, False], ["ensure"], [*REPORT, [str(a)]],
    ], tmp_path)  # fmt: skip

    assert (first["value"], first["changes"]) == ("code of a", ["biolm-probe 0.1.0 installed"])
    assert (second["value"], second["version"]) == ("code of b", "0.2.0")
    assert second["changes"] == ["biolm-probe 0.1.0 -> 0.2.0"]
    assert second["file"].startswith(real(tmp_path / "venv" / "lib"))
    assert second["file"].endswith(os.path.join("site-packages", "biolm_probe", "__init__.py"))
    assert second["left"] == {str(a): NOTHING_LEFT}


@pytest.mark.slow
def test_editing_an_editable_plugins_file_in_place_changes_its_fingerprint_and_reloads_it(tmp_path):
    python = own_interpreter(tmp_path / "venv")
    a = probe(tmp_path / "a", "0.1.0", "code of a")
    pip_install(python, a, editable=True)
    scores = a / "biolm_probe" / "scores.py"
    edited = scores.read_text().replace("code of a", "code of z")  # same size: only the bytes tell
    first, second, third = run_steps(python, [
        ["ensure"], [*REPORT, []], ["write", str(scores), edited], ["ensure"], [*REPORT, []], ["ensure"], [*REPORT, []],
    ], tmp_path)  # fmt: skip

    assert first["value"] == "code of a" and first["changes"] == []
    assert second["fingerprint"] != first["fingerprint"]
    assert second["changes"] == [f"biolm-probe 0.1.0 code changed ({first['fingerprint']} -> {second['fingerprint']})"]
    assert second["value"] == "code of z"  # not the bytecode cached for the same size and modification time
    assert (third["changes"], third["fingerprint"], third["value"]) == ([], second["fingerprint"], "code of z")


@pytest.mark.slow
def test_a_plugins_fingerprint_is_the_same_in_every_call_process_and_install_folder(tmp_path):
    python = own_interpreter(tmp_path / "venv")
    pip_install(python, probe(tmp_path / "a", "0.1.0", "code of a"), editable=True)
    elsewhere = own_interpreter(tmp_path / "elsewhere")
    pip_install(elsewhere, probe(tmp_path / "c", "0.1.0", "code of a"))  # the same files, a regular install
    (here,) = run_steps(python, [[*REPORT, []]], tmp_path)
    (again,) = run_steps(python, [[*REPORT, []]], tmp_path)
    (there,) = run_steps(elsewhere, [[*REPORT, []]], tmp_path)

    assert here["fingerprint"].startswith("sha256:") and len(here["fingerprint"]) == len("sha256:") + 16
    assert here["fingerprint"] == here["fingerprint_again"] == again["fingerprint"] == there["fingerprint"]
    own = plugin_set.own_code()
    assert own.version == biolm.__version__
    assert here["own_code"] == again["own_code"] == there["own_code"] == [own.fingerprint, own.version]


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_a_fingerprint_rehashes_only_the_files_whose_stat_changed(tmp_path, monkeypatch):
    package = write_tree(tmp_path / "pkg", {"__init__.py": "", "sub/mod.py": "X = 1\n", "data/rows.txt": "1\n2\n"})
    hashed = []
    hash_file = plugin_set._hash_file
    monkeypatch.setattr(plugin_set, "_hash_file", lambda path: hashed.append(path) or hash_file(path))

    first = plugin_set.content_fingerprint([("pkg", str(package))])
    assert sorted(hashed) == sorted(str(package / name) for name in ("__init__.py", "sub/mod.py", "data/rows.txt"))
    hashed.clear()
    assert plugin_set.content_fingerprint([("pkg", str(package))]) == first
    assert hashed == []
    (package / "sub" / "mod.py").write_text("X = 2\n")
    assert plugin_set.content_fingerprint([("pkg", str(package))]) != first
    assert hashed == [str(package / "sub" / "mod.py")]


def test_a_fingerprint_covers_file_names_and_bytes_but_not_bytecode_or_the_install_folder(tmp_path):
    files = {"__init__.py": "from pkg.mod import X\n", "mod.py": "X = 1\n"}
    package = write_tree(tmp_path / "one" / "pkg", files)
    first = plugin_set.content_fingerprint([("pkg", str(package))])
    write_tree(package, {"__pycache__/mod.cpython-311.pyc": "bytecode", "stray.pyc": "bytecode"})
    assert plugin_set.content_fingerprint([("pkg", str(package))]) == first
    assert plugin_set.content_fingerprint([("pkg", str(write_tree(tmp_path / "two" / "pkg", files)))]) == first
    (package / "mod.py").rename(package / "other.py")
    assert plugin_set.content_fingerprint([("pkg", str(package))]) != first
    module = write_tree(tmp_path / "three", {"pkg.py": "X = 1\n"}) / "pkg.py"
    assert plugin_set.content_fingerprint([("pkg", str(module))]) not in (first, plugin_set.content_fingerprint([]))
