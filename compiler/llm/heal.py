"""Self-healing: a fill that fails a check goes back to the model, a bounded number of times.

Each hole is a `Session`, one conversation: the first request, then for every failed
attempt the model's reply and a repair message that names the failed stage and lists
the problems at lines of the model's own body. Every attempt is recorded
(`AttemptRecord`: its request hash and failure class), and `HealStats` counts, per
attempt and stage, how many fills reached the stage and how many passed it.

The stages (`fill.STAGES`): `reply` (a body could be read out of the answer), `parse`,
`structure` (nothing outside the body changed), `types`, `effects` (declared `reads`
and `writes` hold), then, for the whole spec with every hole filled, `lower`, `static`
(ruff, mypy --strict, the AST rules) and `dynamic` (the generated tests, in a
subprocess). The first five run per hole, concurrently (`concurrency` requests at once;
checks themselves one at a time). The last three run for the spec, and a failure is
blamed on the holes it can be traced to: a finding in the code of a filled tool, or a
failing test that calls one; a failure traced to none is blamed on all. A request that
fails for good (after the provider's own retries) stops its session at once.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from compiler import ir
from compiler.analyse import AnalysisResult
from compiler.diagnostics import Diagnostic
from compiler.ir.tree import walk
from compiler.llm import fill as fills_
from compiler.llm import prompt
from compiler.llm.config import LLMConfig
from compiler.llm.fill import FillCheck, Hole, Located
from compiler.llm.lock import AttemptRecord
from compiler.llm.provider import ChatRequest, Completion, Message, Provider, ProviderError, make_request
from compiler.llm.stats import HealStats

__all__ = ["HealContext", "HealResult", "HealStats", "Session", "heal", "new_session"]

MAX_PROBLEMS = 12
"""Problems listed per repair message: the first ones matter, the rest are often echoes."""


@dataclass
class Session:
    """One hole's conversation with the model."""

    hole: Hole
    decl: ir.ToolDecl
    subject: str
    messages: list[Message]
    key: str
    """sha256 of the first request: the lock's key for this hole."""
    attempts: list[AttemptRecord] = field(default_factory=list)
    body: str | None = None
    """The body of the last attempt, once it passed the per-hole stages."""
    completion: Completion | None = None
    error: ProviderError | None = None
    gave_up: bool = False
    """No attempt left, or a request failed for good."""

    def accepted_request_sha(self) -> str:
        return self.attempts[-1].request_sha if self.attempts else ""


@dataclass
class HealContext:
    """What checking a hole's fill needs: the unfilled spec as loaded and analysed."""

    spec: Path
    display: str
    """The spec's path as generated headers show it."""
    analysis: AnalysisResult
    holes: list[Hole]
    config: LLMConfig
    provider: Provider
    stats: HealStats
    qc: bool = True
    log: Callable[[str], None] = lambda _message: None

    @property
    def env(self) -> ir.Environment:
        assert self.analysis.environment is not None
        return self.analysis.environment

    def check(self, fills: dict[Hole, str]) -> FillCheck:
        return fills_.check_fills(self.spec, self.analysis.sources, fills, self.analysis.diagnostics)


def first_request(config: LLMConfig, env: ir.Environment, decl: ir.ToolDecl) -> ChatRequest:
    return make_request(config, prompt.fill_messages(env, decl), 1)


def new_session(ctx: HealContext, hole: Hole) -> Session:
    decl = fills_.declaration(ctx.env, hole)
    request = first_request(ctx.config, ctx.env, decl)
    return Session(hole, decl, f"{ctx.display}::{hole.key}", list(request.messages), request.sha())


@dataclass
class HealResult:
    check: FillCheck | None
    """The passing check of the spec with every fill; None when healing failed."""
    failure: list[Located] = field(default_factory=list)
    """What failed last, when it failed for the spec as a whole (lowering, QC)."""


def heal(ctx: HealContext, sessions: list[Session], fixed: dict[Hole, str]) -> HealResult:
    """Run the sessions until every one has a body that passes all stages, or one gives
    up; `fixed` are fills taken from the lock, checked with the others but never sent
    back (a failure only they can own ends the loop)."""
    failure: list[Located] = []
    while True:
        _advance_all(ctx, [s for s in sessions if s.body is None and not s.gave_up])
        if any(s.gave_up for s in sessions):
            break
        final, failure = _check_spec(ctx, sessions, fixed)
        if final is not None:
            for session in sessions:
                ctx.stats.outcome(session.subject, True, len(session.attempts))
            return HealResult(final)
        if any(s.gave_up for s in sessions) or all(s.body is not None for s in sessions):
            break
    for session in sessions:
        ctx.stats.outcome(session.subject, False, len(session.attempts))
    return HealResult(None, failure)


def _advance_all(ctx: HealContext, sessions: list[Session]) -> None:
    if len(sessions) <= 1 or ctx.config.concurrency <= 1:
        for session in sessions:
            advance(ctx, session)
        return
    with ThreadPoolExecutor(max_workers=min(ctx.config.concurrency, len(sessions))) as pool:
        list(pool.map(lambda s: advance(ctx, s), sessions))


def advance(ctx: HealContext, session: Session) -> None:
    """Ask for bodies until one passes the per-hole stages, attempts run out, or a
    request fails for good."""
    while len(session.attempts) < ctx.config.attempts:
        number = len(session.attempts) + 1
        request = make_request(ctx.config, session.messages, number)
        ctx.log(f"asking {ctx.config.model} for `{session.hole.key}` of {ctx.display} (attempt {number})")
        try:
            completion = ctx.provider.complete(request)
        except ProviderError as exc:
            session.error, session.gave_up = exc, True
            session.attempts.append(AttemptRecord(number, request.sha(), "request", (f"{exc.kind}: {exc}",)))
            return
        session.messages.append(Message("assistant", completion.text))
        body = prompt.extract_body(completion.text, session.decl)
        ctx.stats.record(session.subject, number, "reply", body is not None)
        if body is None:
            problem = "the reply holds no body: put the statements in one ```envspec block"
            _failed(session, number, request, "reply", [problem], None)
            continue
        check = ctx.check({session.hole: body})
        _record_stages(ctx, session, number, check.stage or "effects", check.ok)
        if check.ok:
            session.body, session.completion = body, completion
            session.attempts.append(AttemptRecord(number, request.sha()))
            return
        _failed(session, number, request, check.stage, describe(check.located, session.hole), body)
    session.gave_up = True
    ctx.log(f"`{session.hole.key}` of {ctx.display}: no acceptable body in {ctx.config.attempts} attempts")


def _record_stages(ctx: HealContext, session: Session, number: int, last: str, ok: bool) -> None:
    """Stages `parse` .. `last`: all passed, but `last` itself when not ok."""
    stages = fills_.STAGES[1 : fills_.STAGES.index(last) + 1]
    for stage in stages:
        ctx.stats.record(session.subject, number, stage, ok or stage != last)


def _failed(
    session: Session, number: int, request: ChatRequest, stage: str, problems: list[str], body: str | None
) -> None:
    session.attempts.append(AttemptRecord(number, request.sha(), stage, tuple(problems[:MAX_PROBLEMS])))
    session.messages.append(prompt.repair_message(stage, problems[:MAX_PROBLEMS], body))


def describe(located: list[Located], hole: Hole | None) -> list[str]:
    """Problems as the model should read them: at lines of its body where they are in it."""
    problems = []
    for item in located:
        d = item.original
        where = (
            f"line {item.fill_line}, column {item.fill_col}: " if item.hole is not None and item.hole == hole else ""
        )
        if not where and hole is not None and d.line == hole.line:
            where = f"at the declaration of `{hole.key}`: "
        elif not where and d.code.startswith("E1"):
            where = "after the end of your body (a bracket or string left open?): "
        hint = d.effective_hint()
        problems.append(f"{where}{d.code} {d.message}" + (f" (hint: {hint})" if hint else ""))
    return problems


# --------------------------------------------------------------------------- the whole spec


def _check_spec(
    ctx: HealContext, sessions: list[Session], fixed: dict[Hole, str]
) -> tuple[FillCheck | None, list[Located]]:
    """Every fill together: the front end, then (with QC) lowering and the checks. On a
    failure the blamed sessions get their repair message and lose their body."""
    bodies = {**fixed, **{s.hole: s.body for s in sessions if s.body is not None}}
    check = ctx.check(bodies)
    if not check.ok:
        _blame(ctx, sessions, check.stage, check.located, lambda item: fills_.hole_at_declaration(item, ctx.holes))
        return None, check.located
    if not ctx.qc:
        return check, []
    from compiler.check import check_packages
    from compiler.check.package import Package
    from compiler.check.positions import to_diagnostics
    from compiler.lower import lower
    from compiler.lower.errors import LoweringError

    assert check.analysis is not None and check.analysis.environment is not None
    env = check.analysis.environment
    try:
        files = lower(env, ctx.display)
    except LoweringError as exc:
        diagnostic = Diagnostic("E6001", str(exc), str(ctx.spec), env.header.line or 1, 1)
        _blame(ctx, sessions, "lower", [Located(diagnostic, diagnostic)], lambda _item: None)
        return None, [Located(diagnostic, diagnostic)]
    _record_all(ctx, sessions, "lower", True)
    ctx.log(f"checking {ctx.display} with its fills (ruff, mypy, generated tests)")
    package = Package(env=env, name=env.header.name, files=files, inputs=check.analysis.inputs())
    result = check_packages([package], dynamic=True)[package.name]
    if result.static_ok and result.dynamic_ok:
        _record_all(ctx, sessions, "static", True)
        _record_all(ctx, sessions, "dynamic", True)
        return check, []
    located = [fills_.locate(d, check.maps, bodies) for d in to_diagnostics(package, result)]
    static = [item for item in located if item.original.code == "E6001"]
    if static:
        _blame(ctx, sessions, "static", static, lambda item: _traced(item, ctx.holes, env))
    else:
        _record_all(ctx, sessions, "static", True)
        _blame(ctx, sessions, "dynamic", located, lambda item: _traced(item, ctx.holes, env))
    return None, located


def _record_all(ctx: HealContext, sessions: list[Session], stage: str, ok: bool) -> None:
    for session in sessions:
        ctx.stats.record(session.subject, len(session.attempts), stage, ok)


def _blame(
    ctx: HealContext,
    sessions: list[Session],
    stage: str,
    located: list[Located],
    trace: Callable[[Located], Hole | list[Hole] | None],
) -> None:
    """Send each problem to the sessions it is traced to (all of them when to none)."""
    if not located:
        generic = Diagnostic("E6001", f"the `{stage}` check failed without a finding", str(ctx.spec), 1, 1)
        located = [Located(generic, generic)]
    blamed: dict[Hole, list[Located]] = {}
    for item in located:
        traced = trace(item)
        holes = [traced] if isinstance(traced, Hole) else traced or [s.hole for s in sessions]
        for hole in holes:
            blamed.setdefault(hole, []).append(item)
    for session in sessions:
        number = len(session.attempts)
        mine = blamed.get(session.hole)
        ctx.stats.record(session.subject, number, stage, not mine)
        if not mine:
            continue
        problems = describe(mine, session.hole)
        last = session.attempts[-1]
        session.attempts[-1] = AttemptRecord(last.attempt, last.request_sha, stage, tuple(problems[:MAX_PROBLEMS]))
        session.messages.append(prompt.repair_message(stage, problems[:MAX_PROBLEMS], session.body))
        session.body = None
        if len(session.attempts) >= ctx.config.attempts:
            session.gave_up = True
            ctx.log(f"`{session.hole.key}` of {ctx.display}: still failing `{stage}` after {number} attempts")


def _traced(item: Located, holes: list[Hole], env: ir.Environment) -> Hole | list[Hole] | None:
    """The hole a check finding is about: its code, or a test or task that calls it."""
    hole = fills_.hole_at_declaration(item, holes)
    if hole is not None:
        return hole
    d = item.original
    decls: list[ir.TestDecl | ir.TaskDecl] = [*env.tests, *env.tasks]
    for decl in decls:
        if decl.line == d.line and Path(decl.file) == Path(d.path):
            return exercised_holes(env, decl, holes)
    return None


def exercised_holes(env: ir.Environment, decl: ir.TestDecl | ir.TaskDecl, holes: list[Hole]) -> list[Hole]:
    """The holes a test or task reaches: the tools it calls and the helpers they call."""
    bodies: dict[str, ir.ToolDecl] = {d.name: d for d in [*env.tools, *env.fns]}
    seen: set[str] = set()
    todo = [_called(decl)]
    while todo:
        for name in todo.pop() - seen:
            seen.add(name)
            if name in bodies:
                todo.append(_called(bodies[name].body))
    return [h for h in holes if h.name in seen]


def _called(node: object) -> set[str]:
    return {n.func.id for n in walk(node) if isinstance(n, ir.Call) and isinstance(n.func, ir.Name)}
