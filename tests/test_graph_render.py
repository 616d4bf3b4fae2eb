"""Pictures of the graphs (compiler/synth/graph_render.py): which edges are drawn, the DOT text,
and real SVG renderings by graphviz's `dot`, including a 35-tool spec.

The rendering tests need graphviz; they are skipped on a machine without `dot` unless
`CI` is set (`.ci/run` installs graphviz, so there a missing `dot` fails).
"""

from __future__ import annotations

import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest
from shipped import spec_arg

from compiler.analyse import analyse_file, analyse_source
from compiler.synth import graph as g
from compiler.synth import graph_render as r

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None and not os.environ.get("CI"), reason="graphviz's `dot` is not installed"
)


def weighted(*edges: tuple[str, str, float], nodes: str = "") -> nx.DiGraph[str]:
    graph: nx.DiGraph[str] = nx.DiGraph(name="t")
    graph.add_nodes_from(nodes.split())
    for a, b, w in edges:
        graph.add_edge(a, b, weight=w, kinds=["state"], via={"state": ["x"]})
    return graph


def document(*paths: str) -> g.GraphDocument:
    envs = []
    for path in paths:
        env = analyse_file(ROOT / path).environment
        assert env is not None
        envs.append(env)
    return g.GraphDocument(
        tools={env.header.name: g.tool_graph(env) for env in envs},
        environments=g.env_graph(envs) if len(envs) > 1 else None,
    )


def svg_nodes(svg: bytes) -> list[str]:
    """The titles of the node groups of an SVG graphviz drew (node ids)."""
    tree = ET.fromstring(svg)
    return [
        title.text or ""
        for group in tree.iter(f"{SVG}g")
        if group.get("class") == "node"
        for title in group.iter(f"{SVG}title")
    ]


# --------------------------------------------------------------------------- edge choice


def test_top_keeps_the_heaviest_edges_out_of_each_node() -> None:
    graph = weighted(("a", "b", 1), ("a", "c", 3), ("a", "d", 2), ("b", "d", 1), ("c", "b", 2), nodes="a b c d")
    assert r.drawn_edges(graph, top=1) == [("a", "c"), ("b", "d"), ("c", "b")]
    assert r.drawn_edges(graph, top=2) == [("a", "c"), ("a", "d"), ("b", "d"), ("c", "b")]
    assert r.drawn_edges(graph, top=0) == list(graph.edges)


def test_a_node_without_a_drawn_edge_in_gets_its_heaviest() -> None:
    graph = weighted(("a", "b", 5), ("a", "c", 4), nodes="a b c")
    assert r.drawn_edges(graph, top=1) == [("a", "b"), ("a", "c")]  # a -> c: c's only way in
    graph.add_edge("d", "c", weight=1, kinds=["state"], via={"state": ["x"]})
    assert r.drawn_edges(graph, top=1) == [("a", "b"), ("d", "c")]  # c has an edge in already


def test_min_weight_drops_light_edges_even_the_only_way_in() -> None:
    graph = weighted(("a", "b", 5), ("a", "c", 0.5), nodes="a b c")
    assert r.drawn_edges(graph, top=0, min_weight=1) == [("a", "b")]


def test_ties_go_to_the_next_node_in_declaration_order() -> None:
    graph = weighted(*[(a, b, 1) for a in "pqrs" for b in "pqrs" if a != b], nodes="p q r s")
    assert r.drawn_edges(graph, top=1) == [("p", "q"), ("q", "r"), ("r", "s"), ("s", "p")]


# --------------------------------------------------------------------------- DOT text


def test_dot_text_is_deterministic_and_marks_read_and_write_tools() -> None:
    first = r.to_dot(document("specs/it_operations/ticketing.envspec"))
    assert first == r.to_dot(document("specs/it_operations/ticketing.envspec"))
    assert first.startswith("digraph envc {\n") and first.endswith("}\n")
    login = next(line for line in first.splitlines() if line.strip().startswith('"ticketing.login" ['))
    assert "shape=box" in login and "peripheries=2" in login  # a write tool, an entry point
    whoami = next(line for line in first.splitlines() if line.strip().startswith('"ticketing.whoami" ['))
    assert "shape=ellipse" in whoami and "peripheries" not in whoami
    assert len(re.findall(r'^    "ticketing\.\w+" \[', first, re.MULTILINE)) == 13


def test_edges_are_coloured_by_kind_and_thicker_when_heavier() -> None:
    dot = r.to_dot(document("specs/it_operations/ticketing.envspec"), r.PictureOptions(top=0))
    widths: dict[str, set[float]] = {}
    for line in dot.splitlines():
        match = re.search(r'-> "[^"]+" \[color="([^"]+)", penwidth=([\d.]+)', line)
        if match:
            widths.setdefault(match[1], set()).add(float(match[2]) * match[1].count(":") + float(match[2]))
    state, data = r.KIND_COLOURS["state"], r.KIND_COLOURS["data"]
    everything = ":".join(r.KIND_COLOURS[k] for k in ("state", "data", "precondition"))
    assert max(widths[state]) < min(widths[data]) < min(widths[everything])  # weights 1 < 2 < 6


def test_reciprocal_edges_of_one_weight_are_drawn_once() -> None:
    graph = weighted(("a", "b", 2), ("b", "a", 2), ("b", "c", 1), nodes="a b c")
    dot = r.to_dot(g.GraphDocument(tools={"t": graph}), r.PictureOptions(top=0))
    assert dot.count('"t.a" -> "t.b"') == 1 and '"t.b" -> "t.a"' not in dot
    assert "dir=both" in next(line for line in dot.splitlines() if '"t.a" -> "t.b"' in line)


def test_views_and_the_env_cluster() -> None:
    doc = document("specs/it_operations/ticketing.envspec", "specs/ports/bfcl_ticket.envspec")
    both = r.to_dot(doc)
    assert "cluster_envs" in both and '"cluster_tools_ticketing"' in both
    envs = r.to_dot(doc, r.PictureOptions(view="envs"))
    assert "cluster_envs" in envs and "cluster_tools_" not in envs
    tools = r.to_dot(doc, r.PictureOptions(view="tools"))
    assert "cluster_envs" not in tools and '"cluster_tools_bfcl_ticket"' in tools
    with pytest.raises(ValueError, match="unknown view"):
        r.to_dot(doc, r.PictureOptions(view="everything"))


def test_many_clusters_are_stacked_in_columns() -> None:
    doc = document(*(spec_arg(name) for name in ("ticketing", "calendar", "bfcl_ticket", "bfcl_message")))
    dot = r.to_dot(doc)  # five clusters: the env graph and four tool graphs
    assert "style=invis" in dot and '"anchor:3"' in dot
    assert "anchor" not in r.to_dot(
        document("specs/it_operations/ticketing.envspec", "specs/productivity/calendar.envspec")
    )


# --------------------------------------------------------------------------- rendering


def spec_with_tools(count: int) -> str:
    """A generated spec: a chain of `count - 5` steps, each guarded by the one before,
    and five read tools that look at six steps each."""
    steps = count - 5
    lines = ['environment big:\n    title "Many tools"\n\nstate:']
    lines += [f"    s{i}: int = 0" for i in range(steps)]
    lines.append('\ntool step0() -> int:\n    """The first step."""\n    s0 = s0 + 1\n    return s0\n')
    for i in range(1, steps):
        lines.append(
            f'tool step{i}() -> int:\n    """Step {i}."""\n'
            f'    require s{i - 1} > 0 else invalid_state("step {i - 1} first")\n'
            f"    s{i} = s{i} + 1\n    return s{i}\n"
        )
    for k in range(5):
        total = " + ".join(f"s{i}" for i in range(k * 6, k * 6 + 6))
        lines.append(f'tool peek{k}() -> int:\n    """Six steps summed."""\n    return {total}\n')
    return "\n".join(lines)


@needs_dot
def test_a_35_tool_picture_has_every_tool_and_a_sane_shape() -> None:
    result = analyse_source(spec_with_tools(35), "big.envspec")
    assert result.environment is not None, [d.message for d in result.diagnostics]
    graph = g.tool_graph(result.environment)
    assert graph.number_of_nodes() == 35
    svg = r.render(r.to_dot(g.GraphDocument(tools={"big": graph})), "svg")
    assert sorted(svg_nodes(svg)) == sorted(f"big.{name}" for name in graph.nodes)
    root = ET.fromstring(svg)
    width, height = (float(root.get(side, "0").removesuffix("pt")) for side in ("width", "height"))
    assert 0 < width < 5000 and 0 < height < 5000 and max(width / height, height / width) < 6


@needs_dot
def test_ticketing_svg_has_one_node_per_tool() -> None:
    svg = r.render(r.to_dot(document("specs/it_operations/ticketing.envspec")), "svg")
    assert len(svg_nodes(svg)) == 13


@needs_dot
def test_png_bytes() -> None:
    png = r.render(r.to_dot(document("specs/productivity/calendar.envspec")), "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


@needs_dot
def test_bad_dot_is_a_render_error() -> None:
    with pytest.raises(r.RenderError, match="failed"):
        r.render("digraph { a -> }", "svg")


def test_missing_dot_is_a_render_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(r.RenderError, match="not on PATH"):
        r.render("digraph {}", "svg")
    assert r.render("digraph {}", "dot") == b"digraph {}"  # DOT needs no graphviz


def test_slow_dot_is_a_render_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "dot"
    fake.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 10\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(r.RenderError, match="longer than"):
        r.render("digraph {}", "svg", timeout=0.3)


def test_unknown_format_is_a_render_error() -> None:
    with pytest.raises(r.RenderError, match="unknown picture format"):
        r.render("digraph {}", "gif")


def test_the_committed_picture_shows_every_ticketing_tool() -> None:
    """docs/graph-ticketing.svg (regenerate: `envc graph specs/it_operations/ticketing.envspec --format svg
    -o docs/graph-ticketing.svg`) still has the spec's tools and the current legend."""
    svg = (ROOT / "docs" / "graph-ticketing.svg").read_bytes()
    graph = document("specs/it_operations/ticketing.envspec").tools["ticketing"]
    assert sorted(svg_nodes(svg)) == sorted(f"ticketing.{name}" for name in graph.nodes)
    assert b"at least one edge in" in svg
