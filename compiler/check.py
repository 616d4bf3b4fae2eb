"""Stages 5 and 6, check: quality control of generated packages before they count.

Static: ruff (lint, with its default rules and envc's selection, and format), mypy
--strict, and envc's own AST rules. Dynamic: the generated tests, run by pytest in a
subprocess with a time limit. Findings come back as diagnostics at the spec line of the
tool whose code failed, where that can be known.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import functools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from xml.etree import ElementTree

from compiler import ir
from compiler.diagnostics import Diagnostic
from compiler.lower.formatting import LINE_LENGTH, ruff_binary

RUFF_RULES = "E,F,W,I,UP,B,C4"
"""envc's own rule selection, checked on top of ruff's default rule set (what `ruff check
--isolated` checks with no `--select`), so generated code is clean under either."""
RUFF_IGNORED = "E501,E741"  # long literals are fine; names like `l` are the spec author's choice
DYNAMIC_TIMEOUT_SECONDS = 300
JUNIT_REPORT = ".envc-tests.xml"
"""pytest's report of the tests of all packages, at the top of the check tree."""
TEST_FILE = "tests/test_environment.py"
"""The generated tests of a package, relative to its folder."""
DYNAMIC_MEMORY_BYTES = 4 * 1024**3
"""Address space the generated tests may use (a runaway body fails with MemoryError
instead of taking the machine down)."""

# Imports a generated module may use: the standard library only, and per file only
# what it needs (the environment itself does no I/O; sessions save to disk).
ALLOWED_IMPORTS = {
    "environment.py": {
        "__future__",
        "json",
        "math",
        "random",  # only with `rng python`: Python's generator, seeded from state
        "re",
        "datetime",
        "collections.abc",
        "dataclasses",
        "types",
        "typing",
        "threading",  # forks: one lock per family of forked sessions
        "weakref",  # forks: a family knows when its other members are gone
        "pathlib",  # only to read the package's own data files (`rule_data_files`)
    },
    "sessions.py": {"__future__", "json", "os", "re", "tempfile", "threading", "collections.abc", "pathlib", "typing"},
    "scoring.py": {"__future__", "math", "collections.abc", "typing"},
    "episode.py": {"__future__", "json", "collections.abc", "typing"},
    "trl_env.py": {"__future__", "json", "collections.abc", "typing"},
    "__init__.py": {"__future__"},
    "tests/__init__.py": set(),
    "tests/test_environment.py": {"__future__", "threading", "collections.abc", "pathlib", "typing", "pytest"},
}
FORBIDDEN_CALLS = {
    "eval",
    "exec",
    "compile",
    "__import__",
    "open",
    "input",
    "breakpoint",
    "print",
    "globals",
    "locals",
    "vars",
    "setattr",
    "delattr",
}
FORBIDDEN_ATTRIBUTES = {
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "sleep"),
    ("datetime", "now"),
    ("datetime", "today"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "environ"),
    ("random", "random"),
    ("random", "randint"),
    ("random", "choice"),
    ("uuid", "uuid4"),
}
INFRASTRUCTURE_METHODS = {"call", "invoke", "view", "state", "saved_state", "state_json", "snapshot", "restore", "fork"}


@dataclass
class Finding:
    """One problem in one generated file, before it is mapped to the spec."""

    tool: str  # "ruff", "mypy", "ast", "pytest"
    file: str  # relative to the package folder
    line: int
    message: str
    trace: list[int] = field(default_factory=list)
    """For a failed test: the lines of `file` its traceback passes through, outermost
    first (`at_failed_step` picks the one that names the failing spec step)."""


@dataclass
class CheckResult:
    static_ok: bool = True
    dynamic_ok: bool = True
    findings: list[Finding] = field(default_factory=list)
    tests_passed: int = 0
    tests_failed: int = 0


@dataclass
class Package:
    """A lowered environment: its IR and its files, ready to be checked or written."""

    env: ir.Environment
    name: str
    files: dict[str, str]
    inputs: list[str] = field(default_factory=list)  # every file the output depends on


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "envc"


@contextlib.contextmanager
def _check_tree() -> Iterator[Path]:
    """The folder packages are checked in: always the same path, so mypy's cache (which
    replays findings with the paths they had) stays right; locked, so two envc runs
    never check in it at once."""
    root = _cache_root() / "check-tree"
    root.mkdir(parents=True, exist_ok=True)
    with open(_cache_root() / "check-tree.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for stale in root.iterdir():
                shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
            yield root
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def check_packages(packages: list[Package], dynamic: bool = True) -> dict[str, CheckResult]:
    """Run every check on every package (in one tree, so mypy runs once). The generated
    tests run in a pytest process of their own, started first, while ruff, mypy and the
    AST rules run (a thread waits for it), so on two cores the checks take about as long
    as the longest of them."""
    results = {p.name: CheckResult() for p in packages}
    if not packages:
        return results
    with _check_tree() as root:
        for package in packages:
            write_tree(root / package.name, package.files)
        # Started before any thread exists: a child with a `preexec_fn` must not be forked
        # beside other threads.
        tests = _start_tests_together(root, packages) if dynamic else None
        with ThreadPoolExecutor(max_workers=1) as waiter:
            waited = waiter.submit(_finish_tests_together, tests, root, packages) if tests else None
            try:
                _static_checks(root, packages, results)
            except BaseException:
                if tests is not None:
                    tests.kill()  # nobody will read its verdict
                raise
            together = waited.result() if waited else None
        if dynamic:
            for package in packages:
                outcome = together[package.name] if together is not None else _tests_alone(root, package)
                _add_tests(results[package.name], outcome)
    return results


def _static_checks(root: Path, packages: list[Package], results: dict[str, CheckResult]) -> None:
    """ruff, mypy and the AST rules; `static_ok` is whether they found nothing."""
    for finding_package, finding in _ruff(root, packages):
        results[finding_package].findings.append(finding)
    for finding_package, finding in _mypy(root, packages):
        results[finding_package].findings.append(finding)
    for package in packages:
        results[package.name].findings.extend(ast_rules(package))
        results[package.name].static_ok = not results[package.name].findings


def _add_tests(result: CheckResult, tests: CheckResult) -> None:
    """A package's static result joined with the outcome of its tests."""
    result.dynamic_ok = tests.dynamic_ok
    result.tests_passed, result.tests_failed = tests.tests_passed, tests.tests_failed
    result.findings.extend(tests.findings)


def _tests_alone(root: Path, package: Package) -> CheckResult:
    outcome = CheckResult()
    _run_tests(root, package, outcome)
    return outcome


def _start_tests_together(root: Path, packages: list[Package]) -> subprocess.Popen[str]:
    """The generated tests of every package in one pytest process (one start-up, not one
    per package), under the same time and memory limits as a package run alone."""
    command = [
        *_pytest_command(root),
        "--continue-on-collection-errors",  # a package that does not import fails alone
        f"--junitxml={root / JUNIT_REPORT}",
        *[str(root / p.name / "tests") for p in packages],
    ]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        env=_pytest_environment(),
        preexec_fn=limit_memory,
    )


def _finish_tests_together(
    process: subprocess.Popen[str], root: Path, packages: list[Package]
) -> dict[str, CheckResult] | None:
    """Each package's outcome, read from the JUnit report by its module name
    (`NAME.tests.test_environment`). None when the run gave no report (it hit the time
    limit or died): then each package is run alone, so the one at fault is named."""
    try:
        stdout, _ = process.communicate(timeout=DYNAMIC_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return None
    if process.returncode not in (0, 1):  # interrupted, internal error, nothing collected
        return None
    counts = _junit_outcomes(root / JUNIT_REPORT, {p.name for p in packages})
    if counts is None or len(counts) < len(packages):  # a package ran no test: alone, that fails
        return None
    failed_lines = _failure_lines(stdout, packages)
    where = _failure_places(root / JUNIT_REPORT)
    outcomes: dict[str, CheckResult] = {}
    for package in packages:
        passed, failed = counts.get(package.name, (0, 0))
        outcome = CheckResult(dynamic_ok=not failed, tests_passed=passed, tests_failed=failed)
        if failed:
            lines = failed_lines.get(package.name) or [f"{failed} generated test(s) failed"]
            places = where.get(package.name, {})
            outcome.findings = [Finding("pytest", TEST_FILE, 0, line, _trace_of(line, places)) for line in lines]
        outcomes[package.name] = outcome
    return outcomes


def _failure_places(report: Path) -> dict[str, dict[str, list[int]]]:
    """Per package and failed test function, the lines of `tests/test_environment.py` its
    traceback passes through, outermost first (from the JUnit report's failure text)."""
    try:
        tree = ElementTree.parse(report)
    except (OSError, ElementTree.ParseError):
        return {}
    places: dict[str, dict[str, list[int]]] = {}
    for case in tree.iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            continue
        package = re.split(r"[./]", case.get("classname") or "", maxsplit=1)[0]
        text = failure.text or ""
        lines = [int(n) for n in re.findall(r"test_environment\.py:(\d+):", text)]
        places.setdefault(package, {})[case.get("name") or ""] = lines
    return places


def _trace_of(failed: str, places: dict[str, list[int]]) -> list[int]:
    """The traceback lines of the test a `FAILED tests/...::test_NAME - why` line names."""
    found = re.search(r"::(test_\w+)\b(?!\[)", failed)
    return places.get(found.group(1), []) if found else []


def _junit_outcomes(report: Path, names: set[str]) -> dict[str, tuple[int, int]] | None:
    """(passed, failed or errored) per package from pytest's JUnit XML, or None when
    there is no readable report."""
    try:
        tree = ElementTree.parse(report)
    except (OSError, ElementTree.ParseError):
        return None
    outcomes: dict[str, tuple[int, int]] = {}
    for case in tree.iter("testcase"):
        where = case.get("classname") or case.get("name") or ""
        package = re.split(r"[./]", where, maxsplit=1)[0]
        if package not in names:
            return None  # a test envc cannot attribute: let the runs alone decide
        passed, failed = outcomes.get(package, (0, 0))
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is None:
            passed += 1
        outcomes[package] = (passed, failed)
    return outcomes


def _failure_lines(stdout: str, packages: list[Package]) -> dict[str, list[str]]:
    """pytest's `FAILED NAME/tests/...::test - why` lines per package, written as a run
    of that package alone would (`FAILED tests/...`)."""
    lines: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        verdict, _, rest = line.partition(" ")
        if verdict not in ("FAILED", "ERROR"):
            continue
        package, _, inner = rest.partition("/")
        if package in {p.name for p in packages}:
            lines.setdefault(package, []).append(f"{verdict} {inner}")
    return lines


def _pytest_command(rootdir: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(rootdir)]


def _pytest_environment() -> dict[str, str]:
    """No third-party pytest plugins: they cost start-up time and could change the
    verdict. A wide terminal, so a failure's summary line keeps its message whole
    (`assert 2 == 3`, not `asse...`)."""
    return {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "COLUMNS": "240"}


def _run_pytest(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """pytest under the time and memory limits."""
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=DYNAMIC_TIMEOUT_SECONDS,
        env=_pytest_environment(),
        preexec_fn=limit_memory,
    )


def write_tree(folder: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _split(root: Path, path_text: str, packages: list[Package]) -> tuple[str, str] | None:
    try:
        relative = Path(path_text).resolve().relative_to(root.resolve())
    except ValueError:
        return None
    parts = relative.parts
    if not parts or parts[0] not in {p.name for p in packages}:
        return None
    return parts[0], "/".join(parts[1:])


def _ruff(root: Path, packages: list[Package]) -> Iterator[tuple[str, Finding]]:
    base = [ruff_binary(), "--quiet"]
    options = ["--isolated", "--line-length", str(LINE_LENGTH), "--target-version", "py311"]
    lint = subprocess.run(
        [
            *base[:1],
            "check",
            *options,
            "--extend-select",  # added to the defaults, not instead of them
            RUFF_RULES,
            "--ignore",
            RUFF_IGNORED,
            "--output-format",
            "json",
            str(root),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    for item in json.loads(lint.stdout or "[]"):
        where = _split(root, item["filename"], packages)
        if where:
            yield where[0], Finding("ruff", where[1], item["location"]["row"], f"{item['code']} {item['message']}")
    fmt = subprocess.run(
        [*base[:1], "format", *options, "--check", str(root)], capture_output=True, text=True, check=False
    )
    for line in fmt.stdout.splitlines():
        if line.startswith("Would reformat: "):
            where = _split(root, line.removeprefix("Would reformat: ").strip(), packages)
            if where:
                yield where[0], Finding("ruff", where[1], 1, "not formatted as ruff format would")


def _mypy(root: Path, packages: list[Package]) -> Iterator[tuple[str, Finding]]:
    cache = _cache_root() / "mypy"
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-error-summary",
        "--show-absolute-path",
        "--no-color-output",
        "--cache-dir",
        str(cache),
        "--python-version",
        "3.11",
        *[str(root / p.name) for p in packages],
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=root)
    for line in result.stdout.splitlines():
        path_text, _, rest = line.partition(":")
        line_text, _, message = rest.partition(":")
        where = _split(root, path_text, packages)
        if where and line_text.strip().isdigit() and " note: " not in f" {message}":
            yield where[0], Finding("mypy", where[1], int(line_text), message.strip())
    if result.returncode not in (0, 1):
        yield packages[0].name, Finding("mypy", "", 0, f"mypy did not run: {result.stderr.strip()[:300]}")


def limit_memory() -> None:
    """In the test subprocess, before it starts: cap its address space."""
    resource.setrlimit(resource.RLIMIT_AS, (DYNAMIC_MEMORY_BYTES, DYNAMIC_MEMORY_BYTES))


def _run_tests(root: Path, package: Package, result: CheckResult) -> None:
    """One package's generated tests in a pytest process of their own."""
    command = [*_pytest_command(root / package.name), str(root / package.name / "tests")]
    try:
        run = _run_pytest(command, root)
    except subprocess.TimeoutExpired:
        result.dynamic_ok = False
        result.findings.append(
            Finding(
                "timeout",
                "tests/test_environment.py",
                0,
                f"generated tests did not finish in {DYNAMIC_TIMEOUT_SECONDS} s",
            )
        )
        return
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    result.tests_passed = _count(summary, "passed")
    result.tests_failed = _count(summary, "failed") + _count(summary, "error")
    if run.returncode != 0:
        result.dynamic_ok = False
        for line in run.stdout.splitlines():
            if line.startswith(("FAILED ", "ERROR ")):
                result.findings.append(Finding("pytest", "tests/test_environment.py", 0, line))
        if not any(f.tool == "pytest" for f in result.findings):
            tail = " | ".join((run.stdout + run.stderr).strip().splitlines()[-5:])
            result.findings.append(Finding("pytest", "tests/test_environment.py", 0, tail))


def _count(summary: str, word: str) -> int:
    for part in summary.replace(",", " ").split(" in ")[0].split("  "):
        pieces = part.split()
        for index, piece in enumerate(pieces[1:], start=1):
            if piece.startswith(word) and pieces[index - 1].isdigit():
                return int(pieces[index - 1])
    return 0


# --------------------------------------------------------------------------- AST rules


def ast_rules(package: Package) -> list[Finding]:
    """envc's own rules; each returns findings for one generated file."""
    findings: list[Finding] = []
    for relative, text in package.files.items():
        if not relative.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            findings.append(Finding("ast", relative, exc.lineno or 0, f"does not parse: {exc.msg}"))
            continue
        findings += rule_imports(relative, tree)
        findings += rule_no_bare_except(relative, tree)
        if relative == "environment.py":
            findings += rule_forbidden_calls(relative, tree)
            findings += rule_data_files(relative, tree)
            findings += rule_tool_parity(relative, tree, package.env)
            findings += rule_state_copied(relative, tree)
            findings += rule_declared_effects(relative, tree, package.env)
    return findings


@functools.lru_cache(maxsize=4)
def nodes_of(tree: ast.Module) -> tuple[ast.AST, ...]:
    """Every node of a generated file, walked once and shared by the rules that look at
    the whole file (they used to walk it once each)."""
    return tuple(ast.walk(tree))


def rule_imports(relative: str, tree: ast.Module) -> list[Finding]:
    """Only the standard-library modules this file needs; nothing of envc."""
    allowed = ALLOWED_IMPORTS.get(relative, set())
    findings = []
    for node in nodes_of(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level > 0:
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if name not in allowed:
                findings.append(Finding("ast", relative, node.lineno, f"import of `{name}` is not allowed here"))
    return findings


def rule_no_bare_except(relative: str, tree: ast.Module) -> list[Finding]:
    return [
        Finding("ast", relative, n.lineno, "bare `except:` hides errors")
        for n in nodes_of(tree)
        if isinstance(n, ast.ExceptHandler) and n.type is None
    ]


def rule_forbidden_calls(relative: str, tree: ast.Module) -> list[Finding]:
    """No I/O, no eval/exec, no wall clock, no unseeded randomness (`random.Random(seed)`
    with an explicit seed is the one use of the random module allowed)."""
    findings = []
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in nodes_of(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    for node in nodes_of(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS:
            findings.append(
                Finding("ast", relative, node.lineno, f"call of `{func.id}` is forbidden in an environment")
            )
        if isinstance(func, ast.Attribute):
            module = func.value.id if isinstance(func.value, ast.Name) else ""
            owner = func.value.attr if isinstance(func.value, ast.Attribute) else module
            # A bare `random.x()` is only the module if this file imports it; otherwise it
            # is a spec's own variable that happens to share the name.
            is_module = module in imported
            risky = module in ("random", "subprocess", "socket", "time", "os") and is_module
            if module == "random" and func.attr == "Random" and len(node.args) == 1:
                risky = False  # `rng python`: a generator built from an explicit seed kept in state
            if risky or ((owner, func.attr) in FORBIDDEN_ATTRIBUTES and (owner != module or is_module)):
                findings.append(
                    Finding(
                        "ast",
                        relative,
                        node.lineno,
                        f"call of `{owner}.{func.attr}` is forbidden (wall clock, randomness or I/O)",
                    )
                )
    return findings


DATA_READER = "_read_data"
"""The one function of environment.py that reads files: the package's `data/` folder."""


def rule_data_files(relative: str, tree: ast.Module) -> list[Finding]:
    """The environment does no I/O but read its own data files once, at import: `Path`
    appears only as `Path(__file__).with_name("data")` (the package's data folder, bound
    to `_DATA`), `_DATA` only inside `_read_data`, and that function calls no I/O method
    but `read_text`."""
    findings = []
    reader = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == DATA_READER), None)
    inside = {id(node) for node in ast.walk(reader)} if reader is not None else set()
    for node in nodes_of(tree):
        if (
            isinstance(node, ast.Name)
            and node.id == "Path"
            and isinstance(node.ctx, ast.Load)
            and not _is_data_folder(node, tree)
        ):
            findings.append(Finding("ast", relative, node.lineno, "`Path` may only name the package's data folder"))
        if (
            isinstance(node, ast.Name)
            and node.id == "_DATA"
            and isinstance(node.ctx, ast.Load)
            and id(node) not in inside
        ):
            findings.append(Finding("ast", relative, node.lineno, f"`_DATA` is read only by `{DATA_READER}`"))
        if (
            id(node) in inside
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr not in ("read_text", "loads")
        ):
            findings.append(Finding("ast", relative, node.lineno, f"`{DATA_READER}` only reads (`.{node.func.attr}`)"))
    return findings


def _is_data_folder(name: ast.Name, tree: ast.Module) -> bool:
    """Whether this `Path` is the one in `_DATA = Path(__file__).with_name("data")`."""
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if (
            isinstance(target, ast.Name)
            and target.id == "_DATA"
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "with_name"
            and isinstance(value.func.value, ast.Call)
            and value.func.value.func is name
            and [ast.dump(a) for a in value.func.value.args] == [ast.dump(ast.Name("__file__", ast.Load()))]
            and [ast.dump(a) for a in value.args] == [ast.dump(ast.Constant("data"))]
        ):
            return True
    return False


def _environment_class(tree: ast.Module) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Environment"), None)


def rule_tool_parity(relative: str, tree: ast.Module, env: ir.Environment) -> list[Finding]:
    """Every tool of the schema has a method, and every public method is a tool."""
    cls = _environment_class(tree)
    if cls is None:
        return [Finding("ast", relative, 1, "no `Environment` class")]
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    public = {name for name in methods if not name.startswith("_")} - INFRASTRUCTURE_METHODS
    tools = {t.name for t in env.tools}
    findings = [Finding("ast", relative, cls.lineno, f"tool `{name}` has no method") for name in sorted(tools - public)]
    findings += [
        Finding("ast", relative, methods[name].lineno, f"public method `{name}` is not a tool of the schema")
        for name in sorted(public - tools)
    ]
    return findings


def rule_state_copied(relative: str, tree: ast.Module) -> list[Finding]:
    """`self._state` is only ever assigned a fresh copy, so no session shares a scenario's
    or S0's data. Forks do share containers, on purpose and journaled (`_Family`); they
    fill a new dict with `update`, which this rule does not see, and the generated
    `test_forks_keep_apart` and tests/test_fork.py check them instead."""
    findings = []
    for node in nodes_of(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "_state":
                value = node.value
                ok = (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id in ("copy_state", "_scenario_state")
                )
                if not ok:
                    findings.append(
                        Finding("ast", relative, node.lineno, "`_state` must be assigned a deep copy (copy_state)")
                    )
    return findings


def rule_declared_effects(relative: str, tree: ast.Module, env: ir.Environment) -> list[Finding]:
    """A tool method touches only the state fields it reads or writes, and assigns only
    fields in its write set."""
    cls = _environment_class(tree)
    if cls is None:
        return []
    tools = {t.name: t for t in env.tools}
    findings = []
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef) or method.name not in tools:
            continue
        tool = tools[method.name]
        touched, assigned = _state_fields(method)
        for name, line in sorted(touched.items()):
            if name not in tool.reads and name not in tool.writes:
                findings.append(
                    Finding(
                        "ast",
                        relative,
                        line,
                        f"tool `{tool.name}` uses state field `{name}` outside its read and write sets",
                    )
                )
        for name, line in sorted(assigned.items()):
            if name not in tool.writes:
                findings.append(
                    Finding(
                        "ast", relative, line, f"tool `{tool.name}` changes `{name}`, which is not in its write set"
                    )
                )
    return findings


def _state_fields(method: ast.FunctionDef) -> tuple[dict[str, int], dict[str, int]]:
    touched: dict[str, int] = {}
    assigned: dict[str, int] = {}
    for node in ast.walk(method):
        if isinstance(node, ast.Subscript) and _is_state(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                touched.setdefault(key.value, node.lineno)
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                root = _root_field(target)
                if root:
                    assigned.setdefault(root, node.lineno)
    return touched, assigned


def _is_state(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "state") or (
        isinstance(node, ast.Attribute) and node.attr == "_state"
    )


def _root_field(target: ast.expr) -> str:
    while isinstance(target, ast.Subscript):
        if _is_state(target.value) and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
            return target.slice.value
        target = target.value
    return ""


# --------------------------------------------------------------------------- mapping to the spec


def spec_position(package: Package, finding: Finding) -> tuple[str, int, int]:
    """The spec file and line of the tool (or helper) whose generated code has the finding."""
    env = package.env
    text = package.files.get(finding.file, "")
    method = _enclosing_function(text, finding.line) if finding.line else ""
    failed_test = re.search(r"::(test_\w+)(?:\[(\w+)-)?", finding.message)
    if failed_test:
        method = failed_test.group(1)
        tool = failed_test.group(2)
        if tool and any(t.name == tool for t in env.tools):
            method = tool
        for task in env.tasks:
            if method == f"test_task_{task.name}":
                return task.file, task.line, task.col
    for decl in [*env.tools, *env.fns]:
        if method in (decl.name, f"_{decl.name}", f"run_{decl.name}", f"test_{decl.name}"):
            return decl.file, decl.line, decl.col
    for test in env.tests:
        if method in (f"run_{test.name}", f"test_{test.name}"):
            step = _failed_step(text, test, finding.line) if finding.line else None
            return (test.file, step.line, step.col) if step is not None else (test.file, test.line, test.col)
    return env.path, env.header.line or 1, env.header.col or 1


def _failed_step(text: str, test: ir.TestDecl, line: int) -> ir.TestStmt | None:
    """The step of a spec test whose generated statement holds `line` of its `run_NAME`:
    each step but `scenario` is one statement, between `state = env.view()` and
    `del state` (after the docstring, if the test has one)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    run = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == f"run_{test.name}"), None)
    if run is None:
        return None
    body = run.body[1:] if test.doc else run.body
    statements = body[1:-1]  # without `state: Any = env.view()` and `del state`
    steps = [step for step in test.steps if not isinstance(step, ir.UseScenario)]
    if len(statements) != len(steps):
        return None
    for statement, step in zip(statements, steps, strict=True):
        if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            return step
    return None


def _enclosing_function(text: str, line: int) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    best = ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (
            node.end_lineno or node.lineno
        ):
            best = node.name
    return best


def at_failed_step(package: Package, finding: Finding) -> Finding:
    """A failed spec test's finding at the line of its `run_NAME` that its traceback
    passes through last: the statement of the step that failed (`spec_position` maps it
    to that step). Done here, after the checks, not while their threads run: CPython
    3.11's `ast.parse` is not safe to call from two threads at once."""
    found = re.search(r"::test_(\w+)\b(?!\[)", finding.message)
    if finding.line or not finding.trace or found is None:
        return finding
    try:
        tree = ast.parse(package.files.get(finding.file, ""))
    except SyntaxError:
        return finding
    run = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == f"run_{found.group(1)}"), None)
    inside = [line for line in finding.trace if run is not None and run.lineno <= line <= (run.end_lineno or 0)]
    return replace(finding, line=inside[-1]) if inside else finding


def to_diagnostics(package: Package, result: CheckResult) -> list[Diagnostic]:
    diagnostics = []
    for finding in (at_failed_step(package, found) for found in result.findings):
        path, line, col = spec_position(package, finding)
        code = {"pytest": "E6002", "timeout": "E6004"}.get(finding.tool, "E6001")
        where = f"{package.name}/{finding.file}:{finding.line}" if finding.line else f"{package.name}/{finding.file}"
        diagnostics.append(Diagnostic(code, f"{finding.tool}: {where}: {finding.message}", path, line, col))
    return diagnostics
