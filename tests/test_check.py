"""Quality control of generated packages (`compiler/check/`).

AST rules: one fixture per rule in `tests/fixtures/ast_rules/<rule>.py`, a small modified
copy of a real generated `environment.py`; every line that must be reported carries a
`# expect: <message>` comment, and the rule must report exactly those (line and
message), nothing else. The committed generated packages have no findings at all.
`check_packages` runs end to end (ruff, mypy, AST rules, generated tests) on copies of
generated/it_operations/ticketing with deliberate faults, and each finding is mapped back to the spec
line of the tool it sits in.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from refresh_golden import analysed_environment
from shipped import package_dir, package_dirs

from compiler import ir
from compiler.analyse import analyse_source
from compiler.build.packages import MANIFEST
from compiler.check import check_packages, dynamic, rules
from compiler.check.dynamic import DYNAMIC_MEMORY_BYTES, limit_memory
from compiler.check.package import Finding, Package
from compiler.check.positions import spec_position, to_diagnostics
from compiler.check.rules import ast_rules, rule_imports
from compiler.lower import lower

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "ast_rules"
COMMITTED = {
    name: ROOT / json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["spec"]
    for name, folder in sorted(package_dirs().items())
}
"""Package name -> spec, for every package committed under generated/."""
CHECKED = ["ticketing", "team_calendar"]
"""The committed packages checked here (test_generated_up_to_date.py keeps all current)."""
EXPECT = re.compile(r"#\s*expect:\s*(?P<message>.+?)\s*$")
RULES: dict[str, Callable[..., list[Finding]]] = {
    name: fn for name, fn in inspect.getmembers(rules, inspect.isfunction) if name.startswith("rule_")
}
# Rules that need nothing but the module: run on every fixture, they must stay silent
# except on their own fixture (each fixture breaks exactly one rule).
CONTEXT_FREE = [
    "rule_imports",
    "rule_no_bare_except",
    "rule_forbidden_calls",
    "rule_state_copied",
    "rule_data_files",
    "rule_module_names",
]

MINI_SPEC = """\
environment mini_desk:
    title "Mini help desk"
    doc "A frozen, small cousin of specs/it_operations/ticketing.envspec: the rule fixtures are checked against it."

enum Status:
    open, closed

record Ticket:
    id: int
    title: str
    status: Status = Status.open
    created_by: str

state:
    tickets: map[int, Ticket] = {}
    next_ticket_id: int = 1
    current_user: optional[str] = None

world:
    users: map[str, str] = {"alice": "alice-pass"}

fn require_login() -> str:
    let user = current_user
    require user is not None else unauthenticated("no user is logged in; call login first")
    return user

tool login(username: str, password: str) -> bool:
    \"\"\"Start a session.\"\"\"
    require username in users else not_found(f"unknown user {username}", entity="user", field="username", allowed=sorted(keys(users)))
    require users[username] == password else unauthenticated("wrong password", field="password")
    current_user = username
    audit("login", entity=username)
    return True

tool logout() -> bool:
    \"\"\"End the session.\"\"\"
    let user = require_login()
    current_user = None
    audit("logout", entity=user)
    return True

tool whoami() -> optional[str]:
    \"\"\"The signed-in user, or None.\"\"\"
    return current_user

tool create_ticket(title: str min_length 1) -> Ticket:
    \"\"\"Open a ticket.\"\"\"
    let user = require_login()
    let ticket = Ticket(id=next_ticket_id, title=title, created_by=user)
    tickets[ticket.id] = ticket
    next_ticket_id += 1
    return ticket

tool close_ticket(ticket_id: int) -> Ticket:
    \"\"\"Close a ticket.\"\"\"
    require_login()
    require ticket_id in tickets else not_found(f"ticket {ticket_id} does not exist", entity="ticket", field="ticket_id", allowed=sorted(keys(tickets)))
    let ticket = tickets[ticket_id]
    ticket.status = Status.closed
    return ticket
"""
"""The environment the tool-dependent fixtures (parity, declared effects) are checked
against: frozen here so that editing a shipped spec never invalidates a fixture."""


@pytest.fixture(scope="module")
def mini_env() -> ir.Environment:
    analysis = analyse_source(MINI_SPEC, str(ROOT / "specs" / "mini.envspec"))
    assert analysis.environment is not None, analysis.diagnostics
    return analysis.environment


@pytest.fixture(scope="module")
def shipped() -> dict[str, Package]:
    """The checked committed packages, with the analysed environment of their spec."""
    packages = {}
    for name in CHECKED:
        spec = COMMITTED[name]
        folder = package_dir(name)
        files = {
            p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
        }
        packages[name] = Package(env=analysed_environment(spec), name=name, files=files)
    return packages


def expected_findings(text: str) -> list[tuple[int, str]]:
    return [
        (number, match["message"])
        for number, line in enumerate(text.splitlines(), start=1)
        if not line.lstrip().startswith("#") and (match := EXPECT.search(line))
    ]


def run_rule(name: str, text: str, env: ir.Environment) -> list[Finding]:
    rule = RULES[name]
    tree = ast.parse(text)
    if len(inspect.signature(rule).parameters) == 3:
        return rule("environment.py", tree, env)
    return rule("environment.py", tree)


def method(text: str, name: str) -> ast.FunctionDef:
    tree = ast.parse(text)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Environment")
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def insert_in_method(text: str, name: str, statement: str) -> tuple[str, int]:
    """Put `statement` first in the body of method `name` (after its docstring)."""
    node = method(text, name)
    body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
    line = body[0].lineno
    lines = text.splitlines(keepends=True)
    lines.insert(line - 1, " " * body[0].col_offset + statement + "\n")
    return "".join(lines), line


def replace_in_method(text: str, name: str, old: str, new: str) -> tuple[str, int]:
    """Replace the one line of method `name` that holds `old`."""
    node = method(text, name)
    lines = text.splitlines(keepends=True)
    hits = [n for n in range(node.lineno, (node.end_lineno or node.lineno) + 1) if old in lines[n - 1]]
    assert len(hits) == 1, f"{name}: expected one line with {old!r}, found {hits}"
    lines[hits[0] - 1] = lines[hits[0] - 1].replace(old, new)
    return "".join(lines), hits[0]


def line_of(text: str, needle: str) -> int:
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


def decl_line(path: str, line: int) -> str:
    return Path(path).read_text(encoding="utf-8").splitlines()[line - 1]


# --------------------------------------------------------------------------- AST rules


def test_every_rule_has_a_fixture_and_every_fixture_a_rule() -> None:
    assert set(RULES) >= {
        "rule_imports",
        "rule_no_bare_except",
        "rule_forbidden_calls",
        "rule_tool_parity",
        "rule_state_copied",
        "rule_declared_effects",
    }
    assert {p.stem for p in FIXTURES.glob("*.py")} == set(RULES)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_reports_exactly_its_fixture_findings(rule: str, mini_env: ir.Environment) -> None:
    text = (FIXTURES / f"{rule}.py").read_text(encoding="utf-8")
    expected = expected_findings(text)
    assert expected, f"{rule}.py marks no finding"
    findings = run_rule(rule, text, mini_env)
    assert all(f.tool == "ast" and f.file == "environment.py" for f in findings)
    assert sorted((f.line, f.message) for f in findings) == sorted(expected)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_fixture_breaks_no_other_rule(rule: str, mini_env: ir.Environment) -> None:
    text = (FIXTURES / f"{rule}.py").read_text(encoding="utf-8")
    # Calling a forbidden module needs importing it, which rule_imports also reports.
    # `random.randint` is also a name of `random` an environment may not use.
    allowed = {"rule_forbidden_calls": {"rule_imports", "rule_module_names"}}.get(rule, set())
    for other in CONTEXT_FREE:
        if other != rule and other not in allowed:
            assert run_rule(other, text, mini_env) == [], f"{rule}.py also breaks {other}"


def test_mini_spec_lowers_to_a_package_without_findings(mini_env: ir.Environment) -> None:
    """The unmodified code the tool-dependent fixtures were cut from is clean."""
    files = lower(mini_env, "specs/mini.envspec")
    assert ast_rules(Package(env=mini_env, name="mini_desk", files=files)) == []
    tools = [t.name for t in mini_env.tools]
    parity = (FIXTURES / "rule_tool_parity.py").read_text(encoding="utf-8")
    for name in tools:
        assert name == "whoami" or f"def {name}(" in parity, f"rule_tool_parity.py lacks {name}"
        assert f"def {name}(" in files["environment.py"]


def test_forbidden_calls_fixture_covers_the_brief() -> None:
    text = (FIXTURES / "rule_forbidden_calls.py").read_text(encoding="utf-8")
    messages = " ".join(message for _, message in expected_findings(text))
    for call in ("`eval`", "`exec`", "`open`", "`print`", "`time.time`", "`datetime.now`", "`random.", "`os.system`"):
        assert call in messages
    assert "`subprocess." in messages


def test_imports_are_allowed_per_file() -> None:
    tree = ast.parse("import os\nimport tempfile\nimport pytest\n")
    assert [f.line for f in rule_imports("sessions.py", tree)] == [3]
    assert [f.line for f in rule_imports("environment.py", tree)] == [1, 2, 3]
    assert [f.line for f in rule_imports("tests/test_environment.py", tree)] == [1, 2]
    assert rule_imports("sessions.py", ast.parse("from .environment import Environment\n")) == []


def test_shipped_packages_have_no_ast_findings(shipped: dict[str, Package]) -> None:
    assert list(shipped) == CHECKED
    for package in shipped.values():
        assert {"environment.py", "sessions.py", "tests/test_environment.py"} <= set(package.files)
        assert ast_rules(package) == [], package.name


def test_unparsable_file_is_one_finding(shipped: dict[str, Package]) -> None:
    package = shipped["ticketing"]
    files = {**package.files, "sessions.py": package.files["sessions.py"] + "\ndef broken(:\n"}
    findings = ast_rules(Package(env=package.env, name="ticketing", files=files))
    assert [(f.file, f.message.startswith("does not parse")) for f in findings] == [("sessions.py", True)]


# --------------------------------------------------------------------------- check_packages end to end


def broken_static(package: Package) -> tuple[Package, dict[str, tuple[str, int]]]:
    """The ticketing package with one mypy, one ruff and one AST finding, each in another
    tool; returns it and, per checker, (tool, line in environment.py)."""
    text = package.files["environment.py"]
    text, mypy_line = replace_in_method(
        text, "whoami", 'return state["current_user"]', 'return len(state["current_user"] or "")'
    )
    text, ruff_line = insert_in_method(text, "get_ticket", "unused = ticket_id")
    text, ast_line = insert_in_method(text, "list_tickets", "print(limit)")
    # Each insertion moved the lines below it: find them again.
    where = {
        "mypy": ("whoami", line_of(text, 'return len(state["current_user"] or "")')),
        "ruff": ("get_ticket", line_of(text, "unused = ticket_id")),
        "ast": ("list_tickets", line_of(text, "print(limit)")),
    }
    assert {mypy_line, ruff_line, ast_line} and all(line > 0 for _, line in where.values())
    files = {**package.files, "environment.py": text}
    return Package(env=package.env, name="broken_ticketing", files=files), where


def test_check_packages_static_findings_map_to_tool_lines(shipped: dict[str, Package]) -> None:
    broken, where = broken_static(shipped["ticketing"])
    real = [shipped[name] for name in CHECKED]
    results = check_packages([*real, broken], dynamic=False)
    assert set(results) == {*CHECKED, "broken_ticketing"}
    for package in real:
        result = results[package.name]
        assert result.findings == [] and result.static_ok, [f.message for f in result.findings]
    result = results["broken_ticketing"]
    assert not result.static_ok
    assert sorted(f.tool for f in result.findings) == ["ast", "mypy", "ruff"], [vars(f) for f in result.findings]
    found = {f.tool: f for f in result.findings}
    assert all(f.file == "environment.py" for f in result.findings)
    for tool, (_, line) in where.items():
        assert found[tool].line == line, tool
    assert "Incompatible return value type" in found["mypy"].message
    assert found["ruff"].message.startswith("F841 ")
    assert found["ast"].message == "call of `print` is forbidden in an environment"

    diagnostics = to_diagnostics(broken, result)
    assert len(diagnostics) == 3
    decls = {t.name: t for t in broken.env.tools}
    for finding, diagnostic in zip(result.findings, diagnostics):
        decl = decls[where[finding.tool][0]]
        assert diagnostic.code == "E6001"
        assert (diagnostic.path, diagnostic.line, diagnostic.col) == (decl.file, decl.line, decl.col)
        assert Path(diagnostic.path).suffix == ".envspec"
        assert decl_line(diagnostic.path, diagnostic.line).lstrip().startswith(("tool ", "override tool "))
        assert f"broken_ticketing/environment.py:{finding.line}" in diagnostic.message
        assert diagnostic.message.startswith(f"{finding.tool}: ")


def test_a_finding_is_reported_again_on_the_next_run(shipped: dict[str, Package]) -> None:
    """mypy replays a cached error for an unchanged module: it must still be mapped."""
    broken, where = broken_static(shipped["ticketing"])
    broken = Package(env=broken.env, name="broken_again", files=broken.files)
    runs = [check_packages([broken], dynamic=False)["broken_again"] for _ in range(2)]
    for result in runs:
        assert [(f.tool, f.line) for f in result.findings if f.tool == "mypy"] == [("mypy", where["mypy"][1])]


def test_check_packages_runs_the_generated_tests(shipped: dict[str, Package]) -> None:
    package = shipped["ticketing"]
    # A behaviour bug no static check can see: closing leaves the ticket resolved.
    text, _ = replace_in_method(
        package.files["environment.py"], "close_ticket", '"status"] = "closed"', '"status"] = "resolved"'
    )
    broken = Package(env=package.env, name="ticketing", files={**package.files, "environment.py": text})
    result = check_packages([broken], dynamic=True)["ticketing"]
    assert result.static_ok, [vars(f) for f in result.findings]
    assert not result.dynamic_ok
    assert result.tests_failed >= 1 and result.tests_passed >= 50
    failures = [f for f in result.findings if f.tool == "pytest"]
    assert failures and all(f.message.startswith("FAILED ") for f in failures)
    diagnostics = to_diagnostics(broken, result)
    assert len(diagnostics) == len(failures) and {d.code for d in diagnostics} == {"E6002"}
    for diagnostic in diagnostics:
        assert Path(diagnostic.path).suffix == ".envspec" and diagnostic.line >= 1


def test_check_packages_with_nothing_to_check() -> None:
    assert check_packages([]) == {}


# --------------------------------------------------------------------------- mapping to the spec


def test_spec_position_of_tools_helpers_tests_and_module_code(shipped: dict[str, Package]) -> None:
    package = shipped["ticketing"]
    env = package.env

    def position(file: str, line: int) -> tuple[str, int, int]:
        return spec_position(package, Finding("mypy", file, line, "x"))

    tree = ast.parse(package.files["environment.py"])
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Environment")
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}

    def inside(file: str, name: str) -> int:
        return methods[name].body[-1].lineno

    for decl in [*env.tools, *env.fns]:
        prefix = "" if decl in env.tools else "_"
        assert position("environment.py", inside("environment.py", prefix + decl.name)) == (
            decl.file,
            decl.line,
            decl.col,
        ), decl.name
    tests_file = package.files["tests/test_environment.py"]
    tree = ast.parse(tests_file)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for test in env.tests:
        run = functions[f"run_{test.name}"]
        assert position("tests/test_environment.py", run.body[-1].lineno) == (test.file, test.line, test.col)
    header = (env.path, env.header.line, env.header.col)
    assert (
        position("environment.py", line_of(package.files["environment.py"], "class DomainError(Exception):")) == header
    )
    assert spec_position(package, Finding("pytest", "tests/test_environment.py", 0, "x")) == header


@pytest.mark.parametrize(
    ("summary", "passed", "failed"),
    [
        ("108 passed in 1.29s", 108, 0),
        ("2 failed, 106 passed in 1.31s", 106, 2),
        ("1 failed, 100 passed, 1 error in 2.00s", 100, 2),
        ("no tests ran in 0.01s", 0, 0),
    ],
)
def test_pytest_summary_counts(summary: str, passed: int, failed: int) -> None:
    counted: dict[str, Any] = {word: dynamic._count(summary, word) for word in ("passed", "failed", "error")}
    assert counted["passed"] == passed
    assert counted["failed"] + counted["error"] == failed


def test_generated_tests_run_with_a_memory_limit() -> None:
    """The generated tests' subprocess cannot take more than DYNAMIC_MEMORY_BYTES."""
    import subprocess
    import sys

    grab = f"bytearray({DYNAMIC_MEMORY_BYTES + 2**30})"
    done = subprocess.run(
        [sys.executable, "-c", grab], capture_output=True, text=True, preexec_fn=limit_memory, timeout=60
    )
    assert done.returncode != 0 and "MemoryError" in done.stderr


def _closing_bug(package: Package, name: str) -> Package:
    """The package under another name with a bug only its generated tests see."""
    text, _ = replace_in_method(
        package.files["environment.py"], "close_ticket", '"status"] = "closed"', '"status"] = "resolved"'
    )
    return Package(env=package.env, name=name, files={**package.files, "environment.py": text})


def test_packages_tested_together_keep_their_own_verdicts(shipped: dict[str, Package]) -> None:
    """One pytest process runs every package's tests; each package still gets its own
    counts and only its own failures, worded as a run of it alone words them."""
    good = shipped["ticketing"]
    broken = _closing_bug(good, "ticketing_broken")
    results = check_packages([good, broken], dynamic=True)
    assert results["ticketing"].dynamic_ok and results["ticketing"].tests_failed == 0
    assert results["ticketing"].tests_passed >= 50
    assert not [f for f in results["ticketing"].findings if f.tool == "pytest"]
    failed = results["ticketing_broken"]
    assert not failed.dynamic_ok and failed.tests_failed >= 1
    assert failed.tests_passed + failed.tests_failed == results["ticketing"].tests_passed
    messages = [f.message for f in failed.findings if f.tool == "pytest"]
    assert messages and all(m.startswith("FAILED tests/test_environment.py::") for m in messages)


def test_a_test_run_that_dies_is_run_again_per_package(shipped: dict[str, Package]) -> None:
    """A package whose tests kill the process leaves no report: each package is then
    run alone, so only that package fails."""
    good = shipped["ticketing"]
    tests = (
        good.files["tests/test_environment.py"] + "\n\ndef test_exits() -> None:\n    import os\n\n    os._exit(9)\n"
    )
    dying = Package(env=good.env, name="ticketing_dies", files={**good.files, "tests/test_environment.py": tests})
    results = check_packages([good, dying], dynamic=True)
    assert results["ticketing"].dynamic_ok and results["ticketing"].tests_passed >= 50
    assert not results["ticketing_dies"].dynamic_ok
    assert [f.tool for f in results["ticketing_dies"].findings if f.tool == "pytest"] == ["pytest"]


STEPS_SPEC = '''\
environment steps:
    title "Steps"

state:
    count: int = 0

scenario started:
    count = 5

tool bump(by: int = 1) -> int:
    count += by
    return count

test bumping:
    """A docstring and a scenario: neither is a statement of a step."""
    scenario started
    bump(by=2)
    let after = bump(by=1)
    expect after == 8 and count == 8
'''


def test_a_failure_inside_a_spec_test_maps_to_its_step() -> None:
    """`spec_position` maps a line of `run_NAME` (from the failure's traceback) to the
    spec step whose statement holds it, and any other line to the test itself."""
    result = analyse_source(STEPS_SPEC, "steps.envspec")
    assert result.environment is not None, result.diagnostics
    package = Package(env=result.environment, name="steps", files=lower(result.environment, "steps.envspec"))
    text = package.files["tests/test_environment.py"]
    run = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "run_bumping")
    statements = run.body[2:-1]  # docstring, `state = env.view()`, ..., `del state`
    failed = "FAILED tests/test_environment.py::test_bumping - assert 7 == 8"
    spec_lines = [17, 18, 19]
    for statement, line in zip(statements, spec_lines, strict=True):
        finding = Finding("pytest", "tests/test_environment.py", statement.lineno, failed)
        assert spec_position(package, finding) == ("steps.envspec", line, 5)
    test = result.environment.tests[0]
    for line in (0, run.lineno):  # no traceback line, or the def line: the test's header
        finding = Finding("pytest", "tests/test_environment.py", line, failed)
        assert spec_position(package, finding) == ("steps.envspec", test.line, test.col)
