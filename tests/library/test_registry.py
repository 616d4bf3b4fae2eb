"""The built-in registry (compiler/library/): every function and method has a type rule
and a lowering that work together. A probe spec generated from the registry itself
calls each entry once; it must analyse cleanly, lower, pass the static checks (ruff,
mypy --strict, envc's AST rules) and run. A new entry is covered without a new test."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from compiler import ir, library
from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.library import helpers
from compiler.lower import lower

ROOT = Path(__file__).resolve().parent.parent.parent

PROBE_STATE = """environment registry_probe:
    title "Registry probe"

state:
    xs: list[int] = [3, 1, 2]
    words: list[str] = ["b", "a"]
    tags: set[str] = []
    m: map[str, int] = {"a": 1, "b": 2}
    s: str = "abc"
    d: date = "2025-01-31"
    t: datetime = "2025-01-31T09:30:00"
    j: json = 1

"""
RECEIVERS = {"str": "s", "list": "xs", "map": "m", "set": "tags"}
"""A state field of each receiver kind, for method probes."""
ARGUMENTS = {"int": "1", "str": '"a"', "list[int]": "[4]", "list[str]": "words"}


def _function_tool(entry: library.Function) -> str:
    # A built-in that changes state is worth calling as a statement; others give a value.
    return _probe_tool(f"use_{entry.name}", entry.example, value=not entry.effect.writes)


def _method_call(entry: library.Method) -> str:
    receiver = {"str": ir.TypeRef(name="str"), "list": _t("list", "int"), "map": _t("map", "str", "int")}.get(
        entry.receiver, _t("set", "str")
    )
    params, _, required = entry.signature(receiver, 0)
    args = [ARGUMENTS[_show(p)] for p in params[: max(required, 1 if params else 0)]]
    return f"{RECEIVERS[entry.receiver]}.{entry.name}({', '.join(args)})"


def _method_tool(entry: library.Method) -> str:
    return _probe_tool(f"use_{entry.receiver}_{entry.name}", _method_call(entry), value=not entry.mutates)


def _probe_tool(name: str, call: str, value: bool) -> str:
    if not value:
        return f"tool {name}() -> bool:\n    {call}\n    return True\n"
    return f"tool {name}() -> bool:\n    let value = {call}\n    return len([value]) == 1\n"


def _t(name: str, *args: str) -> ir.TypeRef:
    return ir.TypeRef(name=name, args=[ir.TypeRef(name=a) for a in args])


def _show(ty: ir.TypeRef) -> str:
    return f"{ty.name}[{', '.join(_show(a) for a in ty.args)}]" if ty.args else ty.name


def probe_spec() -> str:
    tools = [_function_tool(f) for f in library.FUNCTIONS.values()]
    tools += [_method_tool(m) for m in library.METHODS.values()]
    return PROBE_STATE + "\n".join(tools)


@pytest.fixture(scope="module")
def probe() -> ir.Environment:
    result = analyse_source(probe_spec(), str(ROOT / "registry_probe.envspec"))
    problems = [f"{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics]
    assert result.environment is not None and not problems, problems
    return result.environment


def test_every_entry_is_probed(probe: ir.Environment) -> None:
    assert len(probe.tools) == len(library.FUNCTIONS) + len(library.METHODS)


def test_every_entry_lowers_checks_and_runs(probe: ir.Environment) -> None:
    files = lower(probe, "registry_probe.envspec")
    result = check_packages([Package(env=probe, name="registry_probe", files=files)], dynamic=True)
    outcome = result["registry_probe"]
    assert outcome.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in outcome.findings]
    assert outcome.static_ok and outcome.dynamic_ok
    assert outcome.tests_passed > len(library.FUNCTIONS) and outcome.tests_failed == 0


def test_effects_come_from_the_registry(probe: ir.Environment) -> None:
    tools = {t.name: t for t in probe.tools}
    for entry in library.FUNCTIONS.values():
        tool = tools[f"use_{entry.name}"]
        if entry.effect.writes:
            assert entry.effect.writes in tool.writes, entry.name
        for field in entry.effect.reads:
            if field in {f.name for f in probe.state}:
                assert field in tool.reads, (entry.name, field)
    for entry in library.METHODS.values():
        tool = tools[f"use_{entry.receiver}_{entry.name}"]
        assert (RECEIVERS[entry.receiver] in tool.writes) == entry.mutates, entry


def test_runtime_helpers_named_by_entries_exist() -> None:
    named = {h for f in library.FUNCTIONS.values() for h in f.runtime}
    named |= {h for m in library.METHODS.values() for h in m.runtime}
    assert named <= helpers.runtime_names()


def test_every_runtime_helper_is_reachable() -> None:
    """No dead helper: each is named by an entry, called by another helper, or used by
    the emitter itself (map keys that are json values; lookups on the agent's keys;
    `matches` and `json_dumps` in generated tests, which do not import re or json)."""
    named = {h for f in library.FUNCTIONS.values() for h in f.runtime}
    named |= {"matches", "json_key", "json_dumps", "not_found"}
    named |= {h for m in library.METHODS.values() for h in m.runtime}
    named.add("regex_problem")  # the compiler's own check of literal patterns (E3019)
    assert set(helpers.needed(named)) == helpers.runtime_names()


def test_helper_dependencies_are_found_in_the_code() -> None:
    assert helpers.needed(["add_days"]) == ["add_days", "format_like", "moment"]
    assert helpers.needed(["weekday", "copy"]) == ["moment", "weekday"]
    assert helpers.needed(["parse_json"]) == ["parse_json", "refuse_constant"]


def test_helper_sources_are_the_runtime_file_definitions() -> None:
    """Each helper is one function, class or annotated constant (`_REGEX_CACHE`)."""
    for source in helpers.sources(helpers.runtime_names()):
        tree = ast.parse(source)
        assert len(tree.body) == 1 and isinstance(tree.body[0], (ast.FunctionDef, ast.ClassDef, ast.AnnAssign))


def test_language_reference_lists_every_builtin() -> None:
    """docs/language.md §15 and §16 name every function and method of the registry."""
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    functions = text[text.index("## 15. Built-in functions") : text.index("## 16. Methods")]
    methods = text[text.index("## 16. Methods") :]
    methods = methods[: methods.index("\n## ", 1)]
    for name in library.FUNCTIONS:
        assert re.search(rf"`{name}\(", functions), f"docs/language.md §15 does not list `{name}`"
    for receiver, name in library.METHODS:
        assert re.search(rf"\b{name}\(", methods), f"docs/language.md §16 does not list {receiver}.{name}"
