"""What a value means, so that data edges join values of one entity, not fields that
merely share a name and type (a guest's name is not a clerk's).

A meaning is derived from what a spec already declares and does (docs/graph.md, "What a
value means"):

- `field:Record.name`, the value of that record field. A returned record's field has it;
  so has a tool parameter the tool stores into that field (`Guest(name=name)`,
  `state.tickets[id].title = title`) or looks its value up among (`o.customer ==
  customer` over `orders`); storing into a record that only a result carries (a view
  such as `FileContent(path=path)`) gives the parameter no `field:` meaning;
- `key:CONTAINER`, a key of that state or world container: a parameter the tool looks
  up by (`tickets[ticket_id]`), and a record field built from such a parameter
  (`StageRun(pipeline_id=pipeline_id)` in a tool that requires `pipeline_id in pipelines`);
- `source:NAME`, a value of that value source (`person_name`, a pool such as
  `ticket_titles`). A record field has its declared source (`field F from S`), else the
  source of the parameters stored into it when they all agree (`create_calendar`'s
  `owner from person_name` gives `Calendar.owner` its meaning); a parameter has its own
  (`param P from S`), else that of a field it is stored into or looked up among.

Two values mean the same when their meanings meet. Across environments only sources
count, and only those that name one thing: a format of `NAMING_FORMATS`, or a pool both
specs declare under one name with values in common. Ids and keys mean something only in
their own environment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from compiler import ir
from compiler.ir import typesys as ts
from compiler.ir.tree import walk
from compiler.library.sources import FORMATS, NAMING_FORMATS


class Lookup(Protocol):
    """Where a parameter's values are looked up (compiler/synth/graph.py's `ParamDomain`)."""

    @property
    def container(self) -> str: ...
    @property
    def field(self) -> str: ...
    @property
    def values(self) -> bool: ...
    @property
    def of_param(self) -> str: ...


FIELD = "field:"
SOURCE = "source:"
KEY = "key:"


@dataclass(frozen=True)
class Flow:
    """A value of `record.field` that environment X's tools return, taken by parameter
    `param` of Y's tool `tool`, both meaning `meaning` (a `source:` meaning)."""

    meaning: str
    record: str
    field: str
    tool: str
    param: str

    def __str__(self) -> str:
        return f"{self.record}.{self.field} -> {self.tool}({self.param}) as {self.meaning.removeprefix(SOURCE)}"


@dataclass(frozen=True)
class Meanings:
    """The meanings of one environment's record fields and tool parameters."""

    env: str
    fields: dict[tuple[str, str], frozenset[str]]
    """(record, field) -> meanings."""
    params: dict[tuple[str, str], frozenset[str]]
    """(tool, parameter) -> meanings; empty when nothing says what a parameter holds."""
    owned: frozenset[tuple[str, str]]
    """Parameters that are an attribute of the entity the tool stores them into, never
    looked up (a guest's `name` in `check_in`): no other record's field of that name is one."""
    pools: dict[str, frozenset[str]]
    """The spec's pools, as text values (to tell whether two specs' pools are one)."""

    def field(self, record: str, name: str) -> frozenset[str]:
        return self.fields.get((record, name), frozenset())

    def param(self, tool: str, name: str) -> frozenset[str]:
        return self.params.get((tool, name), frozenset())


def record_types(ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl]) -> set[str]:
    """Records a value of this type is or holds (one level of containers)."""
    base = ts.strip_optional(ty)
    if base.name in records:
        return {base.name}
    if base.name in ("list", "set"):
        return record_types(base.args[0], records)
    if base.name == "map":
        return record_types(base.args[1], records)
    return set()


Domains = Mapping[str, Mapping[str, Sequence[Lookup]]]
"""Per tool, per parameter, where its values are looked up (compiler/synth/graph.py)."""


def meanings(env: ir.Environment, domains: Domains) -> Meanings:
    """Every record field's and tool parameter's meanings."""
    stored = {tool.name: stored_fields(tool, env) for tool in env.tools}
    keys = {
        (tool, param): frozenset(f"{KEY}{d.container}" for d in found if not (d.field or d.values or d.of_param))
        for tool, by_param in domains.items()
        for param, found in by_param.items()
    }
    fields = _field_meanings(env, stored, keys)
    params, owned = _param_meanings(env, domains, stored, keys, fields)
    pools = {name: frozenset(str(v) for v in values) for name, values in env.value_pools.items()}
    return Meanings(env.header.name, fields, params, owned, pools)


Stored = Mapping[str, Mapping[str, set[tuple[str, str]]]]
"""Per tool, per parameter, the record fields it is stored into (`stored_fields`)."""
Keys = Mapping[tuple[str, str], frozenset[str]]
"""Per (tool, parameter), the `key:` meanings of the containers it is looked up by."""


def _field_meanings(env: ir.Environment, stored: Stored, keys: Keys) -> dict[tuple[str, str], frozenset[str]]:
    """Each field: its identity, its source, and the keys of the parameters built into it."""
    sources = _field_sources(env, stored)
    fields = {
        (r.name, f.name): frozenset({f"{FIELD}{r.name}.{f.name}"} | _source_of(sources.get((r.name, f.name))))
        for r in env.records
        for f in r.fields
    }
    for tool in env.tools:
        for name, targets in stored[tool.name].items():
            for target in targets:
                fields[target] |= keys.get((tool.name, name), frozenset())
    return fields


def _param_meanings(
    env: ir.Environment,
    domains: Domains,
    stored: Stored,
    keys: Keys,
    fields: Mapping[tuple[str, str], frozenset[str]],
) -> tuple[dict[tuple[str, str], frozenset[str]], frozenset[tuple[str, str]]]:
    """Each parameter: its source, its keys, and what it takes of the fields it is stored
    into or looked up among; and the parameters that are an entity's own attribute."""
    containers = _container_records(env, {r.name: r for r in env.records})
    entities = set(containers.values())
    params: dict[tuple[str, str], frozenset[str]] = {}
    owned: set[tuple[str, str]] = set()
    for tool in env.tools:
        for param in tool.params:
            found = set(_source_of(param.values_from)) | keys.get((tool.name, param.name), frozenset())
            sourced = param.values_from is not None
            looked_up = domains.get(tool.name, {}).get(param.name, [])
            for record, name in stored[tool.name].get(param.name, set()):
                found |= _attribute(fields[(record, name)], record in entities, sourced)
                if record in entities and not looked_up:
                    owned.add((tool.name, param.name))
            for domain in looked_up:
                record = containers.get(domain.container, "")
                if domain.field and (record, domain.field) in fields:
                    found |= _attribute(fields[(record, domain.field)], True, sourced)
            params[(tool.name, param.name)] = frozenset(found)
    return params, frozenset(owned)


def _attribute(senses: frozenset[str], entity: bool, sourced: bool) -> frozenset[str]:
    """What a parameter stored into (or looked up among) a field takes of the field's
    meanings: its source unless it declares its own (a joiner's `full_name from
    new_joiners` is not any staff name though it becomes one), and its identity when the
    record is an entity of the state (a view only a result carries says nothing); not
    the keys other tools store there."""
    return frozenset(s for s in senses if (s.startswith(SOURCE) and not sourced) or (entity and s.startswith(FIELD)))


def _source_of(source: ir.SourceRef | None) -> frozenset[str]:
    return frozenset({f"{SOURCE}{source.name}"}) if source is not None else frozenset()


def _container_records(env: ir.Environment, records: Mapping[str, ir.RecordDecl]) -> dict[str, str]:
    """The record each state or world container holds (`tickets` -> `Ticket`)."""
    found: dict[str, str] = {}
    for name, ty in [*((f.name, f.type) for f in env.state), *((w.name, w.type) for w in env.world)]:
        base = ts.strip_optional(ty)
        if base.name in ("map", "list") and base.args:
            inner = ts.strip_optional(base.args[-1]).name
            if inner in records:
                found[name] = inner
    return found


def stored_fields(tool: ir.ToolDecl, env: ir.Environment) -> dict[str, set[tuple[str, str]]]:
    """Per parameter, the record fields the tool stores it into: a record built with it
    (`Guest(name=name)`, by keyword or position) or an assignment to a field of a record
    held in a state container (`state.tickets[id].title = title`)."""
    records = {r.name: r for r in env.records}
    containers = _container_records(env, records)
    params = {p.name for p in tool.params}
    found: dict[str, set[tuple[str, str]]] = {}
    for node in walk(tool.body):
        if isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id in records:
            record = records[node.func.id]
            pairs = [*zip((f.name for f in record.fields), node.args), *((k.name, k.value) for k in node.kwargs)]
            for name, value in pairs:
                if isinstance(value, ir.Name) and value.ref == "param" and value.id in params:
                    found.setdefault(value.id, set()).add((record.name, name))
        elif isinstance(node, ir.Assign) and isinstance(node.target, ir.Attr):
            value, target = node.value, node.target
            holder = target.obj.obj if isinstance(target.obj, ir.Index) else None
            container = _state_name(holder)
            if isinstance(value, ir.Name) and value.ref == "param" and container in containers:
                found.setdefault(value.id, set()).add((containers[container], target.name))
    return found


def _state_name(expr: ir.Expr | None) -> str:
    if isinstance(expr, ir.Name) and expr.ref == "state":
        return expr.id
    if isinstance(expr, ir.Attr) and isinstance(expr.obj, ir.Name) and expr.obj.id == "state":
        return expr.name
    return ""


def _field_sources(
    env: ir.Environment, stored: Mapping[str, Mapping[str, set[tuple[str, str]]]]
) -> dict[tuple[str, str], ir.SourceRef]:
    """Each record field's source: declared, else that of the parameters stored into it
    when they name one source (two different ones say nothing)."""
    declared = {(r.name, f.name): f.values_from for r in env.records for f in r.fields if f.values_from is not None}
    derived: dict[tuple[str, str], set[str]] = {}
    by_name: dict[str, ir.SourceRef] = {}
    for tool in env.tools:
        for param in tool.params:
            for key in stored[tool.name].get(param.name, set()):
                name = param.values_from.name if param.values_from is not None else ""
                derived.setdefault(key, set()).add(name)
                if param.values_from is not None:
                    by_name[name] = param.values_from
    found: dict[tuple[str, str], ir.SourceRef] = {}
    for key, names in derived.items():
        if len(names) == 1 and "" not in names:
            found[key] = by_name[next(iter(names))]
    return {**found, **declared}


def sources_of(senses: frozenset[str]) -> frozenset[str]:
    return frozenset(s for s in senses if s.startswith(SOURCE))


def same_meaning(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a & b)


def fed_by(m: Meanings, record: str, field: str, tool: str, param: str) -> bool:
    """Whether a returned field feeds a parameter of the same environment: their meanings
    meet, or they share a name and nothing tells them apart (the parameter is no attribute
    of an entity of its own, and their sources, if both have one, are the same)."""
    given, wanted = m.field(record, field), m.param(tool, param)
    if same_meaning(given, wanted):
        return True
    if param != field or (tool, param) in m.owned:
        return False
    return not (sources_of(given) and sources_of(wanted))


def carried_meanings(meanings_: frozenset[str], here: Meanings, there: Meanings) -> frozenset[str]:
    """The meanings that hold between two environments: a naming format, or a pool both
    declare under one name with values in common."""
    kept: set[str] = set()
    for meaning in meanings_:
        if not meaning.startswith(SOURCE):
            continue
        name = meaning.removeprefix(SOURCE)
        if name in FORMATS and name in NAMING_FORMATS:
            kept.add(meaning)
        elif name in here.pools and name in there.pools and here.pools[name] & there.pools[name]:
            kept.add(meaning)
    return frozenset(kept)


def cross_flows(x: ir.Environment, y: ir.Environment, mx: Meanings, my: Meanings) -> list[Flow]:
    """The values X's tools return (fields of the records they return) that Y's tools
    take, meaning the same thing in both (see the module doc), sorted."""
    records = {r.name: r for r in x.records}
    produced = {
        (record, f.name, ts.show(ts.strip_optional(f.type)), m)
        for tool in x.tools
        for record in sorted(record_types(tool.returns, records))
        for f in records[record].fields
        for m in carried_meanings(mx.field(record, f.name), mx, my)
    }
    flows: set[Flow] = set()
    for tool in y.tools:
        for param in tool.params:
            wanted = carried_meanings(my.param(tool.name, param.name), my, mx)
            shown = ts.show(ts.strip_optional(param.type))
            for record, name, ty, m in produced:
                if m in wanted and ty == shown:
                    flows.add(Flow(m, record, name, tool.name, param.name))
    return sorted(flows, key=str)


def returned_records(
    value: Any, ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(record, item) of each record a result holds, by its declared type (one level of
    containers, as `record_types`; at most 20 items of a list or map)."""
    base = ts.strip_optional(ty)
    if base.name in records and isinstance(value, dict):
        yield base.name, value
    elif base.name in ("list", "set") and isinstance(value, list):
        for item in value[:20]:
            yield from returned_records(item, base.args[0], records)
    elif base.name == "map" and isinstance(value, dict):
        for item in list(value.values())[:20]:
            yield from returned_records(item, base.args[1], records)


def returned_values(value: Any, ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl]) -> Iterator[tuple[str, str, Any]]:
    """(record, field, value) of each scalar field of the records a result holds."""
    for record, item in returned_records(value, ty, records):
        for f in records[record].fields:
            field_value = item.get(f.name)
            if isinstance(field_value, (str, int, float)) and not isinstance(field_value, bool):
                yield record, f.name, field_value
