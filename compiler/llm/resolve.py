"""What `envc compile` and `envc lock` do with the holes of one spec.

For each `llm` body the first request is built from the analysed spec and its hash
looked up in `envc.lock`. A current entry's body is used as it is: no request is made,
and the build is the same on every machine. Otherwise it depends on the mode:

- `build` (`envc compile`): ask the model, heal, and record what is accepted;
- `offline` (`envc compile --offline`) and `check` (`envc compile --check`): stop with
  `E6101` (no fill) or `E6102` (stale fill), sending nothing;
- `status` (`envc lock`): only say which entries are current, stale, missing or orphaned;
- `update` (`envc lock --update`): fill what is not current and drop orphaned entries;
- `refill` (`envc lock --update --all`): fill every hole again.

The lock is written once per spec, after every hole of it was accepted, so a failed
run leaves it as it was. The spec's analysis with the fills spliced in is returned for
lowering, with the line maps that take later diagnostics back to the files on disk.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Literal

from compiler.analyse import AnalysisResult
from compiler.diagnostics import Diagnostic, has_errors
from compiler.llm import fill as fills_
from compiler.llm.config import LLMConfig, load_config
from compiler.llm.fill import Hole, LineMap, Located
from compiler.llm.heal import HealContext, HealStats, Session, first_request, heal, new_session
from compiler.llm.lock import LOCK_NAME, Lock, LockEntry, is_fill, lock_path, read_lock, spec_key, write_lock
from compiler.llm.provider import OpenAIProvider, Provider

Mode = Literal["build", "offline", "check", "status", "update", "refill"]
Status = Literal["current", "stale", "missing", "filled", "refused", "orphan"]


@dataclass
class FillOptions:
    root: Path
    mode: Mode = "build"
    qc: bool = True
    display: str = ""
    """The spec's path as generated headers show it (relative to the project)."""
    log: Callable[[str], None] = lambda _message: None
    stats: HealStats = field(default_factory=HealStats)
    provider: Provider | None = None
    """None: the `openai` client as `[tool.envc.llm]` configures it."""


@dataclass(frozen=True)
class HoleStatus:
    spec: str
    decl: str
    status: Status
    detail: str = ""


@dataclass
class Resolved:
    """The spec with its fills, or None and the diagnostics saying why not."""

    analysis: AnalysisResult | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    """Files the filled spec also depends on: the lock and pyproject.toml."""
    maps: dict[str, LineMap] = field(default_factory=dict)
    fills: dict[Hole, str] = field(default_factory=dict)
    statuses: list[HoleStatus] = field(default_factory=list)
    lock_written: bool = False

    def original(self, diagnostic: Diagnostic) -> Diagnostic:
        """A diagnostic of the filled spec (a QC finding) at its place on disk."""
        return fills_.locate(diagnostic, self.maps, self.fills).original


def has_holes(analysis: AnalysisResult) -> bool:
    return analysis.environment is not None and bool(fills_.find_holes(analysis.environment))


def resolve_spec(spec: Path, analysis: AnalysisResult, options: FillOptions) -> Resolved:
    env = analysis.environment
    assert env is not None, "resolve only analysed specs"
    holes = fills_.find_holes(env)
    if not holes and options.mode not in ("status", "update", "refill"):
        return Resolved(analysis)  # only `envc lock` looks for orphaned entries
    config, problems = load_config(options.root)
    lock_file = lock_path(spec)
    lock, lock_problems = read_lock(lock_file)
    if has_errors([*problems, *lock_problems]):
        return Resolved(None, [*problems, *lock_problems])
    key = spec_key(spec, lock_file)
    current: dict[Hole, str] = {}
    todo: list[Hole] = []
    statuses: list[HoleStatus] = []
    for hole in holes:
        sha = first_request(config, env, fills_.declaration(env, hole)).sha()
        entry = lock.get(key, hole.key)
        if entry is not None and entry.request_sha == sha and options.mode != "refill":
            current[hole] = entry.body
            statuses.append(HoleStatus(key, hole.key, "current"))
        else:
            todo.append(hole)
            statuses.append(HoleStatus(key, hole.key, "stale" if entry is not None else "missing"))
    orphans = sorted(d for d in lock.entries.get(key, {}) if is_fill(d) and d not in {h.key for h in holes})
    statuses += [HoleStatus(key, decl, "orphan") for decl in orphans]
    inputs = [str(lock_file)] + (
        [str(options.root / "pyproject.toml")] if (options.root / "pyproject.toml").is_file() else []
    )
    if options.mode == "status":
        return Resolved(None, statuses=statuses)
    if todo and options.mode in ("offline", "check"):
        return Resolved(
            None, [_unfilled(hole, lock.get(key, hole.key), options.mode) for hole in todo], statuses=statuses
        )
    if todo and not config.configured:
        message = f"`{todo[0].key}` has an llm body with no fill in {LOCK_NAME}, and no model is configured"
        hint = "set `model` (and `base_url`) in [tool.envc.llm] of pyproject.toml, or commit the lock that has the fill"
        return Resolved(None, [_at(hole, "E6101", message, hint) for hole in todo], statuses=statuses)
    written = False
    if todo:
        outcome = _fill(spec, analysis, holes, todo, current, config, options)
        if isinstance(outcome, list):
            refused = {h.key for h in todo}
            statuses = [HoleStatus(s.spec, s.decl, "refused") if s.decl in refused else s for s in statuses]
            return Resolved(None, outcome, statuses=statuses)
        check, sessions = outcome
        for session in sessions:
            lock.put(key, session.hole.key, _entry(session, config, options.qc))
        statuses = [HoleStatus(s.spec, s.decl, "filled") if s.decl in {h.key for h in todo} else s for s in statuses]
        if options.mode in ("update", "refill"):
            for decl in orphans:
                lock.drop(key, decl)
    elif options.mode in ("update", "refill") and orphans:
        for decl in orphans:
            lock.drop(key, decl)
    if todo or (options.mode in ("update", "refill") and orphans):
        try:
            written = write_lock(lock, {key})
        except OSError as exc:
            message = f"cannot write {lock_file}: {exc.strerror or exc}; the fills were not recorded"
            return Resolved(None, [Diagnostic("E6106", message, str(lock_file), 1, 1)], statuses=statuses)
    if not todo:
        check = fills_.check_fills(spec, analysis.sources, current, analysis.diagnostics)
        if not check.ok:
            return Resolved(None, _no_longer_passing(check.located, holes), statuses=statuses)
    fills = {**current, **_bodies(lock, key, todo)}
    return Resolved(check.analysis, [], inputs, check.maps, fills, statuses, written)


def _fill(
    spec: Path,
    analysis: AnalysisResult,
    holes: list[Hole],
    todo: list[Hole],
    current: dict[Hole, str],
    config: LLMConfig,
    options: FillOptions,
) -> tuple[fills_.FillCheck, list[Session]] | list[Diagnostic]:
    """Ask for the missing fills and heal them; the final check and the sessions, or
    the diagnostics of the failure."""
    provider = options.provider or OpenAIProvider(config, log=options.log)
    ctx = HealContext(
        spec, options.display or str(spec), analysis, holes, config, provider, options.stats, options.qc, options.log
    )
    sessions = [new_session(ctx, hole) for hole in todo]
    result = heal(ctx, sessions, current)
    if result.check is not None:
        return result.check, sessions
    diagnostics = [_failure(session, config) for session in sessions if session.gave_up]
    if not diagnostics:
        diagnostics = [item.original for item in result.failure]
    return diagnostics


def _bodies(lock: Lock, key: str, holes: list[Hole]) -> dict[Hole, str]:
    found = {}
    for hole in holes:
        entry = lock.get(key, hole.key)
        if entry is not None:
            found[hole] = entry.body
    return found


def _at(hole: Hole, code: str, message: str, hint: str = "", notes: tuple[str, ...] = ()) -> Diagnostic:
    return Diagnostic(code, message, hole.file, hole.start, hole.indent + 1, hint=hint, notes=notes)


def _unfilled(hole: Hole, entry: LockEntry | None, mode: Mode) -> Diagnostic:
    flag = "--check" if mode == "check" else "--offline"
    if entry is None:
        message = f"`{hole.key}` has an llm body with no fill in {LOCK_NAME} (envc compile {flag} asks no model)"
        return _at(
            hole, "E6101", message, f"run `envc lock --update` where the model is reachable, then commit {LOCK_NAME}"
        )
    message = (
        f"the fill of `{hole.key}` in {LOCK_NAME} is stale: the request envc would send now differs "
        f"(the spec, the prompt, the model or a sampling parameter changed)"
    )
    return _at(
        hole, "E6102", message, f"run `envc lock --update` where the model is reachable, then commit {LOCK_NAME}"
    )


def _failure(session: Session, config: LLMConfig) -> Diagnostic:
    if session.error is not None:
        message = f"asking the model for `{session.hole.key}` failed ({session.error.kind}): {session.error}"
        hint = "check `model` and `base_url` in [tool.envc.llm], the key variable and the server; nothing was written"
        return _at(session.hole, "E6103", message, hint)
    last = session.attempts[-1] if session.attempts else None
    stage = last.failure if last is not None else "reply"
    notes = tuple(f"attempt {a.attempt}: failed `{a.failure}`" for a in session.attempts if a.failure)
    notes += tuple(last.problems) if last is not None else ()
    message = (
        f"the model's fill of `{session.hole.key}` was refused: it still failed the `{stage}` check "
        f"after {len(session.attempts)} attempts"
    )
    hint = "make the llm description more precise, raise `attempts` in [tool.envc.llm], or write the body by hand"
    return _at(session.hole, "E6104", message, hint, notes)


def _no_longer_passing(located: list[Located], holes: list[Hole]) -> list[Diagnostic]:
    """E6107 per hole whose locked fill the current compiler refuses, with the reasons."""
    by_hole: dict[Hole, list[Diagnostic]] = {}
    for item in located:
        hole = fills_.hole_at_declaration(item, holes) or holes[0]
        by_hole.setdefault(hole, []).append(item.original)
    found = []
    for hole, diagnostics in by_hole.items():
        message = f"the locked fill of `{hole.key}` no longer passes the checks"
        notes = tuple(f"{d.code} {d.message}" + (f" ({'; '.join(d.notes)})" if d.notes else "") for d in diagnostics)
        found.append(_at(hole, "E6107", message, "run `envc lock --update --all` to fill it again", notes))
    return found


def _entry(session: Session, config: LLMConfig, qc: bool) -> LockEntry:
    """The lock entry of an accepted session: its body, hashes and provenance."""
    assert session.body is not None
    completion = session.completion
    checks = list(fills_.STAGES if qc else fills_.STAGES[: fills_.STAGES.index("effects") + 1])
    provenance = {
        "attempts": [asdict(a) for a in session.attempts],
        "checks": checks,
        "envc": _envc_version(),
        "filled_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finish_reason": completion.finish_reason if completion else "",
        "response_model": completion.model if completion else "",
        "system_fingerprint": completion.system_fingerprint if completion else "",
        "usage": dict(completion.usage) if completion else {},
    }
    return LockEntry(
        request_sha=session.key,
        body=session.body,
        model=config.model,
        attempt=len(session.attempts),
        accepted_request_sha=session.accepted_request_sha(),
        provenance=provenance,
    )


def _envc_version() -> str:
    try:
        return metadata.version("envc")
    except metadata.PackageNotFoundError:
        return "unknown"


# --------------------------------------------------------------------------- envc lock


@dataclass
class LockRun:
    """What `envc lock` found or did, over every spec it was given."""

    statuses: list[HoleStatus] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)


def lock_specs(specs: list[Path], options: FillOptions) -> LockRun:
    """Status (`mode="status"`) or refresh (`"update"`, `"refill"`) of the lock entries of
    `specs`; entries of spec files that no longer exist are orphans, dropped on refresh."""
    from compiler.analyse import analyse_file
    from compiler.project import display_path

    run = LockRun()
    for spec in specs:
        analysis = analyse_file(spec)
        run.sources.update(analysis.sources)
        run.diagnostics.extend(analysis.diagnostics)
        if analysis.environment is None:
            continue
        spec_options = FillOptions(
            options.root,
            options.mode,
            options.qc,
            display_path(spec, options.root),
            options.log,
            options.stats,
            options.provider,
        )
        resolved = resolve_spec(spec, analysis, spec_options)
        run.statuses += resolved.statuses
        run.diagnostics += resolved.diagnostics
        if resolved.lock_written:
            run.written.append(lock_path(spec))
    for lock_file in sorted({lock_path(spec) for spec in specs}):
        run.statuses += _orphaned_specs(lock_file, options, run)
    return run


def _orphaned_specs(lock_file: Path, options: FillOptions, run: LockRun) -> list[HoleStatus]:
    lock, _ = read_lock(lock_file)
    gone = sorted(key for key in lock.entries if not (lock_file.parent / key).is_file())
    found = [HoleStatus(key, decl, "orphan", "the spec no longer exists") for key in gone for decl in lock.entries[key]]
    if gone and options.mode in ("update", "refill"):
        for key in gone:
            lock.entries.pop(key)
        if write_lock(lock, set(gone)) and lock_file not in run.written:
            run.written.append(lock_file)
    return found
