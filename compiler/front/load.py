"""Stage 2, load: spec files to one merged `ir.Module`, with every file the front end reads.

Reads the spec, resolves `extends` to a prototype (beside the spec, in its `prototypes/`
folder, or shipped with envc), parses and merges it (`override`, `drop`, `rename`), and
reads the world data JSON files the merged module names. All file I/O of the front end
happens here, so the analysis passes work on data alone. Problems are diagnostics.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from compiler import ir
from compiler.diagnostics import Diagnostic, did_you_mean
from compiler.front.cache import parse_cached
from compiler.ir.tree import walk
from compiler.library import builtins as bi
from compiler.project import PROTOTYPES_FOLDER, specs_folder


@dataclass(frozen=True)
class DataFile:
    """A data file (`from "FILE"` of a world field, a state field or a scenario) as
    loading found it: its JSON value, or why there is none."""

    data: Any = None
    problem: Literal["", "outside", "unreadable", "not_json", "not_loaded"] = ""
    source: str = ""
    detail: str = ""  # the OS's or the JSON parser's words

    def message(self, what: str) -> str:
        """The E0003 message, naming the file by its role (`what`: "world file", ...)."""
        if self.problem == "outside":
            return f"{what} `{self.source}` must be a path inside the spec's folder"
        if self.problem == "unreadable":
            return f"cannot read {what} `{self.source}`: {self.detail}"
        if self.problem == "not_json":
            return f"{what} `{self.source}` is not valid JSON: {self.detail}"
        return f"{what} `{self.source}` was not loaded"


@dataclass
class Loaded:
    """A spec with its prototypes merged in, and everything read to get there."""

    module: ir.Module | None
    diagnostics: list[Diagnostic]
    sources: dict[str, str] = field(default_factory=dict)
    data_files: dict[str, DataFile] = field(default_factory=dict)
    """Keyed by `data_file_key(declaring spec, source)`."""
    absent: set[str] = field(default_factory=set)
    """Places looked at for a prototype and found empty: a file appearing there would be
    loaded instead (`prototype_candidates`), so the result depends on their absence."""


Rewrite = Callable[[str, str], str]
"""`(file, text) -> text`: applied to each spec file read, before it is parsed. The LLM
layer (`compiler/llm/fill.py`) uses it to put locked fills in place of `llm` bodies,
in the spec and in any prototype it extends; `sources` then holds the rewritten text."""


def load_file(path: Path, rewrite: Rewrite | None = None) -> Loaded:
    """Read, parse and merge the spec at `path` and what it extends."""
    sources: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    absent: set[str] = set()
    module = _load(path, sources, diagnostics, absent, (), rewrite)
    return _with_data_files(Loaded(module, diagnostics, sources, absent=absent))


def load_source(text: str, path: str) -> Loaded:
    """Spec text as if it were the file `path` (prototypes and world files resolve beside it)."""
    sources: dict[str, str] = {path: text}
    diagnostics: list[Diagnostic] = []
    absent: set[str] = set()
    module = _parse_and_extend(text, Path(path), sources, diagnostics, absent, ())
    return _with_data_files(Loaded(module, diagnostics, sources, absent=absent))


def data_file_key(spec_file: str, source: str) -> str:
    """Where a `from "FILE"` points: relative to the spec that declares the field or scenario."""
    return str(Path(spec_file).parent / source)


def data_sources(module: ir.Module) -> list[tuple[str, str]]:
    """`(declaring spec, source)` of every data file the module names, in declaration order:
    world fields, state fields and scenarios read `from "FILE"`."""
    found = [(decl.file, f.source) for decl in module.world for f in decl.fields if f.source]
    found += [(decl.file, f.source) for decl in module.state for f in decl.fields if f.source]
    found += [(scenario.file, scenario.source) for scenario in module.scenarios if scenario.source]
    found += [(s.file, item.source) for s in module.scenarios for item in s.items if item.source]
    return found + [(pool.file, pool.source) for pool in module.values if pool.source]


def _with_data_files(loaded: Loaded) -> Loaded:
    if loaded.module is not None:
        for spec_file, source in data_sources(loaded.module):
            key = data_file_key(spec_file, source)
            if key not in loaded.data_files:
                loaded.data_files[key] = _read_data_file(Path(spec_file).parent, source)
    return loaded


def _read_data_file(base: Path, source: str) -> DataFile:
    relative = Path(source)
    if relative.is_absolute() or ".." in relative.parts:
        return DataFile(problem="outside", source=source)
    try:
        return DataFile(json.loads((base / relative).read_text(encoding="utf-8")), source=source)
    except OSError as exc:
        return DataFile(problem="unreadable", source=source, detail=str(exc.strerror or exc))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested past Python's limit
        return DataFile(problem="not_json", source=source, detail=str(exc))


def _load(
    path: Path,
    sources: dict[str, str],
    diagnostics: list[Diagnostic],
    absent: set[str],
    chain: tuple[str, ...],
    rewrite: Rewrite | None = None,
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
    if rewrite is not None:
        text = rewrite(key, text)
    sources[key] = text
    return _parse_and_extend(text, path, sources, diagnostics, absent, chain, rewrite)


def _parse_and_extend(
    text: str,
    path: Path,
    sources: dict[str, str],
    diagnostics: list[Diagnostic],
    absent: set[str],
    chain: tuple[str, ...],
    rewrite: Rewrite | None = None,
) -> ir.Module | None:
    result = parse_cached(text, str(path), remember=bool(chain))  # a prototype's parse is reused
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
        overrides += [d for d in module.on_load if d.override]
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
        _apply_describes(module, module, (), diagnostics)
        return module
    header = module.header
    candidates = prototype_candidates(header.extends, path)
    parent_path = _first_file(candidates)
    absent.update(str(candidate) for candidate in candidates[: candidates.index(parent_path) if parent_path else None])
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
    parent = _load(parent_path, sources, diagnostics, absent, (*chain, str(path.resolve())), rewrite)
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
    package = Path(__file__).resolve().parent.parent
    inside = package / PROTOTYPES_FOLDER
    return inside if inside.is_dir() else specs_folder(package.parent) / PROTOTYPES_FOLDER


def _find_prototype(name: str, spec: Path) -> Path | None:
    return _first_file(prototype_candidates(name, spec))


def prototype_candidates(name: str, spec: Path) -> list[Path]:
    """Where `extends NAME` is looked for, in order: beside the spec, in its `prototypes/`
    folder, among the shipped prototypes. A name that climbs out (`..`) or is absolute
    has none."""
    if ".." in Path(name).parts or Path(name).is_absolute():
        return []
    return [spec.parent / name, spec.parent / "prototypes" / f"{name}.envspec", prototypes_dir() / f"{name}.envspec"]


def _first_file(candidates: list[Path]) -> Path | None:
    return next((candidate for candidate in candidates if candidate.is_file()), None)


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
    nodes = _PrototypeNodes.of(parent) if child.renames else None
    for rename in child.renames:
        assert nodes is not None
        _apply_rename(parent, rename, diagnostics, nodes)
    dropped: dict[str, set[str]] = {}
    for drop in child.drops:
        pools: dict[str, Sequence[Any]] = {
            "tool": parent.tools,
            "fn": parent.fns,
            "scenario": parent.scenarios,
            "test": parent.tests,
            "task": parent.tasks,
            "family": parent.families,
        }
        _in_prototype(pools[drop.what], drop.name, drop, "drop", diagnostics)
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
    merged.families = _merge_families(parent.families, child.families, dropped.get("family", set()))
    merged.state = [*parent.state, *child.state]
    merged.world = [*parent.world, *child.world]
    merged.on_load = _merge_on_load(parent.on_load, child.on_load, diagnostics)
    merged.load_options = [*parent.load_options, *child.load_options]
    merged.values = [*parent.values, *child.values]
    merged.personas = [*parent.personas, *child.personas]
    _apply_describes(merged, child, parent.tools, diagnostics)
    return merged


def _merge_on_load(
    parent: list[ir.OnLoadDecl], child: list[ir.OnLoadDecl], diagnostics: list[Diagnostic]
) -> list[ir.OnLoadDecl]:
    """A spec's `on load:` replaces its prototype's only as `override on load:`, like a
    tool (a second block in one spec is the analyser's E2001)."""
    if not child:
        return list(parent)
    first = child[0]
    if parent and not first.override:
        diagnostics.append(
            Diagnostic(
                "E2011",
                "the prototype already has an `on load:` block",
                first.file,
                first.line,
                first.col,
                hint="write `override on load:` to replace it (call a shared `fn` to keep its steps)",
            )
        )
    elif first.override and not parent:
        diagnostics.append(
            Diagnostic(
                "E2012", "`override on load:`: the prototype has no `on load:` block", first.file, first.line, first.col
            )
        )
    return list(child)


@dataclass
class _Callable:
    """The nodes of one tool, helper, test or task that renames look at."""

    decl: Any
    binders: list[Any]  # its `Param`s and `Let`s, which may shadow a state field
    names: list[ir.Name]
    attrs: list[ir.Attr]


@dataclass
class _PrototypeNodes:
    """The prototype's nodes a rename may change, found in one walk: renames change
    names, never the tree's shape, so each rename visits these lists instead of walking
    the prototype again (a spec with many renames was quadratic)."""

    decls: list[Any]
    names: list[ir.Name]
    types: list[ir.TypeRef]
    uses: list[ir.UseScenario]
    tasks: list[ir.TaskDecl | ir.FamilyDecl]  # what names a scenario
    calls: list[ir.Call]
    callables: list[_Callable]

    @classmethod
    def of(cls, parent: ir.Module) -> _PrototypeNodes:
        found = cls([], [], [], [], [], [], [])
        callables = {
            id(decl)
            for decl in [*parent.tools, *parent.fns, *parent.tests, *parent.tasks, *parent.families, *parent.on_load]
        }
        for name in type(parent).model_fields:
            value = getattr(parent, name)
            for item in value if isinstance(value, list) else [value]:
                nodes = list(walk(item))
                found._sort(nodes)
                if id(item) in callables:
                    found.callables.append(
                        _Callable(
                            item,
                            [n for n in nodes if isinstance(n, (ir.Param, ir.Let))],
                            [n for n in nodes if isinstance(n, ir.Name)],
                            [n for n in nodes if isinstance(n, ir.Attr)],
                        )
                    )
        return found

    def _sort(self, nodes: list[Any]) -> None:
        buckets: dict[type, list[Any]] = {
            ir.Name: self.names,
            ir.TypeRef: self.types,
            ir.UseScenario: self.uses,
            ir.TaskDecl: self.tasks,
            ir.FamilyDecl: self.tasks,
            ir.Call: self.calls,
        }
        for node in nodes:
            if isinstance(node, (ir.EnumDecl, ir.RecordDecl, ir.ToolDecl, ir.ScenarioDecl)):
                self.decls.append(node)
            bucket = buckets.get(type(node))
            if bucket is not None:
                bucket.append(node)


def _apply_describes(
    module: ir.Module, spec: ir.Module, inherited: Sequence[ir.ToolDecl], diagnostics: list[Diagnostic]
) -> None:
    """The `describe tool` and `describe record` blocks of `spec` applied to `module` (the
    spec itself, or its merge with the prototype, whose own blocks are in place already):
    each replaces what it gives of a tool's or record's words and leaves the rest."""
    described: set[tuple[str, str]] = set()
    describes: list[ir.DescribeDecl | ir.DescribeRecordDecl] = [*spec.describes, *spec.describe_records]
    for describe in describes:
        what = "tool" if isinstance(describe, ir.DescribeDecl) else "record"
        if (what, describe.name) in described:
            diagnostics.append(
                Diagnostic(
                    "E2001", f"{what} `{describe.name}` is described twice", describe.file, describe.line, describe.col
                )
            )
            continue
        described.add((what, describe.name))
        if isinstance(describe, ir.DescribeDecl):
            _apply_describe(module.tools, inherited, describe, bool(spec.header and spec.header.extends), diagnostics)
        else:
            _apply_describe_record(module.records, describe, diagnostics)


def _apply_describe(
    tools: list[ir.ToolDecl],
    inherited: Sequence[ir.ToolDecl],
    describe: ir.DescribeDecl,
    extends: bool,
    diagnostics: list[Diagnostic],
) -> None:
    """`describe tool NAME:` replaces the doc, param docs and sources, and (when it has any)
    the intents of a tool (the spec's own, or its prototype's after renames); the body and
    everything else stay."""
    index = next((i for i, tool in enumerate(tools) if tool.name == describe.name), None)
    if index is None:
        if any(tool.name == describe.name for tool in inherited):
            return  # dropped: nothing left to describe
        _nothing_to_describe(describe, "tool", [t.name for t in [*tools, *inherited]], extends, diagnostics)
        return
    tool = tools[index].model_copy(deep=True)
    tool.doc = describe.doc or tool.doc
    names = [param.name for param in tool.params]
    for name in describe.param_lines:
        if name not in names:
            diagnostics.append(
                Diagnostic(
                    "E2023",
                    f"`param {name}` names no parameter of tool `{tool.name}` (parameters: {', '.join(names) or 'none'})",
                    describe.file,
                    describe.param_lines.get(name, describe.line),
                    describe.param_cols.get(name, describe.col),
                )
            )
            continue
        param = tool.params[names.index(name)]
        param.doc = describe.param_docs.get(name, param.doc)
        source = describe.param_sources.get(name)
        if source is not None:
            param.values_from = source.model_copy(update={"file": describe.file})
    if describe.intents:
        for intent, place in zip(describe.intents, describe.intent_places, strict=False):
            _check_intent(intent, names, tool.name, place, describe.file, diagnostics)
        tool.intents = list(describe.intents)
    tools[index] = tool


def _check_intent(
    intent: str, params: list[str], tool: str, place: ir.Node, file: str, diagnostics: list[Diagnostic]
) -> None:
    """Each `{slot}` of an intent names a parameter of the tool; `{{` and `}}` are braces."""
    for problem in intent_problems(intent, params):
        diagnostics.append(
            Diagnostic(
                "E2036",
                f"intent of `{tool}`: {problem}",
                file,
                place.line,
                place.col,
                hint=f"a slot names a parameter: {', '.join('{' + p + '}' for p in params) or 'this tool has none'}",
            )
        )


def intent_slots(intent: str) -> Iterator[tuple[int, int]]:
    """Where each `{slot}` of an intent template is (start and end, braces included), past
    the `{{` and `}}` that stand for braces; a `{` never closed ends the scan."""
    i = 0
    while i < len(intent):
        if intent.startswith(("{{", "}}"), i):
            i += 2
            continue
        if intent[i] == "{":
            end = intent.find("}", i)
            if end < 0:
                return
            yield i, end + 1
            i = end
        i += 1


def rename_slot(intent: str, old: str, new: str) -> str:
    """An intent with its `{old}` slots written `{new}` (a renamed parameter)."""
    for start, end in reversed(list(intent_slots(intent))):
        if intent[start + 1 : end - 1] == old:
            intent = intent[:start] + "{" + new + "}" + intent[end:]
    return intent


def intent_problems(intent: str, params: Sequence[str]) -> list[str]:
    """What is wrong with an intent template: slots naming no parameter, stray braces."""
    problems: list[str] = []
    i = 0
    while i < len(intent):
        if intent.startswith(("{{", "}}"), i):
            i += 2
            continue
        if intent[i] == "}":
            problems.append("a single `}`; write `}}` for a brace")
        elif intent[i] == "{":
            end = intent.find("}", i)
            if end < 0:
                problems.append("a `{` is never closed")
                break
            slot = intent[i + 1 : end]
            if slot not in params:
                problems.append(f"`{{{slot}}}` names no parameter")
            i = end
        i += 1
    return problems


def _apply_describe_record(
    records: list[ir.RecordDecl], describe: ir.DescribeRecordDecl, diagnostics: list[Diagnostic]
) -> None:
    """`describe record NAME:` gives a record (the spec's or its prototype's, a union's
    member too) its noun, refers and field sources, each replacing the one before."""
    index = next((i for i, record in enumerate(records) if record.name == describe.name), None)
    if index is None:
        _nothing_to_describe(describe, "record", [r.name for r in records], False, diagnostics)
        return
    record = records[index].model_copy(deep=True)
    fields = {f.name: f for f in record.fields}
    if describe.noun_place is not None:
        record.noun = describe.noun
    for refer in describe.refers:
        if _record_field_known(refer.field, refer, record, describe.file, diagnostics):
            _check_refer(refer, describe.file, diagnostics)
            record.refers = [*(r for r in record.refers if r.field != refer.field), refer]
    for name, source in describe.field_sources.items():
        if _record_field_known(name, source, record, describe.file, diagnostics):
            fields[name].values_from = source.model_copy(update={"file": describe.file})
    records[index] = record


def _record_field_known(
    name: str, where: ir.Node, record: ir.RecordDecl, file: str, diagnostics: list[Diagnostic]
) -> bool:
    if any(f.name == name for f in record.fields):
        return True
    known = [f.name for f in record.fields]
    diagnostics.append(
        Diagnostic(
            "E2008",
            f"record `{record.name}` has no field `{name}`",
            file,
            where.line,
            where.col,
            hint=did_you_mean(name, known) or f"its fields: {', '.join(known) or 'none'}",
        )
    )
    return False


def _check_refer(refer: ir.Refer, file: str, diagnostics: list[Diagnostic]) -> None:
    """A refer's template holds exactly one `{}`, the field's value."""
    slots = refer.template.replace("{{", "").replace("}}", "")
    if slots.count("{}") != 1 or slots.replace("{}", "").count("{") or slots.replace("{}", "").count("}"):
        diagnostics.append(
            Diagnostic(
                "E2037",
                f"`refer {refer.field}`: the template must hold exactly one `{{}}` (the field's value)",
                file,
                refer.line,
                refer.col,
                hint='e.g. `refer title "about {}"`; write `{{` and `}}` for braces',
            )
        )


def _nothing_to_describe(
    describe: ir.DescribeDecl | ir.DescribeRecordDecl,
    what: str,
    known: list[str],
    prototype: bool,
    diagnostics: list[Diagnostic],
) -> None:
    """E2012 for a tool the prototype would have (as before `describe` worked on a spec's
    own tools), E2038 otherwise."""
    where = "the spec nor its prototype has" if prototype else "the spec has"
    diagnostics.append(
        Diagnostic(
            "E2012" if prototype else "E2038",
            f"neither {where} a {what} `{describe.name}` to describe"
            if prototype
            else f"{where} no {what} `{describe.name}` to describe",
            describe.file,
            describe.line,
            describe.col,
            hint=did_you_mean(describe.name, known),
        )
    )


def _apply_rename(
    parent: ir.Module, rename: ir.RenameDecl, diagnostics: list[Diagnostic], nodes: _PrototypeNodes
) -> None:
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
    if not _in_prototype(pools[rename.what], rename.old, rename, "rename", diagnostics):
        return
    taken = [d.name for what, group in pools.items() if what != "param" for d in group]
    reason = None if rename.new in taken else _rename_reason(rename)
    if rename.new in taken or reason is not None:
        why = "it is already declared by the prototype" if rename.new in taken else reason
        diagnostics.append(
            Diagnostic(
                "E2001" if rename.new in taken else "E2014",
                f"cannot rename to `{rename.new}`: {why}",
                rename.file,
                rename.line,
                rename.col,
            )
        )
        return
    if rename.what == "state":
        _rename_state_field(parent, rename.old, rename.new, nodes)
        return
    if rename.what == "param":
        _rename_param(rename.old, rename.new, nodes)
        return
    old, new = rename.old, rename.new
    for decl in nodes.decls:
        if decl.name == old and _kind_of(decl) == rename.what:
            decl.name = new
    if rename.what == "scenario":
        for use in nodes.uses:
            if use.name == old:
                use.name = new
        for task in nodes.tasks:
            if task.scenario == old:
                task.scenario = new
        return
    for name in nodes.names:
        if name.id == old:
            name.id = new
    if rename.what in ("record", "enum"):
        for type_ in nodes.types:
            if type_.name == old:
                type_.name = new
    if rename.what == "record":  # a union's members, by name
        for decl in nodes.decls:
            if isinstance(decl, ir.RecordDecl) and old in decl.members:
                decl.members = {new if member == old else member: tag for member, tag in decl.members.items()}


_RENAME_ROLES = {"tool": "tool", "fn": "helper", "record": "record", "enum": "enum", "state": "state"}
"""What a renamed declaration is, as a role of `builtins.reserved_reason` (a parameter
has its own rules, `builtins.parameter_reason`; a scenario's name reaches no Python
identifier and gets the variable's rules, the strictest)."""


def _rename_reason(rename: ir.RenameDecl) -> str | None:
    """A parameter's new name reaches tools.json: the parameter rules apply, not a local's."""
    if rename.what == "param":
        return bi.parameter_reason(rename.new)
    return bi.reserved_reason(rename.new, _RENAME_ROLES.get(rename.what, "variable"))


def _in_prototype(
    pool: Sequence[Any],
    name: str,
    change: ir.DropDecl | ir.RenameDecl,
    verb: str,
    diagnostics: list[Diagnostic],
) -> bool:
    """Whether the prototype has what a `drop` or `rename` names (E2012 when not)."""
    if any(d.name == name for d in pool):
        return True
    what = change.what
    diagnostics.append(
        Diagnostic(
            "E2012",
            f"the prototype has no {what} `{name}` to {verb}",
            change.file,
            change.line,
            change.col,
            hint=did_you_mean(name, [d.name for d in pool]),
        )
    )
    return False


def _rename_state_field(parent: ir.Module, old: str, new: str, nodes: _PrototypeNodes) -> None:
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
        if scenario.source:  # the file's key for the field: its own name, or one renamed before
            key = next((k for k, now in scenario.renamed.items() if now == old), old)
            scenario.renamed = {**scenario.renamed, key: new}
    for callable_ in nodes.callables:
        shadowed = any(binder.name == old for binder in callable_.binders)
        for attr in ("declared_reads", "declared_writes"):
            names = getattr(callable_.decl, attr, None)
            if names:
                setattr(callable_.decl, attr, [new if n == old else n for n in names])
        if not shadowed:
            for name in callable_.names:
                if name.id == old:
                    name.id = new
        for node in callable_.attrs:
            if node.name == old and isinstance(node.obj, ir.Name) and node.obj.id == "state":
                node.name = new


def _rename_param(old: str, new: str, nodes: _PrototypeNodes) -> None:
    """A parameter renamed in every tool and helper that has it, in their bodies (a
    parameter cannot be shadowed by `let`), and in named arguments of calls to them."""
    owners: set[str] = set()
    for callable_ in nodes.callables:
        decl = callable_.decl
        if not isinstance(decl, ir.ToolDecl) or not any(p.name == old for p in decl.params):
            continue
        owners.add(decl.name)
        for param in decl.params:
            if param.name == old:
                param.name = new
        decl.intents = [rename_slot(intent, old, new) for intent in decl.intents]
        for node in walk(decl.body):  # the body only: a default or constraint is outside its scope
            if isinstance(node, ir.Name) and node.id == old:
                node.id = new
    for call in nodes.calls:
        if isinstance(call.func, ir.Name) and call.func.id in owners:
            for keyword_arg in call.kwargs:
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


def _merge_families(parent: list[ir.FamilyDecl], child: list[ir.FamilyDecl], dropped: set[str]) -> list[ir.FamilyDecl]:
    """A spec's family replaces its prototype's of the same name in its place (no
    `override` needed: a family is a whole task recipe, never patched); the others are
    appended in order. Two of one name in the spec itself are the analyser's E2001."""
    result = [f for f in parent if f.name not in dropped]
    places = {f.name: index for index, f in enumerate(result)}
    for family in child:
        index = places.pop(family.name, None)
        if index is None:
            result.append(family)
        else:
            result[index] = family
    return result


def _merge_named(
    parent: Sequence[Any], child: Sequence[Any], what: str, diagnostics: list[Diagnostic], dropped: set[str]
) -> list[Any]:
    result = [d for d in parent if d.name not in dropped]
    first: dict[str, int] = {}  # each name's first place in `result` (a spec of many declarations was quadratic)
    for place, inherited in enumerate(result):
        first.setdefault(inherited.name, place)
    for decl in child:
        index = first.get(decl.name)
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
            first.setdefault(decl.name, len(result))
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
