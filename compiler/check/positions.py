"""Findings as diagnostics: each at the spec line of the tool, helper, test step or task
whose generated code it is in, where that can be known (else at the environment's
header)."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from compiler import ir
from compiler.check.package import CheckResult, Finding, Package
from compiler.diagnostics import Diagnostic
from compiler.library import builtins as bi


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
                return _task_position(task, finding)
    for decl in [*env.tools, *env.fns]:
        if method in (decl.name, bi.helper_method(decl.name), f"run_{decl.name}", f"test_{decl.name}"):
            return decl.file, decl.line, decl.col
    for test in env.tests:
        if method in (f"run_{test.name}", f"test_{test.name}"):
            step = _failed_step(text, test, finding.line) if finding.line else None
            return (test.file, step.line, step.col) if step is not None else (test.file, test.line, test.col)
    return env.path, env.header.line or 1, env.header.col or 1


def _task_position(task: ir.TaskDecl, finding: Finding) -> tuple[str, int, int]:
    """A task's failing verify at its first `verify` condition (the message says when it
    ran and against which state), anything else at the task's header."""
    if "verify ran against" in finding.message and task.verify:
        return task.file, task.verify[0].line, task.verify[0].col
    return task.file, task.line, task.col


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


def python_body_of(package: Package, finding: Finding) -> ir.ToolDecl | None:
    """The tool or helper with a `python` body whose generated method holds a static
    finding: the body is the spec author's code, not envc's."""
    if finding.tool == "pytest" or not finding.line:
        return None
    method = _enclosing_function(package.files.get(finding.file, ""), finding.line)
    for decl in [*package.env.tools, *package.env.fns]:
        if decl.escape is not None and decl.escape.kind == "python":
            if method in (decl.name, bi.helper_method(decl.name)):
                return decl
    return None


def _in_python_body(diagnostic: Diagnostic, decl: ir.ToolDecl, finding: Finding) -> Diagnostic:
    """A finding in an author's `python` body: at its `python` line, said to be the author's."""
    assert decl.escape is not None
    message = f"{finding.tool}, in the `python` body of `{decl.name}`: {finding.message}"
    hint = (
        f"this is the `python` body you wrote for `{decl.name}`, not code envc generated: "
        "it must pass the same ruff and mypy --strict checks; fix the body"
    )
    return replace(diagnostic, message=message, line=decl.escape.line, col=decl.escape.col, hint=hint)


def to_diagnostics(package: Package, result: CheckResult) -> list[Diagnostic]:
    diagnostics = []
    for finding in (at_failed_step(package, found) for found in result.findings):
        path, line, col = spec_position(package, finding)
        code = {"pytest": "E6002", "timeout": "E6004"}.get(finding.tool, "E6001")
        where = f"{package.name}/{finding.file}:{finding.line}" if finding.line else f"{package.name}/{finding.file}"
        diagnostic = Diagnostic(code, f"{finding.tool}: {where}: {finding.message}", path, line, col)
        body = python_body_of(package, finding) if code == "E6001" else None
        diagnostics.append(_in_python_body(diagnostic, body, finding) if body is not None else diagnostic)
    return diagnostics
