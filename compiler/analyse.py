"""Stage 3, analyse: from parsed modules to a resolved, typed `ir.Environment`.

Loads the prototype a spec extends and merges it, resolves every name, type-checks
every expression and statement (with None-narrowing as mypy does it on the generated
code), evaluates constant data (defaults, world data, scenarios) against declared
types, and infers each tool's read and write sets of state fields, following aliases
through locals and helper functions. All problems come back as diagnostics.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from compiler import builtins as bi
from compiler import ir
from compiler import typesys as ts
from compiler.diagnostics import Diagnostic, did_you_mean, has_errors
from compiler.parse import gc_paused, parse_source

ENV_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
PARAM_ROOT = "@"  # roots starting with this name a helper's parameter, not a state field
WORLD_ROOT = "!"  # roots starting with this are world data, which nothing may change


@dataclass
class AnalysisResult:
    environment: ir.Environment | None
    module: ir.Module | None
    diagnostics: list[Diagnostic]
    sources: dict[str, str] = field(default_factory=dict)

    def inputs(self) -> list[str]:
        """Every file the result depends on: specs, prototypes and world data files."""
        files = set(self.sources)
        if self.environment is not None:
            files |= set(self.environment.inputs)
        return sorted(files)


def analyse_file(path: Path) -> AnalysisResult:
    sources: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    module = _load(path, sources, diagnostics, ())
    return _finish(module, sources, diagnostics)


def analyse_source(text: str, path: str) -> AnalysisResult:
    """Analyse spec text as if it were the file `path` (prototypes resolve beside it)."""
    sources: dict[str, str] = {path: text}
    diagnostics: list[Diagnostic] = []
    module = _parse_and_extend(text, Path(path), sources, diagnostics, ())
    return _finish(module, sources, diagnostics)


def _finish(module: ir.Module | None, sources: dict[str, str], diagnostics: list[Diagnostic]) -> AnalysisResult:
    if module is None or has_errors(diagnostics):
        return AnalysisResult(None, module, _sorted(diagnostics), sources)
    try:
        with gc_paused():
            environment = _Analyser(module, diagnostics).run()
    except RecursionError:
        diagnostics.append(Diagnostic("E1008", "spec is nested too deeply to analyse", module.path, 1, 1))
        environment = None
    if has_errors(diagnostics):
        environment = None
    return AnalysisResult(environment, module, _sorted(diagnostics), sources)


def _sorted(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    unique = {(d.path, d.line, d.col, d.code, d.message): d for d in diagnostics}
    return sorted(unique.values(), key=Diagnostic.sort_key)


# =========================================================================== loading


def _load(
    path: Path, sources: dict[str, str], diagnostics: list[Diagnostic], chain: tuple[str, ...]
) -> ir.Module | None:
    key = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        diagnostics.append(Diagnostic("E0001", f"cannot read {path}: {exc.strerror or exc}", key, 0, 0))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        diagnostics.append(Diagnostic("E0002", f"byte {exc.start} is not valid UTF-8", key, line, 1))
        return None
    sources[key] = text
    return _parse_and_extend(text, path, sources, diagnostics, chain)


def _parse_and_extend(
    text: str, path: Path, sources: dict[str, str], diagnostics: list[Diagnostic], chain: tuple[str, ...]
) -> ir.Module | None:
    result = parse_source(text, str(path))
    diagnostics.extend(result.diagnostics)
    module = result.module
    if module is None:
        return None
    if module.header is None:
        diagnostics.append(Diagnostic("E2004", "the spec has no `environment NAME:` header", str(path), 1, 1))
        return None
    if not module.header.extends:
        overrides: list[ir.Decl] = [*(d for d in module.tools if d.override), *(d for d in module.fns if d.override)]
        overrides += [d for d in module.records if d.override]
        for decl in [*module.drops, *module.renames, *overrides]:
            keyword_ = (
                "drop" if isinstance(decl, ir.DropDecl) else "rename" if isinstance(decl, ir.RenameDecl) else "override"
            )
            diagnostics.append(
                Diagnostic(
                    "E2021",
                    f"`{keyword_}` changes a prototype, but this spec extends none",
                    str(path),
                    decl.line,
                    decl.col,
                )
            )
        return module
    header = module.header
    parent_path = _find_prototype(header.extends, path)
    if parent_path is None:
        diagnostics.append(
            Diagnostic("E0004", f"cannot find prototype `{header.extends}`", str(path), header.line, header.col)
        )
        return None
    if str(parent_path.resolve()) in chain or parent_path.resolve() == path.resolve():
        diagnostics.append(
            Diagnostic("E2018", f"`{header.extends}` extends itself", str(path), header.line, header.col)
        )
        return None
    parent = _load(parent_path, sources, diagnostics, (*chain, str(path.resolve())))
    if parent is None:
        if not any(d.path == str(parent_path) for d in diagnostics):
            diagnostics.append(
                Diagnostic("E0004", f"prototype `{header.extends}` has errors", str(path), header.line, header.col)
            )
        return None
    return _merge(parent, module, diagnostics)


def prototypes_dir() -> Path:
    """Shipped prototypes: inside the package when installed from a wheel, else the
    repository's `specs/prototypes/`."""
    inside = Path(__file__).resolve().parent / "prototypes"
    return inside if inside.is_dir() else Path(__file__).resolve().parent.parent / "specs" / "prototypes"


def _find_prototype(name: str, spec: Path) -> Path | None:
    candidates = [
        spec.parent / name,
        spec.parent / "prototypes" / f"{name}.envspec",
        prototypes_dir() / f"{name}.envspec",
    ]
    for candidate in candidates:
        if ".." not in Path(name).parts and not Path(name).is_absolute() and candidate.is_file():
            return candidate
    return None


def _merge(parent: ir.Module, child: ir.Module, diagnostics: list[Diagnostic]) -> ir.Module:
    """Child declarations extend the prototype's; replacing one needs `override` or `drop`."""
    assert child.header is not None and parent.header is not None
    header = child.header.model_copy()
    for attr in ("title", "archetype", "doc"):
        if not getattr(header, attr):
            setattr(header, attr, getattr(parent.header, attr))
    if not header.domains:
        header.domains = list(parent.header.domains)
    defaults = ir.EnvHeader(name=header.name)
    for attr in ("seed", "rng", "clock"):
        if getattr(header, attr) == getattr(defaults, attr):
            setattr(header, attr, getattr(parent.header, attr))
    merged = ir.Module(path=child.path, header=header)
    for rename in child.renames:
        _apply_rename(parent, rename, diagnostics)
    dropped: dict[str, set[str]] = {}
    for drop in child.drops:
        pools: dict[str, Sequence[Any]] = {
            "tool": parent.tools,
            "fn": parent.fns,
            "scenario": parent.scenarios,
            "test": parent.tests,
            "task": parent.tasks,
        }
        pool = pools[drop.what]
        if not any(d.name == drop.name for d in pool):
            diagnostics.append(
                Diagnostic(
                    "E2012",
                    f"the prototype has no {drop.what} `{drop.name}` to drop",
                    drop.file,
                    drop.line,
                    drop.col,
                    hint=did_you_mean(drop.name, [d.name for d in pool]),
                )
            )
        dropped.setdefault(drop.what, set()).add(drop.name)
    merged.enums = _merge_named(parent.enums, child.enums, "enum", diagnostics, set())
    merged.records = _merge_named(parent.records, child.records, "record", diagnostics, set())
    merged.fns = _merge_named(parent.fns, child.fns, "fn", diagnostics, dropped.get("fn", set()))
    merged.tools = _merge_named(parent.tools, child.tools, "tool", diagnostics, dropped.get("tool", set()))
    merged.scenarios = _merge_named(
        parent.scenarios, child.scenarios, "scenario", diagnostics, dropped.get("scenario", set())
    )
    merged.tests = _merge_named(parent.tests, child.tests, "test", diagnostics, dropped.get("test", set()))
    merged.tasks = _merge_named(parent.tasks, child.tasks, "task", diagnostics, dropped.get("task", set()))
    merged.state = [*parent.state, *child.state]
    merged.world = [*parent.world, *child.world]
    return merged


def _apply_rename(parent: ir.Module, rename: ir.RenameDecl, diagnostics: list[Diagnostic]) -> None:
    """Rename a prototype declaration and every reference to it inside the prototype.

    Names of tools, helpers, records and enums are unique across the spec and locals may
    not reuse them, so every `Name`/type with the old name means that declaration."""
    pools: dict[str, Sequence[Any]] = {
        "state": [f for decl in parent.state for f in decl.fields],
        "param": [p for c in [*parent.tools, *parent.fns] for p in c.params],
        "tool": parent.tools,
        "fn": parent.fns,
        "record": parent.records,
        "enum": parent.enums,
        "scenario": parent.scenarios,
    }
    pool = pools[rename.what]
    if not any(d.name == rename.old for d in pool):
        hint = did_you_mean(rename.old, [d.name for d in pool])
        diagnostics.append(
            Diagnostic(
                "E2012",
                f"the prototype has no {rename.what} `{rename.old}` to rename",
                rename.file,
                rename.line,
                rename.col,
                hint=hint,
            )
        )
        return
    taken = [d.name for what, group in pools.items() if what != "param" for d in group]
    if rename.new in taken or bi.is_reserved(rename.new):
        why = "is already declared by the prototype" if rename.new in taken else "is a reserved name"
        diagnostics.append(
            Diagnostic(
                "E2001" if rename.new in taken else "E2014",
                f"cannot rename to `{rename.new}`: it {why}",
                rename.file,
                rename.line,
                rename.col,
            )
        )
        return
    if rename.what == "state":
        _rename_state_field(parent, rename.old, rename.new)
        return
    if rename.what == "param":
        _rename_param(parent, rename.old, rename.new)
        return
    for node in _walk(parent):
        if (
            isinstance(node, (ir.EnumDecl, ir.RecordDecl, ir.ToolDecl, ir.ScenarioDecl))
            and node.name == rename.old
            and _kind_of(node) == rename.what
        ):
            node.name = rename.new
        elif rename.what == "scenario":
            if isinstance(node, (ir.UseScenario,)) and node.name == rename.old:
                node.name = rename.new
            elif isinstance(node, ir.TaskDecl) and node.scenario == rename.old:
                node.scenario = rename.new
        elif isinstance(node, ir.Name) and node.id == rename.old:
            node.id = rename.new
        elif isinstance(node, ir.TypeRef) and node.name == rename.old and rename.what in ("record", "enum"):
            node.name = rename.new


def _rename_state_field(parent: ir.Module, old: str, new: str) -> None:
    """A state field renamed in its declaration, scenarios, effect lists and every use.

    Locals and parameters may shadow state fields, so a name is renamed only where no
    parameter or `let` of the same name is in the same callable."""
    for decl in parent.state:
        for field_ in decl.fields:
            if field_.name == old:
                field_.name = new
    for scenario in parent.scenarios:
        for item in scenario.items:
            if item.name == old:
                item.name = new
    callables: list[Any] = [*parent.tools, *parent.fns, *parent.tests, *parent.tasks]
    for callable_ in callables:
        shadowed = any(isinstance(n, (ir.Param, ir.Let)) and n.name == old for n in _walk(callable_))
        for attr in ("declared_reads", "declared_writes"):
            names = getattr(callable_, attr, None)
            if names:
                setattr(callable_, attr, [new if n == old else n for n in names])
        for node in _walk(callable_):
            if isinstance(node, ir.Name) and node.id == old and not shadowed:
                node.id = new
            elif (
                isinstance(node, ir.Attr)
                and node.name == old
                and isinstance(node.obj, ir.Name)
                and node.obj.id == "state"
            ):
                node.name = new


def _rename_param(parent: ir.Module, old: str, new: str) -> None:
    """A parameter renamed in every tool and helper that has it, in their bodies (a
    parameter cannot be shadowed by `let`), and in named arguments of calls to them."""
    owners: set[str] = set()
    for callable_ in [*parent.tools, *parent.fns]:
        if not any(p.name == old for p in callable_.params):
            continue
        owners.add(callable_.name)
        for param in callable_.params:
            if param.name == old:
                param.name = new
        for node in _walk(callable_.body):
            if isinstance(node, ir.Name) and node.id == old:
                node.id = new
    for node in _walk(parent):
        if isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id in owners:
            for keyword_arg in node.kwargs:
                if keyword_arg.name == old:
                    keyword_arg.name = new


def _kind_of(decl: Any) -> str:
    if isinstance(decl, ir.FnDecl):
        return "fn"
    kinds: dict[type, str] = {
        ir.EnumDecl: "enum",
        ir.RecordDecl: "record",
        ir.ToolDecl: "tool",
        ir.ScenarioDecl: "scenario",
    }
    return kinds.get(type(decl), "")


def _merge_named(
    parent: Sequence[Any], child: Sequence[Any], what: str, diagnostics: list[Diagnostic], dropped: set[str]
) -> list[Any]:
    result = [d for d in parent if d.name not in dropped]
    for decl in child:
        index = next((i for i, d in enumerate(result) if d.name == decl.name), None)
        can_override = getattr(decl, "override", False)
        if index is None:
            if can_override:
                diagnostics.append(
                    Diagnostic(
                        "E2012",
                        f"`override {what} {decl.name}`: the prototype has no {what} of that name",
                        decl.file,
                        decl.line,
                        decl.col,
                    )
                )
            result.append(decl)
        elif can_override or decl.name in dropped:
            result[index] = decl
        else:
            diagnostics.append(
                Diagnostic(
                    "E2011",
                    f"{what} `{decl.name}` is already declared by the prototype",
                    decl.file,
                    decl.line,
                    decl.col,
                    hint=f"write `override {what} {decl.name}` to replace it"
                    if what in ("tool", "fn", "record")
                    else f"write `drop {what} {decl.name}` first to replace it"
                    if what in ("scenario", "test", "task")
                    else "enums cannot be replaced; `rename enum` the prototype's and declare a new one",
                )
            )
    return result


# =========================================================================== analysis


@dataclass
class _Local:
    """A local's type and aliasing: `outer` are the state fields the value itself may
    belong to; `roots` those that anything reachable from it may belong to."""

    type: ir.TypeRef
    kind: str  # "local", "param", "loop"
    roots: set[str] = field(default_factory=set)
    outer: set[str] = field(default_factory=set)


@dataclass
class _Summary:
    """What a helper does, as seen by its callers."""

    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    return_roots: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)


@dataclass
class _Effects:
    reads: dict[str, ir.Node] = field(default_factory=dict)
    writes: dict[str, ir.Node] = field(default_factory=dict)
    return_roots: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)


class _Analyser:
    def __init__(self, module: ir.Module, diagnostics: list[Diagnostic]) -> None:
        assert module.header is not None
        self.module = module
        self.header = module.header
        self.diags = diagnostics
        self.enums: dict[str, ir.EnumDecl] = {}
        self.records: dict[str, ir.RecordDecl] = {"AuditEntry": bi.AUDIT_ENTRY}
        self.state: dict[str, ir.Field_] = {}
        self.world: dict[str, ir.WorldField] = {}
        self.fns: dict[str, ir.FnDecl] = {}
        self.tools: dict[str, ir.ToolDecl] = {}
        self.scenarios: dict[str, ir.ScenarioDecl] = {}
        self.summaries: dict[str, _Summary] = {}
        self.record_defaults: dict[str, dict[str, Any]] = {}
        self.world_values: dict[str, Any] = {}
        self.state_defaults: dict[str, Any] = {}
        self.uses: set[str] = set()  # effectful built-ins used anywhere

    # ------------------------------------------------------------------ reporting
    def error(self, code: str, message: str, node: ir.Node | None, file: str, hint: str = "") -> None:
        line, col, end_line, end_col = (node.line, node.col, node.end_line, node.end_col) if node else (1, 1, 0, 0)
        self.diags.append(Diagnostic(code, message, file, line, col, end_line, end_col, hint=hint))

    # ------------------------------------------------------------------ driver
    def run(self) -> ir.Environment | None:
        self._check_header()
        self._declare()
        self._resolve_declared_types()
        self._check_constants()
        self._check_callables()
        self._check_tests()
        self._check_tasks()
        if has_errors(self.diags):
            return None
        return self._environment()

    def _check_header(self) -> None:
        header = self.header
        if not ENV_NAME.match(header.name):
            self.error("E2016", f"environment name `{header.name}` is not lower_snake_case", header, header.file)
        elif header.name in sys.stdlib_module_names or header.name in ("compiler", "generated", "tests"):
            self.error(
                "E2019",
                f"environment name `{header.name}` is also a Python module name; its package would shadow it",
                header,
                header.file,
                hint=f"call it e.g. `{header.name}_env`",
            )
        if header.archetype and header.archetype not in bi.ARCHETYPES:
            self.error(
                "E2015",
                f"unknown archetype `{header.archetype}`",
                header.item_places.get("archetype", header),
                header.file,
                hint=did_you_mean(header.archetype, bi.ARCHETYPES) or "one of: " + ", ".join(bi.ARCHETYPES),
            )
        if header.rng not in bi.RNG_KINDS:
            self.error(
                "E2022",
                f"unknown random generator `{header.rng}`",
                header.item_places.get("rng", header),
                header.file,
                hint="one of: " + ", ".join(bi.RNG_KINDS),
            )
        if not ts.valid_temporal("datetime", header.clock):
            self.error(
                "E3001",
                f"clock start {header.clock!r} is not an ISO-8601 datetime",
                header.item_places.get("clock", header),
                header.file,
            )

    # ------------------------------------------------------------------ declarations
    def _declare(self) -> None:
        taken: dict[str, str] = {"AuditEntry": "built-in record"}
        for name in bi.BUILTIN_STATE:
            taken[name] = "built-in state field"

        def claim(name: str, what: str, node: ir.Node, file: str, reserved: bool = True) -> bool:
            if name in taken:
                self.error("E2001", f"`{name}` is already declared as a {taken[name]}", node, file)
                return False
            # Records and enums become module-level classes, which may not hide a built-in
            # or a type name; a helper named like a built-in would hide it in every body.
            strict = what in ("enum", "record", "helper fn")
            if what in ("enum", "record") and name in (*ts.PRIMITIVES, "list", "map", "optional", "any", "None"):
                self.error("E2014", f"`{name}` is a type name", node, file)
                return False
            if reserved and (bi.is_reserved(name) if strict else bi.is_reserved_declaration(name)):
                self.error("E2014", f"`{name}` is a reserved name", node, file)
                return False
            taken[name] = what
            return True

        for enum in self.module.enums:
            if claim(enum.name, "enum", enum, enum.file):
                self.enums[enum.name] = enum
            seen: set[str] = set()
            for member in enum.members:
                if member in seen:
                    self.error("E2005", f"enum {enum.name} lists `{member}` twice", enum, enum.file)
                if keyword.iskeyword(member) or member in ("lambda", "let", "fail", "require", "expect"):
                    self.error("E2014", f"`{member}` cannot be an enum member", enum, enum.file)
                seen.add(member)
        for record in self.module.records:
            if claim(record.name, "record", record, record.file):
                self.records[record.name] = record
            self._check_field_names(record.fields, f"record {record.name}", record.file)
        for state_decl in self.module.state:
            for field_ in state_decl.fields:
                previous = self.state.get(field_.name)
                if previous is not None and _decl_file(self.module.state, previous) != state_decl.file:
                    self.state[field_.name] = field_  # a domain spec re-seeds a prototype field
                    continue
                if claim(field_.name, "state field", field_, state_decl.file):
                    self.state[field_.name] = field_
        self._add_builtin_state()
        for world_decl in self.module.world:
            for world_field in world_decl.fields:
                previous_w = self.world.get(world_field.name)
                if previous_w is not None and _decl_file(self.module.world, previous_w) != world_decl.file:
                    self.world[world_field.name] = world_field
                    continue
                if claim(world_field.name, "world field", world_field, world_decl.file):
                    self.world[world_field.name] = world_field
        for fn in self.module.fns:
            if claim(fn.name, "helper fn", fn, fn.file):
                self.fns[fn.name] = fn
        for tool in self.module.tools:
            if tool.name in bi.RESERVED_TOOL_NAMES:
                self.error("E2014", f"`{tool.name}` is a method of every generated environment", tool, tool.file)
            elif claim(tool.name, "tool", tool, tool.file):
                self.tools[tool.name] = tool
        for scenario in self.module.scenarios:
            if scenario.name in self.scenarios:
                self.error("E2001", f"scenario `{scenario.name}` is declared twice", scenario, scenario.file)
            self.scenarios[scenario.name] = scenario
        for group, what in ((self.module.tests, "test"), (self.module.tasks, "task")):
            names: set[str] = set()
            for decl in group:
                if decl.name in names:
                    self.error("E2001", f"{what} `{decl.name}` is declared twice", decl, decl.file)
                names.add(decl.name)

    def _check_field_names(self, fields: Sequence[ir.Field_], owner: str, file: str) -> None:
        seen: set[str] = set()
        for field_ in fields:
            if field_.name in seen:
                self.error("E2005", f"{owner} has two fields named `{field_.name}`", field_, file)
            if keyword.iskeyword(field_.name) or field_.name.startswith("_") or field_.name == "error":
                self.error("E2014", f"`{field_.name}` cannot be a field name", field_, file)
            seen.add(field_.name)

    def _add_builtin_state(self) -> None:
        self.state[bi.AUDIT_LOG] = ir.Field_(
            name=bi.AUDIT_LOG, type=ts.list_of(ts.t("AuditEntry")), default=ir.ListLit(items=[])
        )
        clock = self.header.clock if ts.valid_temporal("datetime", self.header.clock) else ir.EnvHeader(name="x").clock
        self.state[bi.CLOCK] = ir.Field_(name=bi.CLOCK, type=ts.DATETIME, default=ir.Const(value=clock))
        used = _effectful_builtins_used(self.module)
        self.uses = used
        if "next_id" in used:
            self.state[bi.ID_COUNTERS] = ir.Field_(
                name=bi.ID_COUNTERS, type=ts.map_of(ts.STR, ts.INT), default=ir.MapLit(entries=[])
            )
        if used & {"random_int", "random_choice"}:
            start = self.header.seed
            if self.header.rng == "python":
                # Python's generator: seeded with random_seed; rng_state counts the 32-bit words drawn.
                self.state[bi.RANDOM_SEED] = ir.Field_(name=bi.RANDOM_SEED, type=ts.INT, default=ir.Const(value=start))
                start = 0
            self.state[bi.RNG_STATE] = ir.Field_(name=bi.RNG_STATE, type=ts.INT, default=ir.Const(value=start))

    # ------------------------------------------------------------------ types
    def resolve_type(self, ref: ir.TypeRef, file: str) -> ir.TypeRef:
        """Check a written type and return its canonical (position-free) form."""
        name, args = ref.name, ref.args
        arity = {"list": 1, "map": 2, "set": 1, "optional": 1}
        if name in arity:
            if len(args) != arity[name]:
                self.error(
                    "E3002",
                    f"`{name}` takes {arity[name]} type argument{'s' if arity[name] > 1 else ''}, got {len(args)}",
                    ref,
                    file,
                )
                return ts.ANY
            resolved = [self.resolve_type(a, file) for a in args]
            if (
                name == "map"
                and resolved[0].name not in ("str", "int", "json", "any")
                and resolved[0].name not in self.enums
            ):
                self.error("E3003", f"map keys cannot be {ts.show(resolved[0])}", args[0], file)
            if name == "set" and resolved[0].name not in (*ts.SET_ITEMS, "any") and resolved[0].name not in self.enums:
                self.error(
                    "E3003", f"set items cannot be {ts.show(resolved[0])}; they are str, int or an enum", args[0], file
                )
            if name == "optional":
                return ts.optional(resolved[0])
            return ts.t(name, *resolved)
        if args:
            self.error("E3002", f"`{name}` takes no type arguments", ref, file)
            return ts.ANY
        if name in ts.PRIMITIVES or name == "None" or name in self.enums or name in self.records:
            return ts.t(name)
        known = [*ts.PRIMITIVES, "list", "map", "set", "optional", *self.enums, *self.records]
        self.error("E2003", f"unknown type `{name}`", ref, file, hint=did_you_mean(name, known))
        return ts.ANY

    def _resolve_declared_types(self) -> None:
        for record in self.records.values():
            for field_ in record.fields:
                field_.type = self.resolve_type(field_.type, record.file or self.module.path)
        self._check_record_cycles()
        for name, field_ in self.state.items():
            field_.type = self.resolve_type(field_.type, self._state_file(name))
        for world_field in self.world.values():
            world_field.type = self.resolve_type(world_field.type, self._world_file(world_field))
        for callable_ in [*self.fns.values(), *self.tools.values()]:
            for param in callable_.params:
                param.type = self.resolve_type(param.type, callable_.file)
            callable_.returns = self.resolve_type(callable_.returns, callable_.file)

    def _check_record_cycles(self) -> None:
        """Values are trees (JSON), so no record may contain itself."""

        def mentioned(ty: ir.TypeRef) -> set[str]:
            found = {ty.name} if ty.name in self.records else set()
            for arg in ty.args:
                found |= mentioned(arg)
            return found

        edges = {name: set().union(*(mentioned(f.type) for f in r.fields)) for name, r in self.records.items()}
        for start, record in self.records.items():
            seen: set[str] = set()
            stack = list(edges[start])
            while stack:
                name = stack.pop()
                if name == start:
                    self.error("E3023", f"record {start} contains itself", record, record.file or self.module.path)
                    break
                if name not in seen:
                    seen.add(name)
                    stack.extend(edges.get(name, ()))

    def _state_file(self, name: str) -> str:
        for decl in self.module.state:
            if any(f is self.state.get(name) for f in decl.fields):
                return decl.file
        return self.module.path

    def _world_file(self, world_field: ir.WorldField) -> str:
        for decl in self.module.world:
            if any(f is world_field for f in decl.fields):
                return decl.file
        return self.module.path

    # ------------------------------------------------------------------ constants
    def _checker(self) -> ts.DataChecker:
        return ts.DataChecker(self.enums, self.records, self.record_defaults)

    def const_value(self, expr: ir.Expr, expected: ir.TypeRef, file: str, where: str) -> tuple[bool, Any]:
        """Evaluate a literal expression and check it against `expected`."""
        ok, raw = self._literal(expr, expected, file)
        if not ok:
            return False, None
        problems: list[str] = []
        value = self._checker().check(raw, expected, where, problems)
        for problem in problems[:5]:
            self.error("E3001", problem, expr, file)
        expr.ty = expected
        return not problems, value

    def _literal(self, expr: ir.Expr, expected: ir.TypeRef | None, file: str) -> tuple[bool, Any]:
        if isinstance(expr, ir.Const):
            return True, expr.value
        if (
            isinstance(expr, ir.Unary)
            and expr.op == "-"
            and isinstance(expr.operand, ir.Const)
            and isinstance(expr.operand.value, (int, float))
            and not isinstance(expr.operand.value, bool)
        ):
            return True, -expr.operand.value
        if isinstance(expr, ir.ListLit):
            item_type = (
                ts.strip_optional(expected).args[0]
                if expected and ts.strip_optional(expected).name in ("list", "set")
                else None
            )
            results = [self._literal(item, item_type, file) for item in expr.items]
            return all(ok for ok, _ in results), [v for _, v in results]
        if isinstance(expr, ir.MapLit):
            value: dict[Any, Any] = {}
            ok = True
            for entry in expr.entries:
                key_ok, key = self._literal(entry.key, None, file)
                val_ok, val = self._literal(entry.value, _member_type(expected, key, self.records), file)
                ok = ok and key_ok and val_ok
                if isinstance(key, (str, int)) and not isinstance(key, bool):
                    if key in value:
                        self.error("E2005", f"key {key!r} appears twice", entry, file)
                    value[key] = val
                elif key_ok:
                    self.error("E3001", "map keys must be str or int literals", entry.key, file)
                    ok = False
            return ok, value
        if isinstance(expr, ir.Attr) and isinstance(expr.obj, ir.Name) and expr.obj.id in self.enums:
            enum = self.enums[expr.obj.id]
            if expr.name not in enum.members:
                self.error(
                    "E2007",
                    f"enum {enum.name} has no member `{expr.name}`",
                    expr,
                    file,
                    hint=did_you_mean(expr.name, enum.members),
                )
                return False, None
            return True, expr.name
        if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.id in self.records:
            if expr.args:
                self.error("E3006", f"record {expr.func.id} takes named fields", expr, file)
                return False, None
            fields = {f.name: f.type for f in self.records[expr.func.id].fields}
            named = {kw.name: self._literal(kw.value, fields.get(kw.name), file) for kw in expr.kwargs}
            return all(ok for ok, _ in named.values()), {k: v for k, (_, v) in named.items()}
        self.error("E3014", "only literal values are allowed here", expr, file)
        return False, None

    def _check_constants(self) -> None:
        for record in self.records.values():
            defaults: dict[str, Any] = {}
            self.record_defaults[record.name] = defaults
            for field_ in record.fields:
                if field_.default is not None:
                    ok, value = self.const_value(
                        field_.default, field_.type, record.file or self.module.path, f"{record.name}.{field_.name}"
                    )
                    if ok:
                        defaults[field_.name] = value
        for name, field_ in self.state.items():
            file = self._state_file(name)
            if field_.default is None:
                if ts.is_optional(field_.type):
                    self.state_defaults[name] = None
                elif field_.type.name in ("list", "map", "set"):
                    self.state_defaults[name] = {} if field_.type.name == "map" else []
                else:
                    self.error("E3014", f"state field `{name}` needs a default value (its value in S0)", field_, file)
                continue
            ok, value = self.const_value(field_.default, field_.type, file, name)
            if ok:
                self.state_defaults[name] = value
        for world_field in self.world.values():
            self._load_world(world_field)
        for scenario in self.scenarios.values():
            seen: set[str] = set()
            for item in scenario.items:
                if item.name in seen:
                    self.error("E2005", f"scenario `{scenario.name}` sets `{item.name}` twice", item, scenario.file)
                seen.add(item.name)
                target = self.state.get(item.name)
                if target is None:
                    self.error(
                        "E2006",
                        f"`{item.name}` is not a state field",
                        item,
                        scenario.file,
                        hint=did_you_mean(item.name, self.state),
                    )
                    continue
                self.const_value(item.value, target.type, scenario.file, f"{scenario.name}.{item.name}")

    def _load_world(self, world_field: ir.WorldField) -> None:
        file = self._world_file(world_field)
        if world_field.value is not None:
            ok, value = self.const_value(world_field.value, world_field.type, file, world_field.name)
            if ok:
                self.world_values[world_field.name] = value
            return
        relative = Path(world_field.source)
        base = Path(file).parent
        if relative.is_absolute() or ".." in relative.parts:
            self.error(
                "E0003", f"world file `{world_field.source}` must be a path inside the spec's folder", world_field, file
            )
            return
        try:
            data = json.loads((base / relative).read_text(encoding="utf-8"))
        except OSError as exc:
            self.error(
                "E0003", f"cannot read world file `{world_field.source}`: {exc.strerror or exc}", world_field, file
            )
            return
        except (ValueError, UnicodeDecodeError) as exc:
            self.error("E0003", f"world file `{world_field.source}` is not valid JSON: {exc}", world_field, file)
            return
        problems: list[str] = []
        value = self._checker().check(data, world_field.type, world_field.source, problems)
        for problem in problems[:5]:
            self.error("E3001", problem, world_field, file)
        if not problems:
            self.world_values[world_field.name] = value

    # ------------------------------------------------------------------ tools and helpers
    def _check_callables(self) -> None:
        order = self._helper_order()
        for name in order:
            fn = self.fns[name]
            effects = _BodyChecker(self, fn, is_helper=True).check()
            self.summaries[name] = _Summary(
                set(effects.reads), set(effects.writes), effects.return_roots, effects.errors
            )
            self._compare_declared(fn, effects)
            fn.reads, fn.writes, fn.errors = (
                sorted(effects.reads),
                sorted(w for w in effects.writes if not w.startswith(PARAM_ROOT)),
                sorted(effects.errors),
            )
        for tool in self.tools.values():
            effects = _BodyChecker(self, tool, is_helper=False).check()
            tool.reads = sorted(r for r in effects.reads if not r.startswith(PARAM_ROOT))
            tool.writes = sorted(w for w in effects.writes if not w.startswith((PARAM_ROOT, WORLD_ROOT)))
            tool.errors = sorted(effects.errors | {"invalid_argument"})
            self._compare_declared(tool, effects)
            if not tool.side_effect:
                tool.side_effect = f"modifies {', '.join(tool.writes)}" if tool.writes else "none"

    def _helper_order(self) -> list[str]:
        """Helpers in callee-first order; a call cycle is an error (no recursion)."""
        calls = {name: sorted(_called_names(fn.body) & set(self.fns)) for name, fn in self.fns.items()}
        order: list[str] = []
        state: dict[str, int] = {}

        def visit(name: str, path: list[str]) -> None:
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                fn = self.fns[name]
                cycle = " -> ".join([*path[path.index(name) :], name])
                self.error("E3021", f"helper `{name}` calls itself: {cycle}", fn, fn.file)
                return
            state[name] = 1
            for callee in calls[name]:
                visit(callee, [*path, name])
            state[name] = 2
            order.append(name)

        for name in self.fns:
            visit(name, [])
        return order

    def _compare_declared(self, tool: ir.ToolDecl, effects: _Effects) -> None:
        if tool.escape is not None and (tool.declared_reads is None or tool.declared_writes is None):
            return  # E4005 already says what is missing
        implicit = set(bi.BUILTIN_STATE)
        for declared, inferred, extra_code, missing_code, verb in (
            (tool.declared_writes, effects.writes, "E4001", "E4002", "writes"),
            (tool.declared_reads, effects.reads, "E4003", "E4008", "reads"),
        ):
            if declared is None:
                continue
            for name in declared:
                if name not in self.state:
                    self.error(
                        "E2006",
                        f"`{verb} {name}`: no such state field",
                        tool,
                        tool.file,
                        hint=did_you_mean(name, self.state),
                    )
            actual = {n for n in inferred if not n.startswith(PARAM_ROOT)}
            for name in sorted(actual - set(declared) - implicit):
                self.error(
                    extra_code,
                    f"tool `{tool.name}` {verb[:-1]}s `{name}` but does not declare it",
                    inferred[name],
                    tool.file,
                )
            for name in sorted(set(declared) - actual):
                if name in self.state:
                    self.error(
                        missing_code,
                        f"tool `{tool.name}` declares `{verb} {name}` but never {verb[:-1]}s it",
                        tool,
                        tool.file,
                    )

    # ------------------------------------------------------------------ tests and tasks
    def _check_tests(self) -> None:
        for test in self.module.tests:
            checker = _BodyChecker(self, None, is_helper=False, file=test.file)
            for index, step in enumerate(test.steps):
                if isinstance(step, ir.UseScenario):
                    if index != 0:
                        self.error("E5002", "`scenario` must be the first line of a test", step, test.file)
                    self._check_scenario_ref(step.name, step, test.file)
                elif isinstance(step, ir.TestLet):
                    ty = checker.expr(step.value, None)
                    checker.declare(step.name, ty, "local", step, set())
                elif isinstance(step, ir.TestCall):
                    checker.tool_call(step.call, statement=True)
                elif isinstance(step, ir.ExpectRaises):
                    checker.tool_call(step.call, statement=True)
                    if step.error not in bi.ERROR_KINDS:
                        self.error(
                            "E2013",
                            f"unknown error kind `{step.error}`",
                            step,
                            test.file,
                            hint=did_you_mean(step.error, bi.ERROR_KINDS),
                        )
                else:
                    checker.condition(step.cond)

    def _check_tasks(self) -> None:
        for task in self.module.tasks:
            if task.scenario:
                self._check_scenario_ref(task.scenario, task, task.file)
            if not task.request.strip():
                self.error("E5003", f"task `{task.name}` has no `request`", task, task.file)
            if not task.solution:
                self.error("E5003", f"task `{task.name}` has no `solution`", task, task.file)
            if not task.verify:
                self.error("E5003", f"task `{task.name}` has no `verify` condition", task, task.file)
            checker = _BodyChecker(self, None, is_helper=False, file=task.file)
            for step in task.solution:
                checker.tool_call(step, statement=True)
            if task.solution:
                last = task.solution[-1]
                tool = (
                    self.tools.get(last.func.id)
                    if isinstance(last, ir.Call) and isinstance(last.func, ir.Name)
                    else None
                )
                if tool is not None and not tool.writes:
                    self.error(
                        "E5003",
                        f"the solution must end with a state-changing tool; `{tool.name}` only reads",
                        last,
                        task.file,
                    )
            pure = _BodyChecker(self, None, is_helper=False, file=task.file, allow_tools=False)
            for condition in task.verify:
                pure.condition(condition)

    def _check_scenario_ref(self, name: str, node: ir.Node, file: str) -> None:
        if name not in self.scenarios:
            self.error("E2010", f"unknown scenario `{name}`", node, file, hint=did_you_mean(name, self.scenarios))

    # ------------------------------------------------------------------ output
    def _environment(self) -> ir.Environment:
        scenario_values: dict[str, dict[str, Any]] = {}
        for scenario in self.scenarios.values():
            values: dict[str, Any] = {}
            for item in scenario.items:
                _, value = self.const_value(item.value, self.state[item.name].type, scenario.file, item.name)
                values[item.name] = value
            scenario_values[scenario.name] = values
        records = [r for r in self.records.values() if r.name != "AuditEntry"]
        return ir.Environment(
            path=self.module.path,
            header=self.header,
            enums=list(self.enums.values()),
            records=[bi.AUDIT_ENTRY, *records],
            state=list(self.state.values()),
            world=list(self.world.values()),
            world_values=self.world_values,
            state_defaults=self.state_defaults,
            scenarios=list(self.scenarios.values()),
            scenario_values=scenario_values,
            tools=list(self.tools.values()),
            fns=[self.fns[name] for name in self.fns],
            tests=self.module.tests,
            tasks=self.module.tasks,
            inputs=sorted(str(Path(self._world_file(w)).parent / w.source) for w in self.world.values() if w.source),
        )


def _decl_file(decls: Sequence[ir.StateDecl] | Sequence[ir.WorldDecl], item: Any) -> str:
    for decl in decls:
        if any(f is item for f in decl.fields):
            return decl.file
    return ""


def _member_type(expected: ir.TypeRef | None, key: Any, records: dict[str, ir.RecordDecl]) -> ir.TypeRef | None:
    if expected is None:
        return None
    base = ts.strip_optional(expected)
    if base.name == "map":
        return base.args[1]
    if base.name in records and isinstance(key, str):
        return next((f.type for f in records[base.name].fields if f.name == key), None)
    return None


def _walk(node: Any) -> Iterator[Any]:
    """Every IR node below `node` (iteratively, so deep trees cannot overflow)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, BaseModel):
            yield item
            for name in type(item).model_fields:
                value = getattr(item, name)
                if isinstance(value, (list, BaseModel)):
                    stack.append(value)


def _called_names(body: list[ir.Stmt]) -> set[str]:
    return {n.func.id for n in _walk(body) if isinstance(n, ir.Call) and isinstance(n.func, ir.Name)}


def _effectful_builtins_used(module: ir.Module) -> set[str]:
    names: set[str] = set()
    for callable_ in [*module.tools, *module.fns]:
        names |= _called_names(callable_.body) & set(bi.EFFECTFUL_FUNCTIONS)
    return names


# =========================================================================== bodies


class _BodyChecker:
    """Type-checks one tool, helper, test or task and infers its effects."""

    def __init__(
        self,
        analyser: _Analyser,
        callable_: ir.ToolDecl | None,
        is_helper: bool,
        file: str = "",
        allow_tools: bool = True,
    ) -> None:
        self.a = analyser
        self.callable = callable_
        self.is_helper = is_helper
        self.in_test = callable_ is None
        self.allow_tools = allow_tools and self.in_test
        self.file = callable_.file if callable_ else file
        self.scopes: list[dict[str, _Local]] = [{}]
        self.declared: dict[str, ir.TypeRef] = {}
        self.effects = _Effects()
        self.loop_depth = 0
        self.touched = False  # did the current target resolve into state?

    def error(self, code: str, message: str, node: ir.Node | None, hint: str = "") -> None:
        self.a.error(code, message, node, self.file, hint)

    # ------------------------------------------------------------------ scopes
    def lookup(self, name: str) -> _Local | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(
        self, name: str, ty: ir.TypeRef, kind: str, node: ir.Node, roots: set[str], outer: set[str] | None = None
    ) -> None:
        if bi.is_reserved(name):
            self.error("E2014", f"`{name}` is a reserved name", node)
        if name in self.a.fns or name in self.a.tools or name in self.a.records or name in self.a.enums:
            self.error(
                "E2001",
                f"`{name}` is already a {'helper' if name in self.a.fns else 'tool' if name in self.a.tools else 'type'}",
                node,
            )
        visible = self.lookup(name)
        if visible is not None and kind != "narrow":
            self.error(
                "E2001", f"`{name}` is already declared here", node, hint=f"assign with `{name} = ...` instead of `let`"
            )
        elif (
            name in self.declared
            and not ts.same(self.declared[name], ty)
            and ty.name != "any"
            and self.declared[name].name != "any"
        ):
            self.error(
                "E2001",
                f"`{name}` was declared earlier in this body as {ts.show(self.declared[name])}, now {ts.show(ty)}",
                node,
                hint="use another name",
            )
        self.declared.setdefault(name, ty)
        self.scopes[-1][name] = _Local(ty, kind, set(roots), set(roots if outer is None else outer))

    def push(self, narrowed: dict[str, ir.TypeRef] | None = None) -> None:
        frame: dict[str, _Local] = {}
        for name, ty in (narrowed or {}).items():
            local = self.lookup(name)
            if local is not None:
                frame[name] = _Local(ty, local.kind, local.roots, local.outer)
        self.scopes.append(frame)

    def pop(self) -> None:
        self.scopes.pop()

    def narrow_here(self, narrowed: dict[str, ir.TypeRef]) -> None:
        for name, ty in narrowed.items():
            local = self.lookup(name)
            if local is not None:
                self.scopes[-1][name] = _Local(ty, local.kind, local.roots, local.outer)

    # ------------------------------------------------------------------ entry
    def check(self) -> _Effects:
        assert self.callable is not None
        tool = self.callable
        seen: set[str] = set()
        defaulted = False
        for index, param in enumerate(tool.params):
            if param.name in seen:
                self.error("E2005", f"parameter `{param.name}` appears twice", param)
                continue
            seen.add(param.name)
            has_default = param.default is not None or (ts.is_optional(param.type) and not self.is_helper)
            if defaulted and not has_default:
                self.error("E2020", f"parameter `{param.name}` has no default but follows one that has", param)
            defaulted = defaulted or has_default
            roots = (
                {PARAM_ROOT + str(index)} if self.is_helper and ts.is_container(param.type, self.a.records) else set()
            )
            self.declare(param.name, param.type, "param", param, roots)
            self._check_param_default(param)
        if tool.escape is not None:
            self._check_escape(tool)
            return self.effects
        terminates = self.block(tool.body)
        if not terminates and tool.returns.name != "None":
            self.error("E3011", f"`{tool.name}` can reach its end without returning {ts.show(tool.returns)}", tool)
        return self.effects

    def _check_param_default(self, param: ir.Param) -> None:
        if param.default is not None:
            self.a.const_value(param.default, param.type, self.file, param.name)
        for constraint in param.constraints:
            self._check_constraint(param, constraint)

    def _check_constraint(self, param: ir.Param, constraint: ir.Constraint) -> None:
        base = ts.strip_optional(param.type)
        fits = {
            "min": base.name in ("int", "float"),
            "max": base.name in ("int", "float"),
            "min_length": base.name == "str",
            "max_length": base.name == "str",
            "pattern": base.name == "str",
            "min_items": base.name in ("list", "map"),
            "max_items": base.name in ("list", "map"),
        }[constraint.kind]
        if not fits:
            self.error(
                "E3013", f"`{constraint.kind}` does not apply to a parameter of type {ts.show(param.type)}", constraint
            )
            return
        expected = ts.STR if constraint.kind == "pattern" else (base if constraint.kind in ("min", "max") else ts.INT)
        ok, value = self.a.const_value(constraint.value, expected, self.file, f"{param.name} {constraint.kind}")
        if ok and constraint.kind == "pattern":
            try:
                re.compile(str(value))
            except re.error as exc:
                self.error("E3019", f"invalid pattern: {exc}", constraint.value)

    def _check_escape(self, tool: ir.ToolDecl) -> None:
        if tool.declared_writes is None or tool.declared_reads is None:
            self.error(
                "E4005",
                f"`{tool.name}` has a {tool.escape.kind if tool.escape else ''} body, so it must declare `reads` and `writes`",
                tool,
            )
            return
        for name in tool.declared_reads:
            self.effects.reads.setdefault(name, tool)
        for name in tool.declared_writes:
            self.effects.writes.setdefault(name, tool)

    # ------------------------------------------------------------------ statements
    def block(self, stmts: Sequence[ir.Stmt]) -> bool:
        """Check statements in order; True when every path through them terminates."""
        terminated = False
        for stmt in stmts:
            if terminated:
                self.error("E3012", "this statement can never run", stmt)
                break
            terminated = self.stmt(stmt)
        return terminated

    def stmt(self, stmt: ir.Stmt) -> bool:
        method = getattr(self, f"stmt_{stmt.kind}")
        result: bool = method(stmt)
        return result

    def stmt_let(self, stmt: ir.Let) -> bool:
        declared = self.a.resolve_type(stmt.type, self.file) if stmt.type is not None else None
        ty = self.expr(stmt.value, declared)
        if declared is not None:
            self.expect_assignable(ty, declared, stmt.value)
            ty = declared
        elif _is_empty_literal(stmt.value):
            self.error("E3020", "cannot tell the type of an empty literal", stmt.value)
        elif ty.name == "None":
            self.error(
                "E3020",
                f"cannot tell the type of `{stmt.name}` from None",
                stmt.value,
                hint=f"write `let {stmt.name}: optional[T] = None`",
            )
        self.declare(stmt.name, ty, "local", stmt, self.roots(stmt.value), self.outer(stmt.value))
        return False

    def stmt_assign(self, stmt: ir.Assign) -> bool:
        self.touched = False
        target_type = self.target(stmt.target)
        stmt.touches_state = self.touched
        if stmt.op != "=" and isinstance(stmt.target, ir.Name) and stmt.target.ref == "state":
            self.effects.reads.setdefault(stmt.target.id, stmt.target)
        value_type = self.expr(stmt.value, target_type)
        if stmt.op == "=":
            self.expect_assignable(value_type, target_type, stmt.value)
        else:
            ok = (
                (
                    ts.is_numeric(target_type)
                    and ts.is_numeric(value_type)
                    and (target_type.name != "int" or value_type.name == "int")
                )
                or (stmt.op == "+=" and target_type.name == "str" and value_type.name == "str")
                or (stmt.op == "+=" and target_type.name == "list" and ts.assignable(value_type, target_type))
            )
            if not ok:
                self.error(
                    "E3004", f"`{stmt.op}` does not apply to {ts.show(target_type)} and {ts.show(value_type)}", stmt
                )
        if isinstance(stmt.target, ir.Name):
            local = self.lookup(stmt.target.id)
            if local is not None:
                local.roots |= self.roots(stmt.value)
                local.outer |= self.outer(stmt.value)
                if not ts.is_optional(value_type) and ts.is_optional(local.type):
                    self.scopes[-1][stmt.target.id] = _Local(
                        ts.strip_optional(local.type), local.kind, local.roots, local.outer
                    )
                elif ts.is_optional(value_type):
                    self.scopes[-1][stmt.target.id] = _Local(
                        self.declared.get(stmt.target.id, local.type), local.kind, local.roots, local.outer
                    )
        return False

    def stmt_return(self, stmt: ir.Return) -> bool:
        if self.callable is None:
            self.error("E3005", "`return` outside a tool", stmt)
            return True
        expected = self.callable.returns
        if stmt.value is None:
            if expected.name != "None":
                self.error("E3001", f"`return` needs a value of type {ts.show(expected)}", stmt)
            return True
        ty = self.expr(stmt.value, expected)
        self.expect_assignable(ty, expected, stmt.value)
        self.effects.return_roots |= self.roots(stmt.value)
        return True

    def stmt_require(self, stmt: ir.Require) -> bool:
        self.condition(stmt.cond)
        self.error_call(stmt.error, _narrowing(stmt.cond, False, self))
        self.narrow_here(_narrowing(stmt.cond, True, self))
        return False

    def stmt_fail(self, stmt: ir.Fail) -> bool:
        self.error_call(stmt.error, {})
        return True

    def error_call(self, call: ir.ErrorCall, narrowed: dict[str, ir.TypeRef]) -> None:
        if call.kind not in bi.ERROR_KINDS:
            self.error(
                "E2013",
                f"unknown error kind `{call.kind}`",
                call,
                hint=did_you_mean(call.kind, bi.ERROR_KINDS) or "one of: " + ", ".join(bi.ERROR_KINDS),
            )
        self.effects.errors.add(call.kind)
        self.push(narrowed)
        if call.message is None:
            self.error("E3006", f"`{call.kind}(...)` needs a message", call)
        else:
            self.expect_assignable(self.expr(call.message, ts.STR), ts.STR, call.message)
        names: set[str] = set()
        for kw in call.fields:
            if kw.name in names:
                self.error("E2005", f"error field `{kw.name}` given twice", kw)
            names.add(kw.name)
            if kw.name in ("message", "kind", "error"):
                self.error("E2014", f"`{kw.name}` is set by the error itself", kw)
            ty = self.expr(kw.value, ts.STR if kw.name in ("entity", "field") else None)
            if kw.name in ("entity", "field"):
                self.expect_assignable(ty, ts.STR, kw.value)
        self.pop()

    def stmt_delete(self, stmt: ir.Delete) -> bool:
        if not isinstance(stmt.target, ir.Index):
            self.error("E3008", "`del` removes a map entry: `del m[key]`", stmt.target)
            return False
        self.touched = False
        obj_type = self.expr(stmt.target.obj, None)
        if isinstance(stmt.target.obj, ir.Name):
            self.target(stmt.target.obj, mutate=True)
        else:
            self.write_roots(self.outer(stmt.target.obj), stmt.target)
        stmt.touches_state = self.touched
        if ts.strip_optional(obj_type).name != "map" and obj_type.name != "any":
            self.error("E3004", f"`del` works on maps, not {ts.show(obj_type)}", stmt.target)
            return False
        key_type = obj_type.args[0] if obj_type.name == "map" else ts.ANY
        self.check_key(self.expr(stmt.target.index, key_type), key_type, stmt.target.index)
        return False

    def stmt_expr(self, stmt: ir.ExprStmt) -> bool:
        value = stmt.value
        self.expr(value, None)
        if not _has_effect(value, self.a.fns):
            self.error("E3018", "this expression is computed and thrown away", stmt)
        return False

    def stmt_pass(self, stmt: ir.Pass) -> bool:
        return False

    def stmt_break(self, stmt: ir.Break) -> bool:
        if self.loop_depth == 0:
            self.error("E3017", "`break` outside a loop", stmt)
        return True

    def stmt_continue(self, stmt: ir.Continue) -> bool:
        if self.loop_depth == 0:
            self.error("E3017", "`continue` outside a loop", stmt)
        return True

    def stmt_if(self, stmt: ir.If) -> bool:
        all_terminate = True
        negatives: dict[str, ir.TypeRef] = {}
        self.push()
        for branch in stmt.branches:
            self.narrow_here(negatives)
            self.condition(branch.cond)
            self.push(_narrowing(branch.cond, True, self))
            ends = self.block(branch.body)
            self.pop()
            all_terminate = all_terminate and ends
            negatives.update(_narrowing(branch.cond, False, self))
        self.narrow_here(negatives)
        if stmt.orelse:
            self.push()
            else_ends = self.block(stmt.orelse)
            self.pop()
        else:
            else_ends = False
        self.pop()
        if not stmt.orelse and all_terminate:
            # `if x is None: fail ...` narrows x for the rest of the block.
            self.narrow_here(negatives)
        return all_terminate and else_ends

    def stmt_for(self, stmt: ir.For) -> bool:
        iter_type = self.expr(stmt.iter, None)
        if ts.is_optional(iter_type):
            self.error("E3009", "cannot loop over a value that may be None", stmt.iter)
            iter_type = ts.strip_optional(iter_type)
        element_types = self.iteration_types(iter_type, len(stmt.targets), stmt.iter)
        roots = self.roots(stmt.iter)
        self.push()
        for name, ty in zip(stmt.targets, element_types):
            self.declare(name, ty, "loop", stmt, roots if ts.is_container(ty, self.a.records) else set())
        self.loop_depth += 1
        self.block(stmt.body)
        self.loop_depth -= 1
        self.pop()
        return False

    def iteration_types(self, iter_type: ir.TypeRef, count: int, node: ir.Node) -> list[ir.TypeRef]:
        base = iter_type
        if base.name == "any" or base.name == "json":
            return [base] * count
        if base.name in ("list", "set"):
            if count != 1:
                self.error("E3006", f"a {base.name} gives one value per step: `for x in xs`", node)
            return [base.args[0]] * count
        if base.name == "map":
            if count == 1:
                return [base.args[0]]
            if count == 2:
                return [base.args[0], base.args[1]]
        if base.name == "str" and count == 1:
            return [ts.STR]
        self.error("E3004", f"cannot loop over {ts.show(iter_type)}", node)
        return [ts.ANY] * count

    # ------------------------------------------------------------------ targets
    def target(self, expr: ir.Expr, mutate: bool = False) -> ir.TypeRef:
        """Type of an assignable place; records the write on the state field it lives in."""
        if isinstance(expr, ir.Name):
            local = self.lookup(expr.id)
            if local is not None:
                if local.kind == "param" and not mutate:
                    self.error(
                        "E4007", f"parameter `{expr.id}` cannot be reassigned", expr, hint=f"`let new_{expr.id} = ...`"
                    )
                if local.kind == "loop" and not mutate:
                    self.error("E3022", f"loop variable `{expr.id}` cannot be reassigned", expr)
                expr.ref = "param" if local.kind == "param" else "local"
                expr.ty = self.declared.get(expr.id, local.type)
                if mutate:
                    self.write_roots(local.outer, expr)
                    expr.ty = local.type
                return expr.ty
            if expr.id in self.a.state:
                return self._state_target(expr, expr.id, mutate)
            if expr.id in self.a.world:
                self.error("E4006", f"world data `{expr.id}` cannot be changed", expr)
                return ts.ANY
            self.error(
                "E3008" if self.known_name(expr.id) else "E2002",
                f"cannot assign to `{expr.id}`",
                expr,
                hint=self.name_hint(expr.id),
            )
            return ts.ANY
        if (
            isinstance(expr, ir.Attr)
            and isinstance(expr.obj, ir.Name)
            and expr.obj.id == "state"
            and self.lookup("state") is None
        ):
            if expr.name not in self.a.state:
                self.error("E2006", f"no state field `{expr.name}`", expr, hint=did_you_mean(expr.name, self.a.state))
                return ts.ANY
            expr.obj.ref = "state"
            return self._state_target(expr, expr.name, mutate)
        if isinstance(expr, (ir.Attr, ir.Index)):
            ty = self.expr(expr, None)
            self.write_roots(self.outer(expr.obj), expr)
            return ty
        self.error("E3008", "cannot assign to this expression", expr)
        self.expr(expr, None)
        return ts.ANY

    def _state_target(self, expr: ir.Expr, name: str, mutate: bool) -> ir.TypeRef:
        if name in bi.RUNTIME_KEPT:
            self.error("E4009", f"`{name}` is kept by the runtime", expr)
        if name == bi.AUDIT_LOG:
            self.error("E4004", "the audit log is append-only: use `audit(action, ...)`", expr)
        if isinstance(expr, ir.Name):
            expr.ref = "state"
        if mutate:
            self.effects.reads.setdefault(name, expr)
        self.effects.writes.setdefault(name, expr)
        self.touched = True
        if self.in_test:
            self.error("E3008", "tests change state only through tools", expr)
        expr.ty = self.a.state[name].type
        return expr.ty

    def write_roots(self, roots: set[str], node: ir.Node) -> None:
        self.touched = self.touched or bool(roots)
        for root in roots:
            if root in bi.RUNTIME_KEPT:
                self.error("E4009", f"`{root}` is kept by the runtime", node)
            if root.startswith(WORLD_ROOT):
                self.error("E4006", f"world data `{root[len(WORLD_ROOT) :]}` cannot be changed", node)
                continue
            if root == bi.AUDIT_LOG:
                self.error("E4004", "the audit log is append-only: use `audit(action, ...)`", node)
            if self.in_test and not root.startswith(PARAM_ROOT):
                self.error("E3008", "tests change state only through tools", node)
            self.effects.writes.setdefault(root, node)

    # ------------------------------------------------------------------ conditions and checks
    def condition(self, expr: ir.Expr) -> None:
        ty = self.expr(expr, ts.BOOL)
        if ty.name not in ("bool", "any"):
            self.error(
                "E3010",
                f"condition is {ts.show(ty)}, not bool",
                expr,
                hint="compare explicitly, e.g. `x is not None` or `len(xs) > 0`",
            )

    def expect_assignable(self, src: ir.TypeRef, dst: ir.TypeRef, node: ir.Node) -> None:
        if ts.assignable(src, dst):
            return
        if ts.is_optional(src) and ts.assignable(ts.strip_optional(src), dst):
            self.error("E3009", f"value may be None where {ts.show(dst)} is expected", node)
            return
        self.error("E3001", f"expected {ts.show(dst)}, got {ts.show(src)}", node)

    def check_key(self, src: ir.TypeRef, key: ir.TypeRef, node: ir.Node) -> None:
        """A map key or set item. A map[json, V] takes str and int keys only: a json value
        could be a float, a bool or a list at run time, so it needs converting first."""
        if key.name == "json":
            # A json value is checked when the call runs; a container literal never fits.
            literal = isinstance(node, (ir.ListLit, ir.MapLit))
            if literal or (
                src.name not in ("str", "int", "json", "any", *ts.TEMPORAL) and src.name not in self.a.enums
            ):
                self.error(
                    "E3003",
                    f"keys of a map[json, ...] are str or int, not {ts.show(src)}",
                    node,
                    hint="convert a json value first, e.g. with as_text(...) or int(...)",
                )
            return
        self.expect_assignable(src, key, node)

    def known_name(self, name: str) -> bool:
        return (
            name in self.a.fns
            or name in self.a.tools
            or name in self.a.records
            or name in self.a.enums
            or name in bi.FUNCTIONS
        )

    def name_hint(self, name: str) -> str:
        candidates: list[str] = [n for scope in self.scopes for n in scope]
        candidates += [*self.a.state, *self.a.world, *self.a.enums, *self.a.records, *self.a.fns, *bi.FUNCTIONS]
        if self.in_test:
            candidates += list(self.a.tools)
        return did_you_mean(name, [c for c in candidates if c != name])

    # ------------------------------------------------------------------ roots (aliasing)
    def roots(self, expr: ir.Expr | None) -> set[str]:
        """State fields (and helper parameters) a container value may alias."""
        if expr is None or expr.ty is None or not ts.is_container(expr.ty, self.a.records):
            return set()
        if isinstance(expr, ir.Name):
            if expr.ref in ("local", "param"):
                local = self.lookup(expr.id)
                return set(local.roots) if local else set()
            if expr.ref == "state":
                return {expr.id}
            if expr.ref == "world":
                return {WORLD_ROOT + expr.id}
            return set()
        if _is_state_attr(expr):
            assert isinstance(expr, ir.Attr)
            return {expr.name}
        if isinstance(expr, ir.Call):
            return self._call_roots(expr)
        if isinstance(expr, (ir.Const, ir.FString)):
            return set()
        found: set[str] = set()
        for child in _children(expr):
            found |= self.roots(child)
        return found

    def outer(self, expr: ir.Expr | None) -> set[str]:
        """State fields the value itself may be part of (so changing it changes them).

        Fresh containers (literals, comprehensions, sorted(...), slices, copies) are
        nobody's: changing the new list leaves state alone, even if its items alias."""
        if expr is None or expr.ty is None or not ts.is_container(expr.ty, self.a.records):
            return set()
        if isinstance(expr, ir.Name):
            if expr.ref in ("local", "param"):
                local = self.lookup(expr.id)
                return set(local.outer) if local else set()
            return self.roots(expr)
        if _is_state_attr(expr):
            return self.roots(expr)
        if isinstance(expr, (ir.Attr, ir.Index)):
            return self.roots(expr.obj)
        if isinstance(expr, ir.Ternary):
            return self.outer(expr.then) | self.outer(expr.other)
        if isinstance(expr, ir.Call):
            func = expr.func
            if isinstance(func, ir.Name) and func.ref == "fn":
                return self._call_roots(expr)
            if isinstance(func, ir.Name) and func.id in ("min", "max", "random_choice") and expr.args:
                return (
                    self.roots(expr.args[0])
                    if len(expr.args) == 1
                    else set().union(*(self.outer(a) for a in expr.args))
                )
            if isinstance(func, ir.Attr) and func.name in ("get", "pop"):
                return self.roots(func.obj)
        return set()

    def _call_roots(self, call: ir.Call) -> set[str]:
        func = call.func
        if isinstance(func, ir.Name):
            if func.id == "copy":
                return set()
            if func.ref == "fn":
                summary = self.a.summaries.get(func.id, _Summary())
                return self._map_param_roots(summary.return_roots, call)
        found: set[str] = set()
        for child in _children(call):
            found |= self.roots(child)
        return found

    def _map_param_roots(self, roots: set[str], call: ir.Call) -> set[str]:
        assert isinstance(call.func, ir.Name)
        fn = self.a.fns.get(call.func.id)
        mapped: set[str] = set()
        for root in roots:
            if not root.startswith(PARAM_ROOT):
                mapped.add(root)
                continue
            index = int(root[len(PARAM_ROOT) :])
            argument = _argument_for(call, fn, index) if fn else None
            if argument is not None:
                mapped |= self.roots(argument)
        return mapped

    # ------------------------------------------------------------------ expressions
    def expr(self, expr: ir.Expr, expected: ir.TypeRef | None) -> ir.TypeRef:
        method = getattr(self, f"expr_{expr.kind}")
        ty: ir.TypeRef = method(expr, expected)
        expr.ty = ty
        return ty

    def expr_const(self, expr: ir.Const, expected: ir.TypeRef | None) -> ir.TypeRef:
        value = expr.value
        if value is None:
            return ts.NONE
        if isinstance(value, bool):
            return ts.BOOL
        if isinstance(value, int):
            return ts.INT
        if isinstance(value, float):
            return ts.FLOAT
        base = ts.strip_optional(expected) if expected else None
        if base is not None and base.name in ts.TEMPORAL:
            if not ts.valid_temporal(base.name, value):
                self.error("E3001", f"{value!r} is not an ISO-8601 {base.name}", expr)
            return base
        if base is not None and base.name in self.a.enums:
            members = self.a.enums[base.name].members
            if value not in members:
                self.error(
                    "E2007",
                    f"{value!r} is not a member of {base.name}",
                    expr,
                    hint=did_you_mean(value, members) or "one of: " + ", ".join(members),
                )
            return base
        return ts.STR

    def expr_fstring(self, expr: ir.FString, expected: ir.TypeRef | None) -> ir.TypeRef:
        for part in expr.parts:
            if not isinstance(part, str):
                ty = self.expr(part, None)
                if ty.name in ("list", "map", "set", "json") or ty.name in self.a.records:
                    self.error(
                        "E3001",
                        f"f-strings show scalars; this is {ts.show(ty)}",
                        part,
                        hint="pick a field, or use len(...)",
                    )
        return ts.STR

    def expr_name(self, expr: ir.Name, expected: ir.TypeRef | None) -> ir.TypeRef:
        name = expr.id
        local = self.lookup(name)
        if local is not None:
            expr.ref = "param" if local.kind == "param" else "local"
            return local.type
        if name in self.a.state:
            expr.ref = "state"
            self.effects.reads.setdefault(name, expr)
            return self.a.state[name].type
        if name in self.a.world:
            expr.ref = "world"
            return self.a.world[name].type
        if name in self.a.enums or name in self.a.records:
            self.error(
                "E3001",
                f"`{name}` is a type, not a value",
                expr,
                hint=f"use `{name}.member`" if name in self.a.enums else f"build one with `{name}(field=...)`",
            )
            return ts.ANY
        if self.known_name(name):
            self.error("E3005", f"`{name}` must be called: `{name}(...)`", expr)
            return ts.ANY
        if name == "state":
            self.error("E2002", "`state` is only used as `state.field`", expr)
            return ts.ANY
        self.error("E2002", f"unknown name `{name}`", expr, hint=self.name_hint(name))
        return ts.ANY

    def expr_list(self, expr: ir.ListLit, expected: ir.TypeRef | None) -> ir.TypeRef:
        base = ts.strip_optional(expected) if expected else None
        if base is not None and base.name == "json":
            for item in expr.items:
                self.expr(item, ts.JSON)
            return ts.JSON
        if base is not None and base.name == "set":  # `[...]` where a set is expected is a set
            for item in expr.items:
                self.check_key(self.expr(item, base.args[0]), base.args[0], item)
            return base
        item_expected = base.args[0] if base is not None and base.name == "list" else None
        if not expr.items:
            return ts.list_of(item_expected) if item_expected else ts.list_of(ts.ANY)
        item_type: ir.TypeRef | None = None
        for item in expr.items:
            ty = self.expr(item, item_expected)
            if item_expected is not None:
                self.expect_assignable(ty, item_expected, item)
                continue
            joined = ts.join(item_type, ty) if item_type is not None else ty
            if joined is None:
                self.error("E3001", f"list mixes {ts.show(item_type or ts.ANY)} and {ts.show(ty)}", item)
                joined = ts.ANY
            item_type = joined
        return ts.list_of(item_expected or item_type or ts.ANY)

    def expr_map(self, expr: ir.MapLit, expected: ir.TypeRef | None) -> ir.TypeRef:
        base = ts.strip_optional(expected) if expected else None
        if base is not None and base.name in self.a.records:
            return self._record_literal(expr, base)
        if base is not None and base.name == "json":
            for entry in expr.entries:
                self.expect_assignable(self.expr(entry.key, ts.STR), ts.STR, entry.key)
                self.expr(entry.value, ts.JSON)
            return ts.JSON
        key_expected = base.args[0] if base is not None and base.name == "map" else None
        value_expected = base.args[1] if base is not None and base.name == "map" else None
        if not expr.entries:
            return ts.map_of(key_expected or ts.ANY, value_expected or ts.ANY)
        key_type: ir.TypeRef | None = key_expected
        value_type: ir.TypeRef | None = value_expected
        for entry in expr.entries:
            k = self.expr(entry.key, key_expected)
            v = self.expr(entry.value, value_expected)
            if key_expected is not None:
                self.expect_assignable(k, key_expected, entry.key)
            else:
                key_type = ts.join(key_type, k) if key_type else k
            if value_expected is not None:
                self.expect_assignable(v, value_expected, entry.value)
            else:
                joined = ts.join(value_type, v) if value_type else v
                if joined is None:
                    self.error(
                        "E3001",
                        f"map mixes {ts.show(value_type or ts.ANY)} and {ts.show(v)} values",
                        entry.value,
                        hint="declare a record, or a map[str, json]",
                    )
                value_type = joined or ts.ANY
        key = key_type or ts.ANY
        if key.name not in ("str", "int", "json", "any") and key.name not in self.a.enums:
            self.error("E3003", f"map keys cannot be {ts.show(key)}", expr)
        return ts.map_of(key, value_type or ts.ANY)

    def _record_literal(self, expr: ir.MapLit, record_type: ir.TypeRef) -> ir.TypeRef:
        record = self.a.records[record_type.name]
        fields = {f.name: f for f in record.fields}
        given: set[str] = set()
        for entry in expr.entries:
            if not (isinstance(entry.key, ir.Const) and isinstance(entry.key.value, str)):
                self.error("E3001", f"record {record.name} keys are field names in quotes", entry.key)
                continue
            entry.key.ty = ts.STR
            name = entry.key.value
            if name not in fields:
                self.error(
                    "E2008", f"record {record.name} has no field `{name}`", entry.key, hint=did_you_mean(name, fields)
                )
                self.expr(entry.value, None)
                continue
            given.add(name)
            self.expect_assignable(self.expr(entry.value, fields[name].type), fields[name].type, entry.value)
        self._missing_fields(record, given, expr)
        return record_type

    def _missing_fields(self, record: ir.RecordDecl, given: set[str], node: ir.Node) -> None:
        missing = [
            f.name for f in record.fields if f.name not in given and f.default is None and not ts.is_optional(f.type)
        ]
        if missing:
            self.error("E3007", f"record {record.name} needs {', '.join(missing)}", node)

    def expr_attr(self, expr: ir.Attr, expected: ir.TypeRef | None) -> ir.TypeRef:
        obj = expr.obj
        if isinstance(obj, ir.Name) and self.lookup(obj.id) is None:
            if obj.id in self.a.enums:
                enum = self.a.enums[obj.id]
                obj.ref = "enum"
                if expr.name not in enum.members:
                    self.error(
                        "E2007",
                        f"enum {enum.name} has no member `{expr.name}`",
                        expr,
                        hint=did_you_mean(expr.name, enum.members) or "one of: " + ", ".join(enum.members),
                    )
                return ts.t(enum.name)
            if obj.id == "state" and obj.id not in self.a.state:
                obj.ref = "state"
                if expr.name not in self.a.state:
                    self.error(
                        "E2006", f"no state field `{expr.name}`", expr, hint=did_you_mean(expr.name, self.a.state)
                    )
                    return ts.ANY
                self.effects.reads.setdefault(expr.name, expr)
                return self.a.state[expr.name].type
        obj_type = self.expr(obj, None)
        if obj_type.name == "any":
            return ts.ANY
        if ts.is_optional(obj_type):
            self.error(
                "E3009",
                f"`.{expr.name}` on a value that may be None",
                obj,
                hint="check it first: `require x is not None else ...`",
            )
            obj_type = ts.strip_optional(obj_type)
        if obj_type.name in self.a.records:
            record = self.a.records[obj_type.name]
            for field_ in record.fields:
                if field_.name == expr.name:
                    return field_.type
            self.error(
                "E2008",
                f"record {record.name} has no field `{expr.name}`",
                expr,
                hint=did_you_mean(expr.name, [f.name for f in record.fields]),
            )
            return ts.ANY
        self.error("E3004", f"{ts.show(obj_type)} has no field `{expr.name}`", expr)
        return ts.ANY

    def expr_index(self, expr: ir.Index, expected: ir.TypeRef | None) -> ir.TypeRef:
        obj_type = self.expr(expr.obj, None)
        if ts.is_optional(obj_type) and obj_type.name != "None":
            self.error("E3009", "indexing a value that may be None", expr.obj)
            obj_type = ts.strip_optional(obj_type)
        if obj_type.name == "any":
            self.expr(expr.index, None)
            return ts.ANY
        if obj_type.name == "json":
            self.expr(expr.index, None)
            return ts.JSON
        if obj_type.name in ("list", "str"):
            self.expect_assignable(self.expr(expr.index, ts.INT), ts.INT, expr.index)
            return obj_type.args[0] if obj_type.name == "list" else ts.STR
        if obj_type.name == "map":
            self.check_key(self.expr(expr.index, obj_type.args[0]), obj_type.args[0], expr.index)
            return obj_type.args[1]
        self.error("E3004", f"cannot index {ts.show(obj_type)}", expr)
        self.expr(expr.index, None)
        return ts.ANY

    def expr_slice(self, expr: ir.Slice, expected: ir.TypeRef | None) -> ir.TypeRef:
        obj_type = self.expr(expr.obj, None)
        if ts.is_optional(obj_type) and obj_type.name != "None":
            self.error("E3009", "slicing a value that may be None", expr.obj)
            obj_type = ts.strip_optional(obj_type)
        for bound in (expr.lower, expr.upper):
            if bound is not None:
                self.expect_assignable(self.expr(bound, ts.INT), ts.INT, bound)
        if obj_type.name in ("list", "str", "any"):
            return obj_type
        self.error("E3004", f"cannot slice {ts.show(obj_type)}", expr)
        return ts.ANY

    def expr_unary(self, expr: ir.Unary, expected: ir.TypeRef | None) -> ir.TypeRef:
        if expr.op == "not":
            self.condition(expr.operand)
            return ts.BOOL
        ty = self.expr(expr.operand, expected)
        if not ts.is_numeric(ty):
            self.error("E3004", f"`-` does not apply to {ts.show(ty)}", expr)
            return ts.ANY
        return ty

    def expr_binary(self, expr: ir.Binary, expected: ir.TypeRef | None) -> ir.TypeRef:
        op = expr.op
        if op in ("and", "or"):
            self.condition(expr.left)
            self.push(_narrowing(expr.left, op == "and", self))
            self.condition(expr.right)
            self.pop()
            return ts.BOOL
        if op in ("is", "is not"):
            left = self.expr(expr.left, None)
            right = self.expr(expr.right, None)
            if right.name != "None":
                self.error("E3004", f"`{op}` compares with None only; use `==` or `!=`", expr)
            elif not ts.is_optional(left) and left.name not in ("any", "json"):
                self.error("E3004", f"{ts.show(left)} is never None", expr.left)
            return ts.BOOL
        if op in ("==", "!="):
            literal = ("const", "list", "map")
            if expr.left.kind in literal and expr.right.kind not in literal:
                # `["a"] == tags`: the literal takes its type from the other side, either way round
                right = self.expr(expr.right, None)
                left = self.expr(expr.left, right)
            else:
                left = self.expr(expr.left, None)
                right = self.expr(expr.right, left if expr.right.kind in literal else None)
            if isinstance(expr.left, ir.Const) and isinstance(expr.right, ir.Const):
                same_value = expr.left.value == expr.right.value
                self.error(
                    "E3004",
                    f"this compares two constants: it is always {same_value == (op == '==')}",
                    expr,
                )
                return ts.BOOL
            if not (ts.assignable(left, right) or ts.assignable(right, left) or ts.join(left, right) is not None):
                self.error(
                    "E3004",
                    f"comparing {ts.show(left)} with {ts.show(right)} is always {'False' if op == '==' else 'True'}",
                    expr,
                )
            return ts.BOOL
        if op in ("in", "not in"):
            container = self.expr(expr.right, None)
            base = container
            if ts.is_optional(container):
                self.error("E3009", f"`{op}` on a value that may be None", expr.right)
                base = ts.strip_optional(container)
            element = {
                "list": lambda: base.args[0],
                "map": lambda: base.args[0],
                "set": lambda: base.args[0],
                "str": lambda: ts.STR,
            }.get(base.name)
            if element is None:
                item_type = self.expr(expr.left, None)
                if base.name not in ("any", "json"):
                    self.error(
                        "E3004",
                        f"`{op}` needs a list, set, map or str on the right, not {ts.show(container)}",
                        expr.right,
                    )
                del item_type
                return ts.BOOL
            wanted = element()
            self.check_key(self.expr(expr.left, wanted), wanted, expr.left)
            return ts.BOOL
        if op in ("<", "<=", ">", ">="):
            left = self.expr(expr.left, None)
            right = self.expr(expr.right, left)
            if not _orderable(left, right):
                self.error("E3004", f"`{op}` does not apply to {ts.show(left)} and {ts.show(right)}", expr)
            return ts.BOOL
        left = self.expr(expr.left, expected)
        right = self.expr(expr.right, left if left.name in ("list",) else None)
        return self._arithmetic(expr, left, right)

    def _arithmetic(self, expr: ir.Binary, left: ir.TypeRef, right: ir.TypeRef) -> ir.TypeRef:
        op = expr.op
        if left.name == "any" or right.name == "any":
            return ts.ANY
        if ts.is_numeric(left) and ts.is_numeric(right):
            if op == "/":
                return ts.FLOAT
            return ts.INT if left.name == right.name == "int" else ts.FLOAT
        if op == "+" and left.name in ("str", *ts.TEMPORAL) and right.name in ("str", *ts.TEMPORAL):
            return ts.STR
        if op == "+" and left.name == "list" and ts.assignable(right, left):
            return left
        if op == "*" and left.name in ("str", "list") and right.name == "int":
            return left
        self.error("E3004", f"`{op}` does not apply to {ts.show(left)} and {ts.show(right)}", expr)
        return ts.ANY

    def expr_ternary(self, expr: ir.Ternary, expected: ir.TypeRef | None) -> ir.TypeRef:
        self.condition(expr.cond)
        self.push(_narrowing(expr.cond, True, self))
        then = self.expr(expr.then, expected)
        self.pop()
        self.push(_narrowing(expr.cond, False, self))
        other = self.expr(expr.other, expected or then)
        self.pop()
        joined = ts.join(then, other)
        if joined is None:
            self.error("E3001", f"the branches give {ts.show(then)} and {ts.show(other)}", expr)
            return ts.ANY
        return joined

    def expr_comprehension(self, expr: ir.Comprehension, expected: ir.TypeRef | None) -> ir.TypeRef:
        iter_type = self.expr(expr.iter, None)
        if ts.is_optional(iter_type):
            self.error("E3009", "cannot loop over a value that may be None", expr.iter)
            iter_type = ts.strip_optional(iter_type)
        element_types = self.iteration_types(iter_type, len(expr.targets), expr.iter)
        roots = self.roots(expr.iter)
        self.push()
        for name, ty in zip(expr.targets, element_types):
            if self.lookup(name) is not None:
                self.error("E2001", f"`{name}` is already declared here", expr)
            elif bi.is_reserved(name):
                self.error("E2014", f"`{name}` is a reserved name", expr)
            element_roots = roots if ts.is_container(ty, self.a.records) else set()
            self.scopes[-1][name] = _Local(ty, "loop", element_roots, set(element_roots))
        if expr.cond is not None:
            self.condition(expr.cond)
            self.narrow_here(_narrowing(expr.cond, True, self))
        base = ts.strip_optional(expected) if expected else None
        if expr.value is None:
            item_expected = base.args[0] if base is not None and base.name == "list" else None
            elt = self.expr(expr.elt, item_expected)
            result = ts.list_of(item_expected or elt)
        else:
            key_expected = base.args[0] if base is not None and base.name == "map" else None
            value_expected = base.args[1] if base is not None and base.name == "map" else None
            key = self.expr(expr.elt, key_expected)
            value = self.expr(expr.value, value_expected)
            result = ts.map_of(key_expected or key, value_expected or value)
        self.pop()
        return result

    def expr_lambda(self, expr: ir.Lambda, expected: ir.TypeRef | None) -> ir.TypeRef:
        self.error("E3015", "a lambda is allowed only as the `key=` argument of sorted, min or max", expr)
        return ts.ANY

    # ------------------------------------------------------------------ calls
    def expr_call(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        func = expr.func
        if isinstance(func, ir.Attr):
            return self.method_call(expr, func)
        if not isinstance(func, ir.Name):
            self.error("E3005", "only names and methods can be called", func)
            return ts.ANY
        name = func.id
        if self.lookup(name) is not None:
            self.error("E3005", f"`{name}` is a value, not a function", func)
            return ts.ANY
        if name in self.a.records:
            func.ref = "record"
            return self.record_call(expr, self.a.records[name])
        if name in self.a.fns:
            func.ref = "fn"
            return self.fn_call(expr, self.a.fns[name])
        if name in self.a.tools and self.allow_tools:  # in tests a tool may share a built-in's name
            return self.tool_call(expr, statement=False)
        if name in bi.FUNCTIONS:
            func.ref = "builtin"
            return self.builtin_call(expr, name, expected)
        if name in self.a.tools:
            if self.allow_tools:
                return self.tool_call(expr, statement=False)
            where = (
                "a verify condition; verify reads state only"
                if self.in_test
                else "a tool body; share logic through `fn` helpers"
            )
            self.error("E3005", f"tool `{name}` cannot be called from {where}", func)
            return ts.ANY
        self.error("E2002", f"unknown function `{name}`", func, hint=self.name_hint(name))
        for arg in expr.args:
            self.expr(arg, None)
        return ts.ANY

    def tool_call(self, expr: ir.Expr, statement: bool) -> ir.TypeRef:
        """A call to a tool from a test or task: named arguments only."""
        if not (isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name)):
            self.error("E5001", "expected a tool call like `tool(param=value)`", expr)
            self.expr(expr, None)
            return ts.ANY
        name = expr.func.id
        tool = self.a.tools.get(name)
        if tool is None:
            self.error("E2009", f"unknown tool `{name}`", expr.func, hint=did_you_mean(name, self.a.tools))
            return ts.ANY
        expr.func.ref = "tool"
        if expr.args:
            self.error("E5004", f"pass arguments to `{name}` by name", expr.args[0])
            for arg in expr.args:
                self.expr(arg, None)
            expr.ty = tool.returns
            return tool.returns
        params = {p.name: p for p in tool.params}
        given: set[str] = set()
        for kw in expr.kwargs:
            param = params.get(kw.name)
            if param is None:
                self.error(
                    "E3006", f"tool `{name}` has no parameter `{kw.name}`", kw, hint=did_you_mean(kw.name, params)
                )
                self.expr(kw.value, None)
                continue
            if kw.name in given:
                self.error("E2005", f"argument `{kw.name}` given twice", kw)
            given.add(kw.name)
            self.expect_assignable(self.expr(kw.value, param.type), param.type, kw.value)
        missing = [
            p.name for p in tool.params if p.default is None and not ts.is_optional(p.type) and p.name not in given
        ]
        if missing:
            self.error("E5005", f"`{name}` needs {', '.join(missing)}", expr)
        expr.ty = tool.returns
        return tool.returns

    def record_call(self, expr: ir.Call, record: ir.RecordDecl) -> ir.TypeRef:
        if expr.args:
            self.error("E3006", f"record {record.name} takes named fields: `{record.name}(field=value)`", expr.args[0])
        fields = {f.name: f for f in record.fields}
        given: set[str] = set()
        for kw in expr.kwargs:
            field_ = fields.get(kw.name)
            if field_ is None:
                self.error(
                    "E2008", f"record {record.name} has no field `{kw.name}`", kw, hint=did_you_mean(kw.name, fields)
                )
                self.expr(kw.value, None)
                continue
            if kw.name in given:
                self.error("E2005", f"field `{kw.name}` given twice", kw)
            given.add(kw.name)
            self.expect_assignable(self.expr(kw.value, field_.type), field_.type, kw.value)
        self._missing_fields(record, given, expr)
        return ts.t(record.name)

    def fn_call(self, expr: ir.Call, fn: ir.FnDecl) -> ir.TypeRef:
        arguments: list[tuple[ir.Param, ir.Expr]] = []
        if len(expr.args) > len(fn.params):
            self.error(
                "E3006",
                f"`{fn.name}` takes {len(fn.params)} argument{'s' if len(fn.params) != 1 else ''}, got {len(expr.args)}",
                expr,
            )
        for param, arg in zip(fn.params, expr.args):
            arguments.append((param, arg))
        params = {p.name: p for p in fn.params}
        for kw in expr.kwargs:
            named_param = params.get(kw.name)
            if named_param is None:
                self.error("E3006", f"`{fn.name}` has no parameter `{kw.name}`", kw, hint=did_you_mean(kw.name, params))
                self.expr(kw.value, None)
                continue
            if any(p.name == kw.name for p, _ in arguments):
                self.error("E2005", f"argument `{kw.name}` given twice", kw)
                continue
            arguments.append((named_param, kw.value))
        for param, arg in arguments:
            self.expect_assignable(self.expr(arg, param.type), param.type, arg)
        given = {p.name for p, _ in arguments}
        missing = [p.name for p in fn.params if p.name not in given and p.default is None]
        if missing:
            self.error("E3006", f"`{fn.name}` needs {', '.join(missing)}", expr)
        summary = self.a.summaries.get(fn.name, _Summary())
        if self.in_test and any(not w.startswith(PARAM_ROOT) for w in summary.writes):
            self.error("E3008", f"`{fn.name}` changes state; tests change state only through tools", expr.func)
        for field_name in summary.reads:
            if not field_name.startswith(PARAM_ROOT):
                self.effects.reads.setdefault(field_name, expr)
        written = self._map_param_roots(summary.writes, expr)
        managed = {bi.AUDIT_LOG, bi.ID_COUNTERS, bi.RNG_STATE} & written  # changed by built-ins inside the helper
        for name in managed:
            self.effects.writes.setdefault(name, expr)
        self.write_roots(written - managed, expr)
        self.effects.errors |= summary.errors
        return fn.returns

    def method_call(self, expr: ir.Call, func: ir.Attr) -> ir.TypeRef:
        obj_type = self.expr(func.obj, None)
        if ts.is_optional(obj_type) and obj_type.name != "None":
            self.error("E3009", f"`.{func.name}()` on a value that may be None", func.obj)
            obj_type = ts.strip_optional(obj_type)
        name = func.name
        kind = "str" if obj_type.name in ts.TEMPORAL else obj_type.name  # ISO strings
        table = {"str": bi.STR_METHODS, "list": bi.LIST_METHODS, "map": bi.MAP_METHODS, "set": bi.SET_METHODS}.get(kind)
        if kind == "any":
            for arg in expr.args:
                self.expr(arg, None)
            return ts.ANY
        if table is None or name not in table:
            where = f"{ts.show(obj_type)} has no method `{name}`"
            self.error("E3016", where, func, hint=did_you_mean(name, table or ()) if table else "")
            for arg in expr.args:
                self.expr(arg, None)
            return ts.ANY
        if expr.kwargs:
            self.error("E3006", f"`.{name}()` takes positional arguments", expr.kwargs[0])
        if name in bi.MUTATING_METHODS.get(kind, ()):
            self.touched = False
            self.target(func.obj, mutate=True) if isinstance(func.obj, ir.Name) else self.write_roots(
                self.outer(func.obj), func.obj
            )
            expr.mutates_state = self.touched
        func.ty = obj_type
        return self._method_type(expr, obj_type, name)

    def _method_type(self, expr: ir.Call, obj: ir.TypeRef, name: str) -> ir.TypeRef:
        args = expr.args
        S, N, B = ts.STR, ts.INT, ts.BOOL
        if obj.name in ("str", *ts.TEMPORAL):
            signatures: dict[str, tuple[list[ir.TypeRef], ir.TypeRef, int]] = {
                "lower": ([], S, 0),
                "upper": ([], S, 0),
                "strip": ([], S, 0),
                "title": ([], S, 0),
                "isdigit": ([], B, 0),
                "startswith": ([S], B, 1),
                "endswith": ([S], B, 1),
                "find": ([S], N, 1),
                "count": ([S], N, 1),
                "split": ([S], ts.list_of(S), 0),
                "join": ([ts.list_of(S)], S, 1),
                "replace": ([S, S], S, 2),
                "zfill": ([N], S, 1),
            }
        elif obj.name == "list":
            item = obj.args[0]
            signatures = {
                "append": ([item], ts.NONE, 1),
                "insert": ([N, item], ts.NONE, 2),
                "remove": ([item], ts.NONE, 1),
                "extend": ([obj], ts.NONE, 1),
                "pop": ([N], item, 0),
                "clear": ([], ts.NONE, 0),
                "index": ([item], N, 1),
                "count": ([item], N, 1),
                "copy": ([], obj, 0),
            }
        elif obj.name == "set":
            item = obj.args[0]
            signatures = {
                "add": ([item], ts.NONE, 1),
                "discard": ([item], ts.NONE, 1),
                "copy": ([], obj, 0),
            }
        else:
            key, value = obj.args
            signatures = {
                "get": ([key, value], ts.optional(value) if len(args) < 2 else value, 1),
                "keys": ([], ts.list_of(key), 0),
                "values": ([], ts.list_of(value), 0),
                "pop": ([key], ts.optional(value), 1),
                "clear": ([], ts.NONE, 0),
                "copy": ([], obj, 0),
            }
        params, result, required = signatures[name]
        if not required <= len(args) <= len(params):
            self.error(
                "E3006",
                f"`.{name}()` takes {required if required == len(params) else f'{required} to {len(params)}'} argument(s), got {len(args)}",
                expr,
            )
        for index, (param_type, arg) in enumerate(zip(params, args)):
            if index == 0 and obj.name == "map" and name in ("get", "pop"):
                self.check_key(self.expr(arg, param_type), param_type, arg)
            else:
                self.expect_assignable(self.expr(arg, param_type), param_type, arg)
        for arg in args[len(params) :]:
            self.expr(arg, None)
        return result

    # ------------------------------------------------------------------ built-in functions
    def builtin_call(self, expr: ir.Call, name: str, expected: ir.TypeRef | None) -> ir.TypeRef:
        if name in bi.EFFECTFUL_FUNCTIONS:
            if self.in_test:
                self.error("E3005", f"`{name}` changes state; tests change state only through tools", expr.func)
            else:
                self.effects.writes.setdefault(bi.EFFECTFUL_FUNCTIONS[name], expr)
                self.effects.reads.setdefault(bi.EFFECTFUL_FUNCTIONS[name], expr)
                if bi.EFFECTFUL_FUNCTIONS[name] == bi.RNG_STATE and bi.RANDOM_SEED in self.a.state:
                    self.effects.reads.setdefault(bi.RANDOM_SEED, expr)
        if name in bi.CLOCK_READERS or name == "audit":
            self.effects.reads.setdefault(bi.CLOCK, expr)
        handler = getattr(self, f"builtin_{name}", None)
        if handler is not None:
            result: ir.TypeRef = handler(expr, expected)
            return result
        return self._simple_builtin(expr, name)

    _SIMPLE: dict[str, tuple[tuple[str, ...], str]] = {
        "now": ((), "datetime"),
        "today": ((), "date"),
        "add_seconds": (("datetime", "int"), "datetime"),
        "add_minutes": (("datetime", "int"), "datetime"),
        "add_hours": (("datetime", "int"), "datetime"),
        "seconds_between": (("datetime", "datetime"), "int"),
        "date_of": (("datetime",), "date"),
        "time_of": (("datetime",), "time"),
        "at": (("date", "time"), "datetime"),
        "next_id": (("str",), "int"),
        "random_int": (("int", "int"), "int"),
        "advance_clock": (("int",), "None"),
        "matches": (("str", "str"), "bool"),
        "stable_hash": (("str",), "int"),
        "valid_regex": (("str",), "bool"),
        "search": (("str", "str"), "bool"),
        "type_of": (("json",), "str"),
    }

    _JSON_VIEWS: dict[str, ir.TypeRef] = {
        "as_number": ts.optional(ts.FLOAT),
        "as_text": ts.optional(ts.STR),
        "as_bool": ts.optional(ts.BOOL),
        "as_list": ts.optional(ts.list_of(ts.JSON)),
        "as_map": ts.optional(ts.map_of(ts.STR, ts.JSON)),
    }

    _PARSERS: dict[str, ir.TypeRef] = {
        "parse_int": ts.optional(ts.INT),
        "parse_number": ts.optional(ts.FLOAT),
        "parse_json": ts.optional(ts.JSON),
    }

    def _simple_builtin(self, expr: ir.Call, name: str) -> ir.TypeRef:
        if name in self._JSON_VIEWS:
            self._positional(expr, name, [ts.JSON], 1)
            return self._JSON_VIEWS[name]
        if name in self._PARSERS:
            self._positional(expr, name, [ts.STR], 1)
            return self._PARSERS[name]
        params, result = self._SIMPLE[name]
        self._positional(expr, name, [ts.t(p) for p in params], len(params))
        if name == "matches" and len(expr.args) == 2:
            pattern = expr.args[1]
            # A literal pattern is checked now; one computed at run time that is not a
            # valid regular expression simply matches nothing.
            if isinstance(pattern, ir.Const) and isinstance(pattern.value, str):
                try:
                    re.compile(pattern.value)
                except re.error as exc:
                    self.error("E3019", f"invalid pattern: {exc}", pattern)
        return ts.t(result)

    def _positional(self, expr: ir.Call, name: str, params: list[ir.TypeRef], required: int) -> list[ir.TypeRef]:
        args = expr.args
        if expr.kwargs:
            self.error("E3006", f"`{name}` takes positional arguments", expr.kwargs[0])
        if not required <= len(args) <= len(params):
            count = str(required) if required == len(params) else f"{required} to {len(params)}"
            self.error(
                "E3006", f"`{name}` takes {count} argument{'s' if len(params) != 1 else ''}, got {len(args)}", expr
            )
        types: list[ir.TypeRef] = []
        for param, arg in zip(params, args):
            ty = self.expr(arg, param)
            self.expect_assignable(ty, param, arg)
            types.append(ty)
        for arg in args[len(params) :]:
            self.expr(arg, None)
        return types

    def _one_arg(self, expr: ir.Call, name: str, expected: ir.TypeRef | None = None) -> ir.TypeRef:
        if len(expr.args) != 1 or expr.kwargs:
            self.error("E3006", f"`{name}` takes one argument", expr)
            for arg in expr.args:
                self.expr(arg, None)
            return ts.ANY
        ty = self.expr(expr.args[0], expected)
        if ts.is_optional(ty) and ty.name != "None":
            self.error("E3009", f"`{name}` of a value that may be None", expr.args[0])
            return ts.strip_optional(ty)
        return ty

    def builtin_len(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "len")
        if ty.name not in ("str", "list", "map", "set", "json", "any"):
            self.error("E3004", f"`len` of {ts.show(ty)}", expr.args[0])
        return ts.INT

    def builtin_sum(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "sum")
        if ty.name == "list" and ty.args[0].name in ("int", "float"):
            return ty.args[0]
        if ty.name != "any":
            self.error("E3004", f"`sum` needs a list of numbers, not {ts.show(ty)}", expr)
        return ts.ANY

    def _key_lambda(self, expr: ir.Call, item: ir.TypeRef) -> None:
        for kw in expr.kwargs:
            if kw.name == "key":
                if not isinstance(kw.value, ir.Lambda) or len(kw.value.params) != 1:
                    self.error("E3006", "`key=` takes a lambda of one parameter: `key=lambda t: t.field`", kw.value)
                    continue
                lam = kw.value
                self.push()
                self.scopes[-1][lam.params[0]] = _Local(item, "loop")
                key_type = self.expr(lam.body, None)
                self.pop()
                if not _orderable(key_type, key_type):
                    self.error("E3004", f"cannot order by {ts.show(key_type)}", lam.body)
                lam.ty = key_type
            elif kw.name == "reverse":
                self.expect_assignable(self.expr(kw.value, ts.BOOL), ts.BOOL, kw.value)
            else:
                self.error("E3006", f"unknown argument `{kw.name}`", kw)

    def builtin_sorted(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        if len(expr.args) != 1:
            self.error("E3006", "`sorted` takes one list (and key=, reverse=)", expr)
            return ts.ANY
        ty = self.expr(expr.args[0], expected)
        from_set = ty.name == "set"
        if from_set:  # the way to list a set's items in a fixed order (enums by their names)
            ty = ts.list_of(ty.args[0])
        if ty.name != "list":
            if ty.name != "any":
                self.error("E3004", f"`sorted` needs a list or set, not {ts.show(ty)}", expr.args[0])
            return ts.ANY
        has_key = any(kw.name == "key" for kw in expr.kwargs)
        if not has_key and not from_set and not _orderable(ty.args[0], ty.args[0]):
            self.error("E3004", f"cannot order {ts.show(ty.args[0])} values; give `key=lambda x: x.field`", expr)
        self._key_lambda(expr, ty.args[0])
        return ty

    def _min_max(self, expr: ir.Call, name: str) -> ir.TypeRef:
        if len(expr.args) == 1:
            ty = self.expr(expr.args[0], None)
            if ty.name != "list":
                if ty.name != "any":
                    self.error("E3004", f"`{name}` of one argument needs a list, not {ts.show(ty)}", expr.args[0])
                return ts.ANY
            item = ty.args[0]
            if not any(kw.name == "key" for kw in expr.kwargs) and not _orderable(item, item):
                self.error("E3004", f"cannot order {ts.show(item)} values", expr)
            self._key_lambda(expr, item)
            return item
        if len(expr.args) < 2:
            self.error("E3006", f"`{name}` takes a list, or two or more values", expr)
            return ts.ANY
        types = [self.expr(a, None) for a in expr.args]
        result = types[0]
        for ty, arg in zip(types[1:], expr.args[1:]):
            joined = ts.join(result, ty)
            if joined is None or not _orderable(joined, joined):
                self.error("E3004", f"`{name}` of {ts.show(result)} and {ts.show(ty)}", arg)
                return ts.ANY
            result = joined
        if expr.kwargs:
            self.error("E3006", f"`{name}` of several values takes no named arguments", expr.kwargs[0])
        return result

    def builtin_min(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        return self._min_max(expr, "min")

    def builtin_max(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        return self._min_max(expr, "max")

    def builtin_reversed(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "reversed", expected)
        if ty.name not in ("list", "any"):
            self.error("E3004", f"`reversed` needs a list, not {ts.show(ty)}", expr)
        return ty

    def builtin_unique(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "unique", expected)
        if ty.name not in ("list", "any"):
            self.error("E3004", f"`unique` needs a list, not {ts.show(ty)}", expr)
        return ty

    def builtin_copy(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        return self._one_arg(expr, "copy", expected)

    def builtin_abs(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "abs")
        if not ts.is_numeric(ty):
            self.error("E3004", f"`abs` of {ts.show(ty)}", expr)
        return ty

    def builtin_round(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        types = self._positional(expr, "round", [ts.FLOAT, ts.INT], 1)
        return ts.FLOAT if len(types) == 2 else ts.INT

    def builtin_str(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "str")
        if ty.name in ("list", "map", "set") or ty.name in self.a.records:
            self.error("E3004", f"`str` shows scalars, not {ts.show(ty)}", expr)
        return ts.STR

    def builtin_int(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "int")
        if ty.name not in ("int", "float", "bool", "any", "json"):
            self.error(
                "E3004",
                f"`int` converts numbers and bools, not {ts.show(ty)}",
                expr,
                hint="parse text with a check first; `int` of text can fail",
            )
        return ts.INT

    def builtin_float(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "float")
        if ty.name not in ("int", "float", "any", "json"):
            self.error("E3004", f"`float` converts numbers, not {ts.show(ty)}", expr)
        return ts.FLOAT

    def builtin_range(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        self._positional(expr, "range", [ts.INT, ts.INT], 1)
        return ts.list_of(ts.INT)

    def builtin_any(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        self.expect_assignable(self._one_arg(expr, "any", ts.list_of(ts.BOOL)), ts.list_of(ts.BOOL), expr)
        return ts.BOOL

    def builtin_all(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        self.expect_assignable(self._one_arg(expr, "all", ts.list_of(ts.BOOL)), ts.list_of(ts.BOOL), expr)
        return ts.BOOL

    def builtin_keys(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "keys")
        if ty.name == "map":
            return ts.list_of(ty.args[0])
        if ty.name != "any":
            self.error("E3004", f"`keys` needs a map, not {ts.show(ty)}", expr)
        return ts.ANY

    def builtin_values(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "values")
        if ty.name == "map":
            return ts.list_of(ty.args[1])
        if ty.name != "any":
            self.error("E3004", f"`values` needs a map, not {ts.show(ty)}", expr)
        return ts.ANY

    def _temporal_shift(self, expr: ir.Call, name: str) -> ir.TypeRef:
        if len(expr.args) != 2:
            self.error("E3006", f"`{name}` takes a date or datetime and a number", expr)
            return ts.ANY
        ty = self.expr(expr.args[0], None)
        self.expect_assignable(self.expr(expr.args[1], ts.INT), ts.INT, expr.args[1])
        if ty.name not in ("date", "datetime"):
            self.error("E3001", f"`{name}` needs a date or datetime, not {ts.show(ty)}", expr.args[0])
            return ts.ANY
        return ty

    def builtin_add_days(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        return self._temporal_shift(expr, "add_days")

    def builtin_days_between(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        types = [self.expr(a, None) for a in expr.args]
        if len(types) != 2 or any(t.name not in ("date", "datetime") for t in types):
            self.error("E3006", "`days_between` takes two dates or datetimes", expr)
        return ts.INT

    def builtin_weekday(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "weekday")
        if ty.name not in ("date", "datetime", "any"):
            self.error("E3001", f"`weekday` needs a date or datetime, not {ts.show(ty)}", expr)
        return ts.INT

    def builtin_audit(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        if len(expr.args) != 1:
            self.error("E3006", "`audit` takes an action and optional entity= and detail=", expr)
        for arg in expr.args[:1]:
            self.expect_assignable(self.expr(arg, ts.STR), ts.STR, arg)
        for kw in expr.kwargs:
            if kw.name not in ("entity", "detail"):
                self.error("E3006", f"`audit` has no argument `{kw.name}`", kw, hint="entity= and detail=")
            self.expect_assignable(self.expr(kw.value, ts.STR), ts.STR, kw.value)
        return ts.NONE

    def builtin_random_choice(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        ty = self._one_arg(expr, "random_choice")
        if ty.name == "list":
            return ty.args[0]
        if ty.name != "any":
            self.error("E3004", f"`random_choice` needs a list, not {ts.show(ty)}", expr)
        return ts.ANY


def _narrowing(cond: ir.Expr, positive: bool, checker: _BodyChecker) -> dict[str, ir.TypeRef]:
    """Locals known not to be None when `cond` is true (positive) or false."""
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return _narrowing(cond.operand, not positive, checker)
    if isinstance(cond, ir.Binary):
        if (
            cond.op in ("is not", "!=", "is", "==")
            and isinstance(cond.right, ir.Const)
            and cond.right.value is None
            and isinstance(cond.left, ir.Name)
        ):
            not_none = cond.op in ("is not", "!=")
            if not_none == positive:
                local = checker.lookup(cond.left.id)
                if local is not None and ts.is_optional(local.type):
                    return {cond.left.id: ts.strip_optional(local.type)}
            return {}
        if cond.op == "and" and positive:
            return {**_narrowing(cond.left, True, checker), **_narrowing(cond.right, True, checker)}
        if cond.op == "or" and not positive:
            return {**_narrowing(cond.left, False, checker), **_narrowing(cond.right, False, checker)}
    return {}


def _has_effect(expr: ir.Expr, fns: dict[str, ir.FnDecl]) -> bool:
    """Calls worth making as statements: helpers, mutating methods, effectful built-ins."""
    if not isinstance(expr, ir.Call):
        return False
    func = expr.func
    if isinstance(func, ir.Name):
        return func.id in fns or func.id in bi.EFFECTFUL_FUNCTIONS or func.ref == "tool"
    if isinstance(func, ir.Attr):
        kind = ts.strip_optional(func.ty).name if func.ty else "any"
        return func.name in bi.MUTATING_METHODS.get(kind, ()) or kind == "any"
    return False


def _is_state_attr(expr: ir.Expr) -> bool:
    """The explicit `state.field` form."""
    return (
        isinstance(expr, ir.Attr)
        and isinstance(expr.obj, ir.Name)
        and expr.obj.id == "state"
        and expr.obj.ref == "state"
    )


def _orderable(a: ir.TypeRef, b: ir.TypeRef) -> bool:
    if a.name == "any" or b.name == "any":
        return True
    if ts.is_numeric(a) and ts.is_numeric(b):
        return True
    return a.name == b.name and a.name in ("str", *ts.TEMPORAL)


def _is_empty_literal(expr: ir.Expr) -> bool:
    return (isinstance(expr, ir.ListLit) and not expr.items) or (isinstance(expr, ir.MapLit) and not expr.entries)


def _children(expr: ir.Expr) -> list[ir.Expr]:
    found: list[ir.Expr] = []
    for name in type(expr).model_fields:
        if name == "ty":
            continue
        value = getattr(expr, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, ir.ExprBase):
                found.append(item)  # type: ignore[arg-type]
            elif isinstance(item, (ir.MapEntry, ir.Keyword)):
                found.extend(_children(item))  # type: ignore[arg-type]
    return found


def _argument_for(call: ir.Call, fn: ir.FnDecl, index: int) -> ir.Expr | None:
    if index < len(call.args):
        return call.args[index]
    name = fn.params[index].name if index < len(fn.params) else ""
    return next((kw.value for kw in call.kwargs if kw.name == name), None)
