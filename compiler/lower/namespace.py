"""The names the generated package already uses, derived from the templates.

A spec's declarations become Python names of the generated package: records and enums
module-level classes of `environment.py` (a record also `_copy_NAME`); tools methods of
its `Environment` class (and of the `Recorder` subclass in the generated tests); a
helper `fn NAME` the method `_NAME`; parameters and `let` names locals of
those methods or of the generated test functions; tests and tasks functions of
`tests/test_environment.py`. State and world fields are only dict keys and `TypedDict`
keys. Which names a spec may not take follows from what the templates put in those same
namespaces, so this module asks the templates: it lowers probe specs that switch on
every optional part of them (enums, records with and without containers or fields that may be absent, unions, world data,
every built-in function and method, both random generators, python escape bodies,
tests, tasks, task families), and walks the resulting Python with `ast`.

Lowering imports jinja2 and libcst and runs ruff: far too slow for `envc check`, and
it needs the analyser, which itself asks which names are reserved. So the result is
kept in `compiler/library/builtins.py` (the block between `# BEGIN derived names` and
`# END derived names`), where `is_reserved` and friends read it; tests/test_reserved_names.py
fails as soon as it differs from `derive()`, and

    python -m compiler.lower.namespace --write

rewrites it. Every probe name contains `quux`, which is how the walk tells the
templates' names from the spec's (no template name contains it: the walk checks).

Names that start with `_` cannot be taken by a spec directly (`bi.is_reserved` refuses
them everywhere), so they only matter through the names envc makes up from a
declaration (`_NAME` of a helper, `_copy_NAME` of a record, whatever the templates add):
the `patterns` below record where each kind of declaration lands, and the rules in
`compiler/library/builtins.py` check the made-up name against what the templates define.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path

from compiler.analyse import analyse_source
from compiler.lower import lower
from compiler.lower.formatting import ruff_binary

MARKER = "quux"
"""Every name the probe specs declare contains this; no template name does."""

_PROBE_HEADER = """\
environment quux_env:
    title "Probe"
    doc "Switches on every optional part of the generated code."
    seed 7
"""

_PROBE_BODY = '''
enum QuuxColor:
    """A colour."""
    quux_red, quux_blue

record QuuxFlat:
    """A record of scalars."""
    quux_id: int
    quux_label: str = ""
    quux_color: QuuxColor = QuuxColor.quux_red
    quux_nick?: str

record QuuxDeep:
    """A record holding containers."""
    quux_tags: list[str] = []
    quux_marks: set[str] = []
    quux_inner: optional[QuuxFlat] = None
    quux_extra?: list[str]

record QuuxCard:
    """A member of a union."""
    quux_digits: str

union QuuxPay by quux_via:
    """A union tagged by a field."""
    QuuxCard = "quux_card"
    QuuxDeep = "quux_deep"

state:
    quux_items: map[int, QuuxFlat] = {}
    quux_deeps: list[QuuxDeep] = []
    quux_names: set[str] = []
    quux_notes: map[json, list[str]] = {}
    quux_text: optional[str] = None
    quux_when: datetime = "2025-01-01T09:00:00"
    quux_day: date = "2025-01-01"
    quux_hour: time = "09:00:00"
    quux_ratio: float = 0.5
    quux_flag: bool = False
    quux_blob: json = None
    quux_count: int = 0
    quux_total: int = 0 alias "quuxTotal"
    quux_loaded: list[str] from "quux.json"
    quux_pays: list[QuuxPay] = []

load options:
    quux_long: bool = False

on load:
    """A load step reading an option."""
    quux_total = len(quux_items) + (1 if quux_long else 0)

world:
    quux_noun: str = "item"
    quux_table: map[str, int] = {"a": 1}

scenario quux_busy:
    """Some data."""
    quux_count = 3
    quux_items = {1: {"quux_id": 1}}

tool quux_pay(quux_via: QuuxPay) -> QuuxPay:
    """A union in, its member out, a field that may be absent deleted."""
    quux_pays.append(quux_via)
    for quux_deep in quux_deeps:
        del quux_deep.quux_extra
    return quux_via

fn quux_find(quux_key: int) -> QuuxFlat:
    """Look one up."""
    let quux_found = quux_items.get(quux_key)
    require quux_found is not None else not_found(f"{quux_noun} {quux_key} does not exist", entity=quux_noun, field="quux_key")
    return quux_found

fn quux_depth(quux_n: int) -> int:
    """A helper that calls itself (it counts its depth)."""
    return 0 if quux_n <= 0 else 1 + quux_depth(quux_n - 1)

tool quux_put(quux_key: int min 0 max 99, quux_label: str = "" max_length 20 pattern "[a-z]*", quux_tags: list[str] = ["x"], quux_extra: json = [], quux_color: QuuxColor = QuuxColor.quux_red, quux_maybe: optional[QuuxFlat] = None) -> QuuxFlat:
    """Every statement, built-in function and method, in one body."""
    param quux_key "The key."
    let quux_item = QuuxFlat(quux_id=quux_key, quux_label=quux_label, quux_color=quux_color)
    quux_items[quux_key] = quux_item
    quux_items[len(quux_tags)] = copy(quux_item)
    quux_item.quux_label = quux_label.lower().upper().strip().title().replace("a", "b").zfill(3)
    quux_deeps.append(QuuxDeep(quux_tags=quux_tags.copy()))
    quux_names.add(quux_label)
    quux_names.discard("zz")
    let quux_copied = quux_names.copy()
    quux_notes[quux_key] = []
    quux_notes[quux_extra] = ["x"]
    quux_text = f"{quux_label}-{quux_key}" + str(quux_count)
    quux_count += next_id("quux") + random_int(1, 6) + random_choice([1, 2]) + stable_hash(quux_label)
    advance_clock(60)
    audit("put", entity=quux_noun, detail=f"{quux_key}")
    let quux_list: list[int] = [1, 2, 3]
    quux_list.insert(0, 4)
    quux_list.remove(4)
    quux_list.extend([5])
    let quux_popped = quux_list.pop()
    let quux_first = quux_list.pop(0)
    quux_list.clear()
    let quux_at = [7, 8].index(7) + [7].count(7) + "ab".count("a") + "ab".find("b")
    let quux_m = {"a": 1}
    let quux_got = quux_m.get("a", 0) + len(quux_m.keys()) + len(quux_m.values()) + len(quux_m.copy())
    let quux_gone = quux_m.pop("a")
    quux_m.clear()
    let quux_parts = "a b".split() + "a,b".split(",")
    let quux_joined = ",".join(quux_parts)
    let quux_bools = "1".isdigit() and "ab".startswith("a") and "ab".endswith("b")
    let quux_nums = min(1, 2) + max([1, 2]) + sum([1]) + abs(-1) + round(1.5) + int(2.0) + round(float(1), 1)
    let quux_seq = sorted(reversed(range(3)), reverse=True) + unique([1, 1]) + keys({1: 2}) + values({1: 2})
    let quux_zipped = [quux_a + quux_b for quux_a, quux_b in zip([1], quux_seq)]
    let quux_any = any([True]) or all([quux_flag]) or matches(quux_label, "[a-z]+") or matches(quux_label, quux_joined) or search(quux_label, "a") or valid_regex("a+")
    let quux_json = type_of(quux_extra) == "x" or as_number(quux_extra) is None or as_text(quux_extra) is None or as_bool(quux_extra) is None or as_list(quux_extra) is None or as_map(quux_extra) is None
    let quux_parsed = parse_int("1") == parse_number("1.5") or parse_json("{}") == quux_extra
    let quux_moments = add_seconds(now(), 1) + add_minutes(now(), 1) + add_hours(now(), 1) + add_days(today(), 1) + date_of(now()) + time_of(now()) + at(today(), "09:00:00")
    let quux_gaps = seconds_between(now(), quux_when) + days_between(today(), quux_day) + weekday(today())
    let quux_more = json_dumps(quux_list, indent=2, sort_keys=True, ensure_ascii=False) + chr(ord("a")) + str(random_float() + uniform(1, 2.5))
    let quux_parsed_at = parse_datetime("31/01/2025 09:30", "%d/%m/%Y %H:%M")
    let quux_texts = "a".lstrip("b") + "a".rstrip() + "a".strip("a") + repr(quux_list) + format_datetime(now(), "%Y") + str(utf8_len("a") + len("a".splitlines()) + len(range(3, 0, -1))) + str(as_float(quux_extra) is None)
    for quux_i in range(2):
        if quux_i == 0:
            continue
        elif quux_i == 1:
            pass
        else:
            break
    let quux_colors = [quux_c for quux_c in [QuuxColor.quux_red, QuuxColor.quux_blue] if quux_c != quux_color]
    let quux_map = {quux_k: quux_v for quux_k, quux_v in quux_table}
    let quux_least = min(quux_list + [1], key=lambda quux_z: -quux_z)
    del quux_notes[quux_key]
    if quux_maybe is not None:
        fail invalid_state(f"{quux_maybe.quux_id}", field="quux_maybe")
    return quux_find(quux_key + quux_depth(1))

tool quux_get(quux_key: int) -> optional[QuuxFlat]:
    """A read tool."""
    reads quux_items
    return quux_items.get(quux_key)

tool quux_look(quux_key: int) -> QuuxFlat:
    """A lookup on the agent's key with no guard: a not_found error when missing."""
    return quux_items[quux_key]

tool quux_types(quux_f: float, quux_b: bool, quux_s: set[str], quux_d: map[str, float], quux_t: datetime, quux_o: optional[date] = None) -> map[str, bool]:
    """Every type in a signature."""
    reads nothing
    writes nothing
    return {"x": quux_b}

tool quux_escape(quux_n: int) -> int:
    """A python body that writes."""
    reads quux_count
    writes quux_count
    python "self._state['quux_count'] = quux_n\\nreturn quux_n"

fn quux_python() -> int:
    reads quux_count
    writes nothing
    python "return 1"

test quux_test:
    """A spec test."""
    scenario quux_busy
    let quux_result = quux_put(quux_key=2, quux_label="ab")
    expect quux_result.quux_id == 2 and matches(quux_result.quux_label, quux_result.quux_label) and stable_hash("a") > 0
    quux_put(quux_key=200) raises invalid_argument "quux_key"
    expect quux_find(2).quux_id == 2 and quux_get(quux_key=2) is not None

task quux_task:
    """A task."""
    request "Put item 5."
    solution:
        quux_put(quux_key=5)
    verify 5 in quux_items and search(quux_items[5].quux_label, "x") == False

family quux_family:
    """A task family: a plan drawing values, a solution calling tools."""
    kind bulk
    scenario quux_busy
    plan:
        let quux_pick = random_choice([1, 2])
        require quux_pick > 0
        quux_count = quux_find(1).quux_id + quux_pick
    request "Put item {quux_pick}."
    solution:
        let quux_made = quux_put(quux_key=quux_pick)
        require quux_made.quux_id == quux_pick else conflict("not made")
    verify quux_pick in quux_items
    verify each quux_each in [quux_pick]: quux_each in quux_items weight 2
'''

PROBES = {
    "splitmix64": _PROBE_HEADER + _PROBE_BODY,
    "python": _PROBE_HEADER + "    rng python\n" + _PROBE_BODY,
}
"""Specs that use every optional part of the templates: once with each random generator
(their helpers differ)."""

MINIMAL_PROBE = 'environment quux_min:\n    title "Probe"\n'
"""A spec with nothing in it: what it compiles to is in every generated package."""

ROLES = ("record", "enum", "tool", "helper", "test", "task", "family")
"""Declarations that become Python names of their own (state and world fields, scenarios
and parameters do not: they are dict keys, strings and locals)."""


@dataclass(frozen=True)
class Derived:
    """What the templates define, as `compiler/library/builtins.py` keeps it (same names, upper case)."""

    module_names: dict[str, str]
    """Module-level names of environment.py -> what each is: module, import, class,
    function or constant."""
    module_always: frozenset[str]
    """Those of them every environment.py has (the others only where a spec needs them)."""
    module_builtins: frozenset[str]
    """Python built-ins environment.py refers to (a module-level class would hide them)."""
    members: dict[str, str]
    """Members of `Environment` -> `method`, or `attribute` for what its methods set on `self`."""
    members_always: frozenset[str]
    """Those of them every `Environment` has."""
    class_scope: frozenset[str]
    """Names the body of `class Environment` resolves in its own scope: annotations and
    defaults of its methods (a method of the same name would hide them from mypy)."""
    subclass_members: frozenset[str]
    """Members the generated tests' subclasses of `Environment` (`Recorder`) add."""
    body_names: frozenset[str]
    """Names the lowered bodies of tools and helpers, and the generated test functions,
    use or bind besides the spec's own: a parameter or `let` of that name would hide or
    overwrite them."""
    test_module_names: frozenset[str]
    """Module-level names of tests/test_environment.py."""
    other_module_names: frozenset[str]
    """Module-level names of sessions.py and __init__.py, which no spec name reaches."""
    patterns: dict[str, tuple[tuple[str, str], ...]]
    """Per kind of declaration (`ROLES`), where its name lands: (namespace, pattern) with
    namespace `module` (environment.py), `class` (`Environment`), `tests` (the test
    module) or `annotations` (names the class body refers to: a type of that name must
    not be a member), and pattern the Python name with `{}` for the spec's name."""


@functools.cache
def derive() -> Derived:
    """Lower the probes and collect the names (cached: it lowers three specs)."""
    full = [_lowered(text) for text in PROBES.values()]
    minimal = _lowered(MINIMAL_PROBE)
    envs = [_Module(ast.parse(files["environment.py"])) for files in full]
    tests = [_Module(ast.parse(files["tests/test_environment.py"])) for files in full]
    others = [ast.parse(files[path]) for files in full for path in ("sessions.py", "__init__.py")]
    least = _Module(ast.parse(minimal["environment.py"]))
    for path, text in minimal.items():  # the walk tells the probe's names by the marker
        if path.endswith(".py"):
            marked = sorted(n for n in _identifiers(ast.parse(text)) if _is_probe(n))
            if marked:
                raise AssertionError(f"template names in {path} contain {MARKER!r}, which marks the probe's: {marked}")
    for files in full:
        for path in ("sessions.py", "__init__.py"):
            leaked = sorted(n for n in _identifiers(ast.parse(files[path])) if _is_probe(n))
            if leaked:
                raise AssertionError(f"spec names reach {path}, which the rules assume they do not: {leaked}")

    module_names: dict[str, str] = {}
    for env in envs:
        module_names.update({n: k for n, k in env.bindings.items() if not _is_probe(n)})
    members: dict[str, str] = {}
    for env in envs:
        members.update(env.members)
    patterns: dict[str, set[tuple[str, str]]] = {role: set() for role in ROLES}
    declared = _probe_declarations()
    for env in envs:
        _collect_patterns(patterns, declared, "module", env.bindings)
        _collect_patterns(patterns, declared, "class", env.members)
        _collect_patterns(patterns, declared, "annotations", env.class_scope)
    for test in tests:
        _collect_patterns(patterns, declared, "tests", test.bindings)
    return Derived(
        module_names=dict(sorted(module_names.items())),
        module_always=_plain([least.bindings]),
        module_builtins=_plain(env.builtins_used for env in envs),
        members={n: k for n, k in sorted(members.items()) if not _is_probe(n)},
        members_always=_plain([least.members]),
        class_scope=_plain(env.class_scope for env in envs),
        subclass_members=_plain(test.subclass_members for test in tests) - set(members),
        body_names=_plain([*(env.body_names for env in envs), *(test.body_names for test in tests)]),
        test_module_names=_plain(test.bindings for test in tests),
        other_module_names=frozenset(n for tree in others for n in _module_bindings(tree)),
        patterns={role: tuple(sorted(found)) for role, found in patterns.items()},
    )


def _lowered(text: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as folder:  # the probe's data file (`from "quux.json"`)
        (Path(folder) / "quux.json").write_text("[]", encoding="utf-8")
        result = analyse_source(text, str(Path(folder) / "quux.envspec"))
    problems = [f"{d.line}: {d.code} {d.message}" for d in result.diagnostics if d.severity == "error"]
    if result.environment is None or problems:
        raise AssertionError("a probe spec of compiler/lower/namespace.py does not analyse: " + "; ".join(problems))
    return lower(result.environment, "quux.envspec")


def _probe_declarations() -> dict[str, str]:
    """Each named declaration of the probe -> its role (`ROLES`)."""
    words = {
        "record": "record",
        "enum": "enum",
        "tool": "tool",
        "fn": "helper",
        "test": "test",
        "task": "task",
        "family": "family",
    }
    found = {}
    for line in _PROBE_BODY.splitlines():
        head, _, rest = line.partition(" ")
        if head in words:
            found[re.split(r"[(:]", rest, maxsplit=1)[0]] = words[head]
    if any(a != b and a in b for a in found for b in found):
        raise AssertionError("no probe declaration name may contain another, or the patterns are ambiguous")
    return found


def _collect_patterns(
    patterns: dict[str, set[tuple[str, str]]], declared: dict[str, str], namespace: str, names: Iterable[str]
) -> None:
    for name in names:
        for decl, role in declared.items():
            if name.count(decl) == 1:
                patterns[role].add((namespace, name.replace(decl, "{}")))


def _is_probe(name: str) -> bool:
    return MARKER in name.lower()


def _plain(groups: Iterable[Iterable[str]]) -> frozenset[str]:
    return frozenset(n for group in groups for n in group if not _is_probe(n))


# --------------------------------------------------------------------------- the walk


class _Module:
    """The names one generated module defines and uses."""

    def __init__(self, tree: ast.Module) -> None:
        self.bindings = _module_bindings(tree)
        self.members: dict[str, str] = {}
        self.class_scope: set[str] = set()
        self.subclass_members: set[str] = set()
        self.body_names: set[str] = set()
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                if isinstance(node, ast.FunctionDef) and node.name.startswith(("run_", "test_task_")):
                    self.body_names |= _function_names(node)  # a generated test function
                continue
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            if node.name == "Environment":
                self.members = _class_members(node)
                self.class_scope = _class_scope_names(node)
                for method in node.body:
                    if isinstance(method, ast.FunctionDef) and _is_probe(method.name):
                        self.body_names |= _function_names(method)  # a lowered tool or helper
            elif "Environment" in bases:
                self.subclass_members |= set(_class_members(node))
        bound = _all_bound(tree)
        self.builtins_used = {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id in vars(builtins) and n.id not in bound and n.id not in self.bindings
        }


def _module_bindings(tree: ast.Module) -> dict[str, str]:
    """Name -> kind of every name bound at module level."""
    found: dict[str, str] = {}
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = "module"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                found[alias.asname or alias.name] = "import"
        elif isinstance(node, ast.ClassDef):
            found[node.name] = "class"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = "function"
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _stored(target):
                    found[name] = "constant"
    return found


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            for part in (node.body, node.orelse, *(h.body for h in getattr(node, "handlers", []))):
                yield from _top_level(part)


def _stored(target: ast.expr) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id


def _class_members(node: ast.ClassDef) -> dict[str, str]:
    """Methods, class attributes, and attributes set on `self` in any method."""
    members: dict[str, str] = {}
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members[item.name] = "method"
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                members.update(dict.fromkeys(_stored(target), "attribute"))
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
        ):
            members.setdefault(sub.attr, "attribute")
    return members


def _class_scope_names(node: ast.ClassDef) -> set[str]:
    """Names evaluated (or, for mypy, resolved) in the class body's own scope."""
    found: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = item.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            for annotation in [*(a.annotation for a in every if a is not None), item.returns]:
                found |= _loaded(annotation, annotation=True)
            for value in [*args.defaults, *args.kw_defaults, *item.decorator_list]:
                found |= _loaded(value)
        else:
            found |= _loaded(item, annotation=isinstance(item, ast.AnnAssign))
    return found


def _loaded(node: ast.AST | None, annotation: bool = False) -> set[str]:
    """Names an expression refers to; in an annotation, also those inside strings."""
    found: set[str] = set()
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif annotation and isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found |= _loaded(_type_text(sub.value), annotation=True)
    return found


def _type_text(text: str) -> ast.AST | None:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError:
        return None


def _function_names(node: ast.FunctionDef) -> set[str]:
    """The function's parameters, the names it binds and the free names it uses, leaving
    out names that comprehensions and lambdas bind for themselves."""
    args = node.args
    found = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    for statement in node.body:
        found |= _free(statement, frozenset())
    return found


def _free(node: ast.AST, inner: frozenset[str]) -> set[str]:
    """Names used or bound in `node`, except those bound by an enclosing comprehension or
    lambda (`inner`)."""
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        found: set[str] = set()
        bound = set(inner)
        for generator in node.generators:
            found |= _free(generator.iter, frozenset(bound))
            bound |= set(_stored(generator.target))
            for condition in generator.ifs:
                found |= _free(condition, frozenset(bound))
        elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for element in elements:
            found |= _free(element, frozenset(bound))
        return found
    if isinstance(node, ast.Lambda):
        params = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
        return _free(node.body, inner | params)
    if isinstance(node, ast.Name):
        return set() if node.id in inner else {node.id}
    found = set()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cast" and node.args:
        first = node.args[0]  # cast("list[Status]", ...): the string is a type
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found |= _loaded(_type_text(first.value), annotation=True) - inner
    for child in ast.iter_child_nodes(node):
        found |= _free(child, inner)
    return found


def _all_bound(tree: ast.Module) -> set[str]:
    """Every name bound anywhere below module level (parameters, locals, loop variables)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return bound


def _identifiers(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name)
    return found


# --------------------------------------------------------------------------- the snapshot

BEGIN = "# BEGIN derived names"
END = "# END derived names"


def snapshot_text(derived: Derived) -> str:
    """The block of compiler/library/builtins.py that holds `derived`, as Python source (in the
    layout `ruff format` keeps)."""
    lines = [
        BEGIN + ": written by `python -m compiler.lower.namespace --write`; do not edit.",
        "# What each constant holds: the field of the same name of compiler.lower.namespace.Derived.",
    ]
    for field in fields(Derived):
        value = getattr(derived, field.name)
        constant = field.name.upper()
        if isinstance(value, frozenset):
            words = _words(sorted(value), "    ")
            if len(words) == 1 and len(constant) + len(words[0]) + 28 <= 120:
                lines.append(f"{constant}: Final = frozenset({words[0].strip()}.split())")
            else:
                lines += [f"{constant}: Final = frozenset(", *words[:-1], words[-1] + ".split()", ")"]
        elif field.name == "patterns":
            lines.append(f"{constant}: Final[dict[str, tuple[tuple[str, str], ...]]] = {{")
            for role, found in value.items():
                pairs = ", ".join(f'("{namespace}", "{pattern}")' for namespace, pattern in found)
                lines.append(f'    "{role}": ({pairs}{"," if len(found) == 1 else ""}),')
            lines.append("}")
        else:
            lines.append(f"{constant}: Final = _by_kind(")
            lines.append("    {")
            for kind in sorted(set(value.values())):
                names = sorted(n for n, k in value.items() if k == kind)
                words = _words(names, "            ")
                if len(words) == 1 and len(kind) + len(words[0]) <= 120:
                    lines.append(f'        "{kind}": {words[0].strip()},')
                else:
                    lines += [f'        "{kind}": (', *words, "        ),"]
            lines += ["    }", ")"]
    lines.append(END)
    return "\n".join(lines) + "\n"


def _words(names: list[str], indent: str, width: int = 110) -> list[str]:
    """Space-separated names as string literals of at most `width` columns."""
    lines: list[str] = []
    line = ""
    for name in names:
        if line and len(indent) + len(line) + len(name) + 4 > width:
            lines.append(f'{indent}"{line} "')
            line = ""
        line += (" " if line else "") + name
    lines.append(f'{indent}"{line}"')
    return lines


def builtins_path() -> Path:
    return Path(__file__).resolve().parent.parent / "library" / "builtins.py"


def with_snapshot(text: str, derived: Derived) -> str:
    """compiler/library/builtins.py's text with its derived block holding `derived`, formatted as
    the project formats its code (so `ruff format --check` and the block agree)."""
    start = text.index("\n" + BEGIN) + 1  # at the start of a line: comments may name the markers
    end = text.index("\n", text.index("\n" + END, start) + 1) + 1
    spliced = text[:start] + snapshot_text(derived) + text[end:]
    project = builtins_path().parent.parent.parent  # compiler/library/builtins.py -> the checkout
    done = subprocess.run(
        [ruff_binary(), "format", "--stdin-filename", "compiler/library/builtins.py", "-"],
        input=spliced,
        capture_output=True,
        text=True,
        cwd=project,  # the project's pyproject.toml: its line length
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ruff could not format compiler/library/builtins.py: {done.stderr.strip()}")
    return done.stdout


def write_snapshot(path: Path | None = None) -> bool:
    """Replace the derived block of compiler/library/builtins.py; whether anything changed."""
    path = path or builtins_path()
    text = path.read_text(encoding="utf-8")
    updated = with_snapshot(text, derive())
    if updated == text:
        return False
    path.write_text(updated, encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        print("compiler/library/builtins.py " + ("updated" if write_snapshot() else "already up to date"))
        return 0
    if not argv:
        print(snapshot_text(derive()), end="")
        return 0
    print("usage: python -m compiler.lower.namespace [--write]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
