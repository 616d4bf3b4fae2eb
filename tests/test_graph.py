"""The tool and environment graphs of compiler/synth/graph.py.

Small specs whose edges are worked out by hand, one per edge kind (the expected edge sets
are exact, so a new kind of edge or a lost one shows up here), the weights and their
`[tool.envc.graph]` table, byte-stable JSON, and every shipped spec: each graph builds,
a write tool nothing leads to is an entry point (no guards; docs/graph.md says why),
and the ticketing graph has the edges a reader of the spec expects.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import networkx as nx
import pytest
from shipped import library_specs

from compiler import ir
from compiler.analyse import analyse_file, analyse_source
from compiler.synth import graph as g

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = library_specs()

STATE_SPEC = '''environment counter:
    title "Counter"

state:
    count: int = 0

tool bump() -> int:
    """Add one."""
    count = count + 1
    return count

tool peek() -> int:
    """The count."""
    return count

tool hello() -> str:
    """Touches nothing."""
    return "hi"
'''

DATA_SPEC = '''environment notes:
    title "Notes"

record Note:
    id: int
    text: str
    author: str

state:
    notes: map[int, Note] = {}
    next_id: int = 1
    shared: list[str] = []

tool add_note(text: str, author: str) -> int:
    """A new note; returns its id."""
    let id = next_id
    notes[id] = Note(id=id, text=text, author=author)
    next_id = id + 1
    return id

tool newest() -> optional[Note]:
    """The note with the highest id."""
    if len(notes) == 0:
        return None
    return notes[max(keys(notes))]

tool read_note(note_id: int) -> str:
    """A note's text."""
    return notes[note_id].text

tool share_with(author: str) -> int:
    """Record that an author's notes are shared."""
    shared.append(author)
    return len(shared)
'''

GUARD_SPEC = '''environment shop:
    title "Shop"

state:
    user: optional[str] = None
    open: bool = False
    sales: int = 0

fn must_be_open() -> None:
    require open else invalid_state("the shop is closed")

tool sign_in(name: str) -> bool:
    """Start a session."""
    user = name
    return True

tool open_shop() -> bool:
    """Open the shop."""
    open = True
    return True

tool close_shop() -> bool:
    """Close the shop: `if ...: fail` is a guard too."""
    if not open:
        fail invalid_state("the shop is closed already")
    open = False
    return True

tool sell() -> int:
    """Sell one item: the shop must be open (a helper's guard)."""
    must_be_open()
    sales = sales + 1
    return sales

tool refund() -> int:
    """Refund one sale: someone must be signed in (a guard through a local)."""
    let who = user
    require who is not None else unauthenticated("sign in first")
    sales = sales - 1
    return sales
'''


def analysed(text: str, name: str = "spec.envspec") -> ir.Environment:
    result = analyse_source(text, name)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    return result.environment


def edges(graph: nx.DiGraph[str]) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(source, target) -> the edge's `via` (its kinds and what justifies each)."""
    return {(a, b): graph.edges[a, b]["via"] for a, b in graph.edges}


@pytest.fixture(scope="module")
def shipped() -> dict[str, ir.Environment]:
    """Every shipped spec analysed, keyed by file stem (`calendar` holds `team_calendar`)."""
    envs: dict[str, ir.Environment] = {}
    for path in SHIPPED:
        result = analyse_file(path)
        assert result.environment is not None, path
        envs[path.stem] = result.environment
    return envs


# --------------------------------------------------------------------------- edge kinds


def test_state_flow_is_a_write_read_by_another_tool() -> None:
    graph = g.tool_graph(analysed(STATE_SPEC))
    assert edges(graph) == {("bump", "peek"): {"state": ["count"]}}
    assert graph.edges["bump", "peek"]["kinds"] == ["state"]
    assert graph.edges["bump", "peek"]["weight"] == 1.0
    assert [graph.nodes[n]["kind"] for n in graph.nodes] == ["write", "read", "read"]


def test_data_flow_through_a_key_domain_and_through_a_returned_field() -> None:
    graph = g.tool_graph(analysed(DATA_SPEC))
    assert edges(graph) == {
        # add_note returns the new key of `notes`, which read_note looks its argument up in.
        ("add_note", "read_note"): {"state": ["notes"], "data": ["note_id<-notes"]},
        ("add_note", "newest"): {"state": ["notes"]},
        # newest returns a Note: its `id` is a key of `notes`, its `author` a str parameter.
        ("newest", "read_note"): {"data": ["note_id<-notes"]},
        ("newest", "share_with"): {"data": ["author<-Note.author"]},
        # Not newest -> add_note: add_note writes Notes, copying a Note's fields into a
        # new one is not a flow.
    }
    assert graph.edges["add_note", "read_note"]["weight"] == 3.0
    assert graph.edges["newest", "share_with"]["kinds"] == ["data"]


def test_precondition_through_require_a_helper_a_local_and_fail() -> None:
    graph = g.tool_graph(analysed(GUARD_SPEC))
    assert edges(graph) == {
        ("sign_in", "refund"): {"state": ["user"], "precondition": ["user"]},  # `let who = user`
        ("open_shop", "sell"): {"state": ["open"], "precondition": ["open"]},  # must_be_open()
        ("open_shop", "close_shop"): {"state": ["open"], "precondition": ["open"]},  # if not open: fail
        ("close_shop", "sell"): {"state": ["open"], "precondition": ["open"]},
        ("sell", "refund"): {"state": ["sales"]},
        ("refund", "sell"): {"state": ["sales"]},
    }
    assert graph.edges["sign_in", "refund"]["kinds"] == ["state", "precondition"]
    assert graph.edges["sign_in", "refund"]["weight"] == 4.0


def test_nodes_carry_kind_params_reads_and_writes() -> None:
    graph = g.tool_graph(analysed(DATA_SPEC))
    node = graph.nodes["add_note"]
    assert node["kind"] == "write"
    assert node["params"] == [{"name": "text", "type": "str"}, {"name": "author", "type": "str"}]
    assert node["writes"] == ["next_id", "notes"]
    assert graph.nodes["read_note"]["kind"] == "read"


# --------------------------------------------------------------------------- weights


def test_weights_come_from_the_table() -> None:
    weights = g.GraphWeights.from_table({"data": 5, "precondition": 0.5})
    assert weights == g.GraphWeights(data=5.0, precondition=0.5)
    graph = g.tool_graph(analysed(DATA_SPEC), weights)
    assert graph.edges["newest", "read_note"]["weight"] == 5.0
    assert graph.edges["add_note", "read_note"]["weight"] == 6.0  # state 1 + data 5
    shop = g.tool_graph(analysed(GUARD_SPEC), weights)
    assert shop.edges["sign_in", "refund"]["weight"] == 1.5


def test_a_zero_weight_keeps_the_edge() -> None:
    graph = g.tool_graph(analysed(STATE_SPEC), g.GraphWeights(state=0))
    assert graph.edges["bump", "peek"]["weight"] == 0.0


@pytest.mark.parametrize(
    "table",
    [{"stat": 1}, {"state": -1}, {"data": "2"}, {"precondition": True}, {"shared_domain": None}],
)
def test_bad_tables_are_refused(table: dict[str, object]) -> None:
    with pytest.raises(g.GraphConfigError, match=r"\[tool.envc.graph\]"):
        g.GraphWeights.from_table(table)


def test_load_weights_reads_the_project_pyproject(tmp_path: Path) -> None:
    assert g.load_weights(tmp_path) == g.GraphWeights()  # no pyproject.toml: defaults
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert g.load_weights(tmp_path) == g.GraphWeights()  # no table: defaults
    (tmp_path / "pyproject.toml").write_text("[tool.envc.graph]\ndata = 7\nsame_archetype = 0\n", encoding="utf-8")
    assert g.load_weights(tmp_path) == g.GraphWeights(data=7.0, same_archetype=0.0)


@pytest.mark.parametrize(
    "text",
    [
        "[tool.envc.graph]\nsate = 1\n",
        "[tool.envc.graph]\nstate = -0.5\n",
        '[tool.envc]\ngraph = "heavy"\n',
        "[tool.envc.graph\nstate = 1\n",  # not TOML
    ],
)
def test_load_weights_refuses_bad_tables(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    with pytest.raises(g.GraphConfigError):
        g.load_weights(tmp_path)


def test_the_shipped_pyproject_has_valid_weights() -> None:
    g.load_weights(ROOT)


# --------------------------------------------------------------------------- output


def test_json_is_byte_stable() -> None:
    def dump() -> str:
        envs = [analyse_file(path).environment for path in SHIPPED[:3]]
        assert all(envs)
        clean = [env for env in envs if env is not None]
        document = g.GraphDocument(
            tools={env.header.name: g.tool_graph(env) for env in clean}, environments=g.env_graph(clean)
        )
        return json.dumps(document.to_json(), indent=2, sort_keys=True)

    assert dump() == dump()


def test_node_link_data_has_the_documented_fields() -> None:
    data = g.node_link(g.tool_graph(analysed(GUARD_SPEC)))
    assert data["directed"] is True
    nodes = data["nodes"]
    assert isinstance(nodes, list)
    assert [n["id"] for n in nodes] == sorted(n["id"] for n in nodes)
    assert {"id", "kind", "params", "reads", "writes", "env"} <= set(nodes[0])
    edge_list = data["edges"]
    assert isinstance(edge_list, list)
    assert {"source", "target", "weight", "kinds", "via"} == set(edge_list[0])


# --------------------------------------------------------------------------- shipped specs


@pytest.mark.parametrize("stem", [p.stem for p in SHIPPED])
def test_every_shipped_spec_has_a_graph(stem: str, shipped: dict[str, ir.Environment]) -> None:
    env = shipped[stem]
    graph = g.tool_graph(env)
    assert graph.number_of_nodes() == len(env.tools)
    assert all(graph.nodes[n]["kind"] in ("read", "write") for n in graph.nodes)
    assert all(graph.edges[e]["weight"] > 0 for e in graph.edges)
    facts = g.tool_facts(env)
    for name in graph.nodes:
        if facts[name].kind == "write" and graph.in_degree(name) == 0:
            # An entry point: nothing has to run first (docs/graph.md, "Entry points").
            assert not facts[name].guards, f"{stem}: write tool {name} is unreachable but guarded"


def test_entry_points_of_the_shipped_specs(shipped: dict[str, ir.Environment]) -> None:
    """The write tools no edge leads to, listed in docs/graph.md: a change here is a
    change to that list."""
    found = {
        name: sorted(t for t in graph.nodes if graph.in_degree(t) == 0 and graph.nodes[t]["kind"] == "write")
        for name, graph in ((name, g.tool_graph(env)) for name, env in shipped.items())
    }
    assert {name: tools for name, tools in found.items() if tools} == {
        "bfcl_message": ["add_contact"],
        "bfcl_ticket": ["ticket_login"],
        "bfcl_twitter": ["authenticate_twitter"],
        "calendar": ["create_calendar"],
        "ticketing": ["login"],
    }


def test_ticketing_has_the_edges_a_reader_expects(shipped: dict[str, ir.Environment]) -> None:
    graph = g.tool_graph(shipped["ticketing"])
    kinds = {(a, b): graph.edges[a, b]["kinds"] for a, b in graph.edges}
    assert "precondition" in kinds["login", "create_ticket"]  # sign in first
    assert {"data", "precondition"} <= set(kinds["create_ticket", "set_status"])  # the new id, an existing ticket
    assert "ticket_id<-tickets" in graph.edges["create_ticket", "set_status"]["via"]["data"]
    assert ("set_status", "close_ticket") in kinds
    assert ("resolve_ticket", "close_ticket") in kinds
    assert ("create_ticket", "resolve_ticket") in kinds
    assert "data" in kinds["get_ticket", "update_ticket"]  # a looked-up ticket's id
    assert "login" not in {b for _, b in graph.edges}  # nothing has to happen before signing in
    assert graph.nodes["whoami"]["kind"] == "read" and graph.nodes["close_ticket"]["kind"] == "write"


def test_env_graph_over_the_shipped_specs(shipped: dict[str, ir.Environment]) -> None:
    graph = g.env_graph(shipped.values())
    assert set(graph.nodes) == {env.header.name for env in shipped.values()}
    assert graph.has_edge("ticketing", "bfcl_ticket") and graph.has_edge("bfcl_ticket", "ticketing")
    edge = graph.edges["ticketing", "bfcl_ticket"]
    assert edge["domains"] == ["customer support"]
    assert edge["same_archetype"] is True
    # The heaviest edge out of ticketing leads to its BFCL port.
    heaviest = max(graph.successors("ticketing"), key=lambda other: graph.edges["ticketing", other]["weight"])
    assert heaviest == "bfcl_ticket"


def test_env_graph_weights_are_configurable(shipped: dict[str, ir.Environment]) -> None:
    envs = [shipped["ticketing"], shipped["bfcl_ticket"]]
    base = g.env_graph(envs).edges["ticketing", "bfcl_ticket"]["weight"]
    more = g.env_graph(envs, g.GraphWeights(shared_domain=12.0)).edges["ticketing", "bfcl_ticket"]["weight"]
    assert more == pytest.approx(base + 10.0)


def test_docs_and_pyproject_list_every_weight_with_its_default() -> None:
    page = (ROOT / "docs" / "graph.md").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for setting in fields(g.GraphWeights):
        default = f"{setting.default:.1f}"
        assert f"| `{setting.name}` | {default} |" in page, setting.name
        assert f"# {setting.name} = {default}" in pyproject, setting.name


# --------------------------------------------------------------------------- proposed edges


def proposed(source: str, target: str, reason: str = "the shop sells what it stocks") -> g.ProposedEdge:
    return g.ProposedEdge(source, target, reason)


def test_proposed_edges_are_merged_marked_and_weighted() -> None:
    env = analysed(GUARD_SPEC)
    derived = g.tool_graph(env)
    assert not derived.has_edge("sell", "close_shop")
    graph = g.tool_graph(env, g.GraphWeights.from_table({"llm": 0.5}), [proposed("sell", "close_shop", " a  day ")])
    assert set(graph.edges) == set(derived.edges) | {("sell", "close_shop")}
    assert graph.edges["sell", "close_shop"] == {
        "kinds": ["llm"],
        "via": {"llm": ["a  day"]},
        "weight": 0.5,
        "proposed_by": "llm",
    }
    data = g.node_link(graph)
    assert isinstance(data["edges"], list)
    marked = [(e["source"], e["target"]) for e in data["edges"] if e.get("proposed_by") == "llm"]
    assert marked == [("sell", "close_shop")], "the endpoints stay node-link's `source` and `target`"


@pytest.mark.parametrize(
    ("edge", "problem"),
    [
        (
            proposed("sell", "restock"),
            "there is no tool `restock`; the tools: close_shop, open_shop, refund, sell, sign_in",
        ),
        (proposed("sel", "refund"), "there is no tool `sel` (did you mean `sell`?)"),
        (proposed("sell", "sell"), "`sell` -> `sell` is a self loop"),
        (proposed("open_shop", "sell"), "`open_shop` -> `sell` is an edge already (state, precondition)"),
        (proposed("sell", "close_shop", " \n"), "`sell` -> `close_shop` gives no reason"),
    ],
)
def test_the_hook_refuses_what_validation_refuses(edge: g.ProposedEdge, problem: str) -> None:
    env = analysed(GUARD_SPEC)
    assert g.proposed_edge_problem(g.tool_graph(env), edge) == problem
    with pytest.raises(ValueError, match="proposed edge refused"):
        g.tool_graph(env, extra=[edge])


def test_a_proposed_edge_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="is an edge already \\(llm\\)"):
        g.tool_graph(analysed(GUARD_SPEC), extra=[proposed("sell", "close_shop")] * 2)


def test_proposed_edges_are_drawn_dashed_with_their_legend() -> None:
    from compiler.synth import graph_render

    env = analysed(GUARD_SPEC)
    plain = graph_render.to_dot(g.GraphDocument(tools={"shop": g.tool_graph(env)}), graph_render.PictureOptions(top=0))
    document = g.GraphDocument(tools={"shop": g.tool_graph(env, extra=[proposed("sell", "close_shop")])})
    dot = graph_render.to_dot(document, graph_render.PictureOptions(top=0))
    (line,) = [text for text in dot.splitlines() if '"shop.sell" -> "shop.close_shop"' in text]
    assert 'color="#009E73"' in line and "style=dashed" in line and "proposed by llm" in line
    assert "llm: the shop sells what it stocks" in line, "the reason in the tooltip"
    assert "(1 proposed)" in dot and "proposed by a model" in dot
    assert "dashed" not in plain and "proposed" not in plain and "#009E73" not in plain


def test_without_proposed_edges_no_output_mentions_them(shipped: dict[str, ir.Environment]) -> None:
    """Graphs of the derived edges alone carry no trace of the llm kind (their bytes are
    what they were before proposed edges existed)."""
    from compiler.synth import graph_render

    document = g.GraphDocument(
        tools={env.header.name: g.tool_graph(env) for env in shipped.values()},
        environments=g.env_graph(shipped.values()),
    )
    text = json.dumps(document.to_json()) + graph_render.to_dot(document, graph_render.PictureOptions(top=0))
    assert "proposed" not in text and "dashed" not in text and '"llm"' not in text and "#009E73" not in text
