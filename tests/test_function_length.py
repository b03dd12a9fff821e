"""No function over 80 lines in platform/, workers/ or bench/: a long function hides the seams a reader needs.

A function's length runs from its ``def`` line to the last line of its body (decorators do not
count; a nested function counts inside its parent too, and on its own). Migrations are generated
code and are left out. ``ALLOWED`` names the functions their owners are still splitting; an entry
leaves it as soon as its function is short, and a test below fails until it does.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("platform", "workers", "bench")
LIMIT = 80

# "path:qualified name" -> why it is still long. Each entry names work in progress, not an exemption.
ALLOWED: dict[str, str] = {}


def long_functions(source: str, path: str, limit: int = LIMIT) -> dict[str, str]:
    """``{"path:Class.method": "path:line: name is N lines"}`` for every function of ``source`` over ``limit``."""
    found: dict[str, str] = {}

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = ".".join((*scope, child.name))
                lines = child.end_lineno - child.lineno + 1  # lineno is the def line, after any decorator
                if lines > limit:
                    found[f"{path}:{name}"] = f"{path}:{child.lineno}: {name} is {lines} lines"
                visit(child, (*scope, child.name))
            elif isinstance(child, ast.ClassDef):
                visit(child, (*scope, child.name))
            else:
                visit(child, scope)

    visit(ast.parse(source, filename=path), ())
    return found


def scanned_files() -> list[Path]:
    return sorted(
        path
        for folder in SCANNED
        for path in (ROOT / folder).rglob("*.py")
        if "migrations" not in path.relative_to(ROOT).parts and ".venv" not in path.parts
    )


def project_long_functions() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in scanned_files():
        found |= long_functions(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    return found


def test_no_function_in_platform_workers_or_bench_is_over_80_lines():
    too_long = {key: where for key, where in project_long_functions().items() if key not in ALLOWED}
    assert not too_long, f"functions over {LIMIT} lines (split them along their seams):\n" + "\n".join(
        sorted(too_long.values())
    )


def test_every_allowed_long_function_is_still_long_so_the_list_only_shrinks():
    found = project_long_functions()
    stale = sorted(key for key in ALLOWED if key not in found)
    assert not stale, f"no longer over {LIMIT} lines (or gone): remove from ALLOWED: {', '.join(stale)}"


def test_the_scan_covers_the_three_source_folders_and_skips_migrations():
    folders = {path.relative_to(ROOT).parts[0] for path in scanned_files()}
    assert folders == set(SCANNED)
    assert not any("migrations" in path.parts for path in scanned_files())
    assert any(path.match("platform/*/migrations/*.py") for path in (ROOT / "platform").rglob("*.py"))


def _function(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines - 1))
    return f"{indent}def {name}():\n{body}"


def test_the_scan_counts_from_the_def_line_to_the_last_body_line():
    source = _function("eighty", 80) + _function("eighty_one", 81)
    assert list(long_functions(source, "m.py")) == ["m.py:eighty_one"]
    assert long_functions(source, "m.py")["m.py:eighty_one"] == "m.py:81: eighty_one is 81 lines"


def test_the_scan_leaves_decorators_out_and_names_methods_and_nested_functions():
    decorated = "@first\n@second(\n    1,\n)\n" + _function("decorated", 80)
    method = "class Board:\n" + _function("render", 81, indent="    ")
    nested = "def outer():\n" + _function("inner", 81, indent="    ") + "    return inner\n"
    assert long_functions(decorated, "m.py") == {}
    assert list(long_functions(method, "m.py")) == ["m.py:Board.render"]
    assert set(long_functions(nested, "m.py")) == {"m.py:outer", "m.py:outer.inner"}
