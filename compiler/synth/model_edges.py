"""Tool edges a model proposes: the dependencies the static analysis cannot see.

`compiler/synth/graph.py` derives state, data and precondition edges from the code. The
paper's graph construction also asks a model to reason over the tools' pre- and
post-conditions ("resolve before close": nothing in `close`'s code needs `resolve`,
but a user would not close an unresolved ticket). Here the model is given the
environment's tools (names, docs, parameters, reads and writes, result types, guards)
and the derived edges, and answers with a JSON list of `{from, to, reason}`.

Every proposed edge is validated (`graph.proposed_edge_problem`: both tools exist, no
self loop, no derived edge between them, a reason given); a reply that is not such a
list, or holds one bad edge, goes back to the model with the problems, for at most
`attempts` requests, and is then refused with a diagnostic: never partly used. The
accepted list is recorded in the spec's `envc.lock` under the declaration `edges`,
keyed by the hash of the first request (model, messages, every sampling parameter,
attempt index), exactly as fills are (`compiler/llm/lock.py`); while that entry is
current the edges come from the lock with no request, so a graph built from a current
lock is the same bytes on any machine, with no network.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Literal

import networkx as nx

from compiler import ir
from compiler.diagnostics import Diagnostic, has_errors
from compiler.front import printer
from compiler.ir.tree import walk
from compiler.llm import prompt, render
from compiler.llm.config import LLMConfig, load_config
from compiler.llm.heal import MAX_PROBLEMS
from compiler.llm.lock import LOCK_NAME, AttemptRecord, LockEntry, lock_path, read_lock, spec_key, write_lock
from compiler.llm.provider import (
    ChatRequest,
    Completion,
    Message,
    OpenAIProvider,
    Provider,
    ProviderError,
    make_request,
)
from compiler.llm.stats import HealStats
from compiler.synth import graph as graphs

EDGES_DECL = "edges"
"""The declaration key of a spec's proposed edges in envc.lock (beside `tool NAME`, `draft`)."""
MAX_REASON = 240
"""Longest reason, in characters: one sentence, shown in tooltips and JSON."""
CHECKS = ("reply", "structure")
"""The stages of an edge list: `reply` (a JSON list of edge objects could be read out of
the answer) and `structure` (every edge passes `graph.proposed_edge_problem`)."""
Status = Literal["current", "filled", "refused"]

SYSTEM = f"""\
You find dependencies between the tools of a sandbox environment that a static analysis
of their code cannot see. envc has derived the edges listed under "Derived edges" from
the code: A -> B when A writes state B reads (state), A returns a value B takes (data),
or A writes what a guard of B checks (precondition). You propose the others: A -> B when
B's purpose depends on A having been called first, though its code does not show it
(for example: closing a ticket expects it to be resolved; booking expects a search
first). A proposed edge tells a task generator which tool chains make sense.

Reply with a JSON array in one fenced block, and nothing else:

```json
[{{"from": "tool_a", "to": "tool_b", "reason": "why calling tool_a first matters to tool_b"}}]
```

Rules:
- `from` and `to` are names of two different tools listed below.
- Do not propose a derived edge, and list each pair once.
- `reason` is one sentence of at most {MAX_REASON} characters, about what the tools do.
- Propose only dependencies the tools' descriptions support; reply `[]` when there are none.
"""


@dataclass
class EdgeOptions:
    root: Path
    """The project (its pyproject.toml has `[tool.envc.llm]`)."""
    offline: bool = False
    """Use the lock only: a missing or stale entry is E6101 / E6102, and nothing is sent."""
    refresh: bool = False
    """Ask again even when the entry is current (and replace it once the answer passes)."""
    log: Callable[[str], None] = lambda _message: None
    stats: HealStats = field(default_factory=HealStats)
    provider: Provider | None = None
    """None: the `openai` client as `[tool.envc.llm]` configures it."""


@dataclass
class EdgeResult:
    """A spec's proposed edges, or the diagnostics saying why there are none."""

    edges: list[graphs.ProposedEdge] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    status: Status = "current"
    lock_written: bool = False

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


# --------------------------------------------------------------------------- the request


def edge_messages(env: ir.Environment, derived: nx.DiGraph[str]) -> list[Message]:
    """The first request: the rules, then the environment's tools and derived edges."""
    return [Message("system", SYSTEM), Message("user", edge_context(env, derived))]


def edge_context(env: ir.Environment, derived: nx.DiGraph[str]) -> str:
    sections = [prompt.header_text(env), *prompt.type_sections(env)]
    tool_facts = graphs.tool_facts(env)
    helpers = {fn.name: fn for fn in env.fns}
    text = "\n\n".join(_tool_text(tool, tool_facts[tool.name], helpers) for tool in env.tools)
    sections.append("## Tools\n\n" + prompt.block(text))
    sections.append("## Derived edges (do not propose these)\n\n" + _derived_text(derived))
    sections.append(
        "Propose the edges the derived ones miss, as a JSON array of "
        '`{"from": ..., "to": ..., "reason": ...}` in one ```json block.'
    )
    return "\n\n".join(sections) + "\n"


def _tool_text(tool: ir.ToolDecl, fact: graphs.ToolFacts, helpers: dict[str, ir.FnDecl]) -> str:
    """A tool as its user sees it: signature, doc, effects, guards; the body left out."""
    lines = [render.callable_head(tool), *render.doc_lines(tool.doc, 1)]
    lines.append(f"{render.INDENT}reads {', '.join(sorted(fact.reads)) or 'nothing'}")
    lines.append(f"{render.INDENT}writes {', '.join(sorted(fact.writes)) or 'nothing'}")
    if tool.side_effect:
        lines.append(f"{render.INDENT}side_effect {printer.quote(tool.side_effect)}")
    lines += [f"{render.INDENT}param {p.name} {printer.quote(p.doc)}" for p in tool.params if p.doc]
    lines += [f"{render.INDENT}# guard: {guard}" for guard in guards(tool.body, helpers)]
    if tool.errors:
        lines.append(f"{render.INDENT}# may fail with: {', '.join(tool.errors)}")
    lines.append(f"{render.INDENT}...")
    return "\n".join(lines)


def guards(body: Sequence[ir.Stmt], helpers: dict[str, ir.FnDecl]) -> list[str]:
    """The checks that end a call with an error, the helpers' it calls included, as
    spec text (`require ...`, `if ...: fail ...`): the tool's preconditions."""
    found: list[str] = []
    seen: set[str] = set()

    def visit(stmts: Sequence[ir.Stmt]) -> None:
        for node in walk(list(stmts)):
            if isinstance(node, ir.Require):
                found.append(printer.simple_stmt(node))
            elif isinstance(node, ir.If):
                for branch in node.branches:
                    if branch.body and isinstance(branch.body[0], ir.Fail):
                        found.append(f"if {printer.expr(branch.cond)}: {printer.simple_stmt(branch.body[0])}")
            elif isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id in helpers:
                if node.func.id not in seen:
                    seen.add(node.func.id)
                    visit(helpers[node.func.id].body)

    visit(body)
    return list(dict.fromkeys(found))


def _derived_text(derived: nx.DiGraph[str]) -> str:
    lines = [f"- {a} -> {b} ({', '.join(derived.edges[a, b]['kinds'])})" for a, b in sorted(derived.edges)]
    return "\n".join(lines) if lines else "(none)"


def repair_message(stage: str, problems: Iterable[str]) -> Message:
    listed = "\n".join(f"- {p}" for p in problems) or "- (no details)"
    return Message(
        "user",
        f"That answer failed envc's `{stage}` check:\n\n{listed}\n\n"
        "Write the whole list again, corrected, as a JSON array in one ```json block, and nothing else.",
    )


# --------------------------------------------------------------------------- reading and checking


def read_edges(reply: str) -> tuple[list[graphs.ProposedEdge] | None, list[str]]:
    """The edges of a reply (its first fenced block, or the whole reply): a JSON array of
    `{"from", "to", "reason"}` objects (or `{"edges": [...]}`); None and the problems when
    it is not one."""
    match = prompt.FENCE.search(reply)
    text = match.group(2) if match else reply
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, [f"the answer is not JSON ({exc}): put the array in one ```json block"]
    if isinstance(data, dict) and set(data) == {"edges"}:
        data = data["edges"]
    if not isinstance(data, list):
        return None, [f"the answer is a JSON {type(data).__name__}, not an array of edges"]
    edges: list[graphs.ProposedEdge] = []
    problems: list[str] = []
    for index, item in enumerate(data, start=1):
        wanted = {"from", "to", "reason"}
        if not isinstance(item, dict) or set(item) != wanted or not all(isinstance(v, str) for v in item.values()):
            shown = json.dumps(item, ensure_ascii=False)[:120]
            problems.append(f"edge {index} ({shown}) is not an object of three strings: from, to, reason")
            continue
        edges.append(graphs.ProposedEdge(item["from"].strip(), item["to"].strip(), " ".join(item["reason"].split())))
    return (None, problems) if problems else (edges, [])


def edge_problems(derived: nx.DiGraph[str], edges: Sequence[graphs.ProposedEdge]) -> list[str]:
    """What is wrong with each edge of a list, against the derived graph."""
    problems: list[str] = []
    listed: set[tuple[str, str]] = set()
    for index, edge in enumerate(edges, start=1):
        problem = graphs.proposed_edge_problem(derived, edge)
        if not problem and (edge.source, edge.target) in listed:
            problem = f"`{edge.source}` -> `{edge.target}` is listed twice"
        if not problem and len(edge.reason) > MAX_REASON:
            problem = f"the reason of `{edge.source}` -> `{edge.target}` is longer than {MAX_REASON} characters"
        if problem:
            problems.append(f"edge {index}: {problem}")
        listed.add((edge.source, edge.target))
    return problems


def canonical(edges: Sequence[graphs.ProposedEdge]) -> str:
    """The locked form of an edge list: sorted by (from, to), one JSON text."""
    rows = [{"from": e.source, "to": e.target, "reason": e.reason} for e in sorted(edges, key=_pair)]
    return json.dumps(rows, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _pair(edge: graphs.ProposedEdge) -> tuple[str, str]:
    return (edge.source, edge.target)


# --------------------------------------------------------------------------- asking, healing, locking


def first_request(config: LLMConfig, env: ir.Environment, derived: nx.DiGraph[str]) -> ChatRequest:
    return make_request(config, edge_messages(env, derived), 1)


def propose_edges(env: ir.Environment, options: EdgeOptions) -> EdgeResult:
    """The proposed edges of `env`: from a current lock entry, else (unless offline)
    asked for, healed and recorded in the lock beside the spec."""
    config, problems = load_config(options.root)
    spec = Path(env.path)
    lock_file = lock_path(spec)
    lock, lock_problems = read_lock(lock_file)
    if has_errors([*problems, *lock_problems]):
        return EdgeResult(diagnostics=[*problems, *lock_problems], status="refused")
    derived = graphs.tool_graph(env)
    key = spec_key(spec, lock_file)
    first = first_request(config, env, derived)
    entry = lock.get(key, EDGES_DECL)
    if entry is not None and entry.request_sha == first.sha() and not options.refresh:
        return _from_lock(env, derived, entry)
    if options.offline and options.refresh:
        message = "refreshing the tool edges asks the model, which offline forbids"
        return EdgeResult(diagnostics=[_at(env, "E6101", message)], status="refused")
    if options.offline:
        return EdgeResult(diagnostics=[_unavailable(env, entry)], status="refused")
    if not config.configured:
        message = (
            f"the tool edges of `{env.header.name}` have no current entry in {LOCK_NAME}, and no model is configured"
        )
        hint = "set `model` (and `base_url`) in [tool.envc.llm] of pyproject.toml, or commit the lock that has them"
        return EdgeResult(diagnostics=[_at(env, "E6101", message, hint)], status="refused")
    provider = options.provider or OpenAIProvider(config, log=options.log)
    return _ask(env, derived, first, config, provider, options, key)


def _from_lock(env: ir.Environment, derived: nx.DiGraph[str], entry: LockEntry) -> EdgeResult:
    edges, problems = read_edges(entry.body)
    problems = problems if edges is None else edge_problems(derived, edges)
    if edges is None or problems:
        message = f"the locked tool edges of `{env.header.name}` no longer pass the checks"
        notes = tuple(problems[:MAX_PROBLEMS])
        return EdgeResult(
            diagnostics=[_at(env, "E6107", message, "ask again with `envc graph --llm --refresh`", notes)],
            status="refused",
        )
    return EdgeResult(sorted(edges, key=_pair), status="current")


def _ask(
    env: ir.Environment,
    derived: nx.DiGraph[str],
    first: ChatRequest,
    config: LLMConfig,
    provider: Provider,
    options: EdgeOptions,
    key: str,
) -> EdgeResult:
    from compiler.project import display_path

    display = display_path(Path(env.path), options.root)
    subject = f"{display}::{EDGES_DECL}"
    messages = list(first.messages)
    attempts: list[AttemptRecord] = []
    while len(attempts) < config.attempts:
        number = len(attempts) + 1
        request = make_request(config, messages, number)
        options.log(f"asking {config.model} for the tool edges of {display} (attempt {number})")
        try:
            completion = provider.complete(request)
        except ProviderError as exc:
            options.stats.outcome(subject, False, number)
            message = f"asking the model for the tool edges of `{env.header.name}` failed ({exc.kind}): {exc}"
            hint = (
                "check `model` and `base_url` in [tool.envc.llm], the key variable and the server; nothing was written"
            )
            return EdgeResult(diagnostics=[_at(env, "E6103", message, hint)], status="refused")
        messages.append(Message("assistant", completion.text))
        edges, problems = read_edges(completion.text)
        options.stats.record(subject, number, "reply", edges is not None)
        stage = "reply"
        if edges is not None:
            problems, stage = edge_problems(derived, edges), "structure"
            options.stats.record(subject, number, stage, not problems)
        attempts.append(AttemptRecord(number, request.sha(), stage if problems else "", tuple(problems[:MAX_PROBLEMS])))
        if edges is not None and not problems:
            options.stats.outcome(subject, True, number)
            return _record(env, key, first, config, attempts, completion, sorted(edges, key=_pair))
        messages.append(repair_message(stage, problems[:MAX_PROBLEMS]))
    options.stats.outcome(subject, False, len(attempts))
    last = attempts[-1]
    notes = tuple(f"attempt {a.attempt}: failed `{a.failure}`" for a in attempts) + last.problems
    message = (
        f"the model's tool edges of `{env.header.name}` were refused: they still failed the "
        f"`{last.failure}` check after {len(attempts)} attempts"
    )
    hint = "raise `attempts` in [tool.envc.llm], try another model, or build the graph without --llm"
    return EdgeResult(diagnostics=[_at(env, "E6104", message, hint, notes)], status="refused")


def _record(
    env: ir.Environment,
    key: str,
    first: ChatRequest,
    config: LLMConfig,
    attempts: list[AttemptRecord],
    completion: Completion,
    edges: list[graphs.ProposedEdge],
) -> EdgeResult:
    """Put the accepted list in the lock (read afresh, so other entries stay as they are)."""
    entry = LockEntry(
        request_sha=first.sha(),
        body=canonical(edges),
        model=config.model,
        attempt=len(attempts),
        accepted_request_sha=attempts[-1].request_sha,
        provenance={
            "attempts": [asdict(a) for a in attempts],
            "checks": list(CHECKS),
            "envc": _envc_version(),
            "filled_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "finish_reason": completion.finish_reason,
            "response_model": completion.model,
            "system_fingerprint": completion.system_fingerprint,
            "usage": dict(completion.usage),
        },
    )
    lock_file = lock_path(Path(env.path))
    lock, problems = read_lock(lock_file)
    if problems:
        return EdgeResult(diagnostics=problems, status="refused")
    lock.put(key, EDGES_DECL, entry)
    try:
        written = write_lock(lock, {key})
    except OSError as exc:
        message = f"cannot write {lock_file}: {exc.strerror or exc}; the edges were not recorded"
        return EdgeResult(diagnostics=[Diagnostic("E6106", message, str(lock_file), 1, 1)], status="refused")
    return EdgeResult(edges, status="filled", lock_written=written)


def _envc_version() -> str:
    try:
        return metadata.version("envc")
    except metadata.PackageNotFoundError:
        return "unknown"


def _at(env: ir.Environment, code: str, message: str, hint: str = "", notes: tuple[str, ...] = ()) -> Diagnostic:
    """A diagnostic at the spec's header."""
    return Diagnostic(code, message, env.path, env.header.line or 1, env.header.col or 1, hint=hint, notes=notes)


def _unavailable(env: ir.Environment, entry: LockEntry | None) -> Diagnostic:
    hint = f"run `envc graph --llm` where the model is reachable, then commit {LOCK_NAME}"
    if entry is None:
        message = f"the tool edges of `{env.header.name}` have no entry in {LOCK_NAME} (--offline asks no model)"
        return _at(env, "E6101", message, hint)
    message = (
        f"the tool edges of `{env.header.name}` in {LOCK_NAME} are stale: the request envc would send now "
        "differs (the tools, the prompt, the model or a sampling parameter changed)"
    )
    return _at(env, "E6102", message, hint)


# --------------------------------------------------------------------------- graphs


def llm_tool_graphs(
    envs: Sequence[ir.Environment], weights: graphs.GraphWeights, options: EdgeOptions
) -> tuple[dict[str, nx.DiGraph[str]], list[Diagnostic]]:
    """Every environment's tool graph with its proposed edges merged in, asked for
    `concurrency` specs at a time; when any spec's edges fail, no graph and the
    diagnostics (a graph is never drawn with some of its proposed edges missing)."""
    config, problems = load_config(options.root)
    if has_errors(problems):
        return {}, problems  # once, not once per spec
    workers = max(1, min(config.concurrency, len(envs)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda env: propose_edges(env, options), envs))
    diagnostics = [d for result in results for d in result.diagnostics]
    if has_errors(diagnostics):
        return {}, diagnostics
    built = {env.header.name: graphs.tool_graph(env, weights, result.edges) for env, result in zip(envs, results)}
    return built, diagnostics
