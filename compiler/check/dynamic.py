"""Stage 6, the dynamic check: a package's generated tests, run by pytest in a subprocess
under a time and a memory limit. The tests of every package run in one process (one
start-up), each package's outcome read from the JUnit report; when that run gives no
report, each package runs alone, so the one at fault is named.

The subprocess is isolated (`python -I`, a minimal environment) and sandboxed: its home,
temporary and working folder are a fresh temporary folder, and an audit hook
(`sandboxed_pytest.py`) refuses network access, new processes and writing outside that
folder, so a `python` body that tries either fails its tests instead of doing it."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from compiler.check.package import CheckResult, Finding, Package

DYNAMIC_TIMEOUT_SECONDS = 300
JUNIT_REPORT = ".envc-tests.xml"
"""pytest's report of the tests of all packages, at the top of the check tree."""
TEST_FILE = "tests/test_environment.py"
"""The generated tests of a package, relative to its folder."""
DYNAMIC_MEMORY_BYTES = 4 * 1024**3
"""Address space the generated tests may use (a runaway body fails with MemoryError
instead of taking the machine down)."""


SANDBOXED_PYTEST = Path(__file__).with_name("sandboxed_pytest.py")
"""The script the test subprocess runs: pytest behind envc's audit hook."""


@dataclass
class PytestRun:
    """A pytest subprocess under way, and the temporary folder it runs in (removed when
    it is done)."""

    process: subprocess.Popen[str]
    sandbox: Path

    def kill(self) -> None:
        self.process.kill()
        self.process.communicate()
        shutil.rmtree(self.sandbox, ignore_errors=True)


def tests_alone(root: Path, package: Package) -> CheckResult:
    outcome = CheckResult()
    run_tests(root, package, outcome)
    return outcome


def start_tests_together(root: Path, packages: list[Package]) -> PytestRun:
    """The generated tests of every package in one pytest process (one start-up, not one
    per package), under the same time and memory limits as a package run alone."""
    report = root / JUNIT_REPORT
    args = [
        *_pytest_arguments(root),
        "--continue-on-collection-errors",  # a package that does not import fails alone
        f"--junitxml={report}",
        *[str(root / p.name / "tests") for p in packages],
    ]
    sandbox = _new_sandbox()
    process = subprocess.Popen(
        _sandboxed(sandbox, root, report, args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=sandbox,
        env=_pytest_environment(sandbox),
        preexec_fn=limit_memory,
    )
    return PytestRun(process, sandbox)


def finish_tests_together(run: PytestRun, root: Path, packages: list[Package]) -> dict[str, CheckResult] | None:
    """Each package's outcome, read from the JUnit report by its module name
    (`NAME.tests.test_environment`). None when the run gave no report (it hit the time
    limit or died): then each package is run alone, so the one at fault is named."""
    process = run.process
    try:
        stdout, _ = process.communicate(timeout=DYNAMIC_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        run.kill()
        return None
    finally:
        shutil.rmtree(run.sandbox, ignore_errors=True)
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


def _pytest_arguments(rootdir: Path) -> list[str]:
    return ["-q", "-p", "no:cacheprovider", "--rootdir", str(rootdir)]


def _new_sandbox() -> Path:
    """A fresh temporary folder: the test subprocess's home, temporary and working folder."""
    return Path(tempfile.mkdtemp(prefix="envc-qc-"))


def _sandboxed(sandbox: Path, root: Path, writable: Path | None, pytest_args: list[str]) -> list[str]:
    """The command running pytest isolated (`-I`: no user site, no PYTHON* variables, not
    the working folder on the path; `-B`: no bytecode written) behind the audit hook,
    invoked from the check tree `root` (the test ids it prints are relative to it)."""
    fixed = [str(sandbox), str(root), str(writable or ""), "--"]
    return [sys.executable, "-I", "-B", str(SANDBOXED_PYTEST), *fixed, *pytest_args]


def _pytest_environment(sandbox: Path) -> dict[str, str]:
    """A minimal environment: nothing of the user's (no tokens, no proxies), home and
    temporary folder in the sandbox. No third-party pytest plugins: they cost start-up
    time and could change the verdict. A wide terminal, so a failure's summary line keeps
    its message whole (`assert 2 == 3`, not `asse...`)."""
    return {
        "HOME": str(sandbox),
        "TMPDIR": str(sandbox),
        "PATH": os.defpath,
        "LANG": "C.UTF-8",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "COLUMNS": "240",
    }


def _run_pytest(root: Path, pytest_args: list[str]) -> subprocess.CompletedProcess[str]:
    """pytest under the time and memory limits, in a sandbox of its own."""
    sandbox = _new_sandbox()
    try:
        return subprocess.run(
            _sandboxed(sandbox, root, None, pytest_args),
            capture_output=True,
            text=True,
            check=False,
            cwd=sandbox,
            timeout=DYNAMIC_TIMEOUT_SECONDS,
            env=_pytest_environment(sandbox),
            preexec_fn=limit_memory,
        )
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


def limit_memory() -> None:
    """In the test subprocess, before it starts: cap its address space."""
    resource.setrlimit(resource.RLIMIT_AS, (DYNAMIC_MEMORY_BYTES, DYNAMIC_MEMORY_BYTES))


def run_tests(root: Path, package: Package, result: CheckResult) -> None:
    """One package's generated tests in a pytest process of their own."""
    try:
        run = _run_pytest(root, [*_pytest_arguments(root / package.name), str(root / package.name / "tests")])
    except subprocess.TimeoutExpired:
        result.dynamic_ok = False
        result.findings.append(
            Finding(
                "timeout",
                TEST_FILE,
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
                result.findings.append(Finding("pytest", TEST_FILE, 0, line))
        if not any(f.tool == "pytest" for f in result.findings):
            tail = " | ".join((run.stdout + run.stderr).strip().splitlines()[-5:])
            result.findings.append(Finding("pytest", TEST_FILE, 0, tail))


def _count(summary: str, word: str) -> int:
    for part in summary.replace(",", " ").split(" in ")[0].split("  "):
        pieces = part.split()
        for index, piece in enumerate(pieces[1:], start=1):
            if piece.startswith(word) and pieces[index - 1].isdigit():
                return int(pieces[index - 1])
    return 0
