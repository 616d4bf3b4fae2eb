"""Lowering bugs found while writing library specs: a world field read inside a test's
comprehension or lambda (the generated tests named an undefined `WORLD`; a record's
`copy` one undefined `_copy_NAME`), and a
recursive record with named scenarios (`SCENARIO_STATES`, built at import, called
`_check_nesting` before its definition). Specs with every combination of recursive
records, state from a file, scenarios and world from a file are lowered, walked for a
module-level statement that reaches a name defined only later, and imported; the
world spec is compiled with full QC and its generated tests run."""

from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lowered import imported_package, lowered_files

ROOT = Path(__file__).resolve().parents[2]

WORLD_SPEC = '''environment mail_desk:
    title "Mailbox"

record Message:
    id: int
    sender: str
    folder: str = "inbox"

state:
    messages: map[int, Message] = {}

world:
    owner: str = "ann"
    reps: list[str] = ["ann", "bo"]

fn from_owner(m: Message) -> bool:
    return m.sender == owner

tool send(to: str) -> int:
    """Send a message from the owner."""
    let m = Message(id=len(messages) + 1, sender=owner)
    messages[m.id] = m
    return m.id

test world_in_comprehensions:
    send(to="x")
    expect all([m.sender == owner for m in values(messages) if m.folder == "inbox"])
    expect all([m.sender in reps for m in values(messages)])
    expect min(values(messages), key=lambda m: m.id + len(owner) + len(reps)).sender == owner
    expect all([from_owner(m) and owner in reps for m in values(messages)])
    expect owner in reps

test copies_in_tests:
    send(to="x")
    let first = copy(messages[1])
    let every = copy(messages)
    expect first.sender == owner and len(every) == 1
    expect all([copy(m).sender in reps for m in values(messages)])
'''


def combined_spec(recursive: bool, state_file: bool, scenarios: bool, world_file: bool) -> tuple[str, dict[str, str]]:
    """A spec with the chosen features, and the data files it reads (path -> JSON text)."""
    files: dict[str, str] = {}
    lines = ['environment combo:\n    title "Combo"\n']
    if recursive:
        lines.append("record TreeNode:\n    title: str\n    children: list[TreeNode] = []\n")
    state = ["state:", "    count: int = 0"]
    if recursive:
        state.append("    roots: list[TreeNode] = []")
    if state_file:
        files["data/names.json"] = json.dumps({"a": 1, "b": 2})
        files["data/meta.json"] = json.dumps({"tags": ["x"]})
        state.append('    names: map[str, int] from "data/names.json"')
        state.append('    meta: json from "data/meta.json"')  # converted by `copy_json` at import
    lines.append("\n".join(state) + "\n")
    if world_file:
        files["data/limits.json"] = json.dumps([1, 2, 3])
        lines.append('world:\n    limits: list[int] from "data/limits.json"\n')
    if scenarios:
        scenario = ["scenario busy:", "    count = 3"]
        if recursive:
            scenario.append('    roots = [{"title": "a", "children": [{"title": "b"}]}]')
        lines.append("\n".join(scenario) + "\n")
    reads = " + len(limits)" if world_file else ""
    lines.append(f'tool total() -> int:\n    """The count."""\n    return count{reads}\n')
    return "\n".join(lines), files


def late_uses(source: str) -> list[str]:
    """Names a module-level statement reaches (through the module's functions and
    classes, transitively) before the statement that defines them has run."""
    module = ast.parse(source)
    bodies: dict[str, list[ast.AST]] = {}
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bodies[stmt.name] = list(stmt.body)
        elif isinstance(stmt, ast.ClassDef):
            bodies[stmt.name] = [s for s in stmt.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"]
    module_names = set(bodies).union(*(_bound(s) for s in module.body))
    defined: set[str] = set()
    problems: list[str] = []
    for stmt in module.body:
        ran = _executed_parts(stmt)
        for name in sorted(_reached(ran, bodies) - defined):
            if name in module_names:
                problems.append(f"line {stmt.lineno}: {name}")
        defined |= _bound(stmt)
    return problems


def _executed_parts(stmt: ast.stmt) -> list[ast.AST]:
    """What runs when a module-level statement runs: not a function's body, nor a
    method's, but decorators, defaults, base classes and everything else."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _running_parts(stmt)
    if isinstance(stmt, ast.ClassDef):
        kept = [s for s in stmt.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return [*stmt.decorator_list, *stmt.bases, *kept]
    return [stmt]


def _reached(nodes: list[ast.AST], bodies: dict[str, list[ast.AST]]) -> set[str]:
    """Names loaded by `nodes` as they run, and by the bodies of the module functions
    (and classes' `__init__`) they call, transitively; a nested function's or lambda's
    body runs only when called, so it is not entered."""
    seen: set[str] = set()
    entered: set[str] = set()
    todo = list(nodes)
    while todo:
        for node in _running(todo.pop()):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                seen.add(node.id)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in entered:
                entered.add(node.func.id)
                todo.extend(bodies.get(node.func.id, []))
    return seen


def _running(node: ast.AST) -> list[ast.AST]:
    """`node` and what under it runs with it: not the bodies of nested functions and
    lambdas, nor annotations."""
    found = [node]
    for child in ast.iter_child_nodes(node):
        if isinstance(node, (ast.AnnAssign, ast.arg)) and child is node.annotation:
            continue  # annotations are strings here (`from __future__ import annotations`)
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += _running_parts(child)
        elif isinstance(child, ast.Lambda):
            found += [d for d in child.args.defaults]
        else:
            found += _running(child)
    return found


def _running_parts(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """What a `def` statement runs: its decorators and defaults."""
    parts = [*function.decorator_list, *function.args.defaults, *(d for d in function.args.kw_defaults if d)]
    return [n for part in parts for n in _running(part)]


def _bound(stmt: ast.stmt) -> set[str]:
    """Module-level names a statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


COMBINATIONS = list(itertools.product([False, True], repeat=4))


@pytest.mark.parametrize(("recursive", "state_file", "scenarios", "world_file"), COMBINATIONS)
def test_every_combination_defines_before_use_and_imports(
    recursive: bool, state_file: bool, scenarios: bool, world_file: bool, tmp_path: Path
) -> None:
    text, data = combined_spec(recursive, state_file, scenarios, world_file)
    spec = tmp_path / "spec" / "combo.envspec"
    for relative, content in {"combo.envspec": text, **data}.items():
        (spec.parent / relative).parent.mkdir(parents=True, exist_ok=True)
        (spec.parent / relative).write_text(content, encoding="utf-8")
    files = lowered_files(spec)
    modules = {name: text for name, text in files.items() if name.endswith(".py")}
    assert "environment.py" in modules
    assert {name: late_uses(text) for name, text in modules.items()} == dict.fromkeys(modules, [])
    with imported_package(files, tmp_path / "out", "combo", "environment") as environment:
        assert environment.Environment("busy" if scenarios else None).call("total", {}) >= 0


def test_the_walk_sees_a_use_before_definition() -> None:
    """The check itself: a module-level call reaching a later function is reported."""
    source = "def a():\n    return b()\n\n\nX = a()\n\n\ndef b():\n    return 1\n"
    assert late_uses(source) == ["line 5: b"]


def test_world_fields_and_record_copies_in_tests(tmp_path: Path) -> None:
    """World fields inside comprehensions, lambdas and helper calls, and copies of
    records, in a spec's tests: compiled with full QC (mypy, ruff, the generated tests)
    and those tests run again here."""
    spec = tmp_path / "mail_desk.envspec"
    spec.write_text(WORLD_SPEC, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    compiled = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", "-o", str(tmp_path / "out"), "-j", "1", str(spec)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    tests = tmp_path / "out" / "mail_desk" / "tests" / "test_environment.py"
    assert "environment.WORLD[" in tests.read_text(encoding="utf-8")
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "world_in_comprehensions or copies_in_tests",
            str(tests),
        ],
        cwd=tmp_path / "out",
        env={**os.environ, "PYTHONPATH": str(tmp_path / "out")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0 and "2 passed" in ran.stdout, ran.stdout + ran.stderr
