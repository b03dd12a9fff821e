"""``python -m bench [NAME ...] [--set KEY=VALUE ...] [--out DIR]``: run the throughput benchmarks.

With no names every benchmark in :data:`bench.BENCHMARKS` runs, in order. ``--set`` changes a
setting of the named benchmarks' ``Config`` (e.g. ``--set train_examples=500 --set repeats=1``);
a setting a benchmark does not have is an error unless another benchmark being run has it.
Results land in ``var/bench/<name>.json`` (or ``--out``). Exit status 1 if any benchmark failed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from dataclasses import fields
from pathlib import Path

from bench import BENCHMARKS, common


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"benchmarks to run (default: {' '.join(BENCHMARKS)})")
    parser.add_argument(
        "--set", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="override a Config field"
    )
    parser.add_argument("--out", type=Path, default=None, help=f"output directory (default: {common.OUT_DIR})")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    bad = [s for s in args.settings if "=" not in s]
    if bad:
        parser.error(f"--set needs KEY=VALUE, not {bad[0]!r}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    names = args.names or list(BENCHMARKS)
    overrides = dict(s.split("=", 1) for s in args.settings)
    modules = {name: importlib.import_module(f"bench.{name}") for name in names}
    known = {f.name for module in modules.values() for f in fields(module.Config)}
    stray = sorted(set(overrides) - known)
    if stray:
        print(f"error: no benchmark being run has the setting(s) {', '.join(stray)}", file=sys.stderr)
        return 2
    common.quiet()
    failed = []
    for name, module in modules.items():
        own = {k: v for k, v in overrides.items() if k in {f.name for f in fields(module.Config)}}
        config = common.apply_overrides(module.Config(), own)
        print(f"== {name} ==", flush=True)
        start = time.perf_counter()
        try:
            module.run(config, args.out)
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"== {name}: {time.perf_counter() - start:.0f} s ==\n", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
