"""`envc draft`: a whole spec written by the model from a description, checked and healed.

The model gets the body-language and declaration references, the prototype to extend
(the shipped source of the archetype asked for) and a complete example spec
(`example.envspec`, kept compiling by tests/llm), and writes a spec. The draft then
goes through the stages a fill does, on the whole file: `reply` (a spec could be read
out of the answer), `parse`, `structure` (the header names the environment and its
archetype as asked, every body is in the body language, there are tests), `types`,
`effects`, `lower`, `static` and `dynamic`. A failure goes back to the model with the
problems at lines of its spec, for at most `attempts` requests.

An accepted draft is written to `specs/NAME.envspec` (never over an existing file) and
recorded in the lock beside it under the declaration `draft`, keyed by the first
request's hash like any fill; asking again for the same profile while the entry is
current writes the recorded spec without a request. The batch form runs profiles
concurrently, records each outcome in a JSON report as soon as it is known (so an
interrupted batch resumes where it stopped), and reports the pass rate.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from compiler.diagnostics import Diagnostic
from compiler.front.load import load_source, prototypes_dir
from compiler.front.parse import parse_source
from compiler.llm import fill as fills_
from compiler.llm import prompt
from compiler.llm.config import LLMConfig
from compiler.llm.heal import MAX_PROBLEMS
from compiler.llm.lock import DRAFT_DECL, AttemptRecord, LockEntry, lock_path, read_lock, spec_key, write_lock
from compiler.llm.provider import Message, Provider, ProviderError, make_request
from compiler.llm.stats import HealStats

NAME = re.compile(r"[a-z][a-z0-9_]*")
Status = Literal["accepted", "refused", "failed", "exists"]

SYSTEM = """\
You write environment specs in envspec, a small declarative language for the tool-use
environments RL agents are trained in. Given a description, you write one complete spec:
a header, enums, records, state, world data, scenarios, tools with bodies in the envspec
body language, helpers, tests and tasks. Reply with the whole spec in one fenced block:

```envspec
environment name:
    ...
```

The body language is NOT Python: use only what the references below describe. Every
tool has a docstring; tools that change state check their preconditions with `require`
and report failures with domain errors; tests exercise every tool, the refusals too.
"""


@dataclass(frozen=True)
class Profile:
    """One environment to draft: a row of the batch JSONL, or the command line."""

    name: str
    description: str
    domains: tuple[str, ...] = ()
    archetype: str = "custom"
    world: Any = None
    """World data the environment must declare (any JSON), or None."""
    domain: str = ""
    """The library domain the environment belongs to (a catalog row's, e.g. `Travel`), or ""."""
    scenario: str = ""
    """The library scenario it models (a catalog row's title, e.g. `Airline reservations`), or ""."""

    def problem(self) -> str:
        """Why this profile cannot be drafted, or ""."""
        if not NAME.fullmatch(self.name):
            return f"`{self.name}` is not a valid environment name (lower_snake_case)"
        if not self.description.strip():
            return f"`{self.name}` has no description"
        if self.archetype not in archetypes():
            return f"unknown archetype `{self.archetype}`; choose one of: {', '.join(archetypes())}"
        return ""


def archetypes() -> list[str]:
    return ["custom", *sorted(p.stem for p in prototypes_dir().glob("*.envspec"))]


def read_profiles(path: Path) -> tuple[list[Profile], list[str]]:
    """The profiles of a JSONL file (one JSON object per line), and what is wrong with it."""
    profiles: list[Profile] = []
    problems: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"cannot read {path}: {exc}"]
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append(f"{path}:{number}: not JSON: {exc}")
            continue
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            problems.append(f"{path}:{number}: expected an object with a `name`")
            continue
        domains = row.get("domains", [])
        profile = Profile(
            name=row["name"],
            description=str(row.get("description", "")),
            domains=tuple(_domains(domains)),
            archetype=str(row.get("archetype") or row.get("archetype_hint") or "custom"),
            world=row.get("world", row.get("world_data")),
            domain=str(row.get("domain") or ""),
            scenario=str(row.get("scenario") or ""),
        )
        problem = profile.problem()
        if problem:
            problems.append(f"{path}:{number}: {problem}")
        elif any(p.name == profile.name for p in profiles):
            problems.append(f"{path}:{number}: `{profile.name}` appears twice")
        else:
            profiles.append(profile)
    return profiles, problems


def _domains(value: Any) -> list[str]:
    if isinstance(value, str):
        return [d.strip() for d in value.split(",") if d.strip()]
    return [str(d).strip() for d in value if str(d).strip()] if isinstance(value, list) else []


# --------------------------------------------------------------------------- the request


def _asset(name: str) -> str:
    return (Path(__file__).resolve().parent.parent / "llm" / name).read_text(encoding="utf-8").strip()


def draft_messages(profile: Profile) -> list[Message]:
    references = prompt.language_reference() + "\n" + _asset("spec_reference.md")
    parts = [
        f"Write the spec of an environment named `{profile.name}`.",
        f"Description: {profile.description.strip()}",
    ]
    if profile.domain or profile.scenario:
        parts.append(_library_row(profile))
    if profile.domains:
        parts.append("Domains: " + ", ".join(profile.domains))
    if profile.archetype != "custom":
        source = (prototypes_dir() / f"{profile.archetype}.envspec").read_text(encoding="utf-8")
        parts.append(
            f'Archetype: {profile.archetype}. Extend its prototype with `extends "{profile.archetype}"` and '
            "`archetype " + profile.archetype + "` in the header: rename its records, tools and fields to the "
            "domain's words, override what differs, re-declare its world fields with the domain's values, and "
            "add the domain's own tools. The prototype:\n\n```envspec\n" + source.strip() + "\n```"
        )
    else:
        parts.append("Archetype: custom (`archetype custom`; extend no prototype).")
    if profile.world is not None:
        data = json.dumps(profile.world, indent=2, sort_keys=True, ensure_ascii=False)
        parts.append("Declare this world data (inline, in a `world:` block, with fitting types):\n\n" + data)
    parts.append(
        "A complete spec in this language, for the style:\n\n```envspec\n" + _asset("example.envspec") + "\n```"
    )
    parts.append(
        f"Requirements: the header is `environment {profile.name}:` with a title, the archetype, the domains and "
        "a doc; at least three tools, at least one of which changes state; at least one scenario; at least two "
        "tests. Reply with the whole spec in one ```envspec block, and nothing else."
    )
    return [Message("system", SYSTEM + "\n" + references), Message("user", "\n\n".join(parts) + "\n")]


def _library_row(profile: Profile) -> str:
    """The profile's place in the environment library (its catalog row), so the model
    writes the scenario a user of that domain would recognise, not a generic one."""
    row = ", ".join(
        part
        for part in (
            f"domain {profile.domain}" if profile.domain else "",
            f"scenario {profile.scenario}" if profile.scenario else "",
        )
        if part
    )
    return (
        f"Library row: {row}. Name the tools, records and fields in that domain's words and seed "
        "realistic data for that scenario."
    )


def extract_spec(reply: str) -> str | None:
    """The spec in a reply: its first fenced block (the whole reply when it has none)."""
    match = prompt.FENCE.search(reply)
    text = match.group(2) if match else ("" if "```" in reply else reply)
    text = "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).strip("\n")
    return text + "\n" if text.strip() else None


# --------------------------------------------------------------------------- checking a draft


@dataclass
class DraftCheck:
    stage: str
    problems: list[str] = field(default_factory=list)


def check_draft(text: str, target: Path, profile: Profile, display: str, qc: bool) -> DraftCheck:
    """The first stage the drafted spec fails, with its problems at lines of the spec."""
    lines = text.split("\n")
    with fills_.ANALYSIS_LOCK:
        parsed = parse_source(text, str(target))
        if parsed.diagnostics:
            return DraftCheck("parse", _problems(parsed.diagnostics, lines))
        assert parsed.module is not None
        wrong = _structure(parsed.module, profile)
        if wrong:
            return DraftCheck("structure", wrong)
        from compiler.analyse import analyse_loaded

        analysis = analyse_loaded(load_source(text, str(target)))
    if analysis.diagnostics or analysis.environment is None:
        stage = "effects" if all(d.code.startswith("E4") for d in analysis.diagnostics) else "types"
        return DraftCheck(stage, _problems(analysis.diagnostics, lines) or ["the spec does not analyse"])
    if not qc:
        return DraftCheck("")
    from compiler.check import check_packages
    from compiler.check.package import Package
    from compiler.check.positions import to_diagnostics
    from compiler.lower import lower
    from compiler.lower.errors import LoweringError

    env = analysis.environment
    try:
        with fills_.ANALYSIS_LOCK:  # drafts of a batch are checked from several threads
            files = lower(env, display)
    except LoweringError as exc:
        return DraftCheck("lower", [str(exc)])
    package = Package(env=env, name=env.header.name, files=files, inputs=analysis.inputs())
    result = check_packages([package], dynamic=True)[package.name]
    if result.static_ok and result.dynamic_ok:
        return DraftCheck("")
    found = to_diagnostics(package, result)
    return DraftCheck("static" if not result.static_ok else "dynamic", _problems(found, lines))


def _structure(module: Any, profile: Profile) -> list[str]:
    header = module.header
    problems = []
    if header is None or header.name != profile.name:
        problems.append(f"the header must be `environment {profile.name}:`")
    elif profile.archetype != "custom" and header.extends != profile.archetype:
        problems.append(f'the header must say `extends "{profile.archetype}"`')
    for decl in [*module.tools, *module.fns]:
        if decl.escape is not None and decl.escape.kind == "python":
            problems.append(f"line {decl.line}: `{decl.name}` has a python body: {fills_.MODEL_WRITES_NO_PYTHON}")
        elif decl.escape is not None:
            problems.append(f"line {decl.line}: `{decl.name}` has an llm body; write it in the body language")
    if not module.tests:
        problems.append("the spec has no `test`: write tests that exercise the tools")
    return problems


def _problems(diagnostics: list[Diagnostic], lines: list[str]) -> list[str]:
    found = []
    for d in diagnostics[:MAX_PROBLEMS]:
        shown = lines[d.line - 1].strip() if 0 < d.line <= len(lines) else ""
        where = f"line {d.line}, column {d.col}" + (f" (`{shown}`)" if shown else "")
        hint = d.effective_hint()
        found.append(f"{where}: {d.code} {d.message}" + (f" (hint: {hint})" if hint else ""))
    return found


# --------------------------------------------------------------------------- drafting one


@dataclass
class DraftContext:
    config: LLMConfig
    provider: Provider
    stats: HealStats
    root: Path
    qc: bool = True
    log: Callable[[str], None] = lambda _message: None


@dataclass
class DraftOutcome:
    name: str
    status: Status
    spec: str
    """Where the spec is (or would be), relative to the project."""
    attempts: list[AttemptRecord] = field(default_factory=list)
    detail: str = ""
    from_lock: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["attempts"] = [asdict(a) for a in self.attempts]
        return data


def draft_one(profile: Profile, target: Path, ctx: DraftContext) -> DraftOutcome:
    """Draft `profile` into `target`: from a current lock entry, else from the model."""
    from compiler.project import display_path

    display = display_path(target, ctx.root)
    if target.exists():
        return DraftOutcome(profile.name, "exists", display, detail=f"{display} exists already; nothing was written")
    lock_file = lock_path(target)
    lock, _ = read_lock(lock_file)
    key = spec_key(target, lock_file)
    first = make_request(ctx.config, draft_messages(profile), 1)
    entry = lock.get(key, DRAFT_DECL)
    if entry is not None and entry.request_sha == first.sha():
        _write_new(target, entry.body)
        return DraftOutcome(profile.name, "accepted", display, from_lock=True, detail="written from the lock")
    messages = list(first.messages)
    attempts: list[AttemptRecord] = []
    subject = f"{display}::{DRAFT_DECL}"
    while len(attempts) < ctx.config.attempts:
        number = len(attempts) + 1
        request = make_request(ctx.config, messages, number)
        ctx.log(f"asking {ctx.config.model} to draft {profile.name} (attempt {number})")
        try:
            completion = ctx.provider.complete(request)
        except ProviderError as exc:
            attempts.append(AttemptRecord(number, request.sha(), "request", (f"{exc.kind}: {exc}",)))
            ctx.stats.outcome(subject, False, number)
            return DraftOutcome(profile.name, "failed", display, attempts, f"the request failed ({exc.kind}): {exc}")
        messages.append(Message("assistant", completion.text))
        text = extract_spec(completion.text)
        ctx.stats.record(subject, number, "reply", text is not None)
        verdict = check_draft(text, target, profile, display, ctx.qc) if text is not None else DraftCheck("reply")
        if text is None:
            verdict.problems = ["the reply holds no spec: put it in one ```envspec block"]
        _record(ctx.stats, subject, number, verdict.stage, ctx.qc)
        attempts.append(AttemptRecord(number, request.sha(), verdict.stage, tuple(verdict.problems[:MAX_PROBLEMS])))
        if not verdict.stage and text is not None:
            try:
                _write_new(target, text)
            except FileExistsError:
                return DraftOutcome(profile.name, "exists", display, attempts, f"{display} appeared meanwhile")
            except OSError as exc:
                return DraftOutcome(profile.name, "failed", display, attempts, f"cannot write {display}: {exc}")
            lock.put(key, DRAFT_DECL, _entry(first.sha(), text, ctx.config, attempts, completion, ctx.qc))
            try:
                write_lock(lock, {key})
            except OSError as exc:
                ctx.log(f"cannot write {lock_file}: {exc}; {display} is written but not locked")
            ctx.stats.outcome(subject, True, number)
            return DraftOutcome(profile.name, "accepted", display, attempts)
        messages.append(prompt.repair_message(verdict.stage, verdict.problems[:MAX_PROBLEMS], None))
    ctx.stats.outcome(subject, False, len(attempts))
    last = attempts[-1].failure if attempts else "reply"
    return DraftOutcome(
        profile.name, "refused", display, attempts, f"still failing `{last}` after {len(attempts)} attempts"
    )


def _record(stats: HealStats, subject: str, number: int, failed: str, qc: bool) -> None:
    """Stages after `reply` up to the failed one (all that ran, when none failed)."""
    ran = fills_.STAGES[1:] if qc else fills_.STAGES[1 : fills_.STAGES.index("effects") + 1]
    if failed == "reply":
        return
    for stage in ran[: ran.index(failed) + 1] if failed else ran:
        stats.record(subject, number, stage, stage != failed)


def _entry(
    sha: str, text: str, config: LLMConfig, attempts: list[AttemptRecord], completion: Any, qc: bool
) -> LockEntry:
    return LockEntry(
        request_sha=sha,
        body=text,
        model=config.model,
        attempt=len(attempts),
        accepted_request_sha=attempts[-1].request_sha,
        provenance={
            "attempts": [asdict(a) for a in attempts],
            "checks": list(fills_.STAGES if qc else fills_.STAGES[: fills_.STAGES.index("effects") + 1]),
            "filled_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "finish_reason": completion.finish_reason,
            "response_model": completion.model,
            "system_fingerprint": completion.system_fingerprint,
        },
    )


def _write_new(target: Path, text: str) -> None:
    """Write a new spec in one step (a temporary file, then a hard link to the name,
    which fails if it exists), never over an existing file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        try:
            os.link(temp, target)
        except FileExistsError:
            raise
        except OSError:  # no hard links on this file system: create it exclusively
            with open(target, "x", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
    finally:
        Path(temp).unlink(missing_ok=True)


# --------------------------------------------------------------------------- the batch form


@dataclass
class BatchReport:
    path: Path
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)
    guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def load(path: Path) -> BatchReport:
        report = BatchReport(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return report
        outcomes = data.get("profiles") if isinstance(data, dict) else None
        if isinstance(outcomes, dict):
            report.outcomes = {str(k): v for k, v in outcomes.items() if isinstance(v, dict)}
        return report

    def summary(self, stats: HealStats) -> dict[str, Any]:
        statuses = [o.get("status") for o in self.outcomes.values()]
        done = [s for s in statuses if s in ("accepted", "refused", "failed")]
        accepted = statuses.count("accepted")
        return {
            "profiles": len(statuses),
            "accepted": accepted,
            "refused": statuses.count("refused"),
            "failed": statuses.count("failed"),
            "pass_rate": round(accepted / len(done), 4) if done else 0.0,
            "healing": stats.to_json(),
        }

    def save(self, stats: HealStats) -> None:
        with self.guard:
            data = {"profiles": dict(sorted(self.outcomes.items())), "summary": self.summary(stats)}
            text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temp, self.path)


def draft_batch(
    profiles: list[Profile],
    folder: Path,
    report: BatchReport,
    ctx: DraftContext,
    retry: bool = False,
    progress: Callable[[int, int, DraftOutcome], None] | None = None,
) -> list[DraftOutcome]:
    """Draft every profile not done yet (per the report), `concurrency` at a time; the
    report is saved after each one, so an interrupted batch resumes where it stopped."""
    pending = []
    for profile in profiles:
        earlier = report.outcomes.get(profile.name, {})
        done = earlier.get("status") == "accepted" and (folder / f"{profile.name}.envspec").exists()
        if done or (earlier.get("status") in ("refused", "failed") and not retry):
            continue
        pending.append(profile)
    finished: list[DraftOutcome] = []
    counter = threading.Lock()

    def run(profile: Profile) -> DraftOutcome:
        outcome = draft_one(profile, folder / f"{profile.name}.envspec", ctx)
        with report.guard:
            report.outcomes[profile.name] = outcome.to_json()
        report.save(ctx.stats)
        with counter:
            finished.append(outcome)
            if progress is not None:
                progress(len(finished), len(pending), outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, min(ctx.config.concurrency, len(pending) or 1))) as pool:
        results = list(pool.map(run, pending))
    report.save(ctx.stats)
    return results
