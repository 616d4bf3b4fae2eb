"""Stage 8b, sample: executable tool chains from weighted walks over the tool graphs.

A chain is sampled by running it: each step picks a next tool along the graph's edges
(weighted; now and then any tool), draws arguments from the live state and world (keys
and ids that exist, enum members, values meeting the constraints, values earlier calls
returned) and calls the generated environment. A step that fails is tried again with
other tools or arguments, a bounded number of times. Every kept chain runs without an
error, ends with a write tool whose call changed the state, and leaves the state
changed. Cross-environment chains first pick 2-5 environments along the env graph's data
edges, then walk inside each, each environment after the first using a value the previous
one gave (`carried`); their tools are named `env__tool`.

Chain `i` is drawn from `random.Random(f"{seed}:{i}")` alone, so the result does not
depend on the order chains are drawn in, and `workers` processes give the same bytes
as one.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import networkx as nx

from compiler import ir
from compiler.build import packages
from compiler.ir import typesys as ts
from compiler.library import builtins as bi
from compiler.lower.schema import Samples, constraint_values, param_default
from compiler.synth import graph as tool_graphs
from compiler.synth import meaning, values

if TYPE_CHECKING:
    from compiler.synth.model_edges import EdgeOptions

TELEPORT = 0.25
"""Weight of jumping to any tool, against edge weights of 1 to 6 (walks do not get stuck)."""
FLOW_BONUS = 4.0
"""Extra weight, in a chain over several environments, of the tools that return a value
the next environment takes, and of those that take the value the previous one gave."""
MIN_FLOW_WEIGHT = 0.01
"""The least weight of a flow edge when picking the next environment (weights may be 0)."""
NO_FLOW_PATH = "no environments joined by a data flow"
NOTHING_TO_CARRY = "segments share no data: the earlier one found nothing the next takes"
NOTHING_CARRIED = "segments share no data: the next one used no value of the earlier"
"""Why a multi-environment chain is rejected before or after its segments are walked."""
STEP_ATTEMPTS = 12
"""Tries per step (tool and arguments) before a chain is given up."""
ATTEMPTS_PER_CHAIN = 25
"""At most this many candidate chains are drawn per chain asked for."""
OPTIONAL_ARGUMENT = 0.5
"""Chance of passing a parameter that has a default."""
EARLIER_VALUE = 0.5
"""Chance of reusing a value an earlier call returned, where one fits."""
BUILTIN_FIELDS = frozenset(bi.BUILTIN_STATE)
SLOT_NAMES = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")
"""The parameters an intent names (`{ticket_id}`; compiler/synth/wording.py words them)."""
CROSS_SEPARATOR = "__"


class SampleError(ValueError):
    """Options or environments that cannot be sampled (a clear message for the user)."""


class NoSource(Exception):
    """A parameter that would need invented text: a `str` (or text-keyed map) with no value
    source, no key to look up and no pattern. The sampler never makes filler up; a chain
    that needs such a value is rejected ("no source for …") and the report says which."""

    def __init__(self, param: str) -> None:
        super().__init__(param)
        self.param = param


ANY_TEXT = "something"
"""What a baseline policy types where free text is asked: it sees no value source, so its
calls are valid but never carry a task's value (tasks themselves never get it)."""
ORIGINS = ("earlier", "carried", "state", "world", "refusal", "type")
"""Where an argument can come from, besides `pool:NAME` and `format:NAME` (a value source):
a value an earlier call returned, one the previous environment of the chain found or made
(`carried` along a data flow, compiler/synth/meaning.py), the state or world (a key that
exists), the values a refusal listed, or the parameter's type and constraints (numbers,
enum members, dates, flags, strings matching a pattern). None of them is invented text."""


def field_sources(model: ir.Environment) -> dict[str, ir.SourceRef]:
    """The value source of each record field name that has one, for parameters that have
    none of their own (`create_ticket(title)` and `Ticket.title`); a name two records give
    different sources has none."""
    found: dict[str, ir.SourceRef] = {}
    clashing: set[str] = set()
    for record in model.records:
        for f in record.fields:
            if f.values_from is None:
                continue
            if f.name in found and found[f.name] != f.values_from:
                clashing.add(f.name)
            found.setdefault(f.name, f.values_from)
    return {name: source for name, source in found.items() if name not in clashing}


@dataclass(frozen=True)
class SampleOptions:
    chains: int
    seed: int = 0
    envs: tuple[int, int] = (1, 1)
    """How many environments a chain spans: drawn from this range (at most 5)."""
    min_len: int = 2
    max_len: int = 5
    """Calls per environment a chain makes."""
    workers: int = 1

    def check(self, available: int) -> None:
        low, high = self.envs
        if self.chains < 1:
            raise SampleError("--chains must be at least 1")
        if not 1 <= self.min_len <= self.max_len:
            raise SampleError(f"need 1 <= --min-len <= --max-len, got {self.min_len} and {self.max_len}")
        if not 1 <= low <= high:
            raise SampleError(f"--envs must be K or A-B with 1 <= A <= B, got {low}-{high}")
        if high > 5:
            raise SampleError(f"a chain spans at most 5 environments, not {high}")
        if high > available:
            raise SampleError(f"--envs {high} needs {high} environments; {available} given")
        if self.workers < 1:
            raise SampleError("--workers must be at least 1")


# =========================================================================== environments


@dataclass
class SampleEnv:
    """An environment ready to sample from: its IR, tool graph, and generated package."""

    model: ir.Environment
    package: ModuleType
    graph: nx.DiGraph[str]
    facts: dict[str, tool_graphs.ToolFacts]
    tools: dict[str, ir.ToolDecl]
    samples: Samples
    meanings: meaning.Meanings
    """What its record fields and parameters mean (which values cross to other environments)."""

    @property
    def name(self) -> str:
        return self.model.header.name

    @property
    def is_workspace(self) -> bool:
        """A file workspace (the Claw environments): its tasks are its families' draws,
        its entities are files named by path."""
        return self.model.header.archetype == "file_workspace"

    @property
    def world(self) -> dict[str, Any]:
        world: dict[str, Any] = getattr(self.package.environment, "WORLD", {})  # none without world data
        return world

    def scenarios(self) -> list[str | None]:
        """S0 (None) and every named scenario."""
        return [None, *(s.name for s in self.model.scenarios)]


def load_env(
    env: ir.Environment,
    folder: Path,
    weights: tool_graphs.GraphWeights | None = None,
    proposed: Sequence[tool_graphs.ProposedEdge] = (),
) -> SampleEnv:
    """An environment to sample from; `proposed`: tool edges a model proposed (`--llm`)."""
    package = packages.import_package(folder, packages.folder_alias("sample", env.header.name, folder))
    facts = tool_graphs.tool_facts(env)
    return SampleEnv(
        model=env,
        package=package,
        graph=tool_graphs.tool_graph(env, weights, proposed),
        facts=facts,
        tools={t.name: t for t in env.tools},
        samples=Samples(env),
        meanings=meaning.meanings(env, {name: fact.domains for name, fact in facts.items()}),
    )


# =========================================================================== arguments


@dataclass
class Pool:
    """Scalar values earlier calls of the chain returned, by the key they came under, and
    the environment that first returned each (`env`: "" when not told)."""

    values: dict[str, list[Any]] = field(default_factory=dict)
    env_of: dict[tuple[str, Any], str] = field(default_factory=dict)
    carried: dict[str, list[tuple[Any, str, int]]] = field(default_factory=dict)
    """Per `source:` meaning, the values of record fields that calls returned, with the
    environment that returned each and how closely the chain dealt with it
    (`carried_closeness`): what a later environment of the chain may take."""

    def carry(self, env: SampleEnv, tool: ir.ToolDecl, result: Any) -> None:
        """Keep the fields of the records `result` holds that have a source meaning."""
        records = {r.name: r for r in env.model.records}
        closeness = carried_closeness(tool, result)
        for record, name, value in meaning.returned_values(result, tool.returns, records):
            for sense in sorted(meaning.sources_of(env.meanings.field(record, name))):
                bucket = self.carried.setdefault(sense, [])
                known = next((i for i, (v, e, _) in enumerate(bucket) if v == value and e == env.name), None)
                if known is None:
                    bucket.append((value, env.name, closeness))
                elif closeness < bucket[known][2]:
                    bucket[known] = (value, env.name, closeness)

    def carried_from(self, env: str, senses: frozenset[str]) -> bool:
        return any(e == env for sense in senses for _, e, _ in self.carried.get(sense, []))

    def add(self, result: Any, key: str = "", env: str = "") -> None:
        if isinstance(result, dict):
            for name, value in result.items():
                self.add(value, str(name), env)
        elif isinstance(result, list):
            for item in result[:20]:
                self.add(item, key, env)
        elif key and result is not None and isinstance(result, (str, int, float, bool)):
            bucket = self.values.setdefault(key, [])
            if result not in bucket:
                bucket.append(result)
                self.env_of[(key, result)] = env


def carried_closeness(tool: ir.ToolDecl, result: Any) -> int:
    """How closely a chain dealt with the records a call returned: 0 a write acted on
    them, 1 a read returned that one record, 2 a read listed it among others. A later
    environment takes a value of the closest kind there is, so a request goes on with
    the entity the first part changed ("file a claim for the employee whose leave you
    booked"), not with one a search happened to list."""
    if tool.writes:
        return 0
    return 2 if isinstance(result, list) else 1


def closest(values: list[tuple[Any, int]]) -> list[Any]:
    """The values of the closest kind among `(value, closeness)` pairs, in their order."""
    best = min((closeness for _, closeness in values), default=0)
    return [value for value, closeness in values if closeness == best]


def _free_text(param: ir.Param) -> bool:
    """A `str` parameter with no pattern: text a user writes, not a key or a code."""
    return ts.strip_optional(param.type).name == "str" and "pattern" not in constraint_values(param)


def _fits(value: Any, ty: ir.TypeRef, enums: dict[str, ir.EnumDecl]) -> bool:
    base = ts.strip_optional(ty)
    if base.name in enums:
        return value in enums[base.name].members
    if base.name == "int":
        return type(value) is int
    if base.name in ("float", "number"):
        return type(value) in (int, float)
    if base.name == "bool":
        return type(value) is bool
    if base.name in ("str", *ts.TEMPORAL):
        return isinstance(value, str) and (base.name == "str" or ts.valid_temporal(base.name, value))
    return base.name in ("json", "any")


class ArgumentDrawer:
    """Arguments for one call, from the live state, the world, the pool and the types."""

    def __init__(
        self, env: SampleEnv, rng: random.Random, pool: Pool, sources: bool = True, inbound: Crossing | None = None
    ) -> None:
        self.env = env
        self.rng = rng
        self.pool = pool
        self.inbound = inbound
        """The values this environment takes from the previous one of the chain, if any."""
        self.tool = ""
        self.sources = sources
        """Draw from the spec's value sources; a baseline policy does not (an agent sees the
        state, the world and results, never the pools tasks are written from)."""
        self.enums = {e.name: e for e in env.model.enums}
        self.records = {r.name: r for r in env.model.records}
        self.allowed: dict[tuple[str, str], list[Any]] = {}
        self.field_sources = field_sources(env.model)
        self.origins: dict[str, str] = {}
        """Where each argument of the last `draw` came from (see `ORIGINS`)."""

    def learn(self, tool: str, error: Any) -> None:
        """A refusal that names the field and the values it allows (as envc's domain
        errors do, for agents to correct themselves): the next draw picks from those."""
        if isinstance(error, dict) and isinstance(error.get("field"), str) and isinstance(error.get("allowed"), list):
            allowed = [v for v in error["allowed"] if _scalar(v)]
            if allowed:
                self.allowed[(tool, error["field"])] = allowed

    def draw(self, tool: ir.ToolDecl, live: Any, lenient: bool = False) -> dict[str, Any]:
        """Arguments for a call of `tool`; raises `NoSource` for a parameter that would
        need invented text (a free-text parameter without a value source), or with
        `lenient` leaves that parameter out (baseline policies make such bad calls)."""
        domains = self.env.facts[tool.name].domains
        args: dict[str, Any] = {}
        self.origins = {}
        self.tool = tool.name
        # Parameters whose value depends on another's (a user's password) come last.
        ordered = sorted(tool.params, key=lambda p: any(d.of_param for d in domains.get(p.name, [])))
        worded = {slot for intent in tool.intents for slot in SLOT_NAMES.findall(intent)}
        for param in ordered:
            has_default, _ = param_default(param)
            if has_default and (self.rng.random() >= OPTIONAL_ARGUMENT or (tool.intents and param.name not in worded)):
                continue  # an option no intent words is left at its default: nobody asked for it
            allowed = self.allowed.get((tool.name, param.name))
            if allowed:
                value = self.rng.choice(allowed)
                self.origins[param.name] = "refusal"
            else:
                try:
                    value = self.value(param, domains.get(param.name, []), live, args)
                except NoSource:
                    if not lenient:
                        raise
                    continue
            if value is not None or not has_default:
                args[param.name] = value
        return {p.name: args[p.name] for p in tool.params if p.name in args}

    def value(self, param: ir.Param, domains: list[tool_graphs.ParamDomain], live: Any, args: dict[str, Any]) -> Any:
        """One argument: a value an earlier call returned, one the state or world holds
        (a key that exists), one from the parameter's value source, or one its type and
        constraints allow; `origins` records which."""
        carried = self.carried(param)
        if carried:  # what the previous environment gave is what this one is asked to use
            return self._from("carried", self.rng.choice(carried), param)
        earlier = [v for v in self.pool.values.get(param.name, []) if _fits(v, param.type, self.enums)]
        if _free_text(param) and not domains:
            earlier = []  # a result's text under the same name (a login's "message") is no message to send
        elif _free_text(
            param
        ):  # a name another system returned is no name of this one's (a job title is no automation)
            earlier = [v for v in earlier if self.pool.env_of.get((param.name, v), self.env.name) == self.env.name]
        if earlier and self.rng.random() < EARLIER_VALUE:
            return self._from("earlier", self.rng.choice(earlier), param)
        candidates = [v for d in domains for v in self.domain_values(d, live, args) if _fits(v, param.type, self.enums)]
        if candidates:
            owner = "world" if all(d.owner == "world" for d in domains) else "state"
            return self._from(owner, self.rng.choice(candidates), param)
        source = (param.values_from or self.field_sources.get(param.name)) if self.sources else None
        if source is not None:
            kind = "pool" if source.name in self.env.model.value_pools else "format"
            return self._from(f"{kind}:{source.name}", self.from_source(source, param, live), param)
        try:
            return self._from("type", self.from_type(param.type, constraint_values(param), live), param)
        except NoSource:
            if not self.sources and _free_text(param):
                return self._from("type", ANY_TEXT, param)  # a baseline types something; it knows no pool
            raise NoSource(param.name) from None

    def carried(self, param: ir.Param) -> list[Any]:
        """Values the previous environment returned that mean what `param` does."""
        if self.inbound is None:
            return []
        senses = self.inbound.meanings & self.env.meanings.param(self.tool, param.name)
        fitting = [
            (value, closeness)
            for sense in sorted(senses)
            for value, env, closeness in self.pool.carried.get(sense, [])
            if env == self.inbound.source and _fits(value, param.type, self.enums)
        ]
        return closest(fitting)

    def from_source(self, source: ir.SourceRef, param: ir.Param, live: Any) -> Any:
        """A value of the parameter's source; for a list (or set) parameter, one to three
        different ones as its items (as many as the source has)."""
        pools, clock = self.env.model.value_pools, str(live[bi.CLOCK])
        if ts.strip_optional(param.type).name not in ("list", "set"):
            return values.draw_value(source.name, source.args, pools, self.rng, clock)
        wanted = self.rng.randint(1, 3)
        for count in range(wanted, 0, -1):
            try:
                return values.draw_distinct(source.name, source.args, pools, self.rng, clock, count)
            except values.ValueSourceError:
                continue
        return []

    def _from(self, origin: str, value: Any, param: ir.Param) -> Any:
        self.origins[param.name] = origin
        return value

    def domain_values(self, domain: tool_graphs.ParamDomain, live: Any, args: dict[str, Any]) -> list[Any]:
        source = live if domain.owner == "state" else self.env.world
        container = source.get(domain.container) if isinstance(source, dict) else None
        if domain.of_param:
            key = args.get(domain.of_param)
            found = container.get(key) if isinstance(container, dict) and isinstance(key, (str, int)) else None
            return [found] if found is not None else []
        if domain.values and not domain.field:
            values = container.values() if isinstance(container, dict) else []
            return sorted({v for v in values if _scalar(v)}, key=repr)
        if domain.field:
            items = container.values() if isinstance(container, dict) else container or []
            return sorted(
                {item[domain.field] for item in items if isinstance(item, dict) and _scalar(item.get(domain.field))},
                key=repr,
            )
        if isinstance(container, dict):
            return sorted(container, key=repr)
        if isinstance(container, (list, set)):
            return sorted({item for item in container if _scalar(item)}, key=repr)
        return []

    def from_type(self, ty: ir.TypeRef, constraints: dict[str, Any], live: Any) -> Any:
        base = ts.strip_optional(ty)
        rng = self.rng
        if base.name in self.enums:
            return rng.choice(self.enums[base.name].members)
        if base.name == "bool":
            return rng.random() < 0.5
        if base.name == "int":
            low = int(constraints.get("min", 1))
            return rng.randint(low, max(low, int(constraints.get("max", low + 9))))
        if base.name == "float" or (base.name == "number" and rng.random() < 0.5):
            floor = float(constraints.get("min", 0.0))
            return round(rng.uniform(floor, float(constraints.get("max", floor + 100.0))), 2)
        if base.name == "number":  # an int half the time: a number keeps either
            low = math.ceil(constraints.get("min", 0))
            return rng.randint(low, max(low, math.floor(constraints.get("max", low + 100))))
        if base.name == "str" and not constraints.get("pattern"):
            raise NoSource("")  # free text is never invented: it needs a value source
        if base.name in ("date", "datetime"):
            return _shift(str(live[bi.CLOCK]), rng.randint(0, 14), base.name)
        if base.name in ("list", "map"):
            low = int(constraints.get("min_items", 0))
            count = rng.randint(low, max(low, min(int(constraints.get("max_items", low + 2)), low + 2)))
            if base.name == "list":
                return [self.from_type(base.args[0], {}, live) for _ in range(count)]
            if base.args[0].name == "str":
                raise NoSource("")  # text keys are never invented either
        if base.name in ("json", "any"):
            raise NoSource("")  # a payload made up from nothing says nothing
        if base.name in self.records:
            return self.record_value(self.records[base.name], live)
        return self.env.samples.value(base, constraints)  # time of day, strings matching a pattern

    def record_value(self, record: ir.RecordDecl, live: Any) -> dict[str, Any]:
        """A record argument built field by field (a union's member at random): each field
        from its value source, else from its type; free text without a source is not made up."""
        if record.is_union:
            member = self.rng.choice(sorted(record.members))
            return {record.tag: record.members[member], **self.record_value(self.records[member], live)}
        value: dict[str, Any] = {}
        for f in record.fields:
            if not ts.required_field(f) or f.tag:
                continue
            if f.values_from is not None and self.sources:
                param = ir.Param(name=f.name, type=f.type, values_from=f.values_from)
                value[f.name] = self.from_source(f.values_from, param, live)
            else:
                value[f.name] = self.from_type(f.type, {}, live)
        return value


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _shift(clock: str, days: int, kind: str) -> str:
    import datetime as dt

    moment = dt.datetime.fromisoformat(clock) + dt.timedelta(days=days)
    return moment.date().isoformat() if kind == "date" else moment.isoformat(timespec="seconds")


# =========================================================================== chains


@dataclass
class Call:
    env: str
    tool: str
    args: dict[str, Any]
    result: Any
    origins: dict[str, str] = field(default_factory=dict)


@dataclass
class Chain:
    seed: str
    envs: list[str]
    scenarios: dict[str, str | None]
    calls: list[Call]
    diffs: dict[str, list[dict[str, Any]]]

    def key(self) -> str:
        """What makes two chains the same: their environments, starts and calls."""
        calls = [[c.env, c.tool, c.args] for c in self.calls]
        return json.dumps([self.envs, self.scenarios, calls], sort_keys=True, default=str)

    def row(self) -> dict[str, Any]:
        cross = len(self.envs) > 1
        calls = [
            {
                "env": c.env,
                "tool": f"{c.env}{CROSS_SEPARATOR}{c.tool}" if cross else c.tool,
                "args": c.args,
                "origins": c.origins,
                "result": c.result,
            }
            for c in self.calls
        ]
        body = {"seed": self.seed, "envs": self.envs, "scenarios": self.scenarios, "calls": calls, "diff": self.diffs}
        digest = hashlib.sha256(self.key().encode()).hexdigest()[:16]
        return {"id": f"chain-{digest}", **body}


class Rejected(Exception):
    """A candidate chain that is not kept, and why (a summary counts the reasons)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def is_failure(result: Any) -> bool:
    """A refused call: the JSON error of a DomainError or of an internal failure, or an
    error result a tool returns itself (as BFCL's classes do)."""
    return isinstance(result, dict) and set(result) == {"error"}


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """State fields a call changed, the runtime's own bookkeeping aside."""
    return {name for name in after if name not in BUILTIN_FIELDS and before.get(name) != after[name]}


@dataclass(frozen=True)
class Crossing:
    """The data flows between two environments a chain passes from `source` to `target`."""

    source: str
    target: str
    flows: tuple[meaning.Flow, ...]

    @property
    def meanings(self) -> frozenset[str]:
        return frozenset(f.meaning for f in self.flows)


class Walk:
    """One environment's sub-chain: a weighted walk that calls each tool it visits; in a
    chain over several environments it takes a value from the previous one (`inbound`)
    and favours the tools that give the next one a value (`outbound`)."""

    def __init__(
        self,
        env: SampleEnv,
        rng: random.Random,
        pool: Pool,
        scenario: str | None,
        inbound: Crossing | None = None,
        outbound: Crossing | None = None,
    ) -> None:
        self.env = env
        self.rng = rng
        self.session = env.package.Environment(scenario)
        self.drawer = ArgumentDrawer(env, rng, pool, inbound=inbound)
        self.pool = pool
        self.inbound = inbound
        self.outbound = outbound
        records = {r.name: r for r in env.model.records}
        self.givers = {
            t.name
            for t in env.model.tools
            if outbound and {f.record for f in outbound.flows} & meaning.record_types(t.returns, records)
        }
        """Tools returning a record whose field the next environment takes."""
        self.takers = {f.tool for f in inbound.flows} if inbound else set()
        """Tools taking a value of the previous environment."""
        self.start = self.session.state()
        self.calls: list[Call] = []
        self.unsourced: dict[str, str] = {}
        """Tools a step could not call for want of a value source, and the parameter."""

    def run(self, length: int) -> list[Call]:
        current: str | None = None
        for step in range(length):
            current = self.step(current, last=step == length - 1)
        if not changed_fields(self.start, self.session.state()):
            raise Rejected("no net state change")
        return self.calls

    def step(self, current: str | None, last: bool) -> str:
        for _ in range(STEP_ATTEMPTS):
            tool = self.next_tool(current, writes_only=last)
            try:
                args = self.drawer.draw(self.env.tools[tool], self.session.view())
            except NoSource as missing:  # never invent text: another tool, or another draw
                self.unsourced.setdefault(tool, missing.param)
                continue
            # The last call must change the state: try it on a fork, keep the fork if it did.
            session = self.session.fork() if last else self.session
            result = session.call(tool, args)
            if is_failure(result):
                if _is_internal(result):
                    raise Rejected("internal error")
                self.drawer.learn(tool, result["error"])
                continue
            if last and not changed_fields(self.session.state(), session.state()):
                continue
            self.session = session
            self.calls.append(Call(self.env.name, tool, args, result, dict(self.drawer.origins)))
            self.pool.add(result, env=self.env.name)
            self.pool.carry(self.env, self.env.tools[tool], result)
            return tool
        if self.unsourced:
            tool, param = sorted(self.unsourced.items())[0]
            raise Rejected(f"no value source for `{param}` of `{tool}`")
        raise Rejected("no state-changing write to end with" if last else "no call succeeded")

    def next_tool(self, current: str | None, writes_only: bool) -> str:
        graph = self.env.graph
        weights: dict[str, float] = {name: TELEPORT for name in graph.nodes}
        if current is not None:
            for _, target, data in graph.out_edges(current, data=True):
                weights[target] += float(data["weight"])
        for name in self.favoured():
            weights[name] += FLOW_BONUS
        if writes_only:
            weights = {n: w for n, w in weights.items() if graph.nodes[n]["kind"] == "write"}
        if not weights:
            raise Rejected("no write tool")
        names = sorted(weights)
        return self.rng.choices(names, weights=[weights[n] for n in names])[0]

    def favoured(self) -> set[str]:
        """The tools that take the previous environment's value, until one has, and those
        that give the next one a value, until one has."""
        favoured: set[str] = set()
        if self.inbound and not self.carried():
            favoured |= self.takers
        if self.outbound and not self.pool.carried_from(self.env.name, self.outbound.meanings):
            favoured |= self.givers
        return favoured

    def carried(self) -> bool:
        """Whether a call of this walk used a value of the previous environment."""
        return any("carried" in call.origins.values() for call in self.calls)


def _is_internal(result: dict[str, Any]) -> bool:
    """The generated environment's answer to an exception in a tool: a bug, not a refusal."""
    error = result["error"]
    return isinstance(error, dict) and error.get("kind") == "internal"


def state_diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """Changed paths (JSON Pointer) with their values before and after; a list that only
    grew reports each new item."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            child = f"{path}/{_pointer(str(key))}"
            if key not in before:
                changes.append({"path": child, "before": None, "after": after[key]})
            elif key not in after:
                changes.append({"path": child, "before": before[key], "after": None})
            else:
                changes.extend(state_diff(before[key], after[key], child))
        return changes
    if isinstance(before, list) and isinstance(after, list):
        if len(before) == len(after):
            return [c for i, (b, a) in enumerate(zip(before, after)) for c in state_diff(b, a, f"{path}/{i}")]
        if after[: len(before)] == before:
            return [{"path": f"{path}/{i}", "before": None, "after": after[i]} for i in range(len(before), len(after))]
    return [{"path": path or "/", "before": before, "after": after}]


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


# =========================================================================== the sampler


@dataclass
class Sampler:
    """All environments of a run, their env graph, and the options."""

    envs: dict[str, SampleEnv]
    options: SampleOptions
    weights: tool_graphs.GraphWeights = field(default_factory=tool_graphs.GraphWeights)
    env_graph: nx.DiGraph[str] | None = None
    proposed: dict[str, tuple[tool_graphs.ProposedEdge, ...]] = field(default_factory=dict)
    """Per environment, the tool edges a model proposed (worker processes rebuild the graphs)."""
    flows: dict[tuple[str, str], list[meaning.Flow]] = field(default_factory=dict)
    """The data flows between environments (graph.env_flows): the only ways a chain moves on."""

    def __post_init__(self) -> None:
        self.options.check(len(self.envs))
        if self.options.envs[1] > 1 and self.env_graph is None:
            self.env_graph = tool_graphs.env_graph([e.model for e in self.envs.values()], self.weights)
        if self.options.envs[1] > 1 and not self.flows:
            self.flows = tool_graphs.env_flows(e.model for e in self.envs.values())
        low = self.options.envs[0]
        if low > 1 and not any(self.reaches(name, low - 1, [name]) for name in sorted(self.envs)):
            raise SampleError(
                f"no {low} of the environments given follow one another along data flows (a value one"
                " returns that the next takes, meaning the same: docs/graph.md), so chains across them"
                " would share no data"
            )

    def chain(self, attempt: int) -> Chain:
        seed = f"{self.options.seed}:{attempt}"
        rng = random.Random(seed)
        names = self.pick_envs(rng)
        pool = Pool()
        scenarios: dict[str, str | None] = {}
        calls: list[Call] = []
        diffs: dict[str, list[dict[str, Any]]] = {}
        for index, name in enumerate(names):
            env = self.envs[name]
            scenario = rng.choice(env.scenarios())
            inbound = self.crossing(names[index - 1], name) if index else None
            if inbound is not None and not pool.carried_from(inbound.source, inbound.meanings):
                raise Rejected(NOTHING_TO_CARRY)
            outbound = self.crossing(name, names[index + 1]) if index + 1 < len(names) else None
            walk = Walk(env, rng, pool, scenario, inbound, outbound)
            calls += walk.run(rng.randint(self.options.min_len, self.options.max_len))
            if inbound is not None and not walk.carried():
                raise Rejected(NOTHING_CARRIED)
            scenarios[name] = scenario
            diffs[name] = state_diff(walk.start, walk.session.state())
        return Chain(seed, names, scenarios, calls, diffs)

    def crossing(self, source: str, target: str) -> Crossing:
        return Crossing(source, target, tuple(self.flows.get((source, target), ())))

    def pick_envs(self, rng: random.Random) -> list[str]:
        names = sorted(self.envs)
        count = rng.randint(*self.options.envs)
        if count == 1:
            return [rng.choice(names)]
        assert self.env_graph is not None
        starts = [n for n in names if self.reaches(n, count - 1, [n])]
        if not starts:
            raise Rejected(NO_FLOW_PATH)
        picked = [rng.choice(starts)]
        while len(picked) < count:
            left = count - len(picked) - 1
            options = {
                target: max(float(self.env_graph.get_edge_data(source, target, {}).get("weight", 0.0)), MIN_FLOW_WEIGHT)
                for source, target in sorted(self.flows)
                if source == picked[-1] and target not in picked and self.reaches(target, left, [*picked, target])
            }
            ordered = sorted(options)
            picked.append(rng.choices(ordered, weights=[options[n] for n in ordered])[0])
        return picked

    def reaches(self, start: str, more: int, used: list[str]) -> bool:
        """Whether `more` further environments, none of `used`, follow `start` along flows."""
        if more == 0:
            return True
        return any(
            x == start and y not in used and self.reaches(y, more - 1, [*used, y]) for x, y in sorted(self.flows)
        )

    def attempt(self, attempt: int) -> Chain | Rejected:
        try:
            return self.chain(attempt)
        except Rejected as rejected:
            return rejected


@dataclass
class Summary:
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    lengths: Counter[int] = field(default_factory=Counter)
    tools_used: set[str] = field(default_factory=set)
    tools: set[str] = field(default_factory=set)
    write_tools: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        used_writes = self.tools_used & self.write_tools
        return {
            "kept": self.kept,
            "rejected": dict(sorted(self.rejected.items())),
            "tool_coverage": round(len(self.tools_used) / len(self.tools), 4) if self.tools else 0.0,
            "write_tool_coverage": round(len(used_writes) / len(self.write_tools), 4) if self.write_tools else 0.0,
            "tools_never_used": sorted(self.tools - self.tools_used),
            "lengths": {str(k): v for k, v in sorted(self.lengths.items())},
        }


def _tool_ids(envs: dict[str, SampleEnv]) -> tuple[set[str], set[str]]:
    tools = {f"{e}{CROSS_SEPARATOR}{t}" for e, env in envs.items() for t in env.tools}
    writes = {f"{e}{CROSS_SEPARATOR}{t.name}" for e, env in envs.items() for t in env.model.tools if t.writes}
    return tools, writes


def sample(
    sampler: Sampler, progress: Callable[[int, int], None] | None = None, worker_specs: Sequence[Any] = ()
) -> tuple[list[dict[str, Any]], Summary]:
    """Draw candidate chains in attempt order until `chains` distinct ones are kept (or
    the attempt budget is spent); the same rows whatever the number of workers."""
    options = sampler.options
    summary = Summary()
    summary.tools, summary.write_tools = _tool_ids(sampler.envs)
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    budget = options.chains * ATTEMPTS_PER_CHAIN
    for outcome in _outcomes(sampler, budget, worker_specs):
        if isinstance(outcome, Rejected):
            summary.rejected[outcome.reason] += 1
        elif outcome.key() in seen:
            summary.rejected["duplicate"] += 1
        else:
            seen.add(outcome.key())
            rows.append(outcome.row())
            summary.kept += 1
            summary.lengths[len(outcome.calls)] += 1
            summary.tools_used |= {f"{c.env}{CROSS_SEPARATOR}{c.tool}" for c in outcome.calls}
        if progress is not None:
            progress(summary.kept, options.chains)
        if summary.kept == options.chains:
            break
    return rows, summary


def _outcomes(sampler: Sampler, budget: int, worker_specs: Sequence[Any]) -> Iterator[Chain | Rejected]:
    workers = sampler.options.workers
    if workers == 1 or not worker_specs:
        for attempt in range(budget):
            yield sampler.attempt(attempt)
        return
    batch = max(64, sampler.options.chains // workers)
    with ProcessPoolExecutor(
        max_workers=workers,
        initializer=_worker_start,
        initargs=(worker_specs, sampler.options, sampler.weights, sampler.proposed),
    ) as pool:
        for start in range(0, budget, batch):
            yield from pool.map(_worker_attempt, range(start, min(budget, start + batch)), chunksize=16)


_WORKER: Sampler | None = None


def _worker_start(
    specs: Sequence[tuple[str, str]],
    options: SampleOptions,
    weights: tool_graphs.GraphWeights,
    proposed: dict[str, tuple[tool_graphs.ProposedEdge, ...]],
) -> None:
    """Load every environment once per worker process."""
    global _WORKER
    envs = {}
    for env_json, folder in specs:
        env = ir.Environment.model_validate_json(env_json)
        envs[env.header.name] = load_env(env, Path(folder), weights, proposed.get(env.header.name, ()))
    _WORKER = Sampler(envs, options, weights, proposed=proposed)


def _worker_attempt(attempt: int) -> Chain | Rejected:
    assert _WORKER is not None
    return _WORKER.attempt(attempt)


def rows_to_jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows)


# =========================================================================== replay


def replay(row: dict[str, Any], packages: dict[str, ModuleType]) -> tuple[bool, str]:
    """Run a chain row again on fresh environments of the generated packages alone;
    (True, "") when every result and the final state diffs are the same."""
    sessions = {name: packages[name].Environment(row["scenarios"][name]) for name in row["envs"]}
    starts = {name: session.state() for name, session in sessions.items()}
    for index, call in enumerate(row["calls"]):
        tool = call["tool"].split(CROSS_SEPARATOR, 1)[1] if len(row["envs"]) > 1 else call["tool"]
        result = sessions[call["env"]].call(tool, call["args"])
        if result != call["result"]:
            return False, f"call {index} ({call['tool']}) gave {result!r}, not {call['result']!r}"
    for name, session in sessions.items():
        if state_diff(starts[name], session.state()) != row["diff"][name]:
            return False, f"the state of {name} ends differently"
    return True, ""


# =========================================================================== preparing specs


@dataclass
class Prepared:
    """Specs made ready to sample: their environments, or the diagnostics that stop it."""

    envs: dict[str, SampleEnv] = field(default_factory=dict)
    diagnostics: list[Any] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    worker_specs: list[tuple[str, str]] = field(default_factory=list)
    lowered: list[str] = field(default_factory=list)
    """Specs whose compiled package was missing or stale, so they were lowered afresh."""
    weights: tool_graphs.GraphWeights = field(default_factory=tool_graphs.GraphWeights)
    proposed: dict[str, tuple[tool_graphs.ProposedEdge, ...]] = field(default_factory=dict)
    """Tool edges a model proposed, per environment (with `llm`)."""


def prepare(specs: Sequence[Path], root: Path, scratch: Path, llm: EdgeOptions | None = None) -> Prepared:
    """Analyse each spec and find its generated package: the compiled one when it is up
    to date, else a fresh lowering written under `scratch` (not checked; compile it to
    have it checked). With `llm`, each tool graph also has the edges a model proposed
    (compiler/synth/model_edges.py: from envc.lock when current); a spec whose edges fail is
    left out with its diagnostics."""
    from compiler import project
    from compiler.analyse import analyse_file
    from compiler.build import pipeline
    from compiler.check.package import write_tree
    from compiler.diagnostics import Diagnostic, has_errors
    from compiler.lower import lower
    from compiler.lower.errors import LoweringError

    prepared = Prepared(weights=tool_graphs.load_weights(root))
    weights = prepared.weights
    for spec in specs:
        result = analyse_file(spec)
        prepared.diagnostics.extend(result.diagnostics)
        prepared.sources.update(result.sources)
        env = result.environment
        if env is None or has_errors(result.diagnostics):
            continue
        if env.header.name in prepared.envs:
            prepared.diagnostics.append(
                Diagnostic("E6005", f"two specs define environment `{env.header.name}`", str(spec), 1, 1)
            )
            continue
        folder = pipeline.current_package(spec, root)
        if folder is None:
            try:
                files = lower(env, project.display_path(spec, root))
            except LoweringError as exc:
                prepared.diagnostics.append(Diagnostic("E6001", str(exc), str(spec), 1, 1))
                continue
            folder = scratch / env.header.name
            write_tree(folder, files)
            prepared.lowered.append(str(spec))
        if llm is not None:
            from compiler.synth.model_edges import propose_edges

            proposal = propose_edges(env, llm)
            prepared.diagnostics.extend(proposal.diagnostics)
            if not proposal.ok:
                continue
            prepared.proposed[env.header.name] = tuple(proposal.edges)
        prepared.envs[env.header.name] = load_env(env, folder, weights, prepared.proposed.get(env.header.name, ()))
        prepared.worker_specs.append((env.model_dump_json(), str(folder)))
    return prepared
