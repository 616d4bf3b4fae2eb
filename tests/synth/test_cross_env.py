"""Tasks across environments follow real data flows (compiler/synth/meaning.py): edges
join values that mean the same, not fields that share a name and type; a chain moves to
the next environment only along a flow and uses a value the earlier one gave.

Two fixture specs (tests/fixtures/cross_env): a shop whose orders keep the customer's
e-mail address and whose clerks and guests have a `name: str` each, and a help desk whose
tickets take a requester's e-mail and whose agents have a `name: str` too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shipped import library_specs, package_dir

from compiler import ir
from compiler.analyse import analyse_file
from compiler.synth import graph as g
from compiler.synth import meaning, sample, task_build, tasks

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "cross_env"
SPECS = [FIXTURES / "shop.envspec", FIXTURES / "helpdesk.envspec"]
EMAIL_FLOW = "Order.customer_email -> open_ticket(requester) as email"
FIELD_OF = {"shop": "customer_email", "helpdesk": "requester"}
PARAM_OF = {"shop": "email", "helpdesk": "requester"}


@pytest.fixture(scope="module")
def models() -> dict[str, ir.Environment]:
    envs = {}
    for spec in SPECS:
        env = analyse_file(spec).environment
        assert env is not None
        envs[env.header.name] = env
    return envs


@pytest.fixture(scope="module")
def library() -> dict[str, sample.SampleEnv]:
    """The shipped domain specs through their committed packages."""
    envs = {}
    for spec in library_specs():
        env = analyse_file(spec).environment
        assert env is not None
        envs[env.header.name] = sample.load_env(env, package_dir(env.header.name))
    return envs


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, sample.SampleEnv]:
    """Both fixtures lowered and loaded, as `envc sample` loads specs without packages."""
    scratch = tmp_path_factory.mktemp("cross_env")
    ready = sample.prepare(SPECS, ROOT, scratch)
    assert set(ready.envs) == {"shop", "helpdesk"}, ready.diagnostics
    return ready.envs


def test_a_shared_name_and_type_is_no_data_edge(models: dict[str, ir.Environment]) -> None:
    """`Clerk.name` and `check_in(name)` share a name and a type (the rule before joined
    list_clerks -> check_in by them), but check_in stores its `name` as a Guest's: no edge."""
    shop = models["shop"]
    clerk_name = next(f for r in shop.records if r.name == "Clerk" for f in r.fields if f.name == "name")
    check_in = next(t for t in shop.tools if t.name == "check_in")
    assert (clerk_name.name, clerk_name.type) == (check_in.params[0].name, check_in.params[0].type)
    graph = g.tool_graph(shop)
    assert not graph.has_edge("list_clerks", "check_in")
    senses = meaning.meanings(shop, {n: f.domains for n, f in g.tool_facts(shop).items()})
    assert senses.param("check_in", "name") == {"field:Guest.name", "source:person_name"}
    assert senses.field("Clerk", "name") == {"field:Clerk.name"}


def test_a_shared_meaning_is_a_data_edge_and_an_env_flow(models: dict[str, ir.Environment]) -> None:
    """The order's customer e-mail becomes a ticket's requester: both are `email`s."""
    flows = g.env_flows(models.values())
    assert [str(f) for f in flows[("shop", "helpdesk")]] == [EMAIL_FLOW]
    # and back: a ticket's requester can place an order
    assert [str(f) for f in flows[("helpdesk", "shop")]] == ["Ticket.requester -> place_order(email) as email"]
    envs = g.env_graph(models.values())
    assert envs.edges["shop", "helpdesk"]["flows"] == [EMAIL_FLOW]
    assert g.is_data_edge(envs.edges["shop", "helpdesk"])
    # the agents' and clerks' names (no source, both `name: str`) join nothing
    assert not any("name" in str(f) for pair in flows.values() for f in pair)


def test_pools_join_environments_only_when_they_share_values() -> None:
    here = meaning.Meanings("a", {}, {}, frozenset(), {"titles": frozenset({"x", "y"}), "notes": frozenset({"p"})})
    there = meaning.Meanings("b", {}, {}, frozenset(), {"titles": frozenset({"y", "z"}), "notes": frozenset({"q"})})
    senses = frozenset({"source:titles", "source:notes", "source:email", "source:amount", "field:T.title"})
    assert meaning.carried_meanings(senses, here, there) == {"source:titles", "source:email"}


def _sampler(envs: dict[str, sample.SampleEnv], chains: int, seed: int, span: tuple[int, int]) -> sample.Sampler:
    return sample.Sampler(envs, sample.SampleOptions(chains=chains, seed=seed, envs=span, max_len=3))


def _assert_carried(row: dict[str, Any], flows: dict[tuple[str, str], list[meaning.Flow]]) -> None:
    """Each next environment follows a flow and one of its calls takes a value a call of
    the previous environment returned."""
    for before, after in zip(row["envs"], row["envs"][1:]):
        assert (before, after) in flows, row["envs"]
        given = json.dumps([c["result"] for c in row["calls"] if c["env"] == before])
        used = [
            value
            for c in row["calls"]
            if c["env"] == after
            for name, value in c["args"].items()
            if c["origins"].get(name) == "carried"
        ]
        assert used and all(json.dumps(v) in given for v in used), row["id"]


def test_chains_cross_only_along_a_flow_with_a_value(prepared: dict[str, sample.SampleEnv]) -> None:
    sampler = _sampler(prepared, 12, 3, (2, 2))
    rows, _ = sample.sample(sampler)
    assert len(rows) == 12
    for row in rows:
        _assert_carried(row, sampler.flows)
        first, second = row["envs"]
        given = {c["result"].get(FIELD_OF[first]) for c in row["calls"] if c["env"] == first and "id" in c["result"]}
        taken = [c["args"].get(PARAM_OF[second]) for c in row["calls"] if c["env"] == second]
        assert given & set(taken), row  # an order's e-mail becomes a requester, or back


def test_the_shipped_library_never_chains_without_a_flow(library: dict[str, sample.SampleEnv]) -> None:
    sampler = _sampler(library, 30, 32, (2, 3))
    rows, summary = sample.sample(sampler)
    assert len(rows) == 30 and any(len(r["envs"]) == 3 for r in rows)
    for row in rows:
        _assert_carried(row, sampler.flows)
    assert summary.rejected[sample.NOTHING_TO_CARRY] + summary.rejected[sample.NOTHING_CARRIED] > 0


def test_environments_without_a_flow_give_no_chain_and_say_why(library: dict[str, sample.SampleEnv]) -> None:
    envs = {n: library[n] for n in ("ticketing", "job_matching")}
    with pytest.raises(sample.SampleError, match="no 2 of the environments given follow one another along data"):
        _sampler(envs, 2, 1, (2, 2))
    rows, summary = sample.sample(_sampler(envs, 6, 1, (1, 2)))
    assert len(rows) == 6 and all(len(row["envs"]) == 1 for row in rows)
    assert summary.rejected[sample.NO_FLOW_PATH] > 0  # a chain of two drawn, and given up at once


def test_cross_requests_name_the_carried_value_by_meaning(prepared: dict[str, sample.SampleEnv]) -> None:
    options = task_build.TaskOptions(tasks=4, seed=5, envs=(2, 2), max_len=3)
    kept, _ = tasks.synthesise(tasks.sampler_for(prepared, options), options, declared=False)
    assert len(kept) == 4
    for task in kept:
        carried = [o for o in task["source"]["origins"] if "carried" in o.values()]
        assert carried, task["source"]
        phrases = ("the requester of the", "the customer email of the")
        assert any(p in task["prompt"] for p in phrases), task["prompt"]  # "the requester of the new ticket"


def test_rejected_chains_are_counted_in_the_tasks_report(library: dict[str, sample.SampleEnv]) -> None:
    envs = {n: library[n] for n in ("ticketing", "bfcl_ticket")}
    options = task_build.TaskOptions(tasks=3, seed=5, envs=(2, 2))
    kept, report = tasks.synthesise(tasks.sampler_for(envs, options), options, declared=False)
    assert len(kept) == 3
    rejected = report.to_json()["chains_rejected"]
    assert rejected.get(sample.NOTHING_TO_CARRY, 0) + rejected.get(sample.NOTHING_CARRIED, 0) > 0, rejected


def test_same_seed_same_cross_chains(prepared: dict[str, sample.SampleEnv]) -> None:
    one = sample.rows_to_jsonl(sample.sample(_sampler(prepared, 8, 11, (2, 2)))[0])
    assert sample.rows_to_jsonl(sample.sample(_sampler(prepared, 8, 11, (2, 2)))[0]) == one
    assert sample.rows_to_jsonl(sample.sample(_sampler(prepared, 8, 12, (2, 2)))[0]) != one


def test_a_later_environment_takes_the_value_the_chain_acted_on(prepared: dict[str, sample.SampleEnv]) -> None:
    """A value a write returned comes before one a read returned alone, and that before
    one a read listed among others: the second part of a request goes on with the entity
    the first part changed."""
    shop = prepared["shop"]
    write = shop.tools["place_order"]
    read = write.model_copy(update={"writes": []})  # one order, read
    search = write.model_copy(update={"writes": [], "returns": ir.TypeRef(name="list", args=[write.returns])})
    assert [sample.carried_closeness(t, r) for t, r in ((write, {}), (read, {}), (search, []))] == [0, 1, 2]
    pool = sample.Pool()
    order = {"id": 1, "customer_email": "{}@example.com", "item": "Tea set"}
    listed = [{**order, "customer_email": f"listed{n}@example.com"} for n in range(3)]
    pool.carry(shop, search, listed)
    pool.carry(shop, read, {**order, "customer_email": "acted@example.com"})
    pool.carry(shop, write, {**order, "customer_email": "acted@example.com"})  # the same, later written
    [entries] = [found for sense, found in pool.carried.items() if "email" in sense]
    assert [(value, closeness) for value, _, closeness in entries] == [
        *((f"listed{n}@example.com", 2) for n in range(3)),
        ("acted@example.com", 0),
    ]
    assert sample.closest([(value, closeness) for value, _, closeness in entries]) == ["acted@example.com"]
    assert sample.closest([("a", 2), ("b", 1), ("c", 1)]) == ["b", "c"] and sample.closest([]) == []
