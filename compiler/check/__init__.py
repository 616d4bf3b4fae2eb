"""Stages 5 and 6, check: quality control of generated packages before they count.

The driver, `check_packages`: static checks (`static.py`: ruff and mypy --strict;
`rules.py`: envc's own AST rules) and the dynamic check (`dynamic.py`: the generated
tests, run by pytest in a subprocess with a time limit), over every package at once.
`positions.py` turns the findings into diagnostics at the spec line of the tool whose
code failed, where that can be known.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from compiler.check.dynamic import TEST_FILE, finish_tests_together, start_tests_together, tests_alone
from compiler.check.package import CheckResult, Finding, Package, write_tree
from compiler.check.rules import ast_rules
from compiler.check.static import mypy_findings, ruff_findings
from compiler.project import cache_folder


@contextlib.contextmanager
def check_tree() -> Iterator[Path]:
    """The folder packages are checked in: always the same path, so mypy's cache (which
    replays findings with the paths they had) stays right; locked, so two envc runs
    never check in it at once."""
    root = cache_folder() / "check-tree"
    root.mkdir(parents=True, exist_ok=True)
    with open(cache_folder() / "check-tree.lock", "w", encoding="utf-8") as lock:
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
    as the longest of them. A package with a `python` body is held back: its tests run
    only if the AST rules found nothing in it, so no code they refuse is ever run."""
    results = {p.name: CheckResult() for p in packages}
    if not packages:
        return results
    screened = {p.name: ast_rules(p) for p in packages if p.has_python_bodies}
    runnable = [p for p in packages if not screened.get(p.name)]
    with check_tree() as root:
        for package in packages:
            write_tree(root / package.name, package.files)
        # Started before any thread exists: a child with a `preexec_fn` must not be forked
        # beside other threads.
        tests = start_tests_together(root, runnable) if dynamic and runnable else None
        with ThreadPoolExecutor(max_workers=1) as waiter:
            waited = waiter.submit(finish_tests_together, tests, root, runnable) if tests else None
            try:
                _static_checks(root, packages, results, screened)
            except BaseException:
                if tests is not None:
                    tests.kill()  # nobody will read its verdict
                raise
            together = waited.result() if waited else None
        if dynamic:
            for package in packages:
                if screened.get(package.name):
                    outcome = _not_run()
                else:
                    outcome = together[package.name] if together is not None else tests_alone(root, package)
                _add_tests(results[package.name], outcome)
    return results


def _not_run() -> CheckResult:
    """The dynamic verdict of a package the AST rules refused before its tests could run."""
    why = "generated tests not run: envc's AST rules refused code of a `python` body (see the findings above)"
    return CheckResult(dynamic_ok=False, findings=[Finding("ast", TEST_FILE, 0, why)])


def _static_checks(
    root: Path, packages: list[Package], results: dict[str, CheckResult], screened: dict[str, list[Finding]]
) -> None:
    """ruff, mypy and the AST rules (already run on the packages `screened`); `static_ok`
    is whether they found nothing."""
    for finding_package, finding in ruff_findings(root, packages):
        results[finding_package].findings.append(finding)
    for finding_package, finding in mypy_findings(root, packages):
        results[finding_package].findings.append(finding)
    for package in packages:
        found = screened[package.name] if package.name in screened else ast_rules(package)
        results[package.name].findings.extend(found)
        results[package.name].static_ok = not results[package.name].findings


def _add_tests(result: CheckResult, tests: CheckResult) -> None:
    """A package's static result joined with the outcome of its tests."""
    result.dynamic_ok = tests.dynamic_ok
    result.tests_passed, result.tests_failed = tests.tests_passed, tests.tests_failed
    result.findings.extend(tests.findings)
