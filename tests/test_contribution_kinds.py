"""One table of contribution kinds (biolm.contribution_kinds.KINDS): a kind added there is picked up everywhere.

The meta-test adds a made-up kind, ``widgets``, to the table and to nothing else, in a fresh interpreter, then
imports the consumers: the hook exists with its docstring, a plugin implementing it is collected into
``contributions.widgets``, a job's code pins name "widget sprocket", a fault in its code is named as the row
says, and the plugin kit counts and checks it (an invalid widget is refused, a valid one is a contribution).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = r"""
import json
from dataclasses import dataclass

import biolm.contribution_kinds as table
from biolm.spec_checks import check_slug


@dataclass(frozen=True)
class WidgetSpec:
    slug: str

    def validate(self):
        check_slug(self.slug, "widget slug")


table.KINDS = (*table.KINDS, table.ContributionKind(
    "widgets", "biolm_widgets", WidgetSpec, "widget", doc="Widgets a plugin makes.", runs_as="widget maker"))

from biolm import hookimpl, hookspecs
from biolm.contract.code import KIND_WORDS, pins_for
from biolm.plugin_faults import KIND_NAMES
from biolm.plugins import HOOKS, collect_contributions, get_plugin_manager
from biolm.testing import check_plugin


class Widgets:
    @hookimpl
    def biolm_widgets(self):
        return [WidgetSpec("sprocket")]


class BrokenWidgets:
    @hookimpl
    def biolm_widgets(self):
        return [WidgetSpec("Not A Slug")]


manager = get_plugin_manager(load_entrypoints=False, extra_plugins=[("widget-co", Widgets())])
found = collect_contributions(manager)
pins = pins_for(found, [("widgets", "sprocket")])
checked = check_plugin(Widgets(), "widget-co")
try:
    check_plugin(BrokenWidgets(), "broken-widgets")
    broken = ""
except AssertionError as exc:
    broken = str(exc)
print(json.dumps({
    "hook_doc": hookspecs.biolm_widgets.__doc__,
    "hooks": HOOKS["biolm_widgets"][0],
    "collected": sorted(found.widgets),
    "origin": found.origin[("widgets", "sprocket")],
    "pinned": [list(pin.provides) for pin in pins],
    "word": KIND_WORDS["widgets"],
    "fault_name": KIND_NAMES["widgets"],
    "kit": checked.by_plugin("widget-co"),
    "broken": broken,
}))
"""


def test_a_kind_added_to_the_table_alone_is_picked_up_by_every_consumer():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["hook_doc"] == "Widgets a plugin makes." and seen["hooks"] == "widgets"
    assert seen["collected"] == ["sprocket"] and seen["origin"] == "widget-co"
    assert ["widget sprocket"] in seen["pinned"] and seen["word"] == "widget"
    assert seen["fault_name"] == "widget maker"
    assert seen["kit"] == {"widgets": ["sprocket"]}
    assert "broken-widgets" in seen["broken"] and "'Not A Slug' is not a lower-case slug" in seen["broken"]


def test_the_built_in_kinds_and_their_hooks_are_the_tables():
    from biolm import hookspecs
    from biolm.contribution_kinds import KINDS
    from biolm.plugins import Contributions

    assert [kind.hook for kind in KINDS if callable(getattr(hookspecs, kind.hook, None))] == [k.hook for k in KINDS]
    assert set(Contributions().by_kind) == {kind.name for kind in KINDS}
    assert Contributions().metrics == {}


def test_a_plugin_is_written_one_way_everywhere_from_its_identity():
    """The pin's label, the registry row's name, a fault's name and the admin's comparison all read one type."""
    from biolm.contract.code import CodePin, mismatch_message
    from biolm.plugin_identity import PluginIdentity

    acme = PluginIdentity("acme", "biolm-acme", "0.2.0", "sha256:1a2b")
    pin = CodePin.of(acme, ("metric acme-f1",))
    assert (pin.name, pin.distribution, pin.version, pin.fingerprint, pin.provides) == (
        "acme", "biolm-acme", "0.2.0", "sha256:1a2b", ("metric acme-f1",)
    )  # fmt: skip
    assert pin.label == acme.label == "biolm-acme 0.2.0 (sha256:1a2b)" and pin.identity == acme
    assert acme.named == "acme (biolm-acme 0.2.0)" and PluginIdentity("local").named == "local"
    assert PluginIdentity("local").release == "local"
    older = CodePin.of(PluginIdentity("acme", "biolm-acme", "0.1.0", "sha256:9f"))
    assert mismatch_message(pin, older) == (
        "plugin version mismatch: acme biolm-acme 0.2.0 (sha256:1a2b) pinned, biolm-acme 0.1.0 (sha256:9f) installed"
    )
    written = []
    for path in (ROOT / "platform").rglob("*.py"):
        if path.name != "plugin_identity.py" and "migrations" not in path.parts:
            text = path.read_text(encoding="utf-8")
            written += [path.name for marker in ("distribution} {", "distribution or self.name}") if marker in text]
    assert not written, f"a plugin's label is formatted outside biolm.plugin_identity in {written}"


def test_a_kinds_contributions_are_replaced_by_name_as_when_each_kind_was_a_field():
    import dataclasses

    import pytest

    from biolm.plugins import Contributions

    found = Contributions(metrics={"f1": "spec"})
    replaced = dataclasses.replace(found, datasets={"ner": "spec"})
    assert replaced.metrics == {"f1": "spec"} and replaced.datasets == {"ner": "spec"} and found.datasets == {}
    with pytest.raises(TypeError, match="no contribution kind widgets"):
        Contributions(widgets={})
