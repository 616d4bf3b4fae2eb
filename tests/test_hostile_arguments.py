"""Property: random hostile arguments (tests/hostile.py) over every tool of every shipped
package never give an infrastructure error, always give a result JSON can carry, are
refused before the tool runs (never by `call_and_commit`'s net for results JSON cannot
hold), and never change state when refused."""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from typing import Any

import pytest
from hostile import arguments
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shipped import examples_per_package, package_names, put_on_path

PACKAGES = package_names()

HOSTILE_EXAMPLES = examples_per_package(1560)
"""120 per package for 13 packages, 34 for 45: the property's total stays bounded."""


def package(name: str) -> ModuleType:
    put_on_path()
    return importlib.import_module(name)


def refused(result: Any) -> bool:
    """A package's JSON error (BFCL-style packages also answer `{"error": "text"}` as results)."""
    return isinstance(result, dict) and set(result) == {"error"} and isinstance(result["error"], dict)


@pytest.mark.parametrize("name", PACKAGES)
def test_hostile_arguments_are_refused_before_the_tool_runs(name: str) -> None:
    module = package(name)
    scenarios = [None, *module.SCENARIOS]

    @settings(max_examples=HOSTILE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(sorted(module.TOOL_SPECS)), label="tool")
        params = [param.name for param in module.TOOL_SPECS[tool].params]
        args = data.draw(arguments(params), label="arguments")
        env = module.Environment(data.draw(st.sampled_from(scenarios), label="scenario"))
        before = env.saved_state()
        result, text = env.call_and_commit(tool, args)
        assert json.loads(text.encode("utf-8")) == json.loads(json.dumps(result, allow_nan=False))
        if refused(result):
            assert result["error"]["kind"] != "internal", result
            assert result != module.environment.UNWRITABLE_RESULT, "refused after the tool ran, not before"
            assert env.saved_state() == before, f"a refused `{tool}` changed the state"

    check()
