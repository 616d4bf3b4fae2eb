"""The generated invariant tests catch broken environments (mutation testing).

Each case copies a generated package, plants one deliberate bug in `environment.py`,
runs the package's own generated tests with pytest in a subprocess, and asserts they
fail, and fail in the invariant meant to catch that bug. The unmodified copies pass.
All runs start together in one module fixture, so the module costs about as much as
the slowest few runs.

Bugs planted in generated/ticketing: a read tool that writes state, a write tool that
changes a field outside its write set, `_load_scenario` / `__init__` sharing the
precomputed state instead of copying it, a module-level counter leaking into results,
and a fork family whose check-out forgets to undo the other member's calls.
A missing undo-journal entry only shows when a call is refused after it has changed
something, which no tool of the shipped specs does; that case uses a small spec whose
tool books first and checks afterwards.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from shipped import package_dir

from compiler.analyse import analyse_source
from compiler.check.package import write_tree
from compiler.lower import lower

ROOT = Path(__file__).resolve().parent.parent
TICKETING = package_dir("ticketing")
RUN_TIMEOUT = 240

UNDO_SPEC = '''\
environment undo_probe:
    title "Undo probe"
    doc "A tool that changes state and then refuses: only the undo journal puts the state back."

state:
    balance: int = 100
    history: list[int] = []

tool withdraw(amount: int min 1) -> int:
    """Book a withdrawal, then check the balance: an overdraft is refused."""
    history.append(amount)
    balance -= amount
    require balance >= 0 else conflict(f"balance would be {balance}", field="amount", current=balance + amount)
    return balance

tool balance_now() -> int:
    """The balance."""
    return balance

test overdraft_is_refused:
    withdraw(amount=30)
    withdraw(amount=500) raises conflict "balance would be"
'''


# --------------------------------------------------------------------------- planting bugs


def environment_method(text: str, name: str, owner: str = "Environment") -> ast.FunctionDef:
    tree = ast.parse(text)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner)
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def insert_first(text: str, name: str, statement: str) -> str:
    """`statement` as the first statement of method `name` (after its docstring)."""
    node = environment_method(text, name)
    body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
    lines = text.splitlines(keepends=True)
    lines.insert(body[0].lineno - 1, " " * body[0].col_offset + statement + "\n")
    return "".join(lines)


def replace_line(text: str, name: str, old: str, new: str, owner: str = "Environment") -> str:
    """Replace the one line of method `name` (of class `owner`) holding `old` by `new`
    (same indentation)."""
    node = environment_method(text, name, owner)
    lines = text.splitlines(keepends=True)
    hits = [n for n in range(node.lineno - 1, node.end_lineno or node.lineno) if lines[n].strip() == old]
    assert len(hits) == 1, f"{name}: expected one line `{old}`, found {len(hits)}"
    indent = lines[hits[0]][: len(lines[hits[0]]) - len(lines[hits[0]].lstrip())]
    lines[hits[0]] = "".join(indent + part + "\n" for part in new.split("\n")) if new else ""
    return "".join(lines)


def read_tool_writes_state(text: str) -> str:
    return insert_first(text, "whoami", 'self._state["next_ticket_id"] += 1')


def write_outside_write_set(text: str) -> str:
    return insert_first(text, "create_ticket", 'self._state["clock"] = "2030-01-01T00:00:00"')


def scenario_shares_state(text: str) -> str:
    return replace_line(
        text,
        "_load_scenario",
        "self._state = copy_state(SCENARIO_STATES[scenario])",
        "self._state = SCENARIO_STATES[scenario]",
    )


def init_shares_default_state(text: str) -> str:
    return replace_line(
        text, "__init__", "self._state: State = copy_state(DEFAULT_STATE)", "self._state: State = DEFAULT_STATE"
    )


def counter_leaks_into_results(text: str) -> str:
    text = replace_line(
        text,
        "invoke",
        "return copy_json(self._run(tool, args)[1])",
        "_CALLS.append(tool)\n"
        "result = copy_json(self._run(tool, args)[1])\n"
        "if isinstance(result, dict):\n"
        '    result["served_as_call"] = len(_CALLS)\n'
        "return result",
    )
    marker = "\nclass Environment:"
    assert text.count(marker) == 1
    return text.replace(marker, "\n_CALLS: list[str] = []\n\n" + marker)


def fork_check_out_skips_undo(text: str) -> str:
    """A fork family's check-out that forgets to undo the other member's calls."""
    return replace_line(text, "check_out", "_undo_entry(entry)", "pass", owner="_Family")


def undo_entry_removed(text: str) -> str:
    return replace_line(text, "withdraw", 'undo_log.save(state, "balance")', "")


@dataclass
class Case:
    source: str  # "ticketing" or "undo_probe"
    plant: Callable[[str], str] | None
    caught_by: tuple[str, ...]  # text that must appear in the failing run's output (any of them)


CASES: dict[str, Case] = {
    "ticketing_unmodified": Case("ticketing", None, ()),
    "read_tool_writes_state": Case("ticketing", read_tool_writes_state, ("test_calls_keep_to_their_effects[whoami-",)),
    "write_outside_write_set": Case(
        "ticketing", write_outside_write_set, ("test_calls_keep_to_their_effects[create_ticket-",)
    ),
    "scenario_shares_state": Case(
        "ticketing", scenario_shares_state, ("test_same_calls_give_the_same_trace", "test_sessions_on_threads")
    ),
    "init_shares_default_state": Case(
        "ticketing", init_shares_default_state, ("test_same_calls_give_the_same_trace", "test_sessions_on_threads")
    ),
    "counter_leaks_into_results": Case(
        "ticketing", counter_leaks_into_results, ("test_same_calls_give_the_same_trace",)
    ),
    "fork_check_out_skips_undo": Case("ticketing", fork_check_out_skips_undo, ("test_forks_keep_apart",)),
    "undo_probe_unmodified": Case("undo_probe", None, ()),
    "undo_entry_removed": Case(
        "undo_probe", undo_entry_removed, ("refused call of withdraw changed the state", "left a change behind")
    ),
}


# --------------------------------------------------------------------------- running


@dataclass
class Run:
    returncode: int
    output: str
    environment: str  # the planted environment.py, for failure messages

    def failed_tests(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.startswith(("FAILED ", "ERROR "))]


def undo_probe_files() -> dict[str, str]:
    analysis = analyse_source(UNDO_SPEC, str(ROOT / "specs" / "undo_probe.envspec"))
    assert analysis.environment is not None, analysis.diagnostics
    return lower(analysis.environment, "specs/undo_probe.envspec")


def ticketing_files() -> dict[str, str]:
    return {
        p.relative_to(TICKETING).as_posix(): p.read_text(encoding="utf-8")
        for p in TICKETING.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    sources = {"ticketing": ticketing_files(), "undo_probe": undo_probe_files()}
    environ = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = {}
    roots = []
    for name, case in CASES.items():
        files = dict(sources[case.source])
        if case.plant is not None:
            files["environment.py"] = case.plant(files["environment.py"])
            assert files["environment.py"] != sources[case.source]["environment.py"]
        root = tmp_path_factory.mktemp(name)
        roots.append(root)
        package = root / case.source
        write_tree(package, files)
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(package),
            str(package / "tests"),
        ]
        process = subprocess.Popen(
            command, cwd=root, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        started[name] = (process, files["environment.py"])
    results = {}
    try:
        for name, (process, environment) in started.items():
            output, _ = process.communicate(timeout=RUN_TIMEOUT)
            results[name] = Run(process.returncode, output, environment)
    finally:
        for process, _ in started.values():
            if process.poll() is None:
                process.kill()
    for root in roots:  # only what this fixture made: the session's temp dir is shared
        shutil.rmtree(root, ignore_errors=True)
    return results


def test_the_planted_bugs_are_where_they_should_be() -> None:
    """Preconditions: whoami is a read tool, create_ticket may not touch the clock."""
    sys.path.insert(0, str(TICKETING.parent))
    try:
        from ticketing import TOOL_SPECS
    finally:
        sys.path.remove(str(TICKETING.parent))
    assert TOOL_SPECS["whoami"].writes == frozenset()
    assert "clock" not in TOOL_SPECS["create_ticket"].writes
    assert "next_ticket_id" in TOOL_SPECS["create_ticket"].writes


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case.plant is None])
def test_unmodified_package_passes(name: str, runs: dict[str, Run]) -> None:
    run = runs[name]
    assert run.returncode == 0, run.output[-3000:]
    assert " passed" in run.output and " failed" not in run.output


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case.plant is not None])
def test_generated_tests_catch_the_bug(name: str, runs: dict[str, Run]) -> None:
    run = runs[name]
    assert run.returncode == 1, f"the generated tests did not catch `{name}`:\n{run.output[-3000:]}"
    failures = run.failed_tests()
    assert failures, run.output[-3000:]
    caught_by = CASES[name].caught_by
    assert any(needle in run.output for needle in caught_by), (
        f"`{name}` was caught, but not by {caught_by}:\n" + "\n".join(failures)
    )
