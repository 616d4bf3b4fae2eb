"""The one clock generated code may read: episode.py's `time.monotonic`, which times a
call to stop it at its limit (`HARNESS_CLOCK`). Any other clock there, and any clock in
environment.py, is still refused by the AST rules."""

from __future__ import annotations

import ast

import pytest

from compiler.check.rules import rule_forbidden_calls, rule_imports, rule_module_names

CLOCK = "import time\n\n\ndef deadline(limit: float) -> float:\n    return time.monotonic() + limit\n"


def findings(relative: str, source: str) -> list[str]:
    tree = ast.parse(source)
    found = rule_imports(relative, tree) + rule_forbidden_calls(relative, tree) + rule_module_names(relative, tree)
    return [finding.message for finding in found]


def test_the_episode_may_read_the_monotonic_clock() -> None:
    assert findings("episode.py", CLOCK) == []


@pytest.mark.parametrize("call", ["time.time()", "time.sleep(1)", "time.perf_counter()"])
def test_no_other_clock_in_the_episode(call: str) -> None:
    assert findings("episode.py", CLOCK.replace("time.monotonic()", call))


@pytest.mark.parametrize("relative", ["environment.py", "scoring.py", "trl_env.py"])
def test_no_clock_elsewhere(relative: str) -> None:
    found = findings(relative, CLOCK)
    assert "import of `time` is not allowed here" in found
    assert any("time.monotonic" in message for message in found)
