"""Pictures of the graphs of `compiler/synth/graph.py`: DOT text written here, SVG and PNG drawn
from it by graphviz's `dot` (a subprocess; graphviz is a system package, see
docs/dependencies.md).

`to_dot(document, options)` is a pure function of a `GraphDocument`: the same graphs
give the same bytes. A tool graph is one cluster per environment: write tools are filled
boxes, read tools white ellipses, tools no edge leads to have a double border; an edge's
thickness grows with its weight and it has one coloured strand per kind (precondition,
data, state). The env graph, when the document has one, is a cluster of its own. Dense
graphs are thinned for the picture only (`PictureOptions`, `drawn_edges`); the JSON
output keeps every edge. Edges a model proposed (`proposed_by: "llm"`) are drawn
dashed, in a colour of their own, so they are never read as derived ones; a picture of
graphs without them is byte for byte what it was before they existed. docs/graph.md
shows a picture and explains the choices.
"""

from __future__ import annotations

import html
import math
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import networkx as nx

from compiler.synth.graph import EDGE_KINDS, LLM_KIND, PROPOSED_BY, GraphDocument

FORMATS = ("dot", "svg", "png")
VIEWS = ("all", "tools", "envs")
DOT_TIMEOUT = 120.0
FONT = "Helvetica,Arial,sans-serif"
KIND_COLOURS = {"precondition": "#D55E00", "data": "#0072B2", "state": "#999999", LLM_KIND: "#009E73"}
"""Okabe-Ito colours (told apart with the common colour-vision deficiencies)."""
KIND_MEANINGS = {
    "precondition": "A makes a guard of B pass",
    "data": "A returns a value B takes",
    "state": "A writes a field B reads",
    LLM_KIND: "proposed by a model: B depends on A (dashed)",
}
WRITE_STYLE = 'shape=box, style="filled,rounded", fillcolor="#FDD49E", color="#B35806", penwidth=1.4'
READ_STYLE = 'shape=ellipse, style=filled, fillcolor="#FFFFFF", color="#4D4D4D", penwidth=1.0'
ENV_STYLE = 'shape=box, style="filled,rounded", fillcolor="#E5E5F7", color="#5E3C99", penwidth=1.2'
ENV_EDGE_COLOUR = "#5E3C99"


class RenderError(Exception):
    """graphviz is missing, failed or took too long."""


@dataclass(frozen=True)
class PictureOptions:
    """What a picture shows; JSON output ignores all of it."""

    top: int = 2
    """Each node's `top` heaviest outgoing edges are drawn (0: all of them)."""
    min_weight: float = 0.0
    """Edges lighter than this are not drawn."""
    view: str = "all"
    """`tools` (the tool graphs), `envs` (the env graph) or `all`."""


# =========================================================================== edge choice


def drawn_edges(graph: nx.DiGraph[str], top: int = 2, min_weight: float = 0.0) -> list[tuple[str, str]]:
    """The edges a picture draws, in the graph's order.

    Edges lighter than `min_weight` are left out. Of the rest, each node keeps its `top`
    heaviest outgoing edges (all when `top` is 0), and a node that would be left with no
    edge in gets its heaviest one back, so no reachable node looks unreachable. Ties go
    to the node declared nearest after the source (nearest before the target, for edges
    in), wrapping around: specs tend to declare tools in the order they are used.
    """
    order = {node: index for index, node in enumerate(graph.nodes)}
    count = max(len(order), 1)

    def forward(a: str, b: str) -> int:
        return (order[b] - order[a]) % count

    def rank(edge: tuple[str, str]) -> tuple[float, int, int]:
        a, b = edge
        return (-_weight(graph, a, b), forward(a, b), order[b] + order[a] * count)

    def heavy(edges: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The edges of at least `min_weight`, heaviest first, ties as above."""
        return sorted((e for e in edges if _weight(graph, *e) >= min_weight), key=rank)

    keep: set[tuple[str, str]] = set()
    for node in graph.nodes:
        outgoing = heavy(graph.out_edges(node))
        keep.update(outgoing[:top] if top > 0 else outgoing)
    for node in graph.nodes:
        incoming = heavy(graph.in_edges(node))
        if incoming and not keep.intersection(incoming):
            keep.add(incoming[0])
    return [edge for edge in graph.edges if edge in keep]


def _pairs(
    graph: nx.DiGraph[str], edges: list[tuple[str, str]], same: tuple[str, ...]
) -> Iterator[tuple[str, str, bool]]:
    """(a, b, both_ways): A -> B and B -> A drawn as one two-headed edge when both are
    drawn and agree on every attribute in `same` (the weight among them)."""
    chosen = set(edges)
    merged: set[tuple[str, str]] = set()
    for a, b in edges:
        if (a, b) in merged:
            continue  # drawn already, from the other end
        # a proposed edge's reason is its own: two-headed only when both say the same
        keys = (*same, "via") if graph.edges[a, b].get(PROPOSED_BY) else same
        back = (b, a) in chosen and all(graph.edges[a, b].get(k) == graph.edges[b, a].get(k) for k in keys)
        if back:
            merged.add((b, a))
        yield a, b, back


# =========================================================================== DOT text


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _penwidth(weight: float, heaviest: float, strands: int = 1) -> str:
    """Line width from the weight: the strands of one edge share it."""
    total = 1.0 + 6.0 * weight / max(heaviest, 1.0)
    return _number(max(total / strands, 0.5))


def _weight(graph: nx.DiGraph[str], a: str, b: str) -> float:
    return float(graph.edges[a, b]["weight"])


def _heaviest(graphs: list[nx.DiGraph[str]]) -> float:
    return max((_weight(g, a, b) for g in graphs for a, b in g.edges), default=0.0)


def _tool_label(name: str, data: dict[str, Any]) -> str:
    params = ", ".join(p["name"] for p in data.get("params", []))
    if len(params) > 34:
        params = params[:32].rsplit(",", 1)[0] + ", …"
    small = f'<br/><font point-size="9" color="#555555">({html.escape(params)})</font>'
    return f"<<b>{html.escape(name)}</b>{small}>"


def _tool_tooltip(name: str, data: dict[str, Any]) -> str:
    params = ", ".join(f"{p['name']}: {p['type']}" for p in data.get("params", []))
    lines = [f"{data.get('kind', '?')} tool {name}({params})"]
    lines.append("reads: " + (", ".join(data.get("reads", [])) or "-"))
    lines.append("writes: " + (", ".join(data.get("writes", [])) or "-"))
    return "\n".join(lines)


def _edge_tooltip(a: str, b: str, data: dict[str, Any], both: bool) -> str:
    arrow = "<->" if both else "->"
    lines = [f"{a} {arrow} {b}, weight {_number(float(data['weight']))}"]
    if data.get(PROPOSED_BY):
        lines[0] += f", proposed by {data[PROPOSED_BY]}"
    lines += [f"{kind}: {', '.join(data['via'][kind])}" for kind in data["kinds"]]
    return "\n".join(lines)


def proposed_count(graph: nx.DiGraph[str]) -> int:
    """How many of a graph's edges a model proposed."""
    return sum(1 for a, b in graph.edges if graph.edges[a, b].get(PROPOSED_BY))


def _tool_cluster(graph: nx.DiGraph[str], options: PictureOptions, heaviest: float) -> list[str]:
    env = str(graph.graph.get("name", ""))
    edges = drawn_edges(graph, options.top, options.min_weight)
    writes = sum(1 for node in graph.nodes if graph.nodes[node].get("kind") == "write")
    proposed = proposed_count(graph)
    title = (
        f"<<b>{html.escape(env)}</b>: {graph.number_of_nodes()} tools ({writes} write), "
        f"{graph.number_of_edges()} edges" + (f" ({proposed} proposed)" if proposed else "") + f", {len(edges)} drawn>"
    )
    lines = [
        f"  subgraph {_quote('cluster_tools_' + env)} {{",
        f"    label={title};",
        "    labelloc=t;",
        '    color="#BBBBBB";',
    ]
    for name, data in graph.nodes(data=True):
        style = WRITE_STYLE if data.get("kind") == "write" else READ_STYLE
        entry = ", peripheries=2" if graph.in_degree(name) == 0 else ""
        lines.append(
            f"    {_quote(env + '.' + name)} [label={_tool_label(name, data)}, {style}{entry}, "
            f"tooltip={_quote(_tool_tooltip(name, data))}];"
        )
    for a, b, both in _pairs(graph, edges, ("kinds", "weight")):
        data = graph.edges[a, b]
        colours = ":".join(KIND_COLOURS[kind] for kind in (*EDGE_KINDS, LLM_KIND) if kind in data["kinds"])
        extra = ", dir=both" if both else ""
        if data.get(PROPOSED_BY):
            extra += ", style=dashed"
        lines.append(
            f"    {_quote(env + '.' + a)} -> {_quote(env + '.' + b)} [color={_quote(colours)}, "
            f"penwidth={_penwidth(float(data['weight']), heaviest, len(data['kinds']))}{extra}, "
            f"tooltip={_quote(_edge_tooltip(a, b, data, both))}];"
        )
    lines.append("  }")
    return lines


def _env_tooltip(a: str, b: str, data: dict[str, Any], both: bool) -> str:
    arrow = "<->" if both else "->"
    lines = [f"{a} {arrow} {b}, weight {_number(float(data['weight']))}"]
    if data.get("domains"):
        lines.append("shared domains: " + ", ".join(data["domains"]))
    lines.append(f"vocabulary overlap: {_number(float(data.get('vocabulary', 0.0)))}")
    if data.get("flows"):
        lines.append("values passed: " + ", ".join(data["flows"]))
    if data.get("same_archetype"):
        lines.append("same archetype")
    return "\n".join(lines)


def _env_cluster(graph: nx.DiGraph[str], options: PictureOptions) -> list[str]:
    edges = drawn_edges(graph, options.top, options.min_weight)
    heaviest = _heaviest([graph])
    title = f"<<b>environments</b>: {graph.number_of_nodes()}, {graph.number_of_edges()} edges, {len(edges)} drawn>"
    lines = ["  subgraph cluster_envs {", f"    label={title};", "    labelloc=t;", '    color="#BBBBBB";']
    for name, data in graph.nodes(data=True):
        detail = f"{data.get('archetype') or 'custom'} · {data.get('tools', 0)} tools"
        label = f'<<b>{html.escape(name)}</b><br/><font point-size="9">{html.escape(detail)}</font>>'
        tip = f"{name}: {data.get('title', '')}\ndomains: {', '.join(data.get('domains', []))}"
        lines.append(f"    {_quote('env:' + name)} [label={label}, {ENV_STYLE}, tooltip={_quote(tip)}];")
    for a, b, both in _pairs(graph, edges, ("weight",)):
        data = graph.edges[a, b]
        extra = ", dir=both" if both else ""
        lines.append(
            f"    {_quote('env:' + a)} -> {_quote('env:' + b)} [color={_quote(ENV_EDGE_COLOUR)}, "
            f"penwidth={_penwidth(float(data['weight']), heaviest)}, xlabel={_quote(_number(float(data['weight'])))}"
            f"{extra}, tooltip={_quote(_env_tooltip(a, b, data, both))}];"
        )
    lines.append("  }")
    return lines


def _legend(options: PictureOptions, tools: bool, envs: bool, proposed: bool = False) -> str:
    """An HTML-like table, the label under the whole picture: what shapes and colours mean
    (the row of proposed edges only when the picture has some)."""
    rows = []
    if tools:
        rows += [
            f'<tr><td><font color="{KIND_COLOURS[kind]}">{"╍╍╍" if kind == LLM_KIND else "━━━"}</font></td>'
            f'<td align="left">{kind}: {html.escape(KIND_MEANINGS[kind])}</td></tr>'
            for kind in (*EDGE_KINDS, *([LLM_KIND] if proposed else []))
        ]
        rows.append(
            '<tr><td bgcolor="#FDD49E">write</td><td align="left">box: a write tool; ellipse: a read tool</td></tr>'
        )
        rows.append('<tr><td border="1">entry</td><td align="left">double border: no edge leads to the tool</td></tr>')
    if envs:
        rows.append(
            f'<tr><td><font color="{ENV_EDGE_COLOUR}">━━━</font></td>'
            '<td align="left">environments: shared domains, words, values, archetype</td></tr>'
        )
    shown = f"each node's {options.top} heaviest edges out" if options.top > 0 else "every edge"
    floor = f" of weight ≥ {_number(options.min_weight)}" if options.min_weight > 0 else ""
    rows.append(f'<tr><td>drawn</td><td align="left">{shown}{floor}, at least one edge in</td></tr>')
    rows.append('<tr><td>thicker</td><td align="left">a heavier edge</td></tr>')
    return '<<table border="0" cellborder="0" cellspacing="1" cellpadding="1">' + "".join(rows) + "</table>>"


def to_dot(document: GraphDocument, options: PictureOptions | None = None) -> str:
    """The DOT text of a document's picture: legend, env graph, one cluster per tool graph."""
    options = options or PictureOptions()
    if options.view not in VIEWS:
        raise ValueError(f"unknown view {options.view!r}; known: {', '.join(VIEWS)}")
    tools = options.view in ("all", "tools")
    envs = options.view in ("all", "envs") and document.environments is not None
    graphs = [document.tools[name] for name in sorted(document.tools)] if tools else []
    proposed = any(proposed_count(graph) for graph in graphs)
    lines = [
        "digraph envc {",
        f'  graph [rankdir=TB, fontname="{FONT}", fontsize=13, labeljust=l, nodesep=0.18, ranksep=0.55,',
        '         newrank=true, outputorder=edgesfirst, pad=0.2, tooltip="envc graph", labelloc=b,',
        f"         label={_legend(options, bool(graphs), envs, proposed)}];",
        f'  node [fontname="{FONT}", fontsize=11, margin="0.10,0.04", height=0.3];',
        f'  edge [fontname="{FONT}", fontsize=9, arrowsize=0.6, fontcolor="#5E3C99"];',
    ]
    members: list[list[str]] = []  # the node ids of each cluster, in drawing order
    if envs:
        assert document.environments is not None
        lines += _env_cluster(document.environments, options)
        members.append([f"env:{name}" for name in document.environments.nodes])
    heaviest = _heaviest(graphs)
    for graph in graphs:
        lines += _tool_cluster(graph, options, heaviest)
        members.append([f"{graph.graph.get('name', '')}.{name}" for name in graph.nodes])
    lines += _grid(members)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _grid(members: list[list[str]]) -> list[str]:
    """Invisible edges that stack the clusters in columns (about as many columns as rows)
    once there are more than three, instead of one very wide row: every node of a cluster
    leads to an invisible anchor that leads to every node of the cluster below it."""
    if len(members) <= 3:
        return []
    columns = math.ceil(math.sqrt(len(members)))
    lines = ["  // layout only: stack the clusters in columns"]
    for below in range(columns, len(members)):
        anchor = _quote(f"anchor:{below}")
        lines.append(f'  {anchor} [style=invis, shape=point, width=0, height=0, label=""];')
        lines += [f"  {_quote(node)} -> {anchor} [style=invis];" for node in members[below - columns]]
        lines += [f"  {anchor} -> {_quote(node)} [style=invis];" for node in members[below]]
    return lines


# =========================================================================== graphviz


def render(dot: str, fmt: str, timeout: float = DOT_TIMEOUT) -> bytes:
    """SVG or PNG bytes of DOT text, drawn by graphviz's `dot`; `RenderError` otherwise."""
    if fmt == "dot":
        return dot.encode("utf-8")
    if fmt not in FORMATS:
        raise RenderError(f"unknown picture format {fmt!r}; known: {', '.join(FORMATS)}")
    program = shutil.which("dot")
    if program is None:
        raise RenderError(
            "graphviz's `dot` is not on PATH; install graphviz (e.g. `apt-get install graphviz`) "
            "or ask for --format dot or json"
        )
    try:
        done = subprocess.run(
            [program, f"-T{fmt}"], input=dot.encode("utf-8"), capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise RenderError(f"graphviz's `dot` took longer than {timeout:g} s; try a smaller --top") from exc
    except OSError as exc:
        raise RenderError(f"cannot run {program}: {exc}") from exc
    if done.returncode != 0 or not done.stdout:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RenderError(f"graphviz's `dot` failed (exit {done.returncode}): {message[0] if message else 'no output'}")
    return done.stdout
