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

from compiler.check.dynamic import finish_tests_together, start_tests_together, tests_alone
from compiler.check.package import CheckResult, Package, write_tree
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
    as the longest of them."""
    results = {p.name: CheckResult() for p in packages}
    if not packages:
        return results
    with check_tree() as root:
        for package in packages:
            write_tree(root / package.name, package.files)
        # Started before any thread exists: a child with a `preexec_fn` must not be forked
        # beside other threads.
        tests = start_tests_together(root, packages) if dynamic else None
        with ThreadPoolExecutor(max_workers=1) as waiter:
            waited = waiter.submit(finish_tests_together, tests, root, packages) if tests else None
            try:
                _static_checks(root, packages, results)
            except BaseException:
                if tests is not None:
                    tests.kill()  # nobody will read its verdict
                raise
            together = waited.result() if waited else None
        if dynamic:
            for package in packages:
                outcome = together[package.name] if together is not None else tests_alone(root, package)
                _add_tests(results[package.name], outcome)
    return results


def _static_checks(root: Path, packages: list[Package], results: dict[str, CheckResult]) -> None:
    """ruff, mypy and the AST rules; `static_ok` is whether they found nothing."""
    for finding_package, finding in ruff_findings(root, packages):
        results[finding_package].findings.append(finding)
    for finding_package, finding in mypy_findings(root, packages):
        results[finding_package].findings.append(finding)
    for package in packages:
        results[package.name].findings.extend(ast_rules(package))
        results[package.name].static_ok = not results[package.name].findings


def _add_tests(result: CheckResult, tests: CheckResult) -> None:
    """A package's static result joined with the outcome of its tests."""
    result.dynamic_ok = tests.dynamic_ok
    result.tests_passed, result.tests_failed = tests.tests_passed, tests.tests_failed
    result.findings.extend(tests.findings)
