"""The effects pass on its own: it is given typed IR (passes 1-3 run, then the module
copied through JSON into a fresh analysis, so nothing of the type checker survives) and
must find each tool's and helper's read and write sets, aliasing included."""

from __future__ import annotations

import pytest

from compiler import ir
from compiler.analyse import constants, effects, symbols, types
from compiler.analyse.context import Analysis
from compiler.front.load import load_source

SPEC = """environment fx:
    title "Effects"

record Task:
    id: int
    title: str
    tags: list[str] = []

record Team:
    name: str
    members: map[str, Task] = {}

state:
    tasks: list[Task] = []
    teams: map[str, Team] = {}
    queue: list[int] = []
    names: list[str] = []
    total: int = 0

world:
    presets: list[str] = ["a", "b"]

fn retitle(item: Task, title: str) -> bool:
    item.title = title
    return True

fn first_open() -> Task:
    require len(tasks) > 0 else not_found("no tasks", entity="task")
    return tasks[0]

fn push(xs: list[int], x: int) -> bool:
    xs.append(x)
    return True

"""


def typed(extra: str) -> Analysis:
    """Passes 1-3 over SPEC + extra, then a fresh Analysis over a JSON copy of the result."""
    loaded = load_source(SPEC + extra, "fx.envspec")
    assert loaded.module is not None, loaded.diagnostics
    first = Analysis(loaded.module, [], loaded.data_files)
    symbols.run(first)
    constants.run(first)
    types.run(first)
    assert first.diags == [], [(d.code, d.line, d.message) for d in first.diags]
    module = ir.Module.model_validate_json(first.module.model_dump_json())
    fresh = Analysis(module, [])
    fresh.records = {name: ir.RecordDecl.model_validate(r.model_dump()) for name, r in first.records.items()}
    fresh.state = {name: ir.Field_.model_validate(f.model_dump()) for name, f in first.state.items()}
    fresh.world = {name: ir.WorldField.model_validate(w.model_dump()) for name, w in first.world.items()}
    fresh.fns = {fn.name: fn for fn in module.fns}
    fresh.tools = {tool.name: tool for tool in module.tools}
    return fresh


def run(extra: str) -> tuple[Analysis, dict[str, effects.Summary]]:
    a = typed(extra)
    summaries = effects.run(a)
    return a, summaries


def sets(extra: str, name: str = "act") -> tuple[list[str], list[str]]:
    a, _ = run(extra)
    assert a.diags == [], [(d.code, d.line, d.message) for d in a.diags]
    decl = a.tools.get(name) or a.fns[name]
    return decl.reads, decl.writes


@pytest.mark.parametrize(
    ("body", "reads", "writes"),
    [
        pytest.param(
            'tool act() -> bool:\n    let t = tasks[0]\n    t.title = "x"\n    return True\n',
            ["tasks"],
            ["tasks"],
            id="local-alias-of-a-record",
        ),
        pytest.param(
            'tool act() -> bool:\n    let t = copy(tasks[0])\n    t.title = "x"\n    return True\n',
            ["tasks"],
            [],
            id="copy-breaks-the-alias",
        ),
        pytest.param(
            'tool act() -> bool:\n    let t = tasks[0]\n    let u = t\n    u.tags.append("x")\n    return True\n',
            ["tasks"],
            ["tasks"],
            id="alias-of-an-alias",
        ),
        pytest.param(
            "tool act() -> bool:\n    let xs: list[int] = []\n    xs = queue\n    xs.append(1)\n    return True\n",
            ["queue"],
            ["queue"],
            id="assignment-adds-an-alias",
        ),
        pytest.param(
            'tool act() -> bool:\n    for t in tasks:\n        t.title = "x"\n    return True\n',
            ["tasks"],
            ["tasks"],
            id="loop-variable-of-records",
        ),
        pytest.param(
            "tool act() -> int:\n    let n = 0\n    for q in queue:\n        n = n + q\n    return n\n",
            ["queue"],
            [],
            id="loop-over-scalars-writes-nothing",
        ),
        pytest.param(
            'tool act() -> bool:\n    for name, team in teams:\n        team.members["x"] = Task(id=1, title="t")\n'
            "    return True\n",
            ["teams"],
            ["teams"],
            id="map-of-records-key-and-value",
        ),
        pytest.param(
            'tool act() -> bool:\n    let team = teams["a"]\n    let member = team.members["b"]\n    member.tags.clear()\n'
            "    return True\n",
            ["teams"],
            ["teams"],
            id="record-in-a-map-in-a-record-in-a-map",
        ),
        pytest.param(
            'tool act() -> bool:\n    let picked = [t for t in tasks if t.id > 1]\n    picked[0].title = "x"\n'
            "    return True\n",
            ["tasks"],
            ["tasks"],
            id="comprehension-items-alias",
        ),
        pytest.param(
            "tool act() -> bool:\n    let picked = [t for t in tasks if t.id > 1]\n    picked.clear()\n    return True\n",
            ["tasks"],
            [],
            id="comprehension-list-is-fresh",
        ),
        pytest.param(
            "tool act(flag: bool) -> bool:\n    let xs = queue if flag else []\n    xs.append(1)\n    return True\n",
            ["queue"],
            ["queue"],
            id="ternary",
        ),
        pytest.param(
            'tool act() -> bool:\n    return retitle(tasks[0], "x")\n',
            ["tasks"],
            ["tasks"],
            id="helper-changes-argument",
        ),
        pytest.param(
            'tool act() -> bool:\n    let t = first_open()\n    t.title = "y"\n    return True\n',
            ["tasks"],
            ["tasks"],
            id="helper-returns-an-alias",
        ),
        pytest.param(
            "tool act() -> bool:\n    let mine: list[int] = []\n    return push(mine, 1)\n",
            [],
            [],
            id="helper-changes-a-local",
        ),
        pytest.param("tool act() -> bool:\n    return push(queue, 1)\n", ["queue"], ["queue"], id="helper-into-state"),
        pytest.param("tool act() -> int:\n    total += 1\n    return total\n", ["total"], ["total"], id="augmented"),
        pytest.param("tool act() -> int:\n    total = 3\n    return 3\n", [], ["total"], id="plain-assignment"),
        pytest.param(
            "tool act() -> int:\n    return len(tasks) + len(presets)\n", ["tasks"], [], id="world-is-not-state"
        ),
        pytest.param(
            'tool act() -> bool:\n    audit("done")\n    return True\n',
            ["audit_log", "clock"],
            ["audit_log"],
            id="audit-built-in",
        ),
    ],
)
def test_read_and_write_sets(body: str, reads: list[str], writes: list[str]) -> None:
    assert sets(body) == (reads, writes)


def test_helper_summaries_name_parameters_not_state() -> None:
    _, summaries = run("")
    assert summaries["retitle"].writes == {"@0"}
    assert summaries["push"].writes == {"@0"}
    assert summaries["first_open"].return_roots == {"tasks"}
    assert summaries["first_open"].errors == {"not_found"}


def test_errors_of_helpers_reach_tools() -> None:
    a, _ = run("tool act() -> str:\n    return first_open().title\n")
    assert a.tools["act"].errors == ["invalid_argument", "not_found"]


def test_statements_and_calls_are_marked_for_the_undo_journal() -> None:
    a, _ = run(
        "tool act() -> bool:\n    let mine: list[int] = []\n    mine.append(1)\n    queue.append(2)\n"
        "    total = 1\n    return True\n"
    )
    body = a.tools["act"].body
    local_call, state_call = (s.value for s in body if isinstance(s, ir.ExprStmt))
    assert isinstance(local_call, ir.Call) and not local_call.mutates_state
    assert isinstance(state_call, ir.Call) and state_call.mutates_state
    assignment = next(s for s in body if isinstance(s, ir.Assign))
    assert assignment.touches_state


def test_world_data_through_an_alias_is_refused() -> None:
    a, _ = run('tool act() -> bool:\n    let xs = presets\n    xs.append("c")\n    return True\n')
    assert [(d.code, d.message) for d in a.diags] == [("E4006", "world data `presets` cannot be changed")]


def test_undeclared_write_is_reported_where_it_happens() -> None:
    a, _ = run(
        'tool act() -> bool:\n    reads tasks, queue\n    writes queue\n    let t = tasks[0]\n    t.title = "x"\n'
        "    return push(queue, 1)\n"
    )
    [problem] = a.diags
    assert problem.code == "E4001" and "writes `tasks`" in problem.message
    body_line = SPEC.count("\n") + 5  # `t.title = "x"`
    assert (problem.line, problem.col) == (body_line, 5)


def test_effects_pass_needs_only_the_typed_ir() -> None:
    """Names resolved and typed in the IR are all it reads: without them it finds nothing."""
    a = typed('tool act() -> bool:\n    let t = tasks[0]\n    t.title = "x"\n    return True\n')
    for node in _walk(a.tools["act"].body):
        if isinstance(node, ir.Name):
            node.ref = ""
    effects.run(a)
    assert (a.tools["act"].reads, a.tools["act"].writes) == ([], [])


def _walk(node: object) -> list[object]:
    from compiler.ir.tree import walk

    return list(walk(node))
