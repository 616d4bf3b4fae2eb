"""Graph build time per shipped spec: `envc graph` without the command line.

    python benchmarks/graph_build.py              # every specs/ (every spec but the prototypes), 7 repetitions
    python benchmarks/graph_build.py --reps 15 --spec ticketing --spec cicd_pipeline
    python benchmarks/graph_build.py --no-render  # without graphviz

Per spec, each the median (and min) over the repetitions, in milliseconds:

- `analyse`: load and analyse the spec (`analyse_file`), which `envc graph` does first;
- `graph`: `tool_graph(env)` on the analysed IR (analysis excluded): the facts per tool
  and every pair of tools;
- `analyse+graph`: both, one after the other, timed together;
- `dot text`: `to_dot` of the spec's graph (default picture options);
- `svg`: graphviz's `dot -Tsvg` on that text (a subprocess, so process start included).

Then the env graph over all the specs timed, the graphs already built aside, and the
whole JSON document. Nothing is written. The garbage collector stays on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a source checkout
    sys.path.insert(0, str(ROOT))

from compiler.analyse import analyse_file  # noqa: E402
from compiler.ir import Environment  # noqa: E402
from compiler.project import default_specs  # noqa: E402
from compiler.synth import graph  # noqa: E402
from compiler.synth import graph_render as render  # noqa: E402


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load}"
    )


def timed(work: Callable[[], object], reps: int) -> tuple[float, float]:
    """(median, min) milliseconds of `reps` calls after one warm-up call."""
    work()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def analysed(path: Path) -> Environment:
    env = analyse_file(path).environment
    if env is None:
        raise SystemExit(f"{path} does not analyse; run `envc check {path}`")
    return env


def cell(figures: tuple[float, float]) -> str:
    median, low = figures
    return f"{median:.1f} ({low:.1f})"


def spec_row(path: Path, reps: int, render_svg: bool) -> tuple[Environment, tuple[str, ...]]:
    """The analysed spec and its row of the table."""
    env = analysed(path)
    tools = graph.tool_graph(env)
    document = graph.GraphDocument(tools={env.header.name: tools})
    dot = render.to_dot(document)
    return env, (
        path.stem,
        str(tools.number_of_nodes()),
        str(tools.number_of_edges()),
        str(len(render.drawn_edges(tools))),
        cell(timed(lambda: analyse_file(path), reps)),
        cell(timed(lambda: graph.tool_graph(env), reps)),
        cell(timed(lambda: graph.tool_graph(analysed(path)), reps)),
        cell(timed(lambda: render.to_dot(document), reps)),
        cell(timed(lambda: render.render(dot, "svg"), reps)) if render_svg else "-",
    )


def all_graphs(envs: list[Environment]) -> graph.GraphDocument:
    """What `envc graph specs/ (every spec but the prototypes)` builds once the specs are analysed."""
    return graph.GraphDocument(
        tools={env.header.name: graph.tool_graph(env) for env in envs}, environments=graph.env_graph(envs)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions per figure (after one warm-up)")
    parser.add_argument("--spec", action="append", default=[], help="only this spec (file stem); repeatable")
    parser.add_argument("--no-render", action="store_true", help="skip the `dot -Tsvg` column")
    args = parser.parse_args()
    paths = default_specs(ROOT)
    if args.spec:
        paths = [p for p in paths if p.stem in args.spec]
    render_svg = not args.no_render and shutil.which("dot") is not None
    print(machine())
    print(f"{len(paths)} specs, {args.reps} repetitions, median (min) ms; svg: {'yes' if render_svg else 'skipped'}\n")

    header = ("spec", "tools", "edges", "drawn", "analyse", "graph", "analyse+graph", "dot text", "svg")
    rows: list[tuple[str, ...]] = [header]
    envs: list[Environment] = []
    for path in paths:
        env, row = spec_row(path, args.reps, render_svg)
        envs.append(env)
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for index, row in enumerate(rows):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        if index == 0:
            print("  ".join("-" * w for w in widths))

    if len(envs) > 1:
        print(f"\nenv graph of {len(envs)} specs: {cell(timed(lambda: graph.env_graph(envs), args.reps))} ms")
        print(
            f"every tool graph + env graph: {cell(timed(lambda: all_graphs(envs), args.reps))} ms (analysis excluded)"
        )
        whole = all_graphs(envs)
        size = len(json.dumps(whole.to_json(), indent=2, sort_keys=True))
        text = cell(timed(lambda: json.dumps(whole.to_json(), indent=2, sort_keys=True), args.reps))
        print(f"JSON of that document: {text} ms, {size:,} bytes")


if __name__ == "__main__":
    main()
