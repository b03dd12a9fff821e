"""The default protocol, the papers' namespace and the GPU maximum are each defined once (issue 44's rule).

A constant written twice drifts: the literal 64 in submit and GPUS_MAX in the job contract, or "blurb" as the
benchmark model's default and as the spec builder's. Every module-level assignment of these names in the
platform, the plugins, the workers and the benchmarks is counted (migrations, frozen history, excepted), and
the places that once wrote the value again are checked to read the one definition.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOMES = {
    "DEFAULT_PROTOCOL": "platform/biolm/specs.py",
    "PAPERS_NAMESPACE": "platform/biolm/model_identity.py",
    "GPUS_MAX": "platform/biolm/contract/jobs.py",
}


def definitions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {name: [] for name in HOMES}
    for folder in ("platform", "plugins", "workers", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id in found:
                        found[target.id].append(path.relative_to(ROOT).as_posix())
    return found


def test_each_constant_is_defined_in_exactly_one_module():
    assert definitions() == {name: [home] for name, home in HOMES.items()}


def test_the_places_that_wrote_the_values_again_read_the_one_definition():
    from biolm.contract.jobs import GPUS_MAX
    from biolm.specs import DEFAULT_PROTOCOL, BenchmarkSpec
    from registry.models import Benchmark

    assert Benchmark._meta.get_field("protocol").default == DEFAULT_PROTOCOL
    assert BenchmarkSpec.__dataclass_fields__["protocol"].default == DEFAULT_PROTOCOL
    submitting = (ROOT / "platform/submissions/submitting.py").read_text(encoding="utf-8")
    assert f"<= {GPUS_MAX}" not in submitting and "<= GPUS_MAX" in submitting


def test_a_name_that_moved_out_of_biolm_specs_still_reads_there_with_a_warning_naming_its_home():
    import warnings

    import biolm.specs
    from biolm.name_patterns import SLUG_RE

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert biolm.specs.SLUG_RE is SLUG_RE
    assert [str(w.message) for w in caught] == ["biolm.specs.SLUG_RE moved to biolm.name_patterns.SLUG_RE"]
    assert biolm.specs.ModelIdentity.__module__ == "biolm.model_identity"  # still imported there, no warning
