"""What a long-lived worker process sees while plugins are re-installed under it (for test_plugin_reinstall.py).

Run by a throwaway virtualenv's interpreter (``python reinstall_steps.py PLAN.json``), since the
steps rewrite this process's ``sys.path``, ``sys.meta_path`` and ``sys.modules``. The plan names
the interpreter that runs pip and a list of steps:

* ``["ensure"]``: :func:`biolm.plugin_set.ensure_current`, its answer kept for the next report;
* ``["install", folder, editable, compat]``: pip-install ``folder`` into this interpreter's site folder;
* ``["write", path, text]``: rewrite a file keeping its size and modification time (as ``rsync -a``
  or a checkout can), so that only its content tells that it changed;
* ``["report", module, plugin, [folder, ...]]``: import ``module`` as a worker would (from
  ``sys.modules`` when it is there), and record what it returns, where it came from, the plugin
  as installed, and whatever of each folder is left in the import system.

It prints one JSON document: ``{"reports": [...]}``. The test asserts on it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

from throwaway_venv import pip_install

from biolm import plugin_set

changes: list[list[str]] = []


def under(path: object, folder: str) -> bool:
    path = os.path.realpath(str(path)) if isinstance(path, str) and os.path.isabs(path) else ""
    return bool(path) and (path == folder or path.startswith(folder + os.sep))


def left_of(folder: str) -> dict[str, list[str]]:
    """Whatever of ``folder`` this process's import system still holds."""
    folder = os.path.realpath(folder)
    finders = [sys.modules.get(getattr(finder, "__module__", "")) for finder in sys.meta_path]
    mappings = {module.__name__: getattr(module, "MAPPING", None) or {} for module in finders if module is not None}
    modules = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
    return {
        "sys.path": [entry for entry in sys.path if under(entry, folder)],
        "sys.meta_path": [
            name for name, mapping in mappings.items() if any(under(p, folder) for p in mapping.values())
        ],
        "sys.path_importer_cache": [key for key in sys.path_importer_cache if under(key, folder)],
        "sys.modules": [name for name, file in modules.items() if under(file, folder)],
    }


def report(module_name: str, plugin: str, folders: list[str]) -> dict:
    module = importlib.import_module(module_name)
    installed = plugin_set.installed()[plugin]
    first, second = installed.fingerprint, plugin_set.installed()[plugin].fingerprint
    return {
        "value": module.value(),
        "file": os.path.realpath(module.__file__),
        "version": installed.version,
        "label": installed.label,
        "fingerprint": first,
        "fingerprint_again": second,
        "own_code": [plugin_set.own_code().fingerprint, plugin_set.own_code().version],
        "changes": changes[-1] if changes else None,
        "left": {folder: left_of(folder) for folder in folders},
    }


def write_keeping_stat(path: str, text: str) -> None:
    before = os.stat(path)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    assert os.stat(path).st_size == before.st_size, "the plan's new text must keep the file's size"
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def main(plan: dict) -> dict:
    reports = []
    for step, *arguments in plan["steps"]:
        if step == "ensure":
            changes.append(plugin_set.ensure_current())
        elif step == "install":
            folder, editable, compat = arguments
            pip_install(sys.executable, folder, editable=editable, compat=compat, pip=plan["pip"])
        elif step == "write":
            write_keeping_stat(*arguments)
        elif step == "report":
            reports.append(report(*arguments))
        else:
            raise ValueError(f"unknown step {step!r}")
    return {"reports": reports}


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        print(json.dumps(main(json.load(handle))))
