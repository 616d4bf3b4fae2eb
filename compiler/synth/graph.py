"""Stage 8a, graph: the tool dependency graph of an environment and the graph across
environments, computed from the analysed IR (no model guesses).

A tool edge A -> B says "calling A first makes B possible or meaningful":

- `state`: A writes a state field B reads (the inferred effect sets, built-in fields aside);
- `data`: a value A returns can be an argument of B: an id or key of a state field B looks
  its argument up in (`ticket_id` keying `tickets`), or a returned record field of the
  type of one of B's parameters that means the same (compiler/synth/meaning.py: not a
  field that merely shares its name, as a clerk's `name` does a guest's);
- `precondition`: a `require` guard of B (or of a helper it calls) reads a field A writes.

A fourth kind, `llm`, is not derived here: edges a model proposed (`compiler/synth/model_edges.py`
asks for them, validates them and locks them in envc.lock) are merged in through
`tool_graph(..., extra=...)`, only where no derived edge exists, and marked
`proposed_by: "llm"` so they are never mistaken for inferred ones.

Each edge has its kinds, the fields or parameters that justify it, and a weight, the sum
of the weights of its kinds (`[tool.envc.graph]` in pyproject.toml, see docs/graph.md).
The facts a sampler needs about each parameter (which state or world field its values
come from) are computed here too, as `ParamDomain`s; and the data flows between
environments (`env_flows`), the only edges a chain over several environments follows.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import networkx as nx

from compiler import ir
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.ir.tree import is_state_attr, walk
from compiler.library import builtins as bi
from compiler.synth import meaning
from compiler.synth.meaning import record_types

EDGE_KINDS = ("state", "data", "precondition")
"""The kinds derived from the IR, in the order an edge lists them."""
LLM_KIND = "llm"
"""The kind of an edge a model proposed (never derived; see `ProposedEdge`)."""
PROPOSED_BY = "proposed_by"
"""The edge attribute that marks a proposed edge (`source` is node-link's endpoint key)."""


class GraphConfigError(ValueError):
    """`[tool.envc.graph]` holds something that is not a known non-negative weight."""


@dataclass(frozen=True)
class GraphWeights:
    """Edge weights; `[tool.envc.graph]` in pyproject.toml overrides any of them."""

    state: float = 1.0
    """Per tool edge with a state flow (A writes what B reads)."""
    data: float = 2.0
    """Per tool edge with a data flow (A returns what B takes)."""
    precondition: float = 3.0
    """Per tool edge where A makes a guard of B pass."""
    shared_domain: float = 2.0
    """Env graph: per `domains` entry two environments share."""
    shared_vocabulary: float = 4.0
    """Env graph: times the Jaccard overlap of their vocabularies (names with types)."""
    produced_consumed: float = 1.0
    """Env graph: per value one environment's tools return that the other's take."""
    same_archetype: float = 1.0
    """Env graph: both built on the same archetype."""
    llm: float = 2.0
    """Per tool edge a model proposed (`envc graph --llm`), where no derived edge is."""

    @classmethod
    def from_table(cls, table: dict[str, object]) -> GraphWeights:
        known = {f.name for f in fields(cls)}
        values: dict[str, float] = {}
        for key, value in table.items():
            if key not in known:
                raise GraphConfigError(f"[tool.envc.graph] has no setting `{key}`; known: {', '.join(sorted(known))}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise GraphConfigError(f"[tool.envc.graph] {key} must be a non-negative number, not {value!r}")
            values[key] = float(value)
        return cls(**values)


def load_weights(root: Path) -> GraphWeights:
    """The weights of the project at `root` (its pyproject.toml), defaults where unset."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return GraphWeights()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise GraphConfigError(f"cannot read {pyproject}: {exc}") from exc
    table = data.get("tool", {}).get("envc", {}).get("graph", {})
    if not isinstance(table, dict):
        raise GraphConfigError("[tool.envc.graph] must be a table")
    return GraphWeights.from_table(table)


# =========================================================================== facts per tool


@dataclass(frozen=True)
class ParamDomain:
    """Where a parameter's valid values live: the keys of a state or world map, the items
    of a list, or the `field` of the records in a state list (`owner` is "state" or
    "world"); `of_param`: the value is `container[other parameter]` (a password of a user)."""

    owner: str
    container: str
    field: str = ""
    of_param: str = ""
    values: bool = False
    """The values of a map rather than its keys."""


@dataclass
class ToolFacts:
    name: str
    kind: str  # "read" or "write"
    params: list[tuple[str, str]]
    reads: set[str]
    writes: set[str]
    guards: set[str]
    """State fields a `require` of the tool (or of a helper it calls) reads."""
    clears: set[str]
    """State fields the tool only ever sets to None (`logout` clears `current_user`): it
    cannot make a guard on them pass."""
    new_keys: set[str]
    """Parameters the tool stores new entries under (`calendars[calendar_id] = ...`)."""
    domains: dict[str, list[ParamDomain]]
    produces: set[str]
    """Domains (`container` or `container.field`) whose keys the tool's result holds."""
    returned_fields: set[tuple[str, str, str]]
    """(record, name, type) of the fields of records the tool returns."""
    written_records: set[str]
    """Records held by the state containers the tool writes (the entities it makes or edits)."""


def tool_kind(tool: ir.ToolDecl) -> str:
    """Read or write, as tools.json's `modifies_state` says."""
    return "write" if tool.writes else "read"


def tool_facts(env: ir.Environment) -> dict[str, ToolFacts]:
    helpers = {fn.name: fn for fn in env.fns}
    helper_domains = _helper_domains(env, helpers)
    helper_guards = _helper_guards(helpers)
    facts: dict[str, ToolFacts] = {}
    for tool in env.tools:
        facts[tool.name] = ToolFacts(
            name=tool.name,
            kind=tool_kind(tool),
            params=[(p.name, ts.show(p.type)) for p in tool.params],
            reads=set(tool.reads) - set(bi.BUILTIN_STATE),
            writes=set(tool.writes) - set(bi.BUILTIN_STATE),
            guards=_guards(tool.body, helper_guards) - set(bi.BUILTIN_STATE),
            clears=_clears(tool),
            new_keys=_new_keys(tool),
            domains=_param_domains(tool, env, helpers, helper_domains),
            produces=_produces(tool, env),
            returned_fields=_returned_fields(tool.returns, env),
            written_records=_written_records(tool, env),
        )
    return facts


def _state_field(expr: ir.Expr, env_state: set[str], world: set[str]) -> tuple[str, str] | None:
    """("state" | "world", name) when `expr` is a state or world field itself."""
    if isinstance(expr, ir.Name):
        if expr.ref == "state" and expr.id in env_state:
            return ("state", expr.id)
        if expr.ref == "world" and expr.id in world:
            return ("world", expr.id)
    if is_state_attr(expr):
        assert isinstance(expr, ir.Attr)
        return ("state", expr.name)
    return None


def _param_name(expr: ir.Expr | None, params: set[str]) -> str | None:
    if isinstance(expr, ir.Name) and expr.ref == "param" and expr.id in params:
        return expr.id
    return None


Source = tuple[str, str, bool]
"""(owner "state" | "world", field, values of a map rather than its keys)."""


def _direct_domains(
    body: Sequence[ir.Stmt], params: set[str], state: set[str], world: set[str]
) -> dict[str, list[ParamDomain]]:
    """Parameters used as a key or item of a state or world field in `body`."""
    finder = _DomainFinder(params, state, world)
    for node in walk(list(body)):
        finder.visit(node)
    return finder.found


class _DomainFinder:
    """One walk over a body: locals and loop variables bound to state or world fields,
    and the uses of parameters as their keys, items or fields."""

    def __init__(self, params: set[str], state: set[str], world: set[str]) -> None:
        self.params, self.state, self.world = params, state, world
        self.found: dict[str, list[ParamDomain]] = {}
        self.aliases: dict[str, Source] = {}  # local -> what it is bound to
        self.items: dict[str, Source] = {}  # loop variable -> what it walks over

    def add(self, param: str | None, domain: ParamDomain) -> None:
        if param is not None and domain not in self.found.setdefault(param, []):
            self.found[param].append(domain)

    def container(self, expr: ir.Expr) -> Source | None:
        """A state or world field, its keys(...) or values(...), or a local bound to one."""
        owner = _state_field(expr, self.state, self.world)
        if owner is not None:
            return (*owner, False)
        if isinstance(expr, ir.Name) and expr.ref == "local":
            return self.aliases.get(expr.id)
        if isinstance(expr, ir.Call) and expr.args and isinstance(expr.func, ir.Name) and expr.func.ref == "builtin":
            inner = self.container(expr.args[0]) if expr.func.id in ("keys", "values", "sorted", "copy") else None
            return (inner[0], inner[1], expr.func.id == "values") if inner else None
        if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Attr) and expr.func.name in ("keys", "values"):
            inner = self.container(expr.func.obj)
            return (inner[0], inner[1], expr.func.name == "values") if inner else None
        return None

    def visit(self, node: object) -> None:
        if isinstance(node, ir.Let):
            bound = self.container(node.value)
            if bound is not None:
                self.aliases[node.name] = bound
        if isinstance(node, (ir.For, ir.Comprehension)):
            walked = self.container(node.iter)
            if walked is not None and len(node.targets) == 1:
                self.items[node.targets[0]] = walked
            elif walked is not None and len(node.targets) == 2:
                self.items[node.targets[1]] = (walked[0], walked[1], True)
        if isinstance(node, ir.Index):
            owner = _state_field(node.obj, self.state, self.world)
            if owner is not None:
                self.add(_param_name(node.index, self.params), ParamDomain(*owner))
        elif isinstance(node, ir.Binary) and node.op in ("in", "not in"):
            walked = self.container(node.right)
            if walked is not None:
                self.add(_param_name(node.left, self.params), ParamDomain(walked[0], walked[1], values=walked[2]))
        elif isinstance(node, ir.Binary) and node.op == "==":
            for side, other in ((node.left, node.right), (node.right, node.left)):
                param = _param_name(side, self.params)
                if param is not None:
                    self.compared(param, other)
        elif isinstance(node, ir.Call) and isinstance(node.func, ir.Attr) and node.func.name in ("get", "pop"):
            owner = _state_field(node.func.obj, self.state, self.world)
            if owner is not None and node.args:
                self.add(_param_name(node.args[0], self.params), ParamDomain(*owner))

    def compared(self, param: str, other: ir.Expr) -> None:
        """`param == other`: an item a loop walks, a field of one, or `F[other_param]`."""
        if isinstance(other, ir.Attr) and isinstance(other.obj, ir.Name) and other.obj.id in self.items:
            walks, name, values = self.items[other.obj.id]
            self.add(param, ParamDomain(walks, name, field=other.name, values=values))
        if (
            isinstance(other, ir.Index)
            and isinstance(other.obj, ir.Name)
            and other.obj.id in self.items
            and isinstance(other.index, ir.Const)
            and isinstance(other.index.value, str)
        ):  # `t["id"] == ticket_id` over json items
            walks, name, values = self.items[other.obj.id]
            self.add(param, ParamDomain(walks, name, field=other.index.value, values=values))
        if isinstance(other, ir.Name) and other.id in self.items:
            walks, name, values = self.items[other.id]
            self.add(param, ParamDomain(walks, name, values=values))
        if isinstance(other, ir.Index):
            owner = _state_field(other.obj, self.state, self.world)
            key = _param_name(other.index, self.params)
            if owner is not None and key is not None and key != param:
                self.add(param, ParamDomain(*owner, of_param=key))


def _calls(body: Sequence[ir.Stmt], helpers: dict[str, ir.FnDecl]) -> Iterator[tuple[ir.Call, ir.FnDecl]]:
    for node in walk(list(body)):
        if isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id in helpers:
            yield node, helpers[node.func.id]


def _arguments(call: ir.Call, fn: ir.FnDecl) -> Iterator[tuple[str, ir.Expr]]:
    """(helper parameter, argument) pairs of a helper call."""
    for param, arg in zip(fn.params, call.args):
        yield param.name, arg
    names = {p.name for p in fn.params}
    for kw in call.kwargs:
        if kw.name in names:
            yield kw.name, kw.value


def _helper_domains(env: ir.Environment, helpers: dict[str, ir.FnDecl]) -> dict[str, dict[str, list[ParamDomain]]]:
    """Each helper's parameter domains, through the helpers it calls: a domain travels
    along a path of calls without repeating a helper (cycles included), so as many
    rounds as there are helpers reach the fixed point."""
    state, world = {f.name for f in env.state}, {w.name for w in env.world}
    domains = {
        name: _direct_domains(fn.body, {p.name for p in fn.params}, state, world) for name, fn in helpers.items()
    }
    for _ in range(len(helpers)):
        changed = False
        for name, fn in helpers.items():
            params = {p.name for p in fn.params}
            for call, callee in _calls(fn.body, helpers):
                for callee_param, arg in _arguments(call, callee):
                    param = _param_name(arg, params)
                    for domain in domains[callee.name].get(callee_param, []) if param else []:
                        assert param is not None
                        if domain not in domains[name].setdefault(param, []):
                            domains[name][param].append(domain)
                            changed = True
        if not changed:
            break
    return domains


def _param_domains(
    tool: ir.ToolDecl,
    env: ir.Environment,
    helpers: dict[str, ir.FnDecl],
    helper_domains: dict[str, dict[str, list[ParamDomain]]],
) -> dict[str, list[ParamDomain]]:
    params = {p.name for p in tool.params}
    state, world = {f.name for f in env.state}, {w.name for w in env.world}
    domains = _direct_domains(tool.body, params, state, world)
    for call, fn in _calls(tool.body, helpers):
        for helper_param, arg in _arguments(call, fn):
            param = _param_name(arg, params)
            for domain in helper_domains[fn.name].get(helper_param, []) if param else []:
                assert param is not None
                if domain not in domains.setdefault(param, []):
                    domains[param].append(domain)
    return {name: domains[name] for name in sorted(domains)}


def _guard_conditions(body: Sequence[ir.Stmt]) -> Iterator[ir.Expr]:
    """Conditions that end the call with an error: `require c` and `if c: fail ...`,
    except those that ask for something to be absent (`require id not in calendars`):
    nothing has to be called first to make them pass."""
    for node in walk(list(body)):
        if isinstance(node, ir.Require) and not _asks_absence(node.cond, True):
            yield node.cond
        elif isinstance(node, ir.If):
            for branch in node.branches:
                if branch.body and isinstance(branch.body[0], ir.Fail) and not _asks_absence(branch.cond, False):
                    yield branch.cond


def _asks_absence(cond: ir.Expr, required: bool) -> bool:
    """`x not in F` as what must hold (`required`), or `x in F` as what fails."""
    return isinstance(cond, ir.Binary) and cond.op == ("not in" if required else "in")


def _fields_in(expr: ir.Expr, locals_: dict[str, set[str]]) -> set[str]:
    """State fields an expression reads, directly or through locals bound to them."""
    found: set[str] = set()
    for node in walk(expr):
        if isinstance(node, ir.Name) and node.ref == "state":
            found.add(node.id)
        elif isinstance(node, ir.Name) and node.ref == "local":
            found |= locals_.get(node.id, set())
        elif isinstance(node, ir.Attr) and is_state_attr(node):
            found.add(node.name)
    return found


def _local_sources(body: Sequence[ir.Stmt]) -> dict[str, set[str]]:
    """Each local's state fields: what its `let` and later assignments read."""
    sources: dict[str, set[str]] = {}
    for node in walk(list(body)):
        if isinstance(node, ir.Let):
            sources.setdefault(node.name, set()).update(_fields_in(node.value, sources))
        elif isinstance(node, ir.Assign) and isinstance(node.target, ir.Name) and node.target.ref == "local":
            sources.setdefault(node.target.id, set()).update(_fields_in(node.value, sources))
    return sources


def _guards(body: Sequence[ir.Stmt], helper_guards: dict[str, set[str]]) -> set[str]:
    found: set[str] = set()
    sources = _local_sources(body)
    for cond in _guard_conditions(body):
        found |= _fields_in(cond, sources)
    for node in walk(list(body)):
        if isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.ref == "fn":
            found |= helper_guards.get(node.func.id, set())
    return found


def _helper_guards(helpers: dict[str, ir.FnDecl]) -> dict[str, set[str]]:
    """Each helper's guard fields, its callees' included: computed once, callees first,
    then again for the helpers of call cycles (language.md §12), whose first result
    missed what a helper of the cycle still being computed guards, until none grows."""
    guards: dict[str, set[str]] = {}
    callees = {name: {n.func.id for n in walk(fn.body) if _calls_helper(n, helpers)} for name, fn in helpers.items()}

    def of(name: str) -> set[str]:
        if name not in guards:
            guards[name] = set()  # in a cycle, the rounds below complete it
            guards[name] = _guards(helpers[name].body, {callee: of(callee) for callee in callees[name]})
        return guards[name]

    for name in helpers:
        of(name)
    cyclic = [name for name, fn in helpers.items() if fn.recursion]
    changed = bool(cyclic)
    while changed:
        changed = False
        for name in cyclic:
            found = _guards(helpers[name].body, {callee: guards[callee] for callee in callees[name]})
            if found != guards[name]:
                guards[name], changed = found, True
    return guards


def _calls_helper(node: object, helpers: dict[str, ir.FnDecl]) -> bool:
    return isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id in helpers


def _clears(tool: ir.ToolDecl) -> set[str]:
    """Written fields whose every assignment in the body is `field = None`."""
    assigned: dict[str, set[bool]] = {}
    for node in walk(tool.body):
        if isinstance(node, ir.Assign) and node.op == "=":
            target = node.target
            name = target.id if isinstance(target, ir.Name) and target.ref == "state" else None
            if is_state_attr(target):
                assert isinstance(target, ir.Attr)
                name = target.name
            if name is not None:
                assigned.setdefault(name, set()).add(isinstance(node.value, ir.Const) and node.value.value is None)
    return {name for name, nones in assigned.items() if nones == {True} and name in tool.writes}


def _new_keys(tool: ir.ToolDecl) -> set[str]:
    """Parameters used as the key of an assignment into a state map."""
    params = {p.name for p in tool.params}
    found: set[str] = set()
    for node in walk(tool.body):
        if isinstance(node, ir.Assign) and isinstance(node.target, ir.Index):
            key = _param_name(node.target.index, params)
            if key is not None and (isinstance(node.target.obj, ir.Name) and node.target.obj.ref == "state"):
                found.add(key)
    return found


def _returned_fields(ty: ir.TypeRef, env: ir.Environment) -> set[tuple[str, str, str]]:
    records = {r.name: r for r in env.records}
    return {(name, f.name, ts.show(f.type)) for name in record_types(ty, records) for f in records[name].fields}


def _written_records(tool: ir.ToolDecl, env: ir.Environment) -> set[str]:
    records = {r.name: r for r in env.records}
    return {name for f in env.state if f.name in tool.writes for name in record_types(f.type, records)}


def _produces(tool: ir.ToolDecl, env: ir.Environment) -> set[str]:
    """Domains whose keys the result holds: the records of a state container (their
    key, their fields), or a new key of a container the tool writes (`create` returns
    the new id)."""
    records = {r.name: r for r in env.records}
    returned = record_types(tool.returns, records)
    result = ts.strip_optional(tool.returns)
    found: set[str] = set()
    for state_field in env.state:
        ty = state_field.type
        if ty.name == "map":
            key, value = ty.args
            holds = value.name in returned and any(ts.same(f.type, key) for f in records[value.name].fields)
            if holds or (state_field.name in tool.writes and ts.same(result, key)):
                found.add(state_field.name)
        elif ty.name == "list" and ty.args[0].name in records:
            record = records[ty.args[0].name]
            for record_field in record.fields:
                new_key = state_field.name in tool.writes and ts.same(result, record_field.type)
                if record.name in returned or new_key:
                    found.add(f"{state_field.name}.{record_field.name}")
    return found


# =========================================================================== graphs


@dataclass(frozen=True)
class ProposedEdge:
    """A dependency a model proposed: calling `source` first makes `target` possible or
    meaningful, for the `reason` it gives (what the static analysis cannot see)."""

    source: str
    target: str
    reason: str


def proposed_edge_problem(graph: nx.DiGraph[str], edge: ProposedEdge) -> str:
    """Why `edge` cannot join `graph` ("" when it can): both tools exist, it is no self
    loop, no edge joins them yet, and it gives a reason."""
    tools = sorted(graph.nodes)
    for end in (edge.source, edge.target):
        if end not in graph:
            hint = did_you_mean(end, tools)
            return f"there is no tool `{end}`" + (f" ({hint})" if hint else f"; the tools: {', '.join(tools)}")
    if edge.source == edge.target:
        return f"`{edge.source}` -> `{edge.source}` is a self loop"
    if graph.has_edge(edge.source, edge.target):
        kinds = ", ".join(graph.edges[edge.source, edge.target]["kinds"])
        return f"`{edge.source}` -> `{edge.target}` is an edge already ({kinds})"
    if not edge.reason.strip():
        return f"`{edge.source}` -> `{edge.target}` gives no reason"
    return ""


def tool_graph(
    env: ir.Environment, weights: GraphWeights | None = None, extra: Sequence[ProposedEdge] = ()
) -> nx.DiGraph[str]:
    """The tool dependency graph of one environment (nodes: tools; edges: see module doc),
    with the `extra` edges a model proposed merged in (ValueError for one that
    `proposed_edge_problem` refuses: validate them first, as compiler/synth/model_edges.py does)."""
    weights = weights or GraphWeights()
    facts = tool_facts(env)
    graph: nx.DiGraph[str] = nx.DiGraph(name=env.header.name)
    for tool in env.tools:
        fact = facts[tool.name]
        graph.add_node(
            tool.name,
            env=env.header.name,
            kind=fact.kind,
            params=[{"name": n, "type": t} for n, t in fact.params],
            reads=sorted(fact.reads),
            writes=sorted(fact.writes),
        )
    meanings = meaning.meanings(env, {name: fact.domains for name, fact in facts.items()})
    for source in env.tools:
        for target in env.tools:
            if source.name != target.name:
                _add_tool_edge(graph, facts[source.name], facts[target.name], weights, meanings)
    for edge in extra:
        problem = proposed_edge_problem(graph, edge)
        if problem:
            raise ValueError(f"proposed edge refused: {problem}")
        graph.add_edge(
            edge.source,
            edge.target,
            kinds=[LLM_KIND],
            via={LLM_KIND: [edge.reason.strip()]},
            weight=round(weights.llm, 6),
            **{PROPOSED_BY: LLM_KIND},
        )
    return graph


def _add_tool_edge(
    graph: nx.DiGraph[str], a: ToolFacts, b: ToolFacts, weights: GraphWeights, meanings: meaning.Meanings
) -> None:
    via: dict[str, list[str]] = {}
    state = sorted(a.writes & b.reads)
    if state:
        via["state"] = state
    data = sorted(
        {f"{param}<-{domain_key(d)}" for param, ds in b.domains.items() for d in ds if domain_key(d) in a.produces}
        | {
            f"{param}<-{record}.{name}"
            for record, name, ty in a.returned_fields
            for param, param_ty in b.params
            # not an entity's own fields copied, nor a name the new entry will be stored under
            if ty == param_ty
            and record not in b.written_records
            and param not in b.new_keys
            and meaning.fed_by(meanings, record, name, b.name, param)
        }
    )
    if data:
        via["data"] = data
    guards = sorted((a.writes - a.clears) & b.guards)
    if guards:
        via["precondition"] = guards
    if via:
        kinds = [kind for kind in EDGE_KINDS if kind in via]
        weight = round(sum(getattr(weights, kind) for kind in kinds), 6)
        graph.add_edge(a.name, b.name, kinds=kinds, via=via, weight=weight)


def domain_key(domain: ParamDomain) -> str:
    return f"{domain.container}.{domain.field}" if domain.field else domain.container


# --------------------------------------------------------------------------- env graph


def _word(name: str, ty: ir.TypeRef) -> str:
    """`name: type`, None-ness aside (`trigger: optional[str]` and `trigger: str` are one word)."""
    return f"{name}: {ts.show(ts.strip_optional(ty))}"


def vocabulary(env: ir.Environment) -> set[str]:
    """`name: type` of every record field, state field and tool parameter (the words an
    environment's values are described in; ids and built-ins aside)."""
    words = {_word(f.name, f.type) for r in env.records if r.name != "AuditEntry" for f in r.fields}
    words |= {_word(f.name, f.type) for f in env.state if f.name not in bi.BUILTIN_STATE}
    words |= {_word(p.name, p.type) for t in env.tools for p in t.params}
    return {w for w in words if not w.split(":")[0].endswith("id")}


def env_flows(envs: Iterable[ir.Environment]) -> dict[tuple[str, str], list[meaning.Flow]]:
    """Per ordered pair of environments, the values X's tools return that Y's tools take
    with the same meaning (meaning.py: a naming format or a shared pool); pairs without
    any are left out. The sampler's multi-environment chains follow these."""
    ordered = sorted(envs, key=lambda e: e.header.name)
    meanings = {e.header.name: meaning.meanings(e, {n: f.domains for n, f in tool_facts(e).items()}) for e in ordered}
    found: dict[tuple[str, str], list[meaning.Flow]] = {}
    for x in ordered:
        for y in ordered:
            if x.header.name != y.header.name:
                flows = meaning.cross_flows(x, y, meanings[x.header.name], meanings[y.header.name])
                if flows:
                    found[(x.header.name, y.header.name)] = flows
    return found


def env_graph(envs: Iterable[ir.Environment], weights: GraphWeights | None = None) -> nx.DiGraph[str]:
    """Environments as nodes; an edge X -> Y weighted by shared domains, shared
    vocabulary, values X's tools return that Y's take with the same meaning (`flows`),
    and a shared archetype."""
    weights = weights or GraphWeights()
    ordered = sorted(envs, key=lambda e: e.header.name)
    graph: nx.DiGraph[str] = nx.DiGraph(name="environments")
    for env in ordered:
        graph.add_node(
            env.header.name,
            title=env.header.title,
            archetype=env.header.archetype,
            domains=list(env.header.domains),
            tools=len(env.tools),
        )
    words = {e.header.name: vocabulary(e) for e in ordered}
    flows = env_flows(ordered)
    for x in ordered:
        for y in ordered:
            if x.header.name != y.header.name:
                _add_env_edge(graph, x, y, words, flows.get((x.header.name, y.header.name), []), weights)
    return graph


def _add_env_edge(
    graph: nx.DiGraph[str],
    x: ir.Environment,
    y: ir.Environment,
    words: dict[str, set[str]],
    flows: list[meaning.Flow],
    weights: GraphWeights,
) -> None:
    shared_domains = sorted(set(x.header.domains) & set(y.header.domains))
    wx, wy = words[x.header.name], words[y.header.name]
    overlap = len(wx & wy) / len(wx | wy) if wx | wy else 0.0
    same = bool(x.header.archetype) and x.header.archetype == y.header.archetype and x.header.archetype != "custom"
    weight = (
        weights.shared_domain * len(shared_domains)
        + weights.shared_vocabulary * overlap
        + weights.produced_consumed * len({f.meaning for f in flows})
        + weights.same_archetype * same
    )
    if weight > 0:
        graph.add_edge(
            x.header.name,
            y.header.name,
            weight=round(weight, 6),
            domains=shared_domains,
            vocabulary=round(overlap, 6),
            flows=[str(f) for f in flows],
            same_archetype=same,
        )


def is_data_edge(data: dict[str, Any]) -> bool:
    """An env edge a value crosses (`flows`): the only kind a multi-environment chain follows."""
    return bool(data.get("flows"))


# --------------------------------------------------------------------------- output


def node_link(graph: nx.DiGraph[str]) -> dict[str, object]:
    """networkx node-link data with sorted nodes and edges (byte-stable JSON)."""
    data: dict[str, Any] = nx.node_link_data(graph, edges="edges")
    data["nodes"] = sorted(data["nodes"], key=lambda n: str(n["id"]))
    data["edges"] = sorted(data["edges"], key=lambda e: (str(e["source"]), str(e["target"])))
    return data


@dataclass
class GraphDocument:
    """What `envc graph` writes: one tool graph per environment, and the env graph."""

    tools: dict[str, nx.DiGraph[str]] = field(default_factory=dict)
    environments: nx.DiGraph[str] | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"tool_graphs": {name: node_link(g) for name, g in sorted(self.tools.items())}}
        if self.environments is not None:
            out["env_graph"] = node_link(self.environments)
        return out
