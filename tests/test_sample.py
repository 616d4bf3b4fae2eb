"""Chain sampling (compiler/synth/sample.py): every kept chain runs, ends with a write that
changed the state, leaves the state changed, and replays exactly on fresh environments
of the generated packages alone (a subprocess that imports nothing of envc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shipped import library_specs, package_dir, package_parents

from compiler import ir
from compiler.analyse import analyse_file, analyse_source
from compiler.check.package import write_tree
from compiler.lower import lower
from compiler.synth.sample import (
    BUILTIN_FIELDS,
    SampleEnv,
    SampleError,
    SampleOptions,
    Sampler,
    load_env,
    replay,
    rows_to_jsonl,
    sample,
    state_diff,
)

ROOT = Path(__file__).resolve().parent.parent
SPECS = library_specs()

REPLAYER = textwrap.dedent(
    """
    import importlib, json, os, sys
    sys.path[:0] = sys.argv[1].split(os.pathsep)
    def diff(before, after, path=""):
        if before == after:
            return []
        if isinstance(before, dict) and isinstance(after, dict):
            out = []
            for key in sorted(set(before) | set(after), key=str):
                child = path + "/" + str(key).replace("~", "~0").replace("/", "~1")
                if key not in before:
                    out.append({"path": child, "before": None, "after": after[key]})
                elif key not in after:
                    out.append({"path": child, "before": before[key], "after": None})
                else:
                    out.extend(diff(before[key], after[key], child))
            return out
        if isinstance(before, list) and isinstance(after, list):
            if len(before) == len(after):
                return [c for i, (b, a) in enumerate(zip(before, after)) for c in diff(b, a, f"{path}/{i}")]
            if after[: len(before)] == before:
                return [{"path": f"{path}/{i}", "before": None, "after": after[i]} for i in range(len(before), len(after))]
        return [{"path": path or "/", "before": before, "after": after}]
    failures = 0
    for line in open(sys.argv[2], encoding="utf-8"):
        row = json.loads(line)
        envs = {n: importlib.import_module(n).Environment(row["scenarios"][n]) for n in row["envs"]}
        starts = {n: e.state() for n, e in envs.items()}
        ok = True
        for call in row["calls"]:
            tool = call["tool"].split("__", 1)[1] if len(row["envs"]) > 1 else call["tool"]
            ok = ok and envs[call["env"]].call(tool, call["args"]) == call["result"]
        ok = ok and all(diff(starts[n], e.state()) == row["diff"][n] for n, e in envs.items())
        failures += not ok
    print(failures)
    """
)


def _environment(spec: Path) -> ir.Environment:
    env = analyse_file(spec).environment
    assert env is not None
    return env


@pytest.fixture(scope="module")
def library() -> dict[str, SampleEnv]:
    """Every shipped environment, sampled through its committed generated package."""
    envs = {}
    for spec in SPECS:
        env = _environment(spec)
        envs[env.header.name] = load_env(env, package_dir(env.header.name))
    return envs


def _sample(environments: dict[str, SampleEnv], **options: Any) -> list[dict[str, Any]]:
    rows, _ = sample(Sampler(environments, SampleOptions(**options)))
    return rows


def _replay_outside_envc(rows: list[dict[str, Any]], tmp_path: Path) -> int:
    """How many rows fail to replay in a fresh interpreter that sees only generated/."""
    chains = tmp_path / "chains.jsonl"
    chains.write_text(rows_to_jsonl(rows), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-c", REPLAYER, os.pathsep.join(package_parents()), str(chains)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(done.stdout.strip())


def _assert_chain_properties(row: dict[str, Any], envs: dict[str, SampleEnv]) -> None:
    for name in row["envs"]:
        calls = [c for c in row["calls"] if c["env"] == name]
        last = calls[-1]["tool"].split("__", 1)[-1]
        assert envs[name].graph.nodes[last]["kind"] == "write", row["id"]
        changed = {c["path"].split("/")[1] for c in row["diff"][name]}
        assert changed - BUILTIN_FIELDS, f"{row['id']}: {name} ends where it started"
    for call in row["calls"]:
        result = call["result"]
        assert not (isinstance(result, dict) and set(result) == {"error"}), row["id"]


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_chains_of_every_shipped_spec_replay(spec: Path, library: dict[str, SampleEnv], tmp_path: Path) -> None:
    name = _environment(spec).header.name
    envs = {name: library[name]}
    rows = _sample(envs, chains=30, seed=11)
    assert len(rows) == 30
    packages = {name: library[name].package}
    for row in rows:
        _assert_chain_properties(row, envs)
        assert replay(row, packages) == (True, "")
    assert _replay_outside_envc(rows, tmp_path) == 0


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31), spec=st.sampled_from(SPECS))
def test_random_seeds_give_chains_that_replay(seed: int, spec: Path, library: dict[str, SampleEnv]) -> None:
    name = _environment(spec).header.name
    envs = {name: library[name]}
    rows = _sample(envs, chains=5, seed=seed, min_len=1, max_len=6)
    assert rows
    for row in rows:
        _assert_chain_properties(row, envs)
        assert replay(row, {name: library[name].package}) == (True, "")


def test_cross_environment_chains_over_three_envs(library: dict[str, SampleEnv], tmp_path: Path) -> None:
    envs = {n: library[n] for n in ("hr_leave_payroll", "team_calendar", "expense_claims")}
    rows = _sample(envs, chains=40, seed=5, envs=(3, 3), max_len=3)
    # Three environments that a flow joins in sequence (payroll's staff -> their calendar ->
    # their expense claims) are fewer than the tries: most, not all, of 40 are found.
    assert len(rows) >= 20
    packages = {n: e.package for n, e in envs.items()}
    for row in rows:
        assert sorted(row["envs"]) == sorted(envs) and len(set(row["envs"])) == 3
        assert all(c["tool"] == f"{c['env']}__{c['tool'].split('__', 1)[1]}" for c in row["calls"])
        _assert_chain_properties(row, envs)
        assert replay(row, packages) == (True, "")
    assert _replay_outside_envc(rows, tmp_path) == 0


def test_same_seed_same_bytes_and_workers_agree(library: dict[str, SampleEnv]) -> None:
    envs = {n: library[n] for n in ("ticketing", "bfcl_ticket")}
    one = rows_to_jsonl(_sample(envs, chains=60, seed=9, envs=(1, 2)))
    again = rows_to_jsonl(_sample(envs, chains=60, seed=9, envs=(1, 2)))
    assert one == again
    assert rows_to_jsonl(_sample(envs, chains=60, seed=10, envs=(1, 2))) != one
    specs = [(e.model.model_dump_json(), str(package_dir(n))) for n, e in envs.items()]
    rows, _ = sample(Sampler(envs, SampleOptions(chains=60, seed=9, envs=(1, 2), workers=2)), worker_specs=specs)
    assert rows_to_jsonl(rows) == one


def test_chains_are_distinct_and_summary_counts(library: dict[str, SampleEnv]) -> None:
    envs = {"bfcl_twitter": library["bfcl_twitter"]}
    rows, summary = sample(Sampler(envs, SampleOptions(chains=80, seed=2, min_len=1, max_len=2)))
    keys = [json.dumps([r["scenarios"], [[c["tool"], c["args"]] for c in r["calls"]]], sort_keys=True) for r in rows]
    assert len(set(keys)) == len(keys) == summary.kept == 80
    assert len({r["id"] for r in rows}) == 80
    data = summary.to_json()
    assert sum(data["lengths"].values()) == 80 and set(data["lengths"]) <= {"1", "2"}
    assert 0 < data["tool_coverage"] <= 1 and 0 < data["write_tool_coverage"] <= 1


# --------------------------------------------------------------------------- small specs

SHOP = """environment shop:
    title "Shop"

record Order:
    id: int
    item: str
    paid: bool = False

state:
    orders: map[int, Order] = {}
    next_order: int = 1

world:
    items: list[str] = ["lamp", "desk"]

scenario one_order:
    orders = {1: {"id": 1, "item": "lamp"}}
    next_order = 2

tool order(item: str) -> int:
    require item in items else not_found(f"no item {item}", field="item", allowed=items)
    let id = next_order
    orders[id] = Order(id=id, item=item)
    next_order += 1
    return id

tool pay(order_id: int) -> bool:
    require order_id in orders else not_found(f"no order {order_id}")
    require not orders[order_id].paid else invalid_state("already paid")
    orders[order_id].paid = True
    return True

tool count() -> int:
    return len(orders)
"""


def _small(tmp_path: Path, text: str) -> SampleEnv:
    env = analyse_source(text, str(tmp_path / "shop.envspec")).environment
    assert env is not None
    write_tree(tmp_path / env.header.name, lower(env, "shop.envspec"))
    return load_env(env, tmp_path / env.header.name)


def test_arguments_come_from_state_world_and_earlier_results(tmp_path: Path) -> None:
    shop = _small(tmp_path, SHOP)
    rows = _sample({"shop": shop}, chains=40, seed=1, min_len=2, max_len=4)
    assert len(rows) == 40
    for row in rows:
        for call in row["calls"]:
            if call["tool"] == "order":
                assert call["args"]["item"] in ("lamp", "desk")  # only world items
            if call["tool"] == "pay":
                assert isinstance(call["args"]["order_id"], int)
        assert replay(row, {"shop": shop.package}) == (True, "")
    assert any(c["tool"] == "pay" for r in rows for c in r["calls"])


def test_a_spec_without_writes_keeps_no_chain(tmp_path: Path) -> None:
    reads_only = SHOP.split("tool order")[0] + "tool count() -> int:\n    return len(orders)\n"
    env = _small(tmp_path, reads_only)
    rows, summary = sample(Sampler({"shop": env}, SampleOptions(chains=3, seed=0)))
    assert rows == [] and summary.kept == 0
    assert summary.rejected == {"no write tool": 3 * 25}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (SampleOptions(chains=0), "--chains"),
        (SampleOptions(chains=1, min_len=3, max_len=2), "--min-len"),
        (SampleOptions(chains=1, envs=(2, 2)), "needs 2 environments"),
        (SampleOptions(chains=1, envs=(1, 6)), "at most 5"),
        (SampleOptions(chains=1, workers=0), "--workers"),
    ],
)
def test_bad_options_are_refused(options: SampleOptions, message: str, tmp_path: Path) -> None:
    with pytest.raises(SampleError, match=message):
        Sampler({"shop": _small(tmp_path, SHOP)}, options)


def test_state_diff_paths() -> None:
    before = {"orders": {"1": {"paid": False}}, "log": [1]}
    after = {"orders": {"1": {"paid": True}, "2": {"paid": False}}, "log": [1, 2]}
    assert state_diff(before, after) == [
        {"path": "/log/1", "before": None, "after": 2},
        {"path": "/orders/1/paid", "before": False, "after": True},
        {"path": "/orders/2", "before": None, "after": {"paid": False}},
    ]
    assert state_diff({"a/b": 1}, {"a/b": 2}) == [{"path": "/a~1b", "before": 1, "after": 2}]


# --------------------------------------------------------------------------- the command


def _envc(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_envc_sample_writes_jsonl_and_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "chains.jsonl"
    done = _envc("sample", "specs/it_operations/ticketing.envspec", "--chains", "20", "--seed", "4", "-o", str(out))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 20 and {"id", "seed", "envs", "scenarios", "calls", "diff"} <= set(rows[0])
    assert "kept 20 chains" in done.stderr and "tool coverage" in done.stderr
    again = tmp_path / "again.jsonl"
    assert (
        _envc(
            "sample", "specs/it_operations/ticketing.envspec", "--chains", "20", "--seed", "4", "-o", str(again)
        ).returncode
        == 0
    )
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["specs/it_operations/ticketing.envspec", "--chains", "2", "--envs", "x"], 2, "expected K or A-B"),
        (["specs/it_operations/ticketing.envspec", "--chains", "2", "--envs", "2"], 2, "needs 2 environments"),
        (["specs/missing.envspec", "--chains", "2"], 2, "cannot read"),
        (
            ["specs/it_operations/ticketing.envspec", "--chains", "2", "--offline"],
            2,
            "--offline is about the proposed edges",
        ),
    ],
)
def test_envc_sample_usage_errors(args: list[str], code: int, message: str, tmp_path: Path) -> None:
    done = _envc("sample", *args, "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode == code and message in done.stderr, done.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_envc_sample_of_a_broken_spec_exits_1(tmp_path: Path) -> None:
    spec = tmp_path / "broken.envspec"
    spec.write_text(SHOP.replace("len(orders)", "len(nothing_here)"), encoding="utf-8")
    done = _envc("sample", str(spec), "--chains", "2", "-o", str(tmp_path / "out.jsonl"), cwd=tmp_path)
    assert done.returncode == 1 and "E2002" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_envc_sample_llm_offline_without_a_lock_names_the_missing_entry(tmp_path: Path) -> None:
    """`--llm --offline` asks no model: a spec whose proposed edges are not locked is E6101."""
    (tmp_path / "pyproject.toml").write_text('[tool.envc.llm]\nmodel = "scripted"\n', encoding="utf-8")
    spec = tmp_path / "shop.envspec"
    spec.write_text(SHOP, encoding="utf-8")
    done = _envc(
        "sample", str(spec), "--chains", "2", "--llm", "--offline", "-o", str(tmp_path / "out.jsonl"), cwd=tmp_path
    )
    assert done.returncode == 1 and "E6101" in done.stderr, done.stderr
    assert not (tmp_path / "out.jsonl").exists()
