"""Effect inference is sound (issue 24): a body that changes state through any access
path the language has is a write tool, its change is rolled back when the call is then
refused, and a fork's change stays in the fork.

Hypothesis draws bodies from a small grammar: a state value (a field, an item, an
attribute, a json value seen through `as_map`/`as_list`), passed through aliases (`let`,
a helper that returns its parameter, a list holding it, a loop over such a list, a map's
`get`, a local that takes the value only on a loop's second round), then changed
(assignment, `+=`, `del`, `append`, `insert`, `remove`, `pop`, `clear`, `extend`, `add`,
`discard`), in the body itself or in a helper it is passed to. Each example compiles one
spec of several such tools and runs the lowered module."""

from __future__ import annotations

import itertools
import types
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from lowered import environment_module

from compiler.analyse import analyse_source
from compiler.lower import lower

HEADER = """environment sound:
    title "Sound effects"

record Item:
    name: str
    tags: list[str] = []
    meta: map[str, int] = {}

state:
    nums: list[int] = [1, 2, 3]
    lists: list[list[int]] = [[1, 2], [3]]
    grid: map[str, list[int]] = {"a": [1, 2]}
    counts: map[str, int] = {"a": 1}
    tagset: set[str] = ["x"]
    items: map[str, Item] = {"a": {"name": "a", "tags": ["t"], "meta": {"a": 1}}}
    doc: json = {"k": [1], "x": 1}
    docs: map[str, json] = {"a": [1, 2]}
"""

TYPES = {
    "ilist": "list[int]",
    "slist": "list[str]",
    "imap": "map[str, int]",
    "set": "set[str]",
    "item": "Item",
    "jmap": "map[str, json]",
    "jlist": "list[json]",
}

ROOTS: list[tuple[str, str, str]] = [
    # (kind, expression, the state field it is part of)
    ("ilist", "nums", "nums"),
    ("ilist", "lists[0]", "lists"),
    ("ilist", 'grid["a"]', "grid"),
    ("ilist", "state.nums", "nums"),
    ("slist", 'items["a"].tags', "items"),
    ("imap", 'items["a"].meta', "items"),
    ("imap", "counts", "counts"),
    ("set", "tagset", "tagset"),
    ("item", 'items["a"]', "items"),
    ("jmap", "as_map(doc)", "doc"),
    ("jlist", 'as_list(docs["a"])', "docs"),
]

MUTATIONS = {
    "ilist": ["{x}.append(7)", "{x}.insert(0, 7)", "{x}.extend([7])", "{x}[0] = 99", "{x}[0] += 5", "{x}.pop()"]
    + ["{x}.clear()", "{x}.remove(1)", "{x}.pop(0)"],
    "slist": ['{x}.append("z")', "{x}.pop()", "{x}.clear()", '{x}[0] = "q"', '{x}.insert(1, "z")'],
    "imap": ['{x}["z"] = 1', '{x}["a"] += 1', 'del {x}["a"]', '{x}.pop("a")', "{x}.clear()"],
    "set": ['{x}.add("z")', '{x}.discard("x")'],
    "item": ['{x}.name = "z"', '{x}.tags.append("z")', '{x}.meta["q"] = 2', '{x}.tags[0] = "q"'],
    "jmap": ['{x}["z"] = 1', 'del {x}["x"]', "{x}.clear()", '{x}.pop("x")'],
    "jlist": ["{x}.append(1)", "{x}.clear()", "{x}.pop()", "{x}[0] = 5"],
}

SAFE_FIRST_ROUND = {  # (fresh value, a change that works on it) for the loop's first round
    "ilist": ("[]", "{x}.append(7)"),
    "slist": ("[]", '{x}.append("z")'),
    "imap": ("{{}}", '{x}["z"] = 1'),
    "set": ("[]", '{x}.add("z")'),
    "item": ('Item(name="f")', '{x}.name = "z"'),
    "jmap": ("{{}}", '{x}["z"] = 1'),
    "jlist": ("[]", "{x}.append(1)"),
}

STEPS = ["let", "helper", "boxed", "loop", "get"]


@dataclass
class Body:
    """One tool's body as it is built: lines, the helpers it needs, a fresh-name counter."""

    number: int
    lines: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    indent: str = "    "
    names: itertools.count[int] = field(default_factory=itertools.count)

    def fresh(self, base: str) -> str:
        return f"{base}{self.number}_{next(self.names)}"

    def add(self, line: str) -> None:
        self.lines.append(self.indent + line)


def _start(body: Body, kind: str, expr: str) -> str:
    """A root expression usable as a value: optional results narrowed first."""
    if kind in ("jmap", "jlist"):
        name = body.fresh("j")
        body.add(f"let {name} = {expr}")
        body.add(f'require {name} is not None else invalid_state("not a {kind}")')
        return name
    return expr


def _step(body: Body, kind: str, expr: str, step: str) -> str:
    """The value passed through one more way of aliasing it."""
    if step == "let":
        name = body.fresh("v")
        body.add(f"let {name} = {expr}")
        return name
    if step == "helper":
        name = body.fresh("same")
        body.helpers.append(f"fn {name}(x: {TYPES[kind]}) -> {TYPES[kind]}:\n    return x\n")
        return f"{name}({expr})"
    if step == "boxed":
        name = body.fresh("box")
        body.add(f"let {name} = [{expr}]")
        return f"{name}[0]"
    if step == "loop":
        name, box = body.fresh("each"), body.fresh("box")
        body.add(f"let {box} = [{expr}]")
        body.add(f"for {name} in {box}:")
        body.indent += "    "
        return name
    if step == "get" and kind == "item" and expr == 'items["a"]':
        name = body.fresh("got")
        body.add(f'let {name} = items.get("a")')
        body.add(f'require {name} is not None else not_found("no a")')
        return name
    return expr


def _change(body: Body, kind: str, expr: str, mutation: str, where: str) -> None:
    """The change itself: here, in a helper the value is passed to, or on a loop's second
    round through a local that held a fresh value on the first."""
    if where == "helper":
        name = body.fresh("change")
        body.helpers.append(f"fn {name}(x: {TYPES[kind]}) -> None:\n    {mutation.format(x='x')}\n")
        body.add(f"{name}({expr})")
    elif where == "late":
        fresh, first_change = SAFE_FIRST_ROUND[kind]
        name, counter = body.fresh("late"), body.fresh("i")
        body.add(f"let {name}: {TYPES[kind]} = {fresh.format()}")
        body.add(f"for {counter} in range(2):")
        body.add(f"    {first_change.format(x=name)}")
        body.add(f"    {name} = {expr}")
    else:
        body.add(mutation.format(x=expr))


@st.composite
def bodies(draw: st.DrawFn, number: int) -> tuple[Body, str]:
    """One tool's body and the state field it changes."""
    kind, root, changed = draw(st.sampled_from(ROOTS))
    body = Body(number)
    expr = _start(body, kind, root)
    for step in draw(st.lists(st.sampled_from(STEPS), max_size=3)):
        expr = _step(body, kind, expr, step)
    where = draw(st.sampled_from(["here", "here", "helper", "late"]))
    mutation = draw(st.sampled_from(MUTATIONS[kind]))
    _change(body, kind, expr, mutation, where)
    body.indent = "    "
    return body, changed


def _spec(drawn: list[tuple[Body, str]]) -> str:
    parts = [HEADER]
    for body, _ in drawn:
        parts.extend(body.helpers)
        lines = "\n".join(body.lines)
        parts.append(
            f"tool change_{body.number}(refuse: bool) -> int:\n{lines}\n"
            f'    require not refuse else invalid_state("refused after the change")\n'
            f"    return 0\n"
        )
    return "\n".join(parts)


def _module(spec: str) -> tuple[types.ModuleType, dict[str, list[str]]]:
    result = analyse_source(spec, "sound.envspec")
    assert result.environment is not None, (spec, [(d.code, d.line, d.message) for d in result.diagnostics])
    writes = {tool.name: list(tool.writes) for tool in result.environment.tools}
    files = lower(result.environment, "sound.envspec")
    return environment_module(files["environment.py"], "sound_environment"), writes


def _check_tool(module: Any, tool: str, changed: str, writes: list[str], spec: str) -> None:
    assert changed in writes, f"{tool} changes `{changed}` but is inferred to write {writes}\n{spec}"
    env = module.Environment()
    before = env.state_json()
    refused = env.call(tool, {"refuse": True})
    assert refused["error"]["kind"] == "invalid_state", (tool, refused, spec)
    assert env.state_json() == before, f"{tool}: a refused call left its change\n{spec}"
    child = env.fork()
    done = child.call(tool, {"refuse": False})
    assert done == 0, (tool, done, spec)
    assert child.state_json() != before, f"{tool} changed nothing: the example is not a change\n{spec}"
    assert env.state_json() == before, f"{tool}: a fork's change shows in its parent\n{spec}"
    assert module.TOOL_SPECS[tool].writes, f"{tool} is listed as a read tool\n{spec}"


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure names its spec; shrinking recompiles for minutes
)
@given(st.tuples(*(bodies(number) for number in range(10))))
def test_every_change_of_state_is_a_write_rolled_back_and_kept_in_its_fork(drawn: tuple[tuple[Body, str], ...]) -> None:
    spec = _spec(list(drawn))
    module, writes = _module(spec)
    for body, changed in drawn:
        tool = f"change_{body.number}"
        _check_tool(module, tool, changed, writes[tool], spec)


def test_the_issue_example_as_map_is_a_write() -> None:
    """The path issue 24 found: a change through `as_map` of a state value."""
    body = Body(0)
    expr = _start(body, "jmap", "as_map(doc)")
    _change(body, "jmap", expr, '{x}["z"] = 1', "here")
    spec = _spec([(body, "doc")])
    module, writes = _module(spec)
    _check_tool(module, "change_0", "doc", writes["change_0"], spec)
