"""`envc graph`: tool dependency graphs of specs, and the env graph of two or more
(docs/graph.md, "The command"). Exit codes: compiler/cli/common.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compiler import project
from compiler.cli.common import (
    EXIT_OK,
    SPEC_PATHS,
    exit_code,
    expand_paths,
    fail,
    llm_log,
    plural,
    print_diagnostic,
    write_or_exit,
)
from compiler.diagnostics import Diagnostic, has_errors

if TYPE_CHECKING:
    from compiler import ir
    from compiler.synth import graph as graph_types


@click.command("graph")
@SPEC_PATHS
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "dot", "svg", "png"]),
    default="json",
    show_default=True,
    help="JSON (networkx node-link data, every edge) or a picture (svg and png need graphviz's `dot`).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write to this file (replaced in one step) instead of stdout; png needs it on a terminal.",
)
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=None,
    help="Pictures: each tool's K heaviest edges out (0: all; default 2).",
)
@click.option(
    "--min-weight", type=click.FloatRange(min=0), default=None, help="Pictures: leave out edges lighter than W."
)
@click.option(
    "--view",
    type=click.Choice(["all", "tools", "envs"]),
    default=None,
    help="Pictures: the tool graphs, the env graph (two or more specs), or both (default).",
)
@click.option(
    "--llm",
    "use_llm",
    is_flag=True,
    help="Merge the tool edges a model proposes, from envc.lock when current, else asked for and locked.",
)
@click.option("--offline", is_flag=True, help="With --llm: envc.lock only; a missing or stale entry is an error.")
@click.option("--refresh", is_flag=True, help="With --llm: ask the model again even where envc.lock is current.")
@click.pass_context
def graph_command(
    ctx: click.Context,
    files: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    top: int | None,
    min_weight: float | None,
    view: str | None,
    use_llm: bool,
    offline: bool,
    refresh: bool,
) -> None:
    """Tool dependency graphs of specs, and the env graph of two or more (docs/graph.md)."""
    from compiler.synth import graph, graph_render

    if (offline or refresh) and not use_llm:
        raise click.UsageError("--offline and --refresh are about the proposed edges of --llm")
    if offline and refresh:
        raise click.UsageError("--refresh asks the model again; --offline asks none")
    if fmt == "json" and (top, min_weight, view) != (None, None, None):
        raise click.UsageError("--top, --min-weight and --view shape pictures (dot, svg, png); JSON has every edge")
    if fmt == "png" and output is None and _stdout_is_terminal():
        raise click.UsageError("a PNG is not for a terminal: pass -o FILE or redirect stdout")
    paths, diagnostics = expand_paths(files)
    if view == "envs" and len(paths) < 2:
        raise click.UsageError("--view envs needs two or more specs")
    root = project.find_project_root(Path.cwd())
    try:
        weights = graph.load_weights(root)
    except graph.GraphConfigError as exc:
        fail("graph", str(exc))
    envs, problems, sources = _analysed_environments(paths)
    diagnostics.extend(problems)
    for diagnostic in diagnostics:
        print_diagnostic(diagnostic, sources.get(diagnostic.path), err=True)
    if exit_code(diagnostics) != EXIT_OK:
        ctx.exit(exit_code(diagnostics))
    if use_llm:
        tool_graphs, problems = _llm_tool_graphs(envs, weights, root, offline, refresh)
        for diagnostic in problems:
            print_diagnostic(diagnostic, sources.get(diagnostic.path), err=True)
        if exit_code(problems) != EXIT_OK:
            ctx.exit(exit_code(problems))
    else:
        tool_graphs = {env.header.name: graph.tool_graph(env, weights) for env in envs}
    document = graph.GraphDocument(
        tools=tool_graphs,
        environments=graph.env_graph(envs, weights) if len(envs) > 1 else None,
    )
    try:
        data = _graph_bytes(document, fmt, top, min_weight, view)
    except graph_render.RenderError as exc:
        fail("graph", str(exc))
    _write_graph(data, output)
    tools = sum(g.number_of_nodes() for g in document.tools.values())
    edges = sum(g.number_of_edges() for g in document.tools.values())
    where = f" to {output}" if output is not None else ""
    proposed = sum(graph_render.proposed_count(g) for g in document.tools.values())
    counted = plural(edges, "tool edge") + (f" ({proposed} proposed)" if use_llm else "")
    click.echo(f"graph of {plural(len(envs), 'environment')}: {plural(tools, 'tool')}, {counted}{where}", err=True)


def _llm_tool_graphs(
    envs: list[ir.Environment], weights: graph_types.GraphWeights, root: Path, offline: bool, refresh: bool
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Tool graphs with the edges a model proposed (compiler/synth/model_edges.py), and the pass
    rates when a model was asked."""
    from compiler.llm.stats import HealStats
    from compiler.synth import model_edges as edges

    stats = HealStats()
    options = edges.EdgeOptions(root=root, offline=offline, refresh=refresh, log=llm_log, stats=stats)
    built, diagnostics = edges.llm_tool_graphs(envs, weights, options)
    if stats:
        for line in stats.render("edge lists"):
            click.echo(line, err=True)
    return built, diagnostics


def _analysed_environments(paths: list[Path]) -> tuple[list[ir.Environment], list[Diagnostic], dict[str, str]]:
    """The environments of specs that analyse cleanly, each name once (E6005 for a name
    two specs define), their diagnostics and the texts read."""
    from compiler.analyse import analyse_file

    envs: list[ir.Environment] = []
    diagnostics: list[Diagnostic] = []
    sources: dict[str, str] = {}
    named: dict[str, Path] = {}  # environment name -> the spec that defines it
    for path in paths:
        result = analyse_file(path)
        diagnostics.extend(result.diagnostics)
        sources.update(result.sources)
        if result.environment is None or has_errors(result.diagnostics):
            continue
        name = result.environment.header.name
        if name in named:
            message = f"{named[name]} and {path} both define environment `{name}`"
            diagnostics.append(Diagnostic("E6005", message, str(path), 1, 1))
            continue
        envs.append(result.environment)
        named[name] = path
    return envs, diagnostics, sources


def _graph_bytes(
    document: graph_types.GraphDocument, fmt: str, top: int | None, min_weight: float | None, view: str | None
) -> bytes:
    """The document as stable JSON, or a picture drawn with the picture options given."""
    import json

    from compiler.synth import graph_render

    if fmt == "json":
        return (json.dumps(document.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    defaults = graph_render.PictureOptions()
    options = graph_render.PictureOptions(
        top=defaults.top if top is None else top,
        min_weight=defaults.min_weight if min_weight is None else min_weight,
        view=view or defaults.view,
    )
    return graph_render.render(graph_render.to_dot(document, options), fmt)


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _write_graph(data: bytes, output: Path | None) -> None:
    """To stdout, or to `output` in one step (`write_atomically`)."""
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    write_or_exit(output, data, "graph")
