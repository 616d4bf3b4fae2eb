"""Names a spec may not use (issue 9): derived from the generated code, each refusal says why.

`compiler/lower/namespace.py` lowers probe specs and collects every name the generated
package defines; `compiler/library/builtins.py` keeps the result and its rules decide, per kind of
declaration, which names would collide. Here:

- the kept names are exactly what the templates render today (so they cannot drift), and
  the probe exercises every built-in function and method;
- every derived name (and every name envc makes up from one, like a helper's `_NAME`),
  used as a record, enum, tool, helper, state field, world field and local, is either
  refused by the analyser with E2014 and a message naming it, or it analyses cleanly
  and then really compiles: the accepted names of each kind go into one package, and all
  packages are checked by ruff, mypy --strict, envc's AST rules and their own tests;
- names the agent sees (issue 14) are free: a tool parameter may take every such name,
  every Python keyword and envspec word but the words of bodies (`bi.parameter_reason`),
  and a record field any name but `_` names and `error` (`bi.field_reason`); their
  packages compile the same way, and `call` takes the real names.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable
from dataclasses import fields

import pytest
from lowered import environment_module

from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.diagnostics import Diagnostic
from compiler.library import builtins as bi
from compiler.lower import lower
from compiler.lower import namespace as ns

HEADER = 'environment probe_names:\n    title "Names"\n\n'

DECLARATIONS: dict[str, Callable[[str], str]] = {
    "record": lambda n: f"record {n}:\n    probe_a: int\n",
    "enum": lambda n: f"enum {n}:\n    probe_a, probe_b\n",
    "tool": lambda n: f"tool {n}(probe_a: int) -> int:\n    return probe_a\n",
    "helper": lambda n: f"fn {n}(probe_a: int) -> int:\n    return probe_a\n",
    "state": lambda n: f"state:\n    {n}: int = 0\n",
    "world": lambda n: f"world:\n    {n}: int = 1\n",
    "variable": lambda n: f"tool probe_t(probe_a: int) -> int:\n    let {n} = probe_a\n    return probe_a\n",
}
"""The smallest spec that gives a name to a declaration of each kind (role); `variable`
is a `let` name, asked about like a loop or comprehension variable."""


def parameter(name: str) -> str:
    """A spec with `name` as a tool parameter (the agent sees it: `bi.parameter_reason`)."""
    return f"tool probe_t({name}: int) -> int:\n    return 1\n"


def field(name: str) -> str:
    """A spec with `name` as a record field (the agent sees it: `bi.field_reason`)."""
    return f"record Probe:\n    {name}: int\n"


AGENT_WORDS = sorted(
    {*keyword.kwlist, *bi.PYTHON_SOFT_KEYWORDS, *bi.LANGUAGE_WORDS, *bi.BLOCK_WORDS, *bi.FUNCTIONS} - {"_"}
)
"""Words that are no template name but were refused as a parameter or field before issue 14."""


HAND_KEPT_BEFORE = frozenset(
    "self cls state world call snapshot restore list dict map set bool json isinstance Any TypedDict Literal "
    "Optional Callable Final NotRequired Environment DomainError ToolError copy error DEFAULT_STATE AuditEntry re "
    "dt cast WORLD SCENARIOS State World nothing invoke view state_json fork reset tools schema close".split()
)
"""What compiler/library/builtins.py reserved by hand before issue 9 (besides keywords, language
words and built-in function names): each is still checked, refused or compiling."""


def derived() -> ns.Derived:
    return ns.derive()


def template_names() -> set[str]:
    """Every name the generated package defines or uses, as the derivation found them."""
    d = derived()
    return {
        *d.module_names,
        *d.module_builtins,
        *d.members,
        *d.class_scope,
        *d.subclass_members,
        *d.body_names,
        *d.test_module_names,
        *d.other_module_names,
    }


def candidates(role: str) -> list[str]:
    """The names to try as a declaration of `role`: every template name, every spec name
    that lands on one through a pattern (`run` for the helper method `_run`), the issue's
    own examples and what was reserved by hand before."""
    names = template_names() | {"Param", "ToolSpec"} | HAND_KEPT_BEFORE
    for namespace_role, patterns in derived().patterns.items():
        if namespace_role != role:
            continue
        for _, pattern in patterns:
            head, _, tail = pattern.partition("{}")
            names |= {n[len(head) : len(n) - len(tail)] for n in template_names() if _lands(n, head, tail)}
    return sorted(n for n in names if n.isidentifier() and not keyword.iskeyword(n))


def _lands(name: str, head: str, tail: str) -> bool:
    stem = name[len(head) : len(name) - len(tail)] if name.startswith(head) and name.endswith(tail) else ""
    return len(name) > len(head) + len(tail) and stem.isidentifier() and not stem.startswith("_")


def errors(text: str) -> list[Diagnostic]:
    return [d for d in analyse_source(HEADER + text, "names.envspec").diagnostics if d.severity == "error"]


def refused_by_analyser(name: str, role: str) -> bool:
    """Analyse the declaration; True when it is refused (E2014 naming it, or E2001 for a
    name a built-in declaration takes), False when it analyses cleanly."""
    found = errors(DECLARATIONS[role](name))
    if not found:
        return False
    codes = {d.code for d in found}
    assert codes <= {"E2014", "E2001"}, f"{role} {name}: {[f'{d.code} {d.message}' for d in found]}"
    assert any(f"`{name}`" in d.message for d in found), f"{role} {name}: {[d.message for d in found]}"
    return True


def role_less_refusal(name: str, role: str) -> bool:
    """What the analyser's role-less questions (`is_reserved`, `is_reserved_declaration`,
    `RESERVED_TOOL_NAMES`) can refuse for this role."""
    if role in ("tool", "state", "world"):
        return bi.is_reserved_declaration(name) or (role == "tool" and name in bi.RESERVED_TOOL_NAMES)
    return bi.is_reserved(name)


# --------------------------------------------------------------------------- the derivation


def test_kept_names_are_what_the_templates_render() -> None:
    """compiler/library/builtins.py holds exactly what `derive()` finds today, in the layout
    `--write` writes; otherwise: python -m compiler.lower.namespace --write"""
    d = derived()
    stale = [f.name.upper() for f in fields(ns.Derived) if getattr(bi, f.name.upper()) != getattr(d, f.name)]
    assert not stale, f"stale in compiler/library/builtins.py: {stale}; run python -m compiler.lower.namespace --write"
    text = ns.builtins_path().read_text(encoding="utf-8")
    assert ns.with_snapshot(text, d) == text, "run python -m compiler.lower.namespace --write"


def test_the_derivation_finds_the_names_of_the_issue() -> None:
    d = derived()
    for name in ("json", "re", "dt", "cast", "Any", "Param", "ToolSpec", "DomainError", "Environment", "State"):
        assert name in d.module_always, name
    for name in ("World", "WORLD", "AuditEntry", "DEFAULT_STATE", "SCENARIOS", "TOOL_SPECS", "_matches", "random"):
        assert name in d.module_names, name
    assert {"call", "invoke", "view", "state", "snapshot", "restore", "fork", "_run", "_undo"} <= set(d.members)
    assert {"self", "state", "env", "DomainError", "WORLD"} <= d.body_names
    assert d.subclass_members == {"trace"}
    assert ("class", "_{}") in d.patterns["helper"] and ("class", "{}") in d.patterns["tool"]


def test_the_probe_calls_every_built_in() -> None:
    """A new built-in function or method must be added to the probe, so that whatever its
    lowering needs (a runtime helper, an import) is derived too."""
    probe = ns.PROBES["splitmix64"]
    missing = [f for f in bi.FUNCTIONS if not re.search(rf"\b{f}\(", probe)]
    methods = {name for names in bi.METHODS_OF.values() for name in names}
    missing += [f".{m}" for m in sorted(methods) if f".{m}(" not in probe]
    assert not missing, f"the probe in compiler/lower/namespace.py does not call: {missing}"


# --------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("role", "name", "reason"),
    [
        ("record", "Param", "`Param` is a class of every generated environment module"),
        ("record", "ToolSpec", "`ToolSpec` is a class of every generated environment module"),
        ("enum", "isinstance", "`isinstance` is a Python built-in the generated environment module uses"),
        ("record", "view", "`view` is a method of every generated Environment, where it would hide a type"),
        ("tool", "trace", "`trace` is an attribute of the generated tests' Recorder, a subclass of Environment"),
        ("tool", "str", "`str` is used in the method signatures of the generated Environment"),
        ("helper", "run", "a helper `run` becomes `_run`, and `_run` is a method of every generated Environment"),
        ("helper", "undo", "a helper `undo` becomes `_undo`, and `_undo` is an attribute of every generated"),
        ("variable", "json", "`json` is a name the code generated for tool, helper and test bodies uses"),
        ("variable", "env", "`env` is a name the code generated for tool, helper and test bodies uses"),
        ("variable", "key_7", "`key_7` is a name the code generated for tool, helper and test bodies uses"),
        ("variable", "_x", "`_x`: names starting with `_` are left to the generated code"),
        ("state", "class", "`class` is a Python keyword"),
        ("world", "param", "`param` starts a block line of tools and helpers"),
        ("test", "snapshot_and_restore", "a test `snapshot_and_restore` becomes `test_snapshot_and_restore`"),
        ("task", "x", None),
        ("state", "json", None),
        ("tool", "DomainError", None),
        ("variable", "view", None),
    ],
)
def test_each_reason_says_what_the_name_is_in_the_generated_code(role: str, name: str, reason: str | None) -> None:
    found = bi.reserved_reason(name, role)
    if reason is None:
        assert found is None
    else:
        assert found is not None and found.startswith(reason), found


def test_names_starting_with_an_underscore_are_refused_everywhere() -> None:
    """Which is why no template name starting with `_` can collide with a spec's own name."""
    for role in ("record", "enum", "tool", "helper", "world", "variable"):
        assert bi.reserved_reason("_probe", role) is not None
        assert refused_by_analyser("_probe", role)
    assert bi.parameter_reason("_probe") is not None and errors(parameter("_probe"))
    # Private state and record fields (`_probe`) are the exception; `__probe` and `_` are not.
    assert bi.reserved_reason("_probe", "state") is None and not errors(DECLARATIONS["state"]("_probe"))
    assert bi.field_reason("_probe") is None and not errors(field("_probe"))
    for name in ("__probe", "_", "_1"):
        assert bi.reserved_reason(name, "state") is not None and refused_by_analyser(name, "state")
        assert bi.field_reason(name) is not None and errors(field(name))


def test_record_param_and_record_tool_spec_are_refused() -> None:
    """The regressions of the issue: both passed `envc check`, then failed mypy."""
    for name in ("Param", "ToolSpec"):
        found = errors(f"record {name}:\n    probe_a: int\n")
        assert [d.code for d in found] == ["E2014"]
        assert f"`{name}`" in found[0].message


def test_the_role_less_questions_keep_good_names_free() -> None:
    """The analyser asks without a role; the answers must not refuse names the shipped
    specs use, where only another kind of declaration may not have them."""
    assert not any(bi.is_reserved(n) for n in ("view", "run", "undo", "date", "time", "datetime", "optional"))
    assert not bi.is_reserved_declaration("view") and "view" in bi.RESERVED_TOOL_NAMES
    assert bi.is_reserved("Param") and bi.is_reserved("env") and bi.is_reserved("key_1")
    assert bi.RESERVED == {n for n in bi.RESERVED if bi.is_reserved(n)}


# --------------------------------------------------------------------------- every name, every role

ROLES = tuple(DECLARATIONS)


def _outcomes() -> dict[str, dict[str, bool]]:
    """role -> name -> refused by the analyser."""
    return {role: {name: refused_by_analyser(name, role) for name in candidates(role)} for role in ROLES}


def known_gaps(outcomes: dict[str, dict[str, bool]]) -> set[tuple[str, str]]:
    """Names the rules refuse for a role but the analyser, asking without the role, cannot."""
    return {
        (role, name)
        for role, names in outcomes.items()
        for name, refused in names.items()
        if not refused and bi.reserved_reason(name, role) is not None
    }


def test_every_derived_name_in_every_role_is_refused_or_compiles() -> None:
    """The issue's requirement, for every template name and every kind of declaration."""
    outcomes = _outcomes()
    for role, names in outcomes.items():
        for name, refused in names.items():
            reason = bi.reserved_reason(name, role)
            if not refused:  # the rules agree, unless it is one of the role-specific gaps
                assert reason is None or not role_less_refusal(name, role), (role, name, reason)
    gaps = known_gaps(outcomes)
    accepted = {
        role: [n for n, refused in names.items() if not refused and (role, n) not in gaps]
        for role, names in outcomes.items()
    }
    packages = [_package(role, names) for role, names in accepted.items()]
    results = check_packages(packages, dynamic=True)
    problems = {
        name: [f"{f.tool} {f.file}:{f.line} {f.message[:160]}" for f in result.findings]
        for name, result in results.items()
        if result.findings or not result.static_ok or not result.dynamic_ok
    }
    assert not problems, problems


def test_names_that_collide_in_one_role_only_are_refused_there() -> None:
    """A record `view` or an enum `fork` would clobber an Environment member; a helper
    `run` or `undo` a method the runtime calls: refused in that role, fine elsewhere."""
    for role, name in [("record", "view"), ("enum", "fork"), ("helper", "run"), ("helper", "undo")]:
        assert bi.reserved_reason(name, role) is not None
        assert refused_by_analyser(name, role), (role, name)
        assert not refused_by_analyser(name, "variable"), name


def test_the_analyser_refuses_what_the_rules_refuse() -> None:
    assert known_gaps(_outcomes()) == set()
    assert errors("tool probe_t() -> int:\n    return 1\n\ntest snapshot_and_restore:\n    probe_t()\n"), (
        "a test named like a generated invariant test"
    )


# --------------------------------------------------------------------------- the packages


def _package(role: str, names: list[str], env_name: str = "") -> Package:
    env_name = env_name or f"names_{role}"
    text = f'environment {env_name}:\n    title "Names as {role}"\n\n' + _spec_body(role, names)
    result = analyse_source(text, f"{env_name}.envspec")
    problems = [f"{d.line}: {d.code} {d.message}" for d in result.diagnostics if d.severity == "error"]
    assert result.environment is not None and not problems, (role, problems)
    return Package(env=result.environment, name=env_name, files=lower(result.environment, f"{env_name}.envspec"))


def _spec_body(role: str, names: list[str]) -> str:
    """A spec giving each name to a declaration of `role`, with the uses that would show
    a collision: records and enums in signatures, tools before a signature that spells
    every type, helpers called, parameters beside the code the lowering wraps around them."""
    parts: list[str] = []
    # The set parameter sits on the helper: for a tool's set[str] parameter the generated
    # tests' "wrong type" sample is a list of strings, which is a valid set (schema.py).
    every_type = (
        "tool probe_last(probe_s: str, probe_i: int, probe_f: float, probe_b: bool, probe_l: list[str] = [], "
        "probe_m: map[str, int] = {}, probe_j: json = [], probe_o: optional[str] = None) "
        "-> map[str, list[float]]:\n    return {}\n\n"
        "fn probe_help(probe_x: str, probe_z: set[str]) -> bool:\n    return True\n"
    )
    if role == "record":
        for i, n in enumerate(names):
            parts.append(
                f"record {n}:\n    probe_a: list[int] = []\n\ntool probe_r{i}() -> list[{n}]:\n    return []\n"
            )
    elif role == "enum":
        for i, n in enumerate(names):
            parts.append(
                f"enum {n}:\n    probe_a, probe_b\n\ntool probe_e{i}(probe_v: {n}) -> {n}:\n    return probe_v\n"
            )
    elif role == "tool":
        parts += [f"tool {n}(probe_a: int) -> int:\n    return probe_a\n" for n in names]
        parts.append(every_type)
        if names:
            parts.append(f"test probe_calls:\n    let probe_x = {names[0]}(probe_a=1)\n    expect probe_x == 1\n")
    elif role == "helper":
        parts += [f"fn {n}(probe_a: int) -> int:\n    return probe_a\n" for n in names]
        calls = ", ".join(f"{n}(1)" for n in names)  # a list, not a chain of `+` (E1008 nests)
        # No built-in around the calls: a helper may take a built-in's name (`sum`, E2042).
        parts.append(
            f"tool probe_t() -> int:\n    let probe_all = [{calls}]\n    return probe_all[0]\n"
            if names
            else "tool probe_t() -> int:\n    return 0\n"
        )
        parts.append(every_type)
    elif role in ("state", "world"):
        values = "".join(f"    {n}: list[int] = [1]\n" for n in names)
        parts.append(f"{role}:\n{values}")
        parts.append("tool probe_t() -> int:\n    return 1\n")
        if role == "state" and names:
            parts.append(f"scenario probe_s:\n    {names[0]} = [2]\n")
    else:
        parts.append("state:\n    probe_log: list[int] = []\n\nworld:\n    probe_w: int = 1\n")
        for i, n in enumerate(names):
            parts.append(
                f"tool probe_p{i}({n}: int) -> int:\n"
                f'    require {n} >= 0 else invalid_argument("negative", field="{n}")\n'
                f"    let probe_copy = copy(probe_log)\n"
                f"    probe_log.append({n} + len(probe_copy) + probe_w)\n"
                f"    return {n}\n"
            )
        lets = "".join(f"    let {n} = {i}\n    expect {n} == {i}\n" for i, n in enumerate(names))
        if names:
            parts.append(f"test probe_lets:\n{lets}    probe_p0({names[0]}=1)\n    expect len(probe_log) == 1\n")
    return "\n".join(parts)


# --------------------------------------------------------------------------- names the agent sees


def agent_candidates() -> list[str]:
    """Every template name, every word of the languages and every built-in function; not
    the built-in record `AuditEntry`, which a parameter cannot share as any type (E2001)."""
    return sorted({*candidates("variable"), *AGENT_WORDS, "key_1", "key_12"} - {"AuditEntry"})


def test_parameters_are_refused_only_words_of_bodies() -> None:
    """A parameter is refused exactly when `bi.parameter_reason` says so, with E2014
    naming it: the body words (`if`, `let`, ...) and `_` names; `state`, `from`, `json`,
    `self`, `env`, `key_1` and every built-in function are free."""
    for name in agent_candidates():
        found = errors(parameter(name))
        reason = bi.parameter_reason(name)
        assert bool(found) == (reason is not None), (name, [d.message for d in found])
        if found:
            assert [d.code for d in found] == ["E2014"] and f"`{name}`" in found[0].message, name
    for name in ("state", "world", "from", "class", "type", "json", "env", "self", "key_1", "len", "max"):
        assert bi.parameter_reason(name) is None, name
    assert {bi.parameter_reason(w) is not None for w in bi.BODY_WORDS} == {True}


def test_record_fields_are_refused_only_underscore_names_and_error() -> None:
    for name in agent_candidates():
        found = errors(field(name))
        assert bool(found) == (bi.field_reason(name) is not None), (name, [d.message for d in found])
    assert bi.field_reason("error") is not None and bi.field_reason("type") is None


def _agent_names_spec(params: list[str], fields: list[str]) -> str:
    """One tool per parameter name, beside a state field, a world field and built-in calls
    the lowering must keep apart from it; one record with every field name."""
    parts = ["record Probe:\n" + "".join(f"    {n}: int = 0\n" for n in fields)]
    parts.append("state:\n    probe_log: list[int] = []\n\nworld:\n    probe_w: int = 1\n")
    for i, n in enumerate(params):
        parts.append(
            f"tool probe_p{i}({n}: int) -> int:\n"
            f'    require {n} >= 0 else invalid_argument("negative", field="{n}")\n'
            f"    let probe_copy = copy(probe_log)\n"
            f"    probe_log.append({n} + len(probe_copy) + probe_w + max(0, {n}))\n"
            f"    return probe_fn{i}({n}={n})\n\n"
            f"fn probe_fn{i}({n}: int) -> int:\n    return {n}\n"
        )
    args = ", ".join(f"{n}=1" for n in fields[:40])
    parts.append(f"tool probe_record() -> Probe:\n    return Probe({args})\n")
    return "\n".join(parts)


def test_agent_names_compile_and_calls_take_the_real_names() -> None:
    """Every free parameter and field name in one package: ruff, mypy --strict, the AST
    rules and its generated tests (which call each tool by its tools.json names) pass."""
    names = agent_candidates()
    params = [n for n in names if bi.parameter_reason(n) is None]
    fields = [n for n in names if bi.field_reason(n) is None]
    env_name = "names_agent"
    text = f'environment {env_name}:\n    title "Names the agent sees"\n\n' + _agent_names_spec(params, fields)
    result = analyse_source(text, f"{env_name}.envspec")
    problems = [f"{d.line}: {d.code} {d.message}" for d in result.diagnostics if d.severity == "error"]
    assert result.environment is not None and not problems, problems[:10]
    files = lower(result.environment, f"{env_name}.envspec")
    tools = {t["name"]: t for t in json.loads(files["tools.json"])["tools"]}
    for i, n in enumerate(params):
        assert list(tools[f"probe_p{i}"]["parameters"]["properties"]) == [n]
    assert list(tools["probe_record"]["returns"]["properties"]) == fields
    module = environment_module(files["environment.py"], f"{env_name}_environment")
    session = module.Environment()
    for i, n in enumerate(params):
        assert session.call(f"probe_p{i}", {n: 2}) == 2, n
        assert session.call(f"probe_p{i}", {n: -1})["error"]["field"] == n
    assert len(session.state()["probe_log"]) == len(params)
    assert session.call("probe_record", {}) == {n: 1 if i < 40 else 0 for i, n in enumerate(fields)}
    results = check_packages([Package(env=result.environment, name=env_name, files=files)], dynamic=True)
    findings = {
        k: [f"{f.tool} {f.file}:{f.line} {f.message[:160]}" for f in r.findings]
        for k, r in results.items()
        if r.findings or not r.static_ok or not r.dynamic_ok
    }
    assert not findings, findings


def test_a_parameter_called_state_is_the_parameter_in_its_body() -> None:
    body = "state:\n    probe_log: list[int] = []\n\ntool t(state: str) -> int:\n"
    assert not errors(body + "    probe_log.append(len(state))\n    return len(probe_log)\n")
    [found] = errors(body + "    return len(state.probe_log)\n")
    assert found.code == "E2025" and "bare name" in found.hint
