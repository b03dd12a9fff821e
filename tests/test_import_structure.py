"""How the project's modules import each other: no circles (lazy imports counted), no private name crossing a
module boundary, and a web process that never loads torch to serve a page.

The layers between the apps and what may import the engine are import-linter's contracts
(pyproject.toml, run by ``make lint``); these tests check what import-linter does not see: imports
inside functions (import-linter's graph has them, but a circle through one is not a contract
violation), private names, and what loading the URLconf really imports.
"""

from __future__ import annotations

import ast
import subprocess
import sys

from import_graph import ROOT, cycles, import_graph, project_modules

GPU_TASK_NAME = "biolm.worker.run_job"


def test_no_module_imports_itself_through_a_circle_even_through_an_import_inside_a_function():
    graph = import_graph()
    assert len(graph) > 250  # the scan found the project
    found = cycles(graph)
    described = [
        " -> ".join(component) + "  [" + "; ".join(
            f"{m} imports {t} (line {graph[m][t]})" for m in component for t in graph[m] if t in component
        ) + "]"
        for component in found
    ]  # fmt: skip
    assert not found, "import circles:\n" + "\n".join(described)


def test_the_scan_sees_imports_inside_functions_and_skips_type_checking_blocks(tmp_path):
    from import_graph import imports_of

    module = tmp_path / "probe.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from jobs.models import Job\n"
        "def later():\n    from leaderboard import recording\n"
    )
    modules = project_modules()
    assert imports_of("probe", module, modules) == {"leaderboard.recording": 5}


def test_no_private_name_is_imported_from_another_module_of_the_project():
    """Each module's underscore names are its own: what another module needs is part of its public surface."""
    modules = project_modules()
    crossing = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if node.module.split(".")[0] not in {m.split(".")[0] for m in modules} or node.module == name:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    crossing.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name} from {node.module}")
    assert not crossing, "\n".join(crossing)


def test_loading_the_urlconf_and_every_view_leaves_torch_and_transformers_unloaded():
    """A web process serves pages, the API and the form without the engine: only submitting a checkpoint (its
    tokenizer) and the CPU worker's scoring load it, lazily."""
    probe = (
        "import os, sys, django\n"
        "sys.path[:0] = ['platform', '.']\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'biolm_site.settings')\n"
        "django.setup()\n"
        "from django.urls import get_resolver\n"
        "import biolm_site.urls\n"
        "def walk(patterns):\n"
        "    for p in patterns:\n"
        "        yield from walk(p.url_patterns) if hasattr(p, 'url_patterns') else [p.callback]\n"
        "assert sum(1 for _ in walk(get_resolver().url_patterns)) > 40\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_gpu_tasks_name_is_written_once():
    places = [
        str(path.relative_to(ROOT))
        for path in project_modules().values()
        if GPU_TASK_NAME in path.read_text(encoding="utf-8")
    ]
    assert places == ["platform/biolm/broker.py"]
