"""Analysis pass 5, tests and tasks: each test line and task solution type-checked as
tool calls from outside, verify conditions as pure reads of state, scenarios that exist,
and the rules a test may not break (it changes state only through tools) and a task must
follow (request, solution and verify present; the solution ends with a write)."""

from __future__ import annotations

from compiler import ir
from compiler.analyse.context import Analysis
from compiler.analyse.effects import EffectWalker, Summary
from compiler.analyse.types import TypeChecker
from compiler.diagnostics import did_you_mean
from compiler.library import builtins as bi


def run(a: Analysis, summaries: dict[str, Summary]) -> None:
    for test in a.module.tests:
        check_test(a, test, summaries)
    for task in a.module.tasks:
        check_task(a, task, summaries)


def check_test(a: Analysis, test: ir.TestDecl, summaries: dict[str, Summary]) -> None:
    checker = TypeChecker(a, None, is_helper=False, file=test.file)
    for index, step in enumerate(test.steps):
        if isinstance(step, ir.UseScenario):
            if index != 0:
                a.error("E5002", "`scenario` must be the first line of a test", step, test.file)
            check_scenario_ref(a, step.name, step, test.file)
        elif isinstance(step, ir.TestLet):
            ty = checker.expr(step.value, None)
            checker.declare(step.name, ty, "local", step)
        elif isinstance(step, ir.TestCall):
            checker.tool_call(step.call, statement=True)
        elif isinstance(step, ir.ExpectRaises):
            checker.tool_call(step.call, statement=True)
            if step.error not in bi.ERROR_KINDS:
                a.error(
                    "E2013",
                    f"unknown error kind `{step.error}`",
                    step,
                    test.file,
                    hint=did_you_mean(step.error, bi.ERROR_KINDS),
                )
        else:
            checker.condition(step.cond)
    EffectWalker(a, summaries, None, is_helper=False, file=test.file).test_steps(test.steps)


def check_task(a: Analysis, task: ir.TaskDecl, summaries: dict[str, Summary]) -> None:
    if task.scenario:
        check_scenario_ref(a, task.scenario, task, task.file)
    if not task.request.strip():
        a.error("E5003", f"task `{task.name}` has no `request`", task, task.file)
    if not task.solution:
        a.error("E5003", f"task `{task.name}` has no `solution`", task, task.file)
    if not task.verify:
        a.error("E5003", f"task `{task.name}` has no `verify` condition", task, task.file)
    checker = TypeChecker(a, None, is_helper=False, file=task.file)
    for step in task.solution:
        checker.tool_call(step, statement=True)
    if task.solution:
        last = task.solution[-1]
        tool = a.tools.get(last.func.id) if isinstance(last, ir.Call) and isinstance(last.func, ir.Name) else None
        if tool is not None and not tool.writes:
            a.error(
                "E5003",
                f"the solution must end with a state-changing tool; `{tool.name}` only reads",
                last,
                task.file,
            )
    pure = TypeChecker(a, None, is_helper=False, file=task.file, allow_tools=False)
    for condition in task.verify:
        pure.condition(condition)
    walker = EffectWalker(a, summaries, None, is_helper=False, file=task.file)
    for expr in [*task.solution, *task.verify]:
        walker.expr(expr)


def check_scenario_ref(a: Analysis, name: str, node: ir.Node, file: str) -> None:
    if name not in a.scenarios:
        a.error("E2010", f"unknown scenario `{name}`", node, file, hint=did_you_mean(name, a.scenarios))
