"""Recursive helpers (issue 14): a helper may call itself, directly or through others.

The effects pass summarises a call cycle as a fixpoint (each helper of it reads, writes
and may fail with what any of them does); the lowering gives the cycle's helpers a
`_depth` parameter and fails a call nested past `HELPER_DEPTH` as an internal error,
rolled back like every failing call. `SPEC` is lowered once, checked by ruff, mypy
--strict, the AST rules and its generated tests, and imported as a package.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import pytest

from compiler import ir
from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package, write_tree
from compiler.diagnostics import CODES, RETIRED
from compiler.lower import lower
from compiler.lower.pycode import HELPER_DEPTH
from compiler.synth import graph

SPEC = '''
environment recursion:
    title "Recursion"
    doc "Helpers that call themselves and one another."

record Node:
    """A node of a tree kept as a map: children point at their parent."""
    id: int
    parent: optional[int] = None
    size: int = 1
    label: str = ""

state:
    nodes: map[int, Node] = {1: {"id": 1}, 2: {"id": 2, "parent": 1, "size": 2}, 3: {"id": 3, "parent": 1, "size": 3}, 4: {"id": 4, "parent": 2, "size": 4}}
    steps: int = 0
    marks: list[str] = []

fn fact(n: int) -> int:
    if n <= 1:
        return 1
    return n * fact(n - 1)

fn fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fn subtree(id: int) -> int:
    """Sizes of `id` and of every node below it."""
    let total = nodes[id].size
    for child in sorted(keys(nodes)):
        if nodes[child].parent == id:
            total += subtree(child)
    return total

fn root_of(id: int) -> Node:
    """The node's root, itself part of `nodes`: a write through it writes `nodes`."""
    let parent = nodes[id].parent
    return nodes[id] if parent is None else root_of(parent)

fn ping(n: int) -> int:
    """Counts `steps` through `pong`, which does the writing."""
    require steps < 1000000 else invalid_state("enough steps", field="steps")
    if n <= 0:
        return steps
    return pong(n - 1)

fn pong(n: int) -> int:
    steps += 1
    require n < 10000 else invalid_state("too far", field="n")
    return ping(n)

tool factorial(n: int min 0 max 20) -> int:
    return fact(n)

tool fibonacci(n: int min 0 max 20) -> int:
    return fib(n)

tool size_below(id: int) -> int:
    require id in nodes else not_found(f"no node {id}", field="id")
    return subtree(id)

tool label_root(id: int, label: str) -> int:
    require id in nodes else not_found(f"no node {id}", field="id")
    let root = root_of(id)
    root.label = label
    return root.id

tool bounce(n: int min 0) -> int:
    marks.append("bounce")
    return ping(n)

tool bounce_back(n: int min 0) -> int:
    """Enters the cycle at `pong`."""
    return pong(n)

tool chain(length: int min 1 max 1000) -> int:
    """Hang a chain of `length` nodes below node 4, then measure the tree."""
    for i in range(length):
        nodes[100 + i] = Node(id=100 + i, parent=4 if i == 0 else 99 + i)
    return subtree(1)

test tree:
    expect factorial(n=5) == 120
    expect fibonacci(n=10) == 55
    expect size_below(id=1) == 10
    expect size_below(id=2) == 6
    expect label_root(id=4, label="top") == 1
    expect bounce(n=3) == 3
'''


def analysed(text: str) -> tuple[ir.Environment | None, list[str]]:
    result = analyse_source(text, "specs/recursion.envspec")
    return result.environment, [f"{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics]


@pytest.fixture(scope="module")
def environment() -> ir.Environment:
    env, problems = analysed(SPEC)
    assert env is not None and problems == [], problems
    return env


@pytest.fixture(scope="module")
def files(environment: ir.Environment) -> dict[str, str]:
    return lower(environment, "specs/recursion.envspec")


@pytest.fixture(scope="module")
def pkg(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    root = tmp_path_factory.mktemp("recursion")
    write_tree(root / "envc_test_recursion", files)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("envc_test_recursion")
    finally:
        sys.path.remove(str(root))


# --------------------------------------------------------------------------- analysis


def test_call_cycles_are_recorded_in_spec_order(environment: ir.Environment) -> None:
    cycles = {fn.name: fn.recursion for fn in environment.fns}
    assert cycles == {
        "fact": ["fact"],
        "fib": ["fib"],
        "subtree": ["subtree"],
        "root_of": ["root_of"],
        "ping": ["ping", "pong"],
        "pong": ["ping", "pong"],
    }


def test_a_cycle_shares_its_effects(environment: ir.Environment) -> None:
    fns = {fn.name: fn for fn in environment.fns}
    tools = {tool.name: tool for tool in environment.tools}
    # ping writes nothing itself, pong reads nothing itself but `n`: the fixpoint gives both all
    assert fns["ping"].writes == fns["pong"].writes == ["steps"]
    assert fns["ping"].reads == fns["pong"].reads == ["steps"]
    assert fns["ping"].errors == fns["pong"].errors == ["invalid_state"]
    assert tools["bounce"].writes == ["marks", "steps"]
    assert "invalid_state" in tools["bounce"].errors
    # the result of root_of aliases `nodes` through its recursive call
    assert tools["label_root"].writes == ["nodes"]
    assert tools["size_below"].writes == [] and tools["size_below"].reads == ["nodes"]


def test_the_tool_graph_sees_the_guards_of_the_whole_cycle(environment: ir.Environment) -> None:
    """`steps` guards `ping`; `bounce_back` enters the cycle at `pong`, which calls it."""
    facts = graph.tool_facts(environment)
    assert "steps" in facts["bounce"].guards and "steps" in facts["bounce_back"].guards
    assert "steps" not in facts["factorial"].guards


def test_declared_effects_are_checked_against_the_cycle() -> None:
    spec = SPEC.replace(
        "tool bounce(n: int min 0) -> int:\n",
        "tool bounce(n: int min 0) -> int:\n    reads steps, marks\n    writes marks\n",
    )
    env, problems = analysed(spec)
    assert env is None
    assert [p.split(" ", 2)[1:] for p in problems] == [
        ["E4001", "tool `bounce` writes `steps` but does not declare it"]
    ]


def test_an_error_inside_a_cycle_is_reported_once() -> None:
    spec = SPEC.replace("    steps += 1\n", "    steps += 1\n    audit_log = []\n")
    env, problems = analysed(spec)
    assert env is None
    assert [p.split(" ")[1] for p in problems] == ["E4004"]


def test_the_recursive_helper_code_is_retired() -> None:
    assert "E3021" in RETIRED and "E3021" not in CODES


# --------------------------------------------------------------------------- generated code


def test_generated_code_passes_ruff_mypy_strict_and_its_tests(
    environment: ir.Environment, files: dict[str, str]
) -> None:
    results = check_packages([Package(env=environment, name="recursion", files=files)], dynamic=True)
    result = results["recursion"]
    assert result.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in result.findings]
    assert result.static_ok and result.dynamic_ok and result.tests_failed == 0


def test_only_the_cycles_helpers_count_their_depth(files: dict[str, str]) -> None:
    text = files["environment.py"]
    assert "def _fact(self, n: int, _depth: int = 0) -> int:" in text
    assert "return n * self._fact(n - 1, _depth=_depth + 1)" in text
    assert "return self._pong(n - 1, _depth=_depth + 1)" in text
    assert "return self.size_below" not in text
    assert "self._subtree(id)" in text  # a tool starts a cycle at depth 0


def test_recursion_computes_what_python_does(pkg: ModuleType) -> None:
    env = pkg.Environment()

    def fact(n: int) -> int:
        return 1 if n <= 1 else n * fact(n - 1)

    def fib(n: int) -> int:
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert [env.factorial(n) for n in range(21)] == [fact(n) for n in range(21)]
    assert [env.fibonacci(n) for n in range(21)] == [fib(n) for n in range(21)]
    assert [env.size_below(i) for i in (1, 2, 3, 4)] == [10, 6, 3, 4]
    assert env.label_root(4, "top") == 1 and env.state()["nodes"]["1"]["label"] == "top"
    assert env.bounce(90) == 90 and env.state()["steps"] == 90


def test_a_cycle_may_nest_exactly_the_limit(pkg: ModuleType) -> None:
    env = pkg.Environment()
    # bounce(n) nests ping and pong 2n + 1 calls deep
    assert env.call("bounce", {"n": (HELPER_DEPTH - 1) // 2}) == (HELPER_DEPTH - 1) // 2
    # chain(k): subtree from node 1 through 2 and 4, then k chain nodes: k + 3 calls
    assert env.call("chain", {"length": HELPER_DEPTH - 3}) == 10 + HELPER_DEPTH - 3


def test_past_the_limit_a_call_fails_and_changes_nothing(pkg: ModuleType) -> None:
    env = pkg.Environment()
    env.call("bounce", {"n": 2})
    before = env.state_json()
    for tool, args in (("bounce", {"n": HELPER_DEPTH // 2}), ("chain", {"length": HELPER_DEPTH - 2})):
        result = env.call(tool, args)
        assert result["error"]["kind"] == "internal", result
        assert env.state_json() == before
    with pytest.raises(RuntimeError, match=r"helpers `ping`, `pong` recursed past 200 nested calls"):
        env.invoke("bounce", {"n": 1000})
    with pytest.raises(RuntimeError, match=r"helper `subtree` recursed past 200 nested calls"):
        env.invoke("chain", {"length": 500})
    assert env.state_json() == before
    assert env.call("bounce", {"n": 1}) == 3  # the session goes on
