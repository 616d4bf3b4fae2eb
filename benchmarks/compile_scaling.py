"""How compile time and call latency grow with the number of tools: generated specs of
10, 100 and 1,000 tools (the compile half of issue 15's scaling benchmark).

    python benchmarks/compile_scaling.py                 # 11, 101, 1,001 tools
    python benchmarks/compile_scaling.py --runs 3 --qc   # also mypy/ruff/AST on each package
    python benchmarks/compile_scaling.py --sizes 1 10    # blocks of 10 tools: 11 and 101 tools

A spec of B blocks is `benchmarks/frontend.py`'s generated spec cut to B domain blocks
(each: 2 enums, 2 records, 4 state fields, a scenario, 3 helpers, 10 tools, 2 tests, a
task) plus the shared `login` tool, so it has 10 B + 1 tools. Per size, in process
(imports paid by an untimed warm-up): parse (the inline parser, no cache), analyse,
lower (IR to the package's files, formatted by ruff; its ruff subprocesses are not in
this process's CPU time), optionally the static checks (ruff and mypy are subprocesses:
wall seconds), and then the generated
package is imported and `env.call` is timed on a read (`get_…`) and a write
(`update_…`) of the first block, µs per call (wall clock). Compile figures are the min
of the runs in CPU seconds of this process.
The last columns give the growth per 10x tools: about 10 is linear, about 1 constant,
well over 10 superlinear.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT, ROOT / "benchmarks"):
    if str(folder) not in sys.path:  # run as a script from a source checkout
        sys.path.insert(0, str(folder))

import frontend  # noqa: E402

from compiler.analyse import analyse_loaded  # noqa: E402
from compiler.check import check_packages  # noqa: E402
from compiler.check.package import Package, write_tree  # noqa: E402
from compiler.front.load import Loaded  # noqa: E402
from compiler.front.parse import parse_source  # noqa: E402
from compiler.lower import lower  # noqa: E402

CALLS = 5000


def spec_text(blocks: int) -> str:
    name = f"scale_{10 * blocks + 1}"
    header = frontend.HEADER.replace("environment bench_workspace:", f"environment {name}:")
    return header + "".join(frontend.block(index) for index in range(blocks))


def best_of(
    runs: int,
    function: Callable[[Any], Any],
    setup: Callable[[], Any] = lambda: None,
    clock: Callable[[], float] = time.process_time,
) -> tuple[float, Any]:
    """Min of `runs` CPU times of `function(setup())` (setup untimed), after a full
    garbage collection each, so what earlier sizes left behind is not collected inside
    the timing. CPU time of this process: steadier than the wall clock on a shared machine."""
    best, value = float("inf"), None
    for _ in range(runs):
        argument = setup()
        gc.collect()
        started = clock()
        value = function(argument)
        best = min(best, clock() - started)
    return best, value


def call_latency(package: Package, scratch: Path) -> tuple[float, float]:
    """µs per `env.call` of a read and of a write tool of block 0."""
    write_tree(scratch / package.name, package.files)
    if str(scratch) not in sys.path:
        sys.path.insert(0, str(scratch))
    module = importlib.import_module(package.name)
    noun = frontend.NOUNS[0]
    env = module.Environment(f"busy_{noun}s_0")
    per_call = []
    for tool, args in ((f"get_{noun}_0", {"id": 1}), (f"update_{noun}_0", {"id": 1, "notes": "checked"})):
        result = env.call(tool, args)
        assert isinstance(result, dict) and "error" not in result, result
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(CALLS):
                env.call(tool, args)
            best = min(best, (time.perf_counter() - started) / CALLS)
        per_call.append(best * 1e6)
    return per_call[0], per_call[1]


def measure(blocks: int, runs: int, with_qc: bool, scratch: Path) -> dict[str, float]:
    text = spec_text(blocks)
    path = f"scale_{blocks}.envspec"
    figures: dict[str, float] = {"lines": text.count("\n")}
    figures["parse s"], parsed = best_of(runs, lambda _: parse_source(text, path))
    assert parsed.module is not None, parsed.diagnostics[:3]
    figures["analyse s"], analysis = best_of(
        runs, lambda module: analyse_loaded(Loaded(module, [], {path: text})), lambda: parse_source(text, path).module
    )
    env = analysis.environment
    assert env is not None, analysis.diagnostics[:3]
    figures["lower s"], files = best_of(runs, lambda _: lower(env, path))
    package = Package(env=env, name=env.header.name, files=files)
    if with_qc:
        check_packages([package], dynamic=False)  # warm mypy's cache for this package
        figures["static QC wall s"], _ = best_of(
            runs, lambda _: check_packages([package], dynamic=False), clock=time.perf_counter
        )
    figures["read call µs"], figures["write call µs"] = call_latency(package, scratch)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100], help="blocks of 10 tools")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--qc", action="store_true", help="also time ruff, mypy --strict and the AST rules")
    args = parser.parse_args(argv)
    measure(1, 1, False, Path(tempfile.mkdtemp(prefix="envc-scale-warm-")))  # imports, Lark tables
    rows: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="envc-scale-") as scratch:
        for blocks in args.sizes:
            rows[blocks] = measure(blocks, args.runs, args.qc, Path(scratch))
            print(f"  measured {10 * blocks + 1} tools", file=sys.stderr)
    print(f"{platform.python_version()}, {os.cpu_count()} cores; min of {args.runs} runs ({CALLS} calls per timing)")
    columns = list(next(iter(rows.values())))
    print(f"{'tools':>6} " + " ".join(f"{c:>14}" for c in columns))
    for blocks, figures in rows.items():
        print(f"{10 * blocks + 1:>6} " + " ".join(f"{figures[c]:14.3f}" for c in columns))
    sizes = list(rows)
    for small, large in zip(sizes, sizes[1:], strict=False):
        growth = " ".join(f"{rows[large][c] / rows[small][c]:14.2f}" for c in columns)
        print(
            f"{'x' + str(round(large / small)):>6} {growth}   (growth from {10 * small + 1} to {10 * large + 1} tools)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
