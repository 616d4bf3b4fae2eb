"""Tool edges proposed by a model (compiler/synth/model_edges.py), against a loopback chat server.

The model is asked for the dependencies the static analysis cannot see; every edge is
validated, a bad answer goes back for repair, and the accepted list is locked in
envc.lock like a fill. Each scenario ends in its documented state: the edges merged
into the graph (marked `proposed_by: "llm"`) and the lock written, or a diagnostic and
nothing written. A graph built from a current lock is the same bytes with the network
unreachable.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from compiler import ir
from compiler.analyse import analyse_file
from compiler.llm.config import load_config
from compiler.synth import graph, graph_render
from compiler.synth import model_edges as edges

from .chat_server import ChatServer, Reply
from .conftest import SECRET, pyproject

TRIPS = '''\
environment trips:
    title "Trips"
    doc "Search the flights of a route, book a seat, cancel the latest booking."

world:
    flights: map[str, str] = {"LH1": "FRA-JFK", "BA2": "LHR-JFK", "AF3": "CDG-JFK"}

state:
    bookings: list[str] = []

tool search_flights(route: str) -> list[str]:
    """The codes of the flights that fly a route."""
    return sorted([code for code in keys(flights) if flights[code] == route])

tool book_flight(code: str) -> int:
    """Book a seat on a flight; returns how many seats are booked."""
    require code in flights else not_found(f"no flight {code}", field="code")
    bookings.append(code)
    return len(bookings)

tool cancel_latest() -> str:
    """Cancel the latest booking; returns its flight code."""
    require len(bookings) > 0 else invalid_state("nothing is booked")
    return bookings.pop()

test booking:
    expect search_flights(route="FRA-JFK") == ["LH1"]
    expect book_flight(code="LH1") == 1
    expect cancel_latest() == "LH1"
'''
REASON = "A seat is booked on a flight code the search of the route returned."
GOOD = [{"from": "search_flights", "to": "book_flight", "reason": REASON}]
LOCK = Path("specs") / "envc.lock"


def answer(rows: Any) -> Reply:
    return Reply(f"These are the edges.\n\n```json\n{json.dumps(rows)}\n```\n")


@pytest.fixture
def trips(project: Path) -> Path:
    spec = project / "specs" / "trips.envspec"
    spec.write_text(TRIPS, encoding="utf-8")
    return spec


def env_of(spec: Path) -> ir.Environment:
    result = analyse_file(spec)
    assert result.environment is not None, result.diagnostics
    return result.environment


def options(root: Path, **kwargs: Any) -> edges.EdgeOptions:
    return edges.EdgeOptions(root, **kwargs)


def lock_entry(project: Path) -> dict[str, Any]:
    data = json.loads((project / LOCK).read_text(encoding="utf-8"))
    entry: dict[str, Any] = data["fills"]["trips.envspec"][edges.EDGES_DECL]
    return entry


def graph_bytes(env: ir.Environment, root: Path) -> bytes:
    """What `envc graph --llm` writes: the JSON and the DOT text of the graph."""
    built, diagnostics = edges.llm_tool_graphs([env], graph.GraphWeights(), options(root))
    assert built, diagnostics
    document = graph.GraphDocument(tools=built)
    text = json.dumps(document.to_json(), indent=2, sort_keys=True) + graph_render.to_dot(document)
    return text.encode("utf-8")


def codes(result: edges.EdgeResult) -> list[str]:
    return [d.code for d in result.diagnostics]


# --------------------------------------------------------------------------- accepted edges


def test_proposed_edges_are_merged_marked_and_locked(project: Path, server: ChatServer, trips: Path) -> None:
    server.replies.append(answer(GOOD))
    env = env_of(trips)
    weights = graph.GraphWeights(llm=2.5)
    built, diagnostics = edges.llm_tool_graphs([env], weights, options(project))
    assert diagnostics == []
    edge = built["trips"].edges["search_flights", "book_flight"]
    assert edge == {"kinds": ["llm"], "via": {"llm": [REASON]}, "weight": 2.5, "proposed_by": "llm"}
    derived = graph.tool_graph(env)
    assert set(built["trips"].edges) == set(derived.edges) | {("search_flights", "book_flight")}
    assert all("proposed_by" not in built["trips"].edges[e] for e in derived.edges), "derived edges unmarked"

    (sent,) = server.requests
    assert sent.body["model"] == "scripted-model" and sent.body["temperature"] == 0.0 and "max_tokens" in sent.body
    user = sent.body["messages"][1]["content"]
    assert "tool search_flights(route: str) -> list[str]:" in user and "writes bookings" in user
    assert 'guard: require code in flights else not_found(f"no flight {code}", field="code")' in user
    assert "- book_flight -> cancel_latest (state, precondition)" in user, "the derived edges, not to repeat"

    entry = lock_entry(project)
    assert json.loads(entry["body"]) == GOOD and entry["attempt"] == 1 and entry["model"] == "scripted-model"
    request = edges.first_request(load_config(project)[0], env, derived)
    assert entry["request_sha"] == entry["accepted_request_sha"] == request.sha()
    assert entry["provenance"]["checks"] == ["reply", "structure"]
    assert SECRET.encode() not in (project / LOCK).read_bytes()


def test_an_empty_answer_is_a_valid_list_and_is_locked(project: Path, server: ChatServer, trips: Path) -> None:
    server.replies.append(answer([]))
    result = edges.propose_edges(env_of(trips), options(project))
    assert result.ok and result.edges == [] and result.status == "filled"
    assert json.loads(lock_entry(project)["body"]) == []
    again = edges.propose_edges(env_of(trips), options(project))
    assert again.status == "current" and len(server.requests) == 1


def test_a_build_from_the_lock_is_identical_with_the_network_unreachable(
    project: Path,
    server: ChatServer,
    trips: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.replies.append(answer(GOOD))
    built = graph_bytes(env_of(trips), project)
    assert b'"proposed_by": "llm"' in built and b"style=dashed" in built
    elsewhere = tmp_path_factory.mktemp("another-machine")
    shutil.copytree(project / "specs", elsewhere / "specs")
    shutil.copy(project / "pyproject.toml", elsewhere / "pyproject.toml")
    monkeypatch.chdir(elsewhere)

    def no_network(*_args: object, **_kwargs: object) -> None:
        raise OSError("network unreachable (test)")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    env = env_of(elsewhere / "specs" / "trips.envspec")
    assert graph_bytes(env, elsewhere) == built, "byte for byte, from the lock"
    offline = edges.propose_edges(env, options(elsewhere, offline=True))
    assert offline.ok and offline.status == "current"
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- healing and refusals


def test_invalid_edges_go_back_and_are_healed_on_attempt_2(project: Path, server: ChatServer, trips: Path) -> None:
    bad = [
        {"from": "search_flight", "to": "book_flight", "reason": "misspelt"},
        {"from": "book_flight", "to": "book_flight", "reason": "a loop"},
        {"from": "book_flight", "to": "cancel_latest", "reason": "derived already"},
        {"from": "search_flights", "to": "cancel_latest", "reason": "   "},
    ]
    server.replies += [answer(bad), answer(GOOD)]
    stats = edges.HealStats()
    result = edges.propose_edges(env_of(trips), options(project, stats=stats))
    assert result.ok and result.status == "filled" and len(server.requests) == 2
    repair = server.requests[1].body["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    problems = repair[-1]["content"]
    assert "failed envc's `structure` check" in problems
    assert "edge 1: there is no tool `search_flight` (did you mean `search_flights`?)" in problems
    assert "edge 2: `book_flight` -> `book_flight` is a self loop" in problems
    assert "edge 3: `book_flight` -> `cancel_latest` is an edge already (state, precondition)" in problems
    assert "edge 4: `search_flights` -> `cancel_latest` gives no reason" in problems
    entry = lock_entry(project)
    assert entry["attempt"] == 2 and [a["failure"] for a in entry["provenance"]["attempts"]] == ["structure", ""]
    assert entry["request_sha"] != entry["accepted_request_sha"], "the repair is another request"
    assert stats.rates() == {1: {"reply": (1, 1), "structure": (0, 1)}, 2: {"reply": (1, 1), "structure": (1, 1)}}


def test_malformed_answers_are_refused_after_every_attempt(project: Path, server: ChatServer, trips: Path) -> None:
    server.replies += [
        Reply("search_flights comes before book_flight."),
        answer({"search_flights": "book_flight"}),
        answer([{"from": "search_flights", "to": "book_flight"}]),
    ]
    result = edges.propose_edges(env_of(trips), options(project))
    assert codes(result) == ["E6104"] and result.edges == [] and not result.ok
    (diagnostic,) = result.diagnostics
    assert diagnostic.path == str(trips) and diagnostic.line == 1, "at the spec's header"
    assert "after 3 attempts" in diagnostic.message
    assert diagnostic.notes[:3] == (
        "attempt 1: failed `reply`",
        "attempt 2: failed `reply`",
        "attempt 3: failed `reply`",
    )
    assert "is not an object of three strings" in diagnostic.notes[-1]
    assert "is a JSON dict, not an array" in server.requests[2].body["messages"][-1]["content"]
    assert not (project / LOCK).exists(), "nothing written"


def test_a_failing_endpoint_is_e6103_and_writes_nothing(project: Path, server: ChatServer, trips: Path) -> None:
    server.replies += [Reply(status=500)] * 3
    built, diagnostics = edges.llm_tool_graphs([env_of(trips)], graph.GraphWeights(), options(project))
    assert built == {} and [d.code for d in diagnostics] == ["E6103"]
    assert "HTTP 500" in diagnostics[0].message and len(server.requests) == 3
    assert not (project / LOCK).exists()


# --------------------------------------------------------------------------- the lock


def test_offline_without_an_entry_is_e6101_and_asks_nothing(project: Path, server: ChatServer, trips: Path) -> None:
    result = edges.propose_edges(env_of(trips), options(project, offline=True))
    assert codes(result) == ["E6101"] and server.requests == []
    assert not (project / LOCK).exists()


def test_an_entry_goes_stale_with_the_tools_and_the_sampling(project: Path, server: ChatServer, trips: Path) -> None:
    server.replies.append(answer(GOOD))
    assert edges.propose_edges(env_of(trips), options(project)).ok
    lock_before = (project / LOCK).read_bytes()
    trips.write_text(TRIPS.replace("Book a seat on a flight;", "Reserve a seat on a flight;"), encoding="utf-8")
    stale = edges.propose_edges(env_of(trips), options(project, offline=True))
    assert codes(stale) == ["E6102"] and "the tools, the prompt, the model or a sampling parameter" in (
        stale.diagnostics[0].message
    )
    trips.write_text(TRIPS, encoding="utf-8")
    assert edges.propose_edges(env_of(trips), options(project, offline=True)).status == "current"
    (project / "pyproject.toml").write_text(pyproject(server.url, temperature=0.5), encoding="utf-8")
    assert codes(edges.propose_edges(env_of(trips), options(project, offline=True))) == ["E6102"]
    assert (project / LOCK).read_bytes() == lock_before and len(server.requests) == 1


def test_a_current_entry_the_checks_refuse_is_e6107(project: Path, server: ChatServer, trips: Path) -> None:
    server.replies.append(answer(GOOD))
    assert edges.propose_edges(env_of(trips), options(project)).ok
    data = json.loads((project / LOCK).read_text(encoding="utf-8"))
    tampered = [{"from": "search_flights", "to": "fly", "reason": REASON}]
    data["fills"]["trips.envspec"]["edges"]["body"] = json.dumps(tampered)
    (project / LOCK).write_text(json.dumps(data), encoding="utf-8")
    result = edges.propose_edges(env_of(trips), options(project))
    assert codes(result) == ["E6107"] and "there is no tool `fly`" in result.diagnostics[0].notes[0]
    assert "--refresh" in result.diagnostics[0].hint
    assert len(server.requests) == 1, "a current entry is not asked for again"
    assert codes(edges.propose_edges(env_of(trips), options(project, refresh=True, offline=True))) == ["E6101"]
    server.replies.append(answer(GOOD))
    refreshed = edges.propose_edges(env_of(trips), options(project, refresh=True))
    assert refreshed.ok and refreshed.status == "filled" and len(server.requests) == 2
    assert json.loads(lock_entry(project)["body"]) == GOOD, "the tampered entry is replaced"


def test_fills_and_edges_share_the_lock(project: Path, server: ChatServer, trips: Path) -> None:
    """The edges entry sits beside the fill entries of other specs; neither drops the other."""
    from .chat_server import fenced
    from .conftest import GOOD as GOOD_FILL
    from .conftest import envc

    server.replies.append(Reply(fenced(GOOD_FILL)))
    assert envc("lock", "--update", "--no-qc", "specs/shelf.envspec").exit_code == 0
    server.replies.append(answer(GOOD))
    assert edges.propose_edges(env_of(trips), options(project)).ok
    fills = json.loads((project / LOCK).read_text(encoding="utf-8"))["fills"]
    assert sorted(fills) == ["shelf.envspec", "trips.envspec"]
    assert list(fills["shelf.envspec"]) == ["tool count_books"] and list(fills["trips.envspec"]) == ["edges"]


def test_a_bad_llm_table_is_reported_once_and_asks_nothing(project: Path, server: ChatServer, trips: Path) -> None:
    (project / "pyproject.toml").write_text(pyproject(server.url, api_key="sk-in-the-file"), encoding="utf-8")
    envs = [env_of(trips), env_of(project / "specs" / "shelf.envspec")]
    built, diagnostics = edges.llm_tool_graphs(envs, graph.GraphWeights(), options(project))
    assert built == {} and [d.code for d in diagnostics] == ["E6105"]
    assert "sk-in-the-file" not in diagnostics[0].message and server.requests == []
