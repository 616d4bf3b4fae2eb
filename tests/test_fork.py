"""Forks share one journaled state and stay fully independent (issue 12).

`Environment.fork()` copies nothing, now or at the first write: parent and forks become a
family sharing one state dict, each keeping the journal records of its calls, and a
member about to be used checks the dict out to its own records (undo the other's, redo
its own). These tests check that nothing leaks between members: random sequences of
calls, refused calls, calls that fail inside (rolled back), direct method calls,
snapshots, restores and forks of forks, on every committed package and on a small spec
with python bodies, each session compared after every step with a reference session
that got a deep copy (`restore(snapshot())`) instead; that the check catches a broken
undo or redo; and that members of one family called from several threads at once
through `SessionStore` end as they would one after another.
"""

from __future__ import annotations

import gc
import importlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from shipped import examples_per_package, package_names, put_on_path

from compiler.analyse import analyse_source
from compiler.check.package import write_tree
from compiler.lower import lower

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = package_names()

PYTHON_BODIES = '''\
environment fork_probe:
    title "Fork probe"
    doc "Python bodies that change containers in place, a set, nested lists and a counter."

state:
    notes: list[str] = ["first"]
    tags: set[str] = []
    boards: map[str, list[int]] = {"a": [1, 2]}
    count: int = 0

tool add_note(text: str) -> int:
    """Append a note from a python body."""
    reads notes
    writes notes
    python "self._state['notes'].append(text)\\nreturn len(self._state['notes'])"

tool push(board: str, value: int) -> int:
    """Append to a board's list from a python body; an unknown board fails half-way."""
    reads boards
    writes boards, count
    python "self._state['count'] += 1\\nself._state['boards'][board].append(value)\\nreturn value"

tool tag(name: str) -> list[str]:
    """Add a tag."""
    tags.add(name)
    return sorted(tags)

tool new_board(board: str) -> int:
    """Start an empty board."""
    boards[board] = []
    count += 1
    return count

tool peek(board: str) -> list[int]:
    """A board's items."""
    return boards.get(board, [])
'''


def import_generated(name: str) -> ModuleType:
    put_on_path()
    return importlib.import_module(f"{name}.environment")


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    analysis = analyse_source(PYTHON_BODIES, str(ROOT / "specs" / "fork_probe.envspec"))
    assert analysis.environment is not None, analysis.diagnostics
    root = tmp_path_factory.mktemp("fork_probe")
    write_tree(root / "fork_probe", lower(analysis.environment, "specs/fork_probe.envspec"))
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("fork_probe.environment")
    finally:
        sys.path.remove(str(root))


Calls = tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]
"""Valid and hostile arguments of every tool."""


def sample_calls(name: str) -> Calls:
    """Valid and hostile arguments of every tool, from the package's generated tests."""
    tests = importlib.import_module(f"{name}.tests.test_environment")
    return sorted(tests.SAMPLE_ARGUMENTS.items()), [(tool, args) for tool, _, args in tests.BAD_ARGUMENTS]


PROBE_CALLS: Calls = (
    [
        ("add_note", {"text": "x"}),
        ("push", {"board": "a", "value": 3}),
        ("push", {"board": "missing", "value": 4}),  # KeyError half-way: rolled back, internal
        ("tag", {"name": "t"}),
        ("tag", {"name": "u"}),
        ("new_board", {"board": "b"}),
        ("push", {"board": "b", "value": 5}),
        ("peek", {"board": "a"}),
        ("peek", {"board": "b"}),
    ],
    [("push", {"board": "a"}), ("tag", {"name": 3})],
)


# --------------------------------------------------------------------------- the model


@dataclass
class Pair:
    """A session under test and its reference, which never shares anything."""

    env: Any
    ref: Any
    saved: list[tuple[Any, Any]] = field(default_factory=list)


def deep_copy_of(module: ModuleType, env: Any) -> Any:
    reference = module.Environment()
    reference.restore(env.snapshot())
    return reference


@contextmanager
def failing_after(module: ModuleType, saves: int) -> Iterator[None]:
    """Every journal entry after the first `saves` raises: an internal failure mid-call."""
    original = module._UndoLog.save
    count = [0]

    def save(self: Any, container: Any, key: Any) -> None:
        count[0] += 1
        if count[0] > saves:
            raise RuntimeError("injected failure")
        original(self, container, key)

    module._UndoLog.save = save
    try:
        yield
    finally:
        module._UndoLog.save = original


Step = tuple[str, int, int, int]
"""(operation, session, call or snapshot index, journal entries before a fault)"""

steps = st.lists(
    st.tuples(
        st.sampled_from(
            ["call", "call", "call", "bad", "fork", "fork", "fault", "snapshot", "restore", "direct", "invoke"]
        ),
        st.integers(0, 7),
        st.integers(0, 10_000),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=30,
)


def run_steps(module: ModuleType, scenario: Any, calls: Calls, plan: list[Step]) -> None:
    first = module.Environment(scenario)
    pairs = [Pair(first, deep_copy_of(module, first))]
    valid, hostile = calls
    for operation, who, which, saves in plan:
        pair = pairs[who % len(pairs)]
        tool, args = (
            (hostile or valid)[which % len(hostile or valid)] if operation == "bad" else valid[which % len(valid)]
        )
        if operation == "fork":
            child = pair.env.fork()
            pairs.append(Pair(child, deep_copy_of(module, pair.ref)))
        elif operation in ("call", "bad"):
            assert pair.env.call(tool, json.loads(json.dumps(args))) == pair.ref.call(tool, args)
        elif operation == "fault":
            with failing_after(module, saves):
                got = pair.env.call(tool, dict(args))
            with failing_after(module, saves):
                want = pair.ref.call(tool, dict(args))
            assert got == want
        elif operation == "invoke":
            assert invoked(pair.env, tool, args, module) == invoked(pair.ref, tool, args, module)
        elif operation == "direct":  # a tool method called as such (adapters do): checked out too
            assert outcome(pair.env, tool, args, module) == outcome(pair.ref, tool, args, module)
        elif operation == "snapshot":
            pair.saved.append((pair.env.snapshot(), pair.ref.snapshot()))
        elif pair.saved:
            mine, theirs = pair.saved[which % len(pair.saved)]
            pair.env.restore(mine)
            pair.ref.restore(theirs)
        for each in pairs:
            assert each.env.state_json() == each.ref.state_json()


def invoked(env: Any, tool: str, args: dict[str, Any], module: ModuleType) -> Any:
    """`invoke`'s detached result, or the error it raised."""
    try:
        return env.invoke(tool, json.loads(json.dumps(args)))
    except module.DomainError as error:
        return error.to_json()
    except Exception as error:
        return type(error).__name__


def outcome(env: Any, tool: str, args: dict[str, Any], module: ModuleType) -> Any:
    """A direct method call on checked arguments: the detached result, or the error."""
    try:
        kwargs = module.check_arguments(module.TOOL_SPECS[tool], args)
        return module.to_json(getattr(env, tool)(**kwargs))
    except module.DomainError as error:
        return error.to_json()
    except Exception as error:  # a python body's own failure, rolled back by the journal
        return type(error).__name__


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PER_PACKAGE = settings(SETTINGS, max_examples=examples_per_package(780))
"""60 per package for 13 packages, 30 for 45: the property's total stays bounded."""


@pytest.mark.parametrize("name", PACKAGES)
def test_forks_stay_independent(name: str) -> None:
    module = import_generated(name)
    calls = sample_calls(name)
    scenarios = [None, *module.SCENARIOS]

    @PER_PACKAGE
    @given(scenario=st.sampled_from(scenarios), plan=steps)
    def check(scenario: Any, plan: list[Step]) -> None:
        run_steps(module, scenario, calls, plan)

    check()


def test_forks_with_python_bodies_stay_independent(probe: ModuleType) -> None:
    @SETTINGS
    @given(plan=steps)
    def check(plan: list[Step]) -> None:
        run_steps(probe, None, PROBE_CALLS, plan)

    check()


# --------------------------------------------------------------------------- the mechanism


def test_a_fork_and_its_first_write_copy_nothing() -> None:
    module = import_generated("ticketing")
    parent = module.Environment("busy_queue")
    before = parent.state_json()
    tickets = parent.view()["tickets"]
    child = parent.fork()
    assert child.view()["tickets"] is tickets, "a fork copies nothing up front"
    assert "error" not in child.call("close_ticket", {"ticket_id": 1})
    assert child.view()["tickets"] is tickets, "nor at its first write: the call is journaled"
    assert len(child._delta) == 1 and not parent._delta
    assert "error" in child.call("close_ticket", {"ticket_id": 1}), "closing twice is refused"
    assert len(child._delta) == 1, "a refused call leaves no record"
    assert parent.state_json() == before
    assert child.view()["tickets"][1]["status"] == "closed"
    assert "error" not in parent.call("create_ticket", {"title": "Only in the parent"})
    assert child.state()["tickets"]["1"]["status"] == "closed"
    assert parent.state()["tickets"]["1"]["status"] != "closed"
    assert len(child.state()["tickets"]) + 1 == len(parent.state()["tickets"])


def test_the_last_member_left_goes_on_alone() -> None:
    module = import_generated("ticketing")
    parent = module.Environment("busy_queue")
    children = [parent.fork() for _ in range(3)]
    for child in children:
        child.call("close_ticket", {"ticket_id": 1})
    del children, child
    gc.collect()
    assert parent.state()["tickets"]["1"]["status"] != "closed"
    assert type(parent) is module.Environment, "alone again: no checkout, no records"


def test_a_subclass_keeps_its_methods_in_a_family() -> None:
    module = import_generated("ticketing")

    class Counting(module.Environment):  # type: ignore[name-defined,misc]
        calls = 0

        def call(self, tool: str, args: Any = None) -> Any:
            Counting.calls += 1
            return super().call(tool, args)

    env = Counting("busy_queue")
    other = env.fork()
    env.call("close_ticket", {"ticket_id": 1})
    assert isinstance(env, Counting) and Counting.calls == 1
    assert other.state()["tickets"]["1"]["status"] != "closed"
    env.restore(env.snapshot())
    assert type(env) is Counting, "leaving the family gives the session its own class back"


def test_a_python_body_takes_a_private_copy(probe: ModuleType) -> None:
    parent = probe.Environment()
    child = parent.fork()
    assert child.call("tag", {"name": "t"}) == ["t"]
    assert type(child) is not probe.Environment, "a journaled tool keeps the fork in the family"
    assert child.call("add_note", {"text": "x"}) == 2
    assert type(child) is probe.Environment, "a python body runs on a state of the fork's own"
    assert child.view() is not parent.view()
    assert parent.state() == probe.Environment().state()
    assert child.state()["tags"] == ["t"] and child.state()["notes"] == ["first", "x"]


# --------------------------------------------------------------------------- planted bugs


def skipping_check_out(module: ModuleType, skip: str) -> Callable[[Any, list[Any]], None]:
    """`_Family.check_out` with one record left out of the undo or the redo."""

    def check_out(family: Any, delta: list[Any]) -> None:
        applied = family.applied
        common = 0
        while common < min(len(applied), len(delta)) and applied[common] is delta[common]:
            common += 1
        undo = list(reversed(applied[common:]))
        redo = delta[common:]
        for record in undo[1:] if skip == "undo" else undo:
            for entry in reversed(record):
                module._undo_entry(entry)
        for record in redo[1:] if skip == "redo" else redo:
            for entry in record:
                module._redo_entry(entry)
        family.applied = delta

    return check_out


def old_values_as_new(module: ModuleType) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """`_with_new_value` broken: for a key of a map or an index of a list, the value it held
    before the call, as its new one."""
    original = module._with_new_value

    def with_new_value(entry: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*entry, entry[3]) if entry[0] == 0 else original(entry)

    return with_new_value


@pytest.mark.parametrize("bug", ["undo", "redo", "new values"])
def test_the_check_catches_a_broken_undo_or_redo(bug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = import_generated("ticketing")
    if bug == "new values":
        monkeypatch.setattr(module, "_with_new_value", old_values_as_new(module))
    else:
        monkeypatch.setattr(module._Family, "check_out", skipping_check_out(module, bug))
    calls = sample_calls("ticketing")

    @settings(max_examples=200, deadline=None, database=None, phases=[Phase.generate])
    @given(plan=steps)
    def check(plan: list[Step]) -> None:
        run_steps(module, "busy_queue", calls, plan)

    with pytest.raises(AssertionError):
        check()


def test_the_planted_bugs_leave_the_real_check_out_alone() -> None:
    """The copy of `check_out` above, with nothing skipped, is the real one: the planted
    bugs differ from it by the skipped record only."""
    module = import_generated("ticketing")
    original = module._Family.check_out
    module._Family.check_out = skipping_check_out(module, "nothing")
    try:
        run_steps(
            module,
            "busy_queue",
            sample_calls("ticketing"),
            [("fork", 0, 0, 0), ("call", 1, 3, 0), ("call", 0, 5, 0)] * 3,
        )
    finally:
        module._Family.check_out = original


# --------------------------------------------------------------------------- threads


def test_members_called_from_threads_end_as_one_after_another() -> None:
    """Siblings of one family on their own threads, through SessionStore (as `envc
    serve` runs them): each ends as a reference session given its calls alone."""
    module = import_generated("ticketing")
    sessions = importlib.import_module("ticketing.sessions")
    store = sessions.SessionStore()
    store.open("root", "busy_queue")
    ids = [f"s{n}" for n in range(6)]
    for n, session_id in enumerate(ids):
        store.fork("root" if n < 3 else ids[n - 3], session_id)

    def work(n: int) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("create_ticket", {"title": f"From {n}", "priority": 1 + n % 5}),
            ("set_status", {"ticket_id": 1 + n % 3, "status": "in_progress"}),
            ("update_ticket", {"ticket_id": 1 + (n + 1) % 3, "title": f"Renamed by {n}"}),
            ("close_ticket", {"ticket_id": 1 + n % 3}),
            ("create_ticket", {"title": f"Again from {n}"}),
        ] * 8

    results: dict[str, list[Any]] = {}
    barrier = threading.Barrier(len(ids))

    def run(n: int, session_id: str) -> None:
        barrier.wait()
        results[session_id] = [store.call(session_id, tool, args) for tool, args in work(n)]

    threads = [threading.Thread(target=run, args=(n, session_id)) for n, session_id in enumerate(ids)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n, session_id in enumerate(ids):
        reference = module.Environment("busy_queue")  # every fork was made before any call
        assert results[session_id] == [reference.call(tool, args) for tool, args in work(n)]
        assert store.state(session_id) == reference.state()
    assert store.state("root") == module.Environment("busy_queue").state()


def test_session_store_forks_are_independent() -> None:
    sessions = importlib.import_module("ticketing.sessions")
    store = sessions.SessionStore()
    store.open("a", "busy_queue")
    store.fork("a", "b")
    store.fork("b", "c")
    start = store.state("a")
    assert "error" not in store.call("b", "close_ticket", {"ticket_id": 1})
    assert "error" not in store.call("c", "create_ticket", {"title": "In c"})
    assert store.state("a") == start
    assert store.state("b")["tickets"]["1"]["status"] == "closed"
    assert store.state("c")["tickets"]["1"]["status"] == start["tickets"]["1"]["status"]
    assert len(store.state("c")["tickets"]) == len(start["tickets"]) + 1 == len(store.state("b")["tickets"]) + 1


def test_restoring_a_parent_leaves_its_forks_alone() -> None:
    module = import_generated("ticketing")
    parent = module.Environment("busy_queue")
    saved = parent.snapshot()
    child = parent.fork()
    parent.call("close_ticket", {"ticket_id": 1})
    parent.restore(saved)
    parent.call("create_ticket", {"title": "After the restore"})
    fresh = module.Environment("busy_queue")
    assert child.state_json() == fresh.state_json()
    saved["tickets"][1]["title"] = "Changed in the snapshot"
    assert parent.state()["tickets"]["1"]["title"] != "Changed in the snapshot"
