"""Stage 8c, tasks: verifiable RL tasks from executable tool chains, audited before kept.

Each task comes from one ground truth, a sampled chain (compiler/synth/sample.py): its start
(a named scenario), its calls (the gold solution) and the state they leave. From it:

- the `prompt`, from seeded templates per tool that name every value a write call needs
  and the agent cannot look up (a value an earlier call returns is described, not named);
- the `verifier`, from the state difference the gold calls make: one check per changed
  path (`equals` its final value, or `absent`), and a collateral rule that nothing else
  may change;
- the OpenAI tool schemas of the environments involved, `max_turns` and `timeout_s`.

A candidate is kept only if every audit passes (`AUDITS`): gold scores 1, doing nothing
scores 0, perturbed gold fails, the prompt names what the checks expect and nothing the
environment computes, every check concerns a path a gold write changes and every gold
write is checked, no other arguments for the same tools pass, two replays agree, and
baseline "hacking" policies score 0. Scores come from the `scoring.py` every generated
package ships, so what is audited here is what trainers run.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from compiler import ir
from compiler.lower.schema import openai_tools
from compiler.synth import sample

AUDITS = (
    "gold_scores_1",
    "nothing_scores_0",
    "workspace_script",
    "path_consistency",
    "perturbations_fail",
    "data_consistency",
    "information_separation",
    "objective_consistency",
    "answer_uniqueness",
    "determinism",
    "hacking_floor",
)
LLM_AUDITS = ("llm_request", "rubric")
"""Run after `AUDITS` when a model writes the requests (compiler/synth/model_requests.py)."""
MAX_TURNS = 32
TIMEOUT_S = 300
UNIQUENESS_TRIES = 6
"""Other argument draws for the same tools tried by the uniqueness audit."""
RANDOM_CALLS = 8
"""Calls made by the random-valid-calls baseline."""
CANDIDATES_PER_TASK = 8
"""At most this many chains are drawn per task asked for."""
PARTIAL_FLOOR = 0.5
"""The most a baseline policy may earn on a partial-credit task (binary tasks: 0)."""
WORKSPACE_SHARE = 0.5
"""Share of one-environment chains of a file-workspace environment that become workspace
tasks (the paper's four artifacts from a seeded plan); the rest stay chain tasks."""
FILES_FIELD = "files"
"""The state field of a file-workspace environment: path -> file record."""
PATH_ARGUMENTS = ("path", "source", "destination")
"""Arguments of file-workspace tools that name a path of the workspace."""
CHANGE_TRIES = 4
"""Seeded changes tried on a sampled task's start before it keeps the scenario as it is."""
WHOLE_FIELD_BYTES = 16_384
"""A changed top-level field up to this size (JSON) is set whole; a bigger one by JSON Pointer."""


@dataclass(frozen=True)
class TaskOptions:
    tasks: int
    seed: int = 0
    envs: tuple[int, int] = (1, 1)
    min_len: int = 2
    max_len: int = 4
    max_turns: int = MAX_TURNS
    timeout_s: int = TIMEOUT_S


@dataclass
class Report:
    """Audit pass rates over every candidate, and why candidates were rejected."""

    candidates: int = 0
    kept: int = 0
    passed: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    per_env: Counter[str] = field(default_factory=Counter)
    baseline_rewards: list[float] = field(default_factory=list)
    declared: dict[str, str] = field(default_factory=dict)
    """Each spec `task`: "kept", "rejected by AUDIT: why" or "not expressible: why"."""
    audits: tuple[str, ...] = AUDITS
    """The audits run: `AUDITS`, then `LLM_AUDITS` when a model writes the requests."""
    llm: dict[str, Any] = field(default_factory=dict)
    """With a model: requests asked and accepted per attempt, failures, answers from the lock."""

    def to_json(self) -> dict[str, Any]:
        rates = {a: round(self.passed[a] / self.candidates, 4) if self.candidates else 0.0 for a in self.audits}
        floor = sum(self.baseline_rewards) / len(self.baseline_rewards) if self.baseline_rewards else 0.0
        return {
            "candidates": self.candidates,
            "kept": self.kept,
            "keep_rate": round(self.kept / self.candidates, 4) if self.candidates else 0.0,
            "audit_pass_rates": rates,
            "rejected": dict(sorted(self.rejected.items())),
            "tasks_per_env": dict(sorted(self.per_env.items())),
            "baseline_mean_reward": round(floor, 6),
            "declared": dict(sorted(self.declared.items())),
            **({"llm": self.llm} if self.llm else {}),
        }


class RequestWriter(Protocol):
    """Writes a task's request with a model (compiler/synth/model_requests.py): the task with the new
    request, audited again, or `AuditFailed` (`llm_request`, `rubric`) with the reason."""

    def rewrite(self, task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> dict[str, Any]: ...

    def summary(self) -> dict[str, Any]:
        """What the report says about the model's requests (asked, accepted, from the lock)."""
        ...


class ChainError(ValueError):
    """A chain row given to `synthesise` that does not fit the environments: `number`
    counts the rows from 1 (the line of a chains file), `problem` says what is wrong."""

    def __init__(self, number: int, problem: str) -> None:
        super().__init__(f"chain {number}: {problem}")
        self.number = number
        self.problem = problem


class AuditFailed(Exception):
    def __init__(self, audit: str, why: str) -> None:
        super().__init__(f"{audit}: {why}")
        self.audit = audit
        self.why = why


# =========================================================================== building a task


def build_task(
    chain: dict[str, Any],
    envs: dict[str, sample.SampleEnv],
    options: TaskOptions,
    request: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    initial_state: dict[str, Any] | None = None,
    workspace: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The task of one chain row (not yet audited). A declared task brings its own
    request and checks; a workspace task its start (`initial_state`) and its script."""
    names: list[str] = chain["envs"]
    cross = len(names) > 1
    if initial_state is None:
        initial_state = _initial_state(chain, envs) if request is None else _initial_state(chain)
    gold = [{"env": c["env"], "tool": c["tool"], "args": c["args"]} for c in chain["calls"]]
    finals, initial, _ = replay(envs, {"initial_state": initial_state}, gold, cross)
    if checks is None:
        checks = [
            {"env": name, **check, "weight": 1.0}
            for name in names
            for check in expected_changes(initial[name], finals[name])
        ]
    allowed = {name: envs[name].package.scoring.changed_paths(initial[name], finals[name]) for name in names}
    rng = random.Random(chain["seed"])
    task: dict[str, Any] = {
        "envs": names,
        "initial_state": initial_state,
        "prompt": request if request is not None else prompt(chain, envs, initial, rng),
        "tools": [t for name in names for t in _tool_schemas(envs[name], cross)],
        "gold_calls": gold,
        "max_turns": options.max_turns,
        "timeout_s": options.timeout_s,
        "verifier": {"checks": checks, "collateral": {"allowed": allowed}},
        "reward": "partial" if any(_is_workspace_env(envs[n]) for n in names) else "binary",
        "source": {"chain": chain["id"], "seed": chain["seed"]}
        if request is None or workspace is not None
        else {"declared": chain["id"]},
    }
    if workspace is not None:
        task["workspace"] = workspace
    return with_id(task)


def with_id(task: dict[str, Any]) -> dict[str, Any]:
    """The task with its id first: a hash of the rest (equal tasks, equal ids)."""
    digest = hashlib.sha256(json.dumps(task, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    return {"id": f"task-{digest}", **task}


def audit_rng(task: dict[str, Any]) -> random.Random:
    """The audits' random numbers for a sampled task: from its chain's seed alone."""
    return random.Random(f"audit:{task['source'].get('seed', task['source'].get('declared'))}")


def _is_workspace_env(env: sample.SampleEnv) -> bool:
    return env.model.header.archetype == "file_workspace"


def _initial_state(chain: dict[str, Any], envs: dict[str, sample.SampleEnv] | None = None) -> dict[str, Any]:
    """Per environment: the named scenario the chain starts from (None for S0) and the
    seeded changes set on top of it (`seeded_changes`; none without `envs`)."""
    starts: dict[str, Any] = {}
    for name in chain["envs"]:
        scenario = chain["scenarios"][name]
        changes = seeded_changes(envs[name], scenario, chain) if envs is not None else {}
        starts[name] = {"scenario": scenario, "changes": changes}
    return starts


def open_session(env: sample.SampleEnv, start: dict[str, Any]) -> Any:
    """A live session at a task's start for one environment: its scenario, then its changes."""
    session = env.package.Environment(start["scenario"])
    if start.get("changes"):
        session = env.package.Environment(env.package.scoring.apply_changes(session.state(), start["changes"]))
    return session


# --------------------------------------------------------------------------- seeded changes


def seeded_changes(env: sample.SampleEnv, scenario: str | None, chain: dict[str, Any]) -> dict[str, Any]:
    """A small seeded change to the start, so tasks vary beyond the shipped scenarios: one
    field of one record the chain never names, set to a value the same field has in
    another record. Kept only if the chain still runs the same from the changed start (no
    call fails that succeeded; every write returns what it returned); after `CHANGE_TRIES`
    misses the task starts from the scenario as it is. A field up to `WHOLE_FIELD_BYTES`
    is set whole (what every consumer of `changes` applies), a bigger one by JSON Pointer."""
    rng = random.Random(f"changes:{chain['seed']}:{env.name}")
    state = env.package.Environment(scenario).state()
    calls = [c for c in chain["calls"] if c["env"] == env.name]
    named = _scalars([[c["args"], c["result"]] for c in calls])
    options = _change_options(state, named)
    for _ in range(min(CHANGE_TRIES, len(options))):
        field_name, key, attribute, values = options.pop(rng.randrange(len(options)))
        value = rng.choice(values)
        record = dict(state[field_name][key], **{attribute: value})
        if len(json.dumps(state[field_name], default=str)) <= WHOLE_FIELD_BYTES:
            changes = {field_name: {**state[field_name], key: record}}
        else:
            changes = {f"/{_pointer(field_name)}/{_pointer(key)}/{_pointer(attribute)}": value}
        if _runs_the_same(env, scenario, changes, calls):
            return changes
    return {}


def _change_options(state: dict[str, Any], named: set[Any]) -> list[tuple[str, str, str, list[Any]]]:
    """(field, key, attribute, other values) for each scalar attribute of a record in a map
    field that the chain does not name and that another record holds differently."""
    options = []
    named_keys = {str(value) for value in named}  # state() keys are text; arguments may be numbers
    for field_name in sorted(state):
        records = state[field_name]
        if field_name in sample.BUILTIN_FIELDS or not isinstance(records, dict) or len(records) < 2:
            continue
        if not all(isinstance(r, dict) for r in records.values()):
            continue
        for key in sorted(records):
            if str(key) in named_keys:
                continue
            for attribute, current in sorted(records[key].items()):
                if attribute == "id" or current == key:
                    continue  # a record's identity is not a detail to vary
                if not isinstance(current, (str, int, float)) or isinstance(current, bool):
                    continue
                others = sorted(
                    {r.get(attribute) for r in records.values() if type(r.get(attribute)) is type(current)} - {current},
                    key=repr,
                )
                if others and not _scalars(others) & named:
                    options.append((field_name, key, attribute, others))
    return options


def _runs_the_same(
    env: sample.SampleEnv, scenario: str | None, changes: dict[str, Any], calls: list[dict[str, Any]]
) -> bool:
    try:
        session = open_session(env, {"scenario": scenario, "changes": changes})
    except Exception:  # the package refuses the changed state: this change does not fit
        return False
    for call in calls:
        result = session.call(tool_of(call), call["args"])
        if sample.is_failure(result) != sample.is_failure(call["result"]):
            return False
        if env.tools[tool_of(call)].writes and result != call["result"]:
            return False
    return True


def _tool_schemas(env: sample.SampleEnv, cross: bool) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = openai_tools(env.model, env.model.path)["tools"]
    if not cross:
        return tools
    renamed = []
    for tool in tools:
        function = dict(tool["function"], name=f"{env.name}{sample.CROSS_SEPARATOR}{tool['function']['name']}")
        renamed.append({**tool, "function": function})
    return renamed


def expected_changes(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """One check per changed path: `equals` the final value, `absent` for a removed key;
    an appended list item is checked by its index. Runtime fields are not checked."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        checks: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            if not path and key in sample.BUILTIN_FIELDS:
                continue
            child = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key not in after:
                checks.append({"path": child, "op": "absent"})
            elif key not in before:
                checks.append({"path": child, "op": "equals", "expected": after[key]})
            else:
                checks.extend(expected_changes(before[key], after[key], child))
        return checks
    if isinstance(before, list) and isinstance(after, list):
        if len(before) == len(after):
            return [c for i, (b, a) in enumerate(zip(before, after)) for c in expected_changes(b, a, f"{path}/{i}")]
        if after[: len(before)] == before:
            return [
                {"path": f"{path}/{i}", "op": "equals", "expected": after[i]} for i in range(len(before), len(after))
            ]
    return [{"path": path or "/", "op": "equals", "expected": after}]


# --------------------------------------------------------------------------- prompts

OPENERS = ("Please", "Could you", "I need you to", "Go ahead and", "Kindly")
JOINERS = (", then ", ". After that, ", "; next, ", ", and then ")


def prompt(
    chain: dict[str, Any], envs: dict[str, sample.SampleEnv], initial: dict[str, Any], rng: random.Random
) -> str:
    """The user's request: each write call of the chain in words, its arguments named,
    except values an earlier call produced (described by where they come from)."""
    known = {name: _discoverable(envs[name], state) for name, state in initial.items()}
    produced: dict[Any, str] = {}
    phrases = []
    for call in chain["calls"]:
        env = envs[call["env"]]
        tool_name = call["tool"].split(sample.CROSS_SEPARATOR, 1)[-1]
        if env.tools[tool_name].writes:
            phrase = _phrase(tool_name, call["args"], known[call["env"]], produced)
            if len(chain["envs"]) > 1:
                phrase = f"in {env.model.header.title or env.name}, {phrase}"
            phrases.append(phrase)
            known[call["env"]] |= _scalars(list(call["args"].values()))  # named now
        for value in _scalars(call["result"]):
            produced.setdefault(value, _humane(tool_name))
    opener = rng.choice(OPENERS)
    text = phrases[0]
    for phrase in phrases[1:]:
        text += rng.choice(JOINERS) + phrase
    ending = "?" if opener == "Could you" else "."
    return f"{opener} {text}{ending}"


def _discoverable(env: sample.SampleEnv, state: Any) -> set[Any]:
    """Values an agent can find without being told: in the initial state, the world data,
    or the tools' schemas (enum members)."""
    members = {m for enum in env.model.enums for m in enum.members}
    return _scalars(state) | _scalars(env.world) | members


def _phrase(tool: str, args: dict[str, Any], known: set[Any], produced: dict[Any, str]) -> str:
    words = [_humane(tool)]
    for name, value in args.items():
        label = _humane(name[:-3] if name.endswith("_id") else name)
        scalar = isinstance(value, (str, int, float)) and not isinstance(value, bool)
        if scalar and value in produced and value not in known:
            words.append(f"{label}: the one the {produced[value]} step gave")
        else:
            words.append(f"{label} {_show(value)}")
    if len(words) == 1:
        return words[0]
    return f"{words[0]} ({', '.join(words[1:])})"


def _humane(name: str) -> str:
    return name.replace("_", " ").strip()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _scalars(value: Any) -> set[Any]:
    """Every scalar (not bool, not None) inside a JSON value, keys of objects included."""
    found: set[Any] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update(k for k in item if isinstance(k, str))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
            found.add(item)
    return found


# =========================================================================== file-workspace tasks
#
# A Claw task comes from one ground truth, a seeded *plan* (a site, a month, a roster,
# a ledger and scoring rules), in one pass: the construction script (the plan and the
# functions below, emitted as a standalone standard-library Python file) builds the
# workspace files with their distractors and noisy records; the answer is computed from
# those files by the rules; the request names the output path; the verifier inspects
# that path, with partial credit by degree of completion. The functions between the two
# markers are copied into the script verbatim (`inspect.getsource`), so they use only
# the standard library and each other.

# --- workspace script: begin


def workspace_plan(seed: str) -> dict[str, Any]:
    """The ground truth of one workspace task, drawn from its seed alone."""
    rng = random.Random(f"workspace:{seed}")
    sites = ("lyon", "porto", "gdansk", "turin", "ghent", "brno", "tampere", "bilbao", "graz", "aarhus")
    first = ("Amira", "Bruno", "Chen", "Dana", "Emil", "Fatima", "Goran", "Hana", "Ivan", "Jonas", "Kai", "Lea")
    last = ("Haddad", "Keller", "Wei", "Okafor", "Novak", "Zahra", "Petrov", "Sato", "Morales", "Berg", "Rossi")
    roles = ("assembler", "inspector", "technician")
    teams = {"assembler": "line-a", "inspector": "qa", "technician": "maintenance"}
    site, month = rng.choice(sites), rng.randint(2, 12)
    base = rng.randint(1, 8) * 1000 + rng.randint(1, 8) * 10
    people = []
    for number, name in enumerate(rng.sample([f"{a} {b}" for a in first for b in last], rng.randint(6, 9))):
        role = rng.choice(roles)
        status = rng.choices(("active", "on_leave", "terminated"), weights=(8, 1, 1))[0]
        people.append(
            [
                f"E{base + number + 1}",
                name,
                role,
                teams[role],
                status,
                f"20{rng.randint(15, 24)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
            ]
        )
    weights = {role: [rng.randint(1, 4), rng.randint(2, 6)] for role in roles}
    return {
        "seed": seed,
        "site": site,
        "month": f"2025-{month:02d}",
        "previous": f"2025-{month - 1:02d}",
        "people": people,
        "weights": weights,
        "stale_weights": {role: [w + 1, p - 1] for role, (w, p) in weights.items()},
        "noise": rng.randint(0, 2**31),
    }


def workspace_paths(plan: dict[str, Any]) -> dict[str, str]:
    """Where each file of the plan lives; `output` is what the request asks for."""
    site, month, previous = plan["site"], plan["month"], plan["previous"]
    return {
        "readme": f"{site}/README.md",
        "roster": f"{site}/hr/employee_roster.csv",
        "stale_roster": f"{site}/hr/employee_roster_{previous}.csv",
        "ledger": f"{site}/ledger/output_{month}.csv",
        "draft_ledger": f"{site}/ledger/output_{month}_draft.csv",
        "previous_ledger": f"{site}/ledger/output_{previous}.csv",
        "rules": f"{site}/policy/scoring_rules.md",
        "stale_rules": f"{site}/policy/scoring_rules_2024.md",
        "previous_report": f"{site}/reports/scores_{previous}.csv",
        "output": f"{site}/reports/scores_{month}.csv",
    }


def workspace_files(plan: dict[str, Any]) -> dict[str, str]:
    """The workspace's files (path -> text): the sources, with noisy records (a repeated
    roster line, a conflicting one, a blank field; void, out-of-month, malformed and
    unknown-employee ledger rows) and distractors (a stale roster, a draft ledger,
    last month's ledger and report, superseded rules)."""
    rng = random.Random(plan["noise"])
    paths = workspace_paths(plan)
    people = [list(p) for p in plan["people"]]
    month, previous = plan["month"], plan["previous"]
    roster = [",".join(p) for p in people]
    twin = rng.choice(people)
    roster.append(",".join(twin))  # an identical repeat counts once
    clash = rng.choice([p for p in people if p is not twin])
    roster.append(",".join([clash[0], clash[1], "technician" if clash[2] != "technician" else "assembler", *clash[3:]]))
    blank = rng.choice([p for p in people if p is not twin and p is not clash])
    roster[people.index(blank)] = ",".join([blank[0], blank[1], "", *blank[3:]])
    header = "employee_id,name,role,team,status,start_date"
    ledger = []
    for person in people:
        for _ in range(rng.randint(1, 3)):
            day = rng.randint(1, 28)
            ledger.append(f"{month}-{day:02d},{person[0]},{rng.randint(5, 300)},{rng.randint(0, 5)},ok")
    someone = rng.choice(people)[0]
    ledger.append(f"{month}-0{rng.randint(1, 9)},{someone},{rng.randint(50, 200)},1,void")
    ledger.append(f"{previous}-28,{rng.choice(people)[0]},{rng.randint(50, 200)},0,ok")
    ledger.append(f"{month}-1{rng.randint(0, 9)},{rng.choice(people)[0]},{rng.randint(50, 200)},two,ok")
    ledger.append(f"{month}-2{rng.randint(0, 8)},{rng.choice(people)[0]},-{rng.randint(1, 9)},0,ok")
    ledger.append(f"{month}-1{rng.randint(0, 9)},E{rng.randint(9000, 9999)},{rng.randint(5, 90)},0,ok")
    rng.shuffle(ledger)
    columns = "date,employee_id,units,defects,status"

    def rules(title: str, weights: dict[str, list[int]], note: str) -> str:
        table = "".join(f"| {role} | {w} | {p} |\n" for role, (w, p) in sorted(weights.items()))
        return (
            f"# Monthly performance scoring ({title})\n\n{note}\n\n"
            f"Applies to the monthly report reports/scores_YYYY-MM.csv.\n\n## Who is scored\n"
            "- Every employee whose roster status is `active`.\n"
            "- A roster line with an empty field is incomplete: leave that employee out.\n"
            "- An employee_id on several roster lines that disagree is inconsistent: leave that employee out. "
            "Identical repeated lines count as one.\n\n## Which ledger rows count\n"
            "- Only rows dated inside the month being scored, whose status is `ok`.\n"
            "- units and defects must both be whole numbers of 0 or more; skip any other row.\n\n## Score\n"
            "score = units x unit weight - defects x defect penalty, summed over the employee's counted rows, "
            "with the weights of the employee's role:\n\n"
            f"| role | unit weight | defect penalty |\n|------|-------------|----------------|\n{table}\n"
            "A negative total is reported as 0. A scored employee without counted rows gets 0.\n"
        )

    stale = [list(p) for p in people]
    stale[0][4] = "on_leave" if stale[0][4] == "active" else "active"
    return {
        paths[
            "readme"
        ]: f"# {plan['site'].title()} plant\n\nhr/ staff records, ledger/ monthly output, policy/ rules, reports/ outputs.\n",
        paths["roster"]: "\n".join([header, *roster]) + "\n",
        paths["stale_roster"]: "\n".join([header, *(",".join(p) for p in stale[:-1])]) + "\n",
        paths["ledger"]: "\n".join([columns, *ledger]) + "\n",
        paths["draft_ledger"]: "\n".join([columns, *ledger[: len(ledger) // 2]]) + "\n",
        paths["previous_ledger"]: "\n".join([columns, *(row.replace(month, previous) for row in ledger[:4])]) + "\n",
        paths["rules"]: rules("current, in force since 2025-01-01", plan["weights"], "This version is in force."),
        paths["stale_rules"]: rules(
            "v2, SUPERSEDED", plan["stale_weights"], "Replaced on 2025-01-01; kept for reference."
        ),
        paths["previous_report"]: "employee_id,score\n"
        + "".join(f"{p[0]},{rng.randint(0, 900)}\n" for p in people[:3]),
    }


def workspace_answer(plan: dict[str, Any], files: dict[str, str]) -> str:
    """The report the request asks for, computed from the workspace files by the rules
    they state (not from the plan's records): what the verifier expects."""
    paths = workspace_paths(plan)
    weights: dict[str, tuple[int, int]] = {}
    for line in files[paths["rules"]].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].isdigit() and cells[2].isdigit():
            weights[cells[0]] = (int(cells[1]), int(cells[2]))
    lines: dict[str, set[str]] = {}
    for line in files[paths["roster"]].splitlines()[1:]:
        if line.strip():
            lines.setdefault(line.split(",")[0], set()).add(line.strip())
    scored: dict[str, str] = {}
    for employee, variants in lines.items():
        fields = next(iter(variants)).split(",")
        if len(variants) == 1 and "" not in fields and fields[4] == "active" and fields[2] in weights:
            scored[employee] = fields[2]
    totals = dict.fromkeys(scored, 0)
    for line in files[paths["ledger"]].splitlines()[1:]:
        cells = line.strip().split(",")
        if len(cells) != 5 or not cells[0].startswith(plan["month"] + "-") or cells[4] != "ok":
            continue
        if cells[1] in scored and cells[2].isdigit() and cells[3].isdigit():
            unit, penalty = weights[scored[cells[1]]]
            totals[cells[1]] += int(cells[2]) * unit - int(cells[3]) * penalty
    return "employee_id,score\n" + "".join(f"{e},{max(0, totals[e])}\n" for e in sorted(totals))


# --- workspace script: end

WORKSPACE_SCRIPT_FUNCTIONS = (workspace_plan, workspace_paths, workspace_files, workspace_answer)
WORKSPACE_MAIN = '''

def build() -> dict[str, str]:
    """The files this task adds to its scenario (path -> text)."""
    return workspace_files(workspace_plan(SEED))


def answer(files: dict[str, str]) -> str:
    """What the report must hold, computed from `files` (the workspace as the agent finds it)."""
    return workspace_answer(workspace_plan(SEED), files)


if __name__ == "__main__":
    # python SCRIPT        prints the files as JSON (keys sorted): what the task's changes add
    # python SCRIPT DIR    writes them below DIR
    import pathlib

    if len(sys.argv) > 1:
        for name, text in sorted(build().items()):
            target = pathlib.Path(sys.argv[1], name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="\\n")
    else:
        sys.stdout.write(json.dumps(build(), sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\\n")
'''


@functools.lru_cache(maxsize=256)
def workspace_script(seed: str) -> str:
    """The construction script of a workspace task: standalone, standard library only,
    the same bytes for the same seed (and envc version)."""
    header = (
        '"""Builds the workspace of an envc file-workspace task (generated by envc; standard library only).\n\n'
        "Run it to print the files it adds to the task's scenario as JSON, or with a folder to write them there.\n"
        '"""\n\nfrom __future__ import annotations\n\nimport json\nimport random\nimport sys\nfrom typing import Any\n\n'
        f"SEED = {json.dumps(seed)}\n\n\n"
    )
    return header + "\n\n".join(inspect.getsource(f) for f in WORKSPACE_SCRIPT_FUNCTIONS) + WORKSPACE_MAIN


@dataclass(frozen=True)
class BuiltWorkspace:
    files: dict[str, str]
    answer: Callable[[dict[str, str]], str]


@functools.lru_cache(maxsize=256)
def build_workspace(seed: str) -> BuiltWorkspace:
    """What the construction script of `seed` builds, and its answer function: the same
    functions the script holds, called here (no task row's code is ever run by envc)."""
    plan = workspace_plan(seed)
    return BuiltWorkspace(workspace_files(plan), functools.partial(workspace_answer, plan))


WORKSPACE_TOOLS = {
    "list": ("ls", "list_dir"),
    "read": ("read", "read_file"),
    "preview": ("csv_preview", "read", "read_file"),
    "write": ("write", "write_file"),
}
"""The tools a workspace task's gold solution uses, by role (a spec may rename them)."""
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def workspace_task(env: sample.SampleEnv, chain: dict[str, Any], options: TaskOptions) -> dict[str, Any] | None:
    """A file-workspace task from the chain's seed and start, the four artifacts in one
    pass (None when the environment lacks the tools): the task row (its config), the
    request, the construction script (`workspace.script`) and the verifier."""
    tools = {role: next((n for n in names if n in env.tools), "") for role, names in WORKSPACE_TOOLS.items()}
    if not all(tools.values()):
        return None
    seed, scenario = str(chain["seed"]), chain["scenarios"][env.name]
    script = workspace_script(seed)
    built = build_workspace(seed)
    start = env.package.Environment(scenario).state()
    added = {path: {"content": text, "version": 1} for path, text in built.files.items()}
    files = {**start[FILES_FIELD], **added}
    if len(json.dumps(files)) <= WHOLE_FIELD_BYTES:
        changes: dict[str, Any] = {FILES_FIELD: files}
    else:  # a big workspace: only the added files, by JSON Pointer
        changes = {f"/{FILES_FIELD}/{_pointer(path)}": record for path, record in added.items()}
    initial_state = {env.name: {"scenario": scenario, "changes": changes}}
    opened = open_session(env, initial_state[env.name]).state()[FILES_FIELD]
    answer = built.answer({path: record["content"] for path, record in opened.items()})
    plan = workspace_plan(seed)
    paths = workspace_paths(plan)
    preview = {"max_rows": 500} if tools["preview"] == "csv_preview" else {}
    calls = [
        (tools["list"], {"path": plan["site"], "recursive": True}),
        (tools["read"], {"path": paths["rules"]}),
        (tools["preview"], {"path": paths["roster"], **preview}),
        (tools["preview"], {"path": paths["ledger"], **preview}),
        (tools["write"], {"path": paths["output"], "content": answer}),
    ]
    session = open_session(env, initial_state[env.name])
    rows = [{"env": env.name, "tool": tool, "args": args, "result": session.call(tool, args)} for tool, args in calls]
    month = MONTHS[int(plan["month"][5:]) - 1]
    rng = random.Random(f"request:{seed}")
    request = (
        f"{rng.choice(OPENERS)} produce the {month} 2025 performance scores for the {plan['site'].title()} plant "
        f'following its current scoring policy, and save them as "{paths["output"]}": a CSV with the header '
        "employee_id,score and one row per scored employee in employee-id order, scores as whole numbers. "
        "Leave the source data as it is."
    )
    checks = workspace_checks(env.name, paths["output"], answer, built.files[paths["roster"]])
    task_chain = {**chain, "envs": [env.name], "calls": rows}
    workspace = {"env": env.name, "script": script, "outputs": [paths["output"]]}
    return build_task(task_chain, {env.name: env}, options, request, checks, initial_state, workspace)


def workspace_checks(env: str, output: str, answer: str, roster: str) -> list[dict[str, Any]]:
    """Partial credit by degree of completion: the file exists (weight 1), has the header
    (1), each expected row (2 each), no row of an employee who is not scored (1 shared by
    all), and exactly the expected text (1 per row). A file with only the header earns at
    most `PARTIAL_FLOOR` (3 of 3 + 3 per row)."""
    place = f"/{FILES_FIELD}/{_pointer(output)}"
    header, *rows = answer.splitlines()
    scored = {row.split(",")[0] for row in rows}
    others = sorted({line.split(",")[0] for line in roster.splitlines()[1:] if line.strip()} - scored)

    def check(path: str, op: str, weight: float, expected: Any = None) -> dict[str, Any]:
        return {
            "env": env,
            "path": path,
            "op": op,
            **({} if expected is None else {"expected": expected}),
            "weight": weight,
        }

    return [
        check(place, "present", 1.0),
        check(f"{place}/content", "contains", 1.0, header + "\n"),
        *(check(f"{place}/content", "contains", 2.0, f"\n{row}\n") for row in rows),
        *(check(f"{place}/content", "excludes", 1.0 / len(others), f"\n{employee},") for employee in others),
        check(f"{place}/content", "equals", float(max(1, len(rows))), answer),
    ]


# =========================================================================== running and scoring


def replay(
    envs: dict[str, sample.SampleEnv], task: dict[str, Any], calls: Sequence[dict[str, Any]], cross: bool = False
) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """Run calls on fresh sessions from the task's initial state: (final states, initial
    states, results)."""
    sessions = {name: open_session(envs[name], start) for name, start in task["initial_state"].items()}
    initial = {name: s.state() for name, s in sessions.items()}
    results = [sessions[c["env"]].call(c["tool"].split(sample.CROSS_SEPARATOR, 1)[-1], c["args"]) for c in calls]
    return {name: s.state() for name, s in sessions.items()}, initial, results


def score_calls(
    envs: dict[str, sample.SampleEnv], task: dict[str, Any], calls: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    finals, initial, _ = replay(envs, task, calls)
    any_env = envs[task["envs"][0]]
    result: dict[str, Any] = any_env.package.scoring.score(task, finals, initial)
    return result


# =========================================================================== audits


def audit(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> list[float]:
    """Run every audit; raise AuditFailed at the first that fails. Returns the rewards the
    baseline policies got (all 0 for a kept binary task)."""
    gold = task["gold_calls"]
    first = score_calls(envs, task, gold)
    if not (first["passed"] and first["reward"] == 1.0):
        raise AuditFailed("gold_scores_1", first["failure_reason"] or f"gold scores {first['reward']}")
    nothing = score_calls(envs, task, [])
    if nothing["passed"] or nothing["reward"] != 0.0:
        raise AuditFailed("nothing_scores_0", f"doing nothing scores {nothing['reward']}")
    _workspace_script(task, envs)
    _path_consistency(task, envs)
    _perturbations_fail(task, envs, rng)
    _data_consistency(task, envs)
    _information_separation(task, envs)
    _objective_consistency(task, envs)
    _answer_uniqueness(task, envs, rng)
    second = score_calls(envs, task, gold)
    if second != first or replay(envs, task, gold)[0] != replay(envs, task, gold)[0]:
        raise AuditFailed("determinism", "two replays of gold differ")
    return _hacking_floor(task, envs, rng)


def _workspace_script(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """A workspace task's construction script builds exactly the files its changes add to
    the scenario, its answer computed from the start's files is what gold writes, and
    every value the verifier expects comes from that answer (data consistency for files)."""
    workspace = task.get("workspace")
    if workspace is None:
        return
    if not isinstance(workspace, dict) or not isinstance(workspace.get("script"), str):
        raise AuditFailed("workspace_script", "`workspace` has no construction script")
    name = str(workspace.get("env"))
    if name not in task["envs"]:
        raise AuditFailed("workspace_script", f"`workspace.env` {name!r} is not an environment of the task")
    seed = str(task["source"].get("seed"))
    if workspace["script"] != workspace_script(seed):
        raise AuditFailed("workspace_script", f"the script is not the one envc builds from seed {seed!r}")
    built = build_workspace(seed)
    start = task["initial_state"][name]
    scenario_files = envs[name].package.Environment(start["scenario"]).state()[FILES_FIELD]
    files = open_session(envs[name], start).state()[FILES_FIELD]
    added = {path: record["content"] for path, record in files.items() if scenario_files.get(path) != record}
    if added != built.files:
        differ = sorted(set(added) ^ set(built.files)) or sorted(p for p in added if added[p] != built.files[p])
        raise AuditFailed("workspace_script", f"the script does not build the start's files: {differ[:3]}")
    answer = built.answer({path: record["content"] for path, record in files.items()})
    written = [c["args"].get("content") for c in task["gold_calls"] if c["args"].get("path") in workspace["outputs"]]
    if not written or written[-1] != answer:
        raise AuditFailed("workspace_script", "gold does not write the answer the script derives from the files")
    lines = {f"\n{line}\n" for line in answer.splitlines()} | {answer.splitlines()[0] + "\n"}
    for check in task["verifier"]["checks"]:
        expected, op = check.get("expected"), check["op"]
        fits = {
            "equals": expected == answer,
            "contains": expected in lines,
            "excludes": isinstance(expected, str) and expected not in answer,
        }.get(op, op in ("present", "not_null"))
        if not fits:
            raise AuditFailed("workspace_script", f"the check {op} {expected!r} does not follow from the files")


def _path_consistency(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """In a file workspace, every path a gold write names is named in the request, every
    output it leaves is inspected by a check, and every check inspects a path the request
    names (or one below a folder it names): the request and the verifier mean the same files."""
    for name in task["envs"]:
        if not _is_workspace_env(envs[name]):
            continue
        finals, initial, _ = replay(envs, task, task["gold_calls"])
        named: set[str] = set()
        for call in task["gold_calls"]:
            if call["env"] == name and envs[name].tools[tool_of(call)].writes:
                named |= {v for k, v in call["args"].items() if k in PATH_ARGUMENTS and isinstance(v, str)}
        for path in sorted(named):
            if not is_named(path, task["prompt"]):
                raise AuditFailed("path_consistency", f"the request does not name {path!r}, which gold writes")
        inspected = [
            _unpointer(c["path"].split("/")[2])
            for c in task["verifier"]["checks"]
            if c["env"] == name and c["path"].startswith(f"/{FILES_FIELD}/")
        ]
        for path in inspected:
            if not any(path == p or path.startswith(p + "/") for p in named):
                raise AuditFailed(
                    "path_consistency", f"the verifier inspects {path!r}, which the request does not name"
                )
        outputs = [
            p
            for p in named
            if p in finals[name][FILES_FIELD] and finals[name][FILES_FIELD][p] != initial[name][FILES_FIELD].get(p)
        ]
        for path in outputs:
            if path not in inspected:
                raise AuditFailed("path_consistency", f"the request names the output {path!r}, which no check inspects")


def _unpointer(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _writes(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> list[int]:
    return [i for i, c in enumerate(task["gold_calls"]) if envs[c["env"]].tools[tool_of(c)].writes]


def tool_of(call: dict[str, Any]) -> str:
    """A call's tool as its environment names it (`env__tool` across environments)."""
    return str(call["tool"]).split(sample.CROSS_SEPARATOR, 1)[-1]


def _must_fail(task: dict[str, Any], envs: dict[str, sample.SampleEnv], calls: list[dict[str, Any]], what: str) -> None:
    result = score_calls(envs, task, calls)
    if result["passed"] or result["reward"] >= 1.0:
        raise AuditFailed("perturbations_fail", f"{what} still passes")


def _perturbations_fail(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> None:
    gold = task["gold_calls"]
    writes = _writes(task, envs)
    last = writes[-1]
    _must_fail(task, envs, gold[:last] + gold[last + 1 :], "gold without its last write")
    for index in writes:
        changed = _other_argument(task, envs, index, rng)
        if changed is not None:
            _must_fail(task, envs, [*gold[:index], changed, *gold[index + 1 :]], f"call {index} with {changed['args']}")
        swapped = _swapped_write(task, envs, index, rng)
        if swapped is not None:
            _must_fail(task, envs, [*gold[:index], swapped, *gold[index + 1 :]], f"call {index} as {swapped['tool']}")


def _session_before(task: dict[str, Any], envs: dict[str, sample.SampleEnv], index: int) -> Any:
    """A live session of call `index`'s environment, with the gold calls before it made."""
    call = task["gold_calls"][index]
    session = open_session(envs[call["env"]], task["initial_state"][call["env"]])
    for earlier in task["gold_calls"][:index]:
        if earlier["env"] == call["env"]:
            session.call(tool_of(earlier), earlier["args"])
    return session


def _other_argument(
    task: dict[str, Any], envs: dict[str, sample.SampleEnv], index: int, rng: random.Random
) -> dict[str, Any] | None:
    """Call `index` with one argument drawn anew (a value the call accepts), if any."""
    call = task["gold_calls"][index]
    env = envs[call["env"]]
    tool = env.tools[tool_of(call)]
    session = _session_before(task, envs, index)
    drawer = sample.ArgumentDrawer(env, rng, sample.Pool())
    undetermined = _undetermined_values(task, envs)
    for param in tool.params:
        value = call["args"].get(param.name)
        if param.name not in call["args"] or _scalars([value]) & undetermined:
            continue  # an argument the request leaves open may take any value
        for _ in range(4):
            args = dict(call["args"])
            args[param.name] = drawer.value(
                param, env.facts[tool.name].domains.get(param.name, []), session.view(), args
            )
            if args[param.name] != call["args"][param.name] and not sample.is_failure(
                session.fork().call(tool.name, args)
            ):
                return {**call, "args": args}
    return None


def _swapped_write(
    task: dict[str, Any], envs: dict[str, sample.SampleEnv], index: int, rng: random.Random
) -> dict[str, Any] | None:
    """Another write tool's call on the same entity (the same key argument), if one runs."""
    call = task["gold_calls"][index]
    env = envs[call["env"]]
    session = _session_before(task, envs, index)
    keys = {n: v for n, v in call["args"].items() if env.facts[tool_of(call)].domains.get(n)}
    drawer = sample.ArgumentDrawer(env, rng, sample.Pool())
    for other in sorted(env.tools):
        tool = env.tools[other]
        if other == tool_of(call) or not tool.writes or not keys or not set(keys) <= {p.name for p in tool.params}:
            continue
        args = {**drawer.draw(tool, session.view()), **keys}
        if not sample.is_failure(session.fork().call(other, args)):
            name = f"{call['env']}{sample.CROSS_SEPARATOR}{other}" if len(task["envs"]) > 1 else other
            return {"env": call["env"], "tool": name, "args": args}
    return None


def _data_consistency(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """Every value a check expects is named in the prompt, can be looked up by the agent,
    or is computed by the environment from those: no check expects a value that only an
    argument the request does not determine could bring in."""
    undetermined = _undetermined_values(task, envs)
    for check in task["verifier"]["checks"]:
        for value in _scalars(check.get("expected")) & undetermined:
            raise AuditFailed(
                "data_consistency", f"the check of {check['path']} expects {value!r}, which nothing shows"
            )


def _undetermined_values(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> set[Any]:
    """Argument values of gold calls the agent cannot know: not in the prompt, not in the
    initial state, world or schemas, not returned by an earlier call."""
    _, initial, results = replay(envs, task, task["gold_calls"])
    known = {name: _discoverable(envs[name], state) | _derived(task, state) for name, state in initial.items()}
    found: set[Any] = set()
    for index, call in enumerate(task["gold_calls"]):
        earlier = set().union(*(_scalars(r) for r in results[:index])) if index else set()
        for value in _scalars(list(call["args"].values())):
            if not (is_named(value, task["prompt"]) or value in known[call["env"]] or value in earlier):
                found.add(value)
    return found


def _derived(task: dict[str, Any], state: Any) -> set[Any]:
    """What a workspace task's rules compute from the start's files (the report gold
    writes): derivable by the agent, though no file holds it."""
    workspace = task.get("workspace")
    if not isinstance(workspace, dict) or not isinstance(state, dict) or FILES_FIELD not in state:
        return set()
    seed = str(task["source"].get("seed"))
    if workspace.get("script") != workspace_script(seed):
        return set()  # not envc's script: it derives nothing (the workspace_script audit says why)
    try:
        return {build_workspace(seed).answer({path: record["content"] for path, record in state[FILES_FIELD].items()})}
    except (KeyError, TypeError, ValueError, IndexError):  # files the answer cannot read: nothing derived
        return set()


def _information_separation(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """The prompt names no value only the environment computes (ids it issues, totals)."""
    for value in sorted(computed_values(task, envs), key=repr):
        if is_named(value, task["prompt"]):
            raise AuditFailed("information_separation", f"the prompt gives away {value!r}")


def computed_values(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> set[Any]:
    """Values the checks expect that only the environment computes: not in the start
    state, the world or any gold argument (ids it issues, timestamps, totals); a request
    must not name them. Values shorter than 3 characters are too common to hold back."""
    _, initial, _ = replay(envs, task, task["gold_calls"])
    visible = set().union(*(_scalars(s) | _scalars(envs[n].world) | _schema_words(envs[n]) for n, s in initial.items()))
    visible |= _scalars([list(c["args"].values()) for c in task["gold_calls"]])
    expected = set().union(*(_scalars(c.get("expected")) for c in task["verifier"]["checks"]))
    return {value for value in expected - visible if len(str(value)) >= 3}


def _schema_words(env: sample.SampleEnv) -> set[str]:
    """Names the tools' schemas show the agent: record and state fields, parameters,
    tools, enum members (a field name keying an expected record is no computed value)."""
    model = env.model
    words = {f.name for r in model.records for f in r.fields} | {f.name for f in model.state}
    words |= {p.name for t in model.tools for p in t.params} | {t.name for t in model.tools}
    return words | {m for e in model.enums for m in e.members}


def required_values(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> set[Any]:
    """Values a request must name, as the template requests do: the arguments of every
    gold write (paths included), except a value an earlier call returned that the start
    does not show (described by where it comes from) and what a workspace's rules derive."""
    _, initial, results = replay(envs, task, task["gold_calls"])
    needed: set[Any] = set()
    for index, call in enumerate(task["gold_calls"]):
        env = envs[call["env"]]
        if not env.tools[tool_of(call)].writes:
            continue
        known = _discoverable(env, initial[call["env"]])
        derived = _derived(task, initial[call["env"]])
        earlier = set().union(*(_scalars(r) for r in results[:index])) if index else set()
        for value in _scalars(list(call["args"].values())):
            if value in derived or (value in earlier and value not in known):
                continue
            needed.add(value)
    return needed


def is_named(value: Any, text: str) -> bool:
    """Whether a request names a value: a string quoted, or standing alone (not part of a
    longer word or path), so a hand-written or model-written request counts too; a number
    not inside a longer number."""
    if isinstance(value, str):
        if f'"{value}"' in text:
            return True
        return bool(value.strip()) and re.search(rf"(?<![\w/.-]){re.escape(value)}(?![\w/-]|\.\w)", text) is not None
    return re.search(rf"(?<![\w.]){re.escape(json.dumps(value))}(?![\w.])", text) is not None


def _objective_consistency(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """Every gold write changes a path a check reads (checks on paths gold leaves alone
    are preservation checks: what must still hold)."""
    checked = [(c["env"], c["path"]) for c in task["verifier"]["checks"]]
    for index in _writes(task, envs):
        call = task["gold_calls"][index]
        before = replay(envs, task, task["gold_calls"][:index])[0][call["env"]]
        after = replay(envs, task, task["gold_calls"][: index + 1])[0][call["env"]]
        paths = envs[call["env"]].package.scoring.changed_paths(before, after)
        if not any(env == call["env"] and _related(path, p) for env, path in checked for p in paths):
            raise AuditFailed("objective_consistency", f"call {index} ({call['tool']}) changes nothing that is checked")


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _answer_uniqueness(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> None:
    """Other arguments for the same tools, from the same start, do not also pass."""
    gold = task["gold_calls"]
    for _ in range(UNIQUENESS_TRIES):
        other = [*gold]
        for index in _writes(task, envs):
            changed = _other_argument(task, envs, index, rng)
            if changed is not None:
                other[index] = changed
        if other != gold and score_calls(envs, task, other)["passed"]:
            raise AuditFailed("answer_uniqueness", f"other arguments also pass: {[c['args'] for c in other]}")


def _hacking_floor(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> list[float]:
    """Baseline policies score 0 (binary) or at most `PARTIAL_FLOOR`: every read tool; random valid calls; the last
    gold write alone (when gold has several writes: the others must matter); every write
    tool with random valid arguments."""
    rewards = []
    for name, calls in _baselines(task, envs, rng).items():
        result = score_calls(envs, task, calls)
        rewards.append(result["reward"])
        floor = 0.0 if task["reward"] == "binary" else PARTIAL_FLOOR
        if result["passed"] or result["reward"] > floor:
            raise AuditFailed("hacking_floor", f"the {name} baseline scores {result['reward']}")
    return rewards


def _baselines(
    task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random
) -> dict[str, list[dict[str, Any]]]:
    cross = len(task["envs"]) > 1
    reads: list[dict[str, Any]] = []
    writes: list[dict[str, Any]] = []
    randoms: list[dict[str, Any]] = []
    for name in task["envs"]:
        env = envs[name]
        live = open_session(env, task["initial_state"][name])
        drawer = sample.ArgumentDrawer(env, rng, sample.Pool())
        tool_names = sorted(env.tools)
        for tool_name in tool_names:
            call = _call(name, tool_name, drawer.draw(env.tools[tool_name], live.view()), cross)
            (writes if env.tools[tool_name].writes else reads).append(call)
        for _ in range(RANDOM_CALLS):
            tool_name = rng.choice(tool_names)
            randoms.append(_call(name, tool_name, drawer.draw(env.tools[tool_name], live.view()), cross))
            live.call(tool_name, randoms[-1]["args"])
    baselines = {"every read tool": reads, "random valid calls": randoms, "random writes": writes}
    gold_writes = _writes(task, envs)
    if len(gold_writes) > 1:
        baselines["last gold write alone"] = [task["gold_calls"][gold_writes[-1]]]
    return baselines


def _call(env: str, tool: str, args: dict[str, Any], cross: bool) -> dict[str, Any]:
    return {"env": env, "tool": f"{env}{sample.CROSS_SEPARATOR}{tool}" if cross else tool, "args": args}


# =========================================================================== the run


def synthesise(
    sampler: sample.Sampler,
    options: TaskOptions,
    chains: Sequence[dict[str, Any]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    declared: bool = True,
    requests: RequestWriter | None = None,
) -> tuple[list[dict[str, Any]], Report]:
    """The specs' own tasks that pass the audits first (`declared`), then tasks from
    chains (given, or sampled with the sampler's options), each audited; stops at
    `options.tasks` kept. With `requests`, a model writes each sampled task's request
    (audited again, and graded by the rubric). Same inputs and seed, same tasks."""
    report = Report(audits=AUDITS + LLM_AUDITS if requests is not None else AUDITS)
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    single = options.envs[0] == 1  # the specs' tasks each use one environment
    for name, task, why in declared_tasks(sampler.envs, options) if declared and single else []:
        report.candidates += 1
        if task is None:
            report.declared[name] = f"not expressible: {why}"
            report.rejected["not_expressible"] += 1
            continue
        try:
            rewards = audit(task, sampler.envs, random.Random(f"audit:{name}"))
        except AuditFailed as failed:
            report.declared[name] = f"rejected by {failed.audit}: {failed.why}"
            report.rejected[failed.audit] += 1
            report.passed.update(AUDITS[: AUDITS.index(failed.audit)])
            continue
        report.declared[name] = "kept"
        report.passed.update(AUDITS)
        report.baseline_rewards.extend(rewards)
        if len(kept) < options.tasks:
            kept.append(task)
            seen.add(task["id"])
            report.kept += 1
            report.per_env.update(task["envs"])
    if chains is None:
        chains, _ = sample.sample(sampler)
    for number, chain in enumerate(chains, 1):
        if report.kept >= options.tasks:
            break
        report.candidates += 1
        check_chain(chain, sampler.envs, number)
        task = candidate_task(chain, sampler.envs, options)
        if task["id"] in seen:
            report.rejected["duplicate"] += 1
            continue
        try:
            rewards = audit(task, sampler.envs, audit_rng(task))
            if requests is not None:
                task = requests.rewrite(task, sampler.envs)
        except AuditFailed as failed:
            report.rejected[failed.audit] += 1
            report.passed.update(report.audits[: report.audits.index(failed.audit)])
            continue
        report.passed.update(report.audits)
        report.baseline_rewards.extend(rewards)
        seen.add(task["id"])
        kept.append(task)
        report.kept += 1
        report.per_env.update(task["envs"])
        if progress is not None:
            progress(report.kept, options.tasks)
        if report.kept >= options.tasks:
            break
    if requests is not None:
        report.llm = requests.summary()
    return kept, report


def candidate_task(chain: dict[str, Any], envs: dict[str, sample.SampleEnv], options: TaskOptions) -> dict[str, Any]:
    """The task of a chain: a workspace task (`workspace_task`) for a share of the
    one-environment chains of a file-workspace environment, else the chain's own task."""
    names = chain["envs"]
    if len(names) == 1 and _is_workspace_env(envs[names[0]]):
        if random.Random(f"workspace-share:{chain['seed']}").random() < WORKSPACE_SHARE:
            task = workspace_task(envs[names[0]], chain, options)
            if task is not None:
                return task
    return build_task(chain, envs, options)


def check_chain(chain: dict[str, Any], envs: dict[str, sample.SampleEnv], number: int) -> None:
    """A chain row names environments and tools that exist, with the fields a row has."""
    keys = {"id", "seed", "envs", "scenarios", "calls"}
    if not isinstance(chain, dict) or not keys <= set(chain):
        raise ChainError(number, f"a row has {', '.join(sorted(keys))}")
    for name in chain["envs"]:
        if name not in envs:
            raise ChainError(number, f"environment `{name}` is not among the specs given")
    for call in chain["calls"]:
        env = envs.get(str(call.get("env"))) if isinstance(call, dict) else None
        if env is None or tool_of(call) not in env.tools or not isinstance(call.get("args"), dict):
            raise ChainError(number, f"call {call!r} names no tool of its environment")


def sampler_for(envs: dict[str, sample.SampleEnv], options: TaskOptions, weights: Any = None) -> sample.Sampler:
    """A sampler drawing enough chains for `options.tasks` audited tasks."""
    sample_options = sample.SampleOptions(
        chains=options.tasks * CANDIDATES_PER_TASK,
        seed=options.seed,
        envs=options.envs,
        min_len=options.min_len,
        max_len=options.max_len,
    )
    return (
        sample.Sampler(envs, sample_options, weights) if weights is not None else sample.Sampler(envs, sample_options)
    )


def tasks_to_jsonl(tasks: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(t, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n" for t in tasks)


# =========================================================================== declared tasks


class NotExpressible(ValueError):
    """A `verify` line that is not a check on one path (a count over a comprehension...)."""


def declared_tasks(
    envs: dict[str, sample.SampleEnv], options: TaskOptions
) -> list[tuple[str, dict[str, Any] | None, str]]:
    """The spec's own `task` declarations in the task format: (name, task, "") or
    (name, None, why it cannot be). Their checks come from the `verify` lines, the
    prompt is the `request`, the gold calls the `solution`."""
    out: list[tuple[str, dict[str, Any] | None, str]] = []
    for env in envs.values():
        for decl in env.model.tasks:
            name = f"{env.name}.{decl.name}"
            try:
                out.append((name, _declared_task(env, decl, options), ""))
            except NotExpressible as why:
                out.append((name, None, str(why)))
    return out


def _declared_task(env: sample.SampleEnv, decl: Any, options: TaskOptions) -> dict[str, Any]:
    calls = []
    for step in decl.solution:
        if not (isinstance(step, ir.Call) and isinstance(step.func, ir.Name)):
            raise NotExpressible("a solution step is not a tool call")
        calls.append(
            {"env": env.name, "tool": step.func.id, "args": {kw.name: literal_json(kw.value) for kw in step.kwargs}}
        )
    session = env.package.Environment(decl.scenario or None)
    rows = [{**call, "result": session.call(call["tool"], call["args"])} for call in calls]
    chain = {
        "id": f"declared-{env.name}-{decl.name}",
        "seed": f"declared:{decl.name}",
        "envs": [env.name],
        "scenarios": {env.name: decl.scenario or None},
        "calls": rows,
    }
    final = session.state()
    checks = [{"env": env.name, **check, "weight": 1.0} for cond in decl.verify for check in verify_checks(cond, final)]
    return build_task(chain, {env.name: env}, options, request=decl.request, checks=checks)


def verify_checks(cond: ir.Expr, final: Any = None) -> list[dict[str, Any]]:
    """Path checks a `verify` condition means: `a and b`, `path == literal`, `path is
    None` / `is not None`, `not path`, a boolean `path`, `key in path` / `not in`, and
    `len(path) == n`; `path.startswith(text)`; a count (`len([...]) == n`) or a list of
    one field (`[x.f for x in ...] == [...]`, `sorted(...)` too) of a state collection's
    items that meet field comparisons. An index computed from the state (`events[s.last]`,
    `xs[len(xs) - 1]`) is resolved in `final`, the state the solution leaves. Anything
    else is NotExpressible."""
    if isinstance(cond, ir.Binary) and cond.op == "and":
        return verify_checks(cond.left, final) + verify_checks(cond.right, final)
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return [{"path": state_path(cond.operand, final), "op": "equals", "expected": False}]
    if isinstance(cond, ir.Binary) and cond.op in ("is", "is not") and _is_none(cond.right):
        path = state_path(cond.left, final)
        return [
            {"path": path, "op": "equals", "expected": None} if cond.op == "is" else {"path": path, "op": "not_null"}
        ]
    if isinstance(cond, ir.Binary) and cond.op in ("in", "not in") and isinstance(cond.left, ir.Const):
        container = cond.right.ty.name if cond.right.ty is not None else ""
        if container == "map":  # a key: a path below the map
            path = f"{state_path(cond.right, final)}/{_pointer(cond.left.value)}"
            return [{"path": path, "op": "present" if cond.op == "in" else "absent"}]
        if container in ("list", "set", "str"):
            op = "contains" if cond.op == "in" else "excludes"
            return [{"path": state_path(cond.right, final), "op": op, "expected": cond.left.value}]
    if isinstance(cond, ir.Binary) and cond.op == "==":
        left, right = cond.left, cond.right
        if isinstance(left, ir.ListLit) and isinstance(right, ir.ListLit) and len(left.items) == len(right.items):
            pairs = [ir.Binary(op="==", left=a, right=b) for a, b in zip(left.items, right.items)]
            return [check for pair in pairs for check in verify_checks(pair, final)]
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            if _is_len(side) and isinstance(side, ir.Call) and isinstance(side.args[0], ir.Comprehension):
                return [{**collection_check(side.args[0], final), "op": "count", "expected": literal_json(other)}]
            if _is_len(side):
                assert isinstance(side, ir.Call)
                return [{"path": state_path(side.args[0], final), "op": "length", "expected": literal_json(other)}]
            comprehension, ordered = _projection(side)
            if comprehension is not None:
                check = collection_check(comprehension, final)
                select = _item_path(comprehension.elt, comprehension.targets[0])
                return [{**check, "op": "select", "select": select, "sorted": ordered, "expected": literal_json(other)}]
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            try:
                return [{"path": state_path(side, final), "op": "equals", "expected": literal_json(other)}]
            except NotExpressible:
                continue
    if _is_method(cond, "startswith"):
        assert isinstance(cond, ir.Call) and isinstance(cond.func, ir.Attr)
        return [{"path": state_path(cond.func.obj, final), "op": "starts_with", "expected": literal_json(cond.args[0])}]
    if cond.ty is not None and cond.ty.name == "bool":
        return [{"path": state_path(cond, final), "op": "equals", "expected": True}]
    raise NotExpressible("a verify line is not a check on one state path")


def collection_check(comp: ir.Comprehension, final: Any = None) -> dict[str, Any]:
    """The path, `over` and `where` clauses of a list comprehension over a state
    collection (`values(m)`, `keys(m)` or a list) filtered by field comparisons."""
    if comp.value is not None or len(comp.targets) != 1:
        raise NotExpressible("a comprehension over pairs or building a map")
    source: ir.Expr = comp.iter
    over = "values"
    call = comp.iter
    if isinstance(call, ir.Call) and isinstance(call.func, ir.Name) and call.func.id in ("values", "keys"):
        if len(call.args) != 1:
            raise NotExpressible("values()/keys() of one collection")
        source, over = call.args[0], call.func.id
    check: dict[str, Any] = {"path": state_path(source, final), "where": _where(comp.cond, comp.targets[0])}
    if over == "keys":
        check["over"] = "keys"
    return check


def _where(cond: ir.Expr | None, var: str) -> list[dict[str, Any]]:
    """Clauses of a comprehension's condition: `and` of `item.f == literal`, `!=`, a
    boolean field, `not` one, and `item.f.startswith(literal)`."""
    if cond is None:
        return []
    if isinstance(cond, ir.Binary) and cond.op == "and":
        return _where(cond.left, var) + _where(cond.right, var)
    if isinstance(cond, ir.Binary) and cond.op in ("==", "!="):
        op = "equals" if cond.op == "==" else "not_equals"
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            try:
                return [{"path": _item_path(side, var), "op": op, "expected": literal_json(other)}]
            except NotExpressible:
                continue
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return [{"path": _item_path(cond.operand, var), "op": "equals", "expected": False}]
    if _is_method(cond, "startswith"):
        assert isinstance(cond, ir.Call) and isinstance(cond.func, ir.Attr)
        return [{"path": _item_path(cond.func.obj, var), "op": "starts_with", "expected": literal_json(cond.args[0])}]
    if cond.ty is not None and cond.ty.name == "bool":
        return [{"path": _item_path(cond, var), "op": "equals", "expected": True}]
    raise NotExpressible("a comprehension's condition is not field comparisons")


def _item_path(expr: ir.Expr, var: str) -> str:
    """The JSON Pointer of a place inside the comprehension's item (`item.f`, `item[k]`)."""
    if isinstance(expr, ir.Name) and expr.id == var and expr.ref == "local":
        return ""
    if isinstance(expr, ir.Attr):
        return f"{_item_path(expr.obj, var)}/{_pointer(expr.name)}"
    if isinstance(expr, ir.Index) and isinstance(expr.index, ir.Const):
        return f"{_item_path(expr.obj, var)}/{_pointer(expr.index.value)}"
    raise NotExpressible("not a field of the comprehension's item")


def _projection(expr: ir.Expr) -> tuple[ir.Comprehension | None, bool]:
    """A list comprehension (or `sorted` of one) on one side of `==`, and whether sorted."""
    if isinstance(expr, ir.Comprehension):
        return expr, False
    if (
        isinstance(expr, ir.Call)
        and isinstance(expr.func, ir.Name)
        and expr.func.id == "sorted"
        and len(expr.args) == 1
        and not expr.kwargs
        and isinstance(expr.args[0], ir.Comprehension)
    ):
        return expr.args[0], True
    return None, False


def _is_method(expr: ir.Expr, name: str) -> bool:
    return (
        isinstance(expr, ir.Call)
        and isinstance(expr.func, ir.Attr)
        and expr.func.name == name
        and len(expr.args) == 1
        and not expr.kwargs
    )


def state_path(expr: ir.Expr, final: Any = None) -> str:
    """The JSON Pointer of a state place: a field, `[literal]` of it, `.field` of a record,
    `.get(literal)` of a map."""
    if isinstance(expr, ir.Name) and expr.ref == "state":
        return f"/{_pointer(expr.id)}"
    if (
        isinstance(expr, ir.Attr)
        and isinstance(expr.obj, ir.Name)
        and expr.obj.ref == "state"
        and expr.obj.id == "state"
    ):
        return f"/{_pointer(expr.name)}"
    if isinstance(expr, ir.Attr):
        return f"{state_path(expr.obj, final)}/{_pointer(expr.name)}"
    if isinstance(expr, ir.Index) and isinstance(expr.index, ir.Const):
        holder = expr.obj.ty
        if holder is not None and holder.name == "map" and holder.args and holder.args[0].name == "json":
            raise NotExpressible("a map with json keys is a list of [key, value] pairs in state()")
        return f"{state_path(expr.obj, final)}/{_pointer(expr.index.value)}"
    if isinstance(expr, ir.Index) and final is not None:
        return f"{state_path(expr.obj, final)}/{_pointer(_computed_index(expr.index, final))}"
    if (
        isinstance(expr, ir.Call)
        and isinstance(expr.func, ir.Attr)
        and expr.func.name == "get"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ir.Const)
    ):
        return f"{state_path(expr.func.obj, final)}/{_pointer(expr.args[0].value)}"
    raise NotExpressible("not a path into the state")


def _computed_index(expr: ir.Expr, final: Any) -> str | int:
    """An index the verify line computes from the state (a place, or `len(place) - k`),
    evaluated in the state the solution leaves: the check then names that item."""
    if isinstance(expr, ir.Binary) and expr.op == "-" and _is_len(expr.left) and isinstance(expr.right, ir.Const):
        assert isinstance(expr.left, ir.Call)
        sized = _resolve(final, state_path(expr.left.args[0], final))
        if isinstance(sized, (list, dict, str)) and isinstance(expr.right.value, int):
            return len(sized) - expr.right.value
    else:
        value = _resolve(final, state_path(expr, final))
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return value
    raise NotExpressible("an index that is neither a literal nor a value of the state")


def _resolve(document: Any, path: str) -> Any:
    value = document
    for raw in path[1:].split("/"):
        key = _unpointer(raw)
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            raise NotExpressible(f"the computed index's place {path} is not in the final state")
    return value


def literal_json(expr: ir.Expr) -> Any:
    """The JSON value of a literal of the body language (an enum member is its name)."""
    if isinstance(expr, ir.Const):
        return expr.value
    if isinstance(expr, ir.Unary) and expr.op == "-" and isinstance(expr.operand, ir.Const):
        number = expr.operand.value
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return -number
    if isinstance(expr, ir.Attr) and isinstance(expr.obj, ir.Name) and expr.obj.ref == "enum":
        return expr.name
    if isinstance(expr, ir.ListLit):
        return [literal_json(item) for item in expr.items]
    if isinstance(expr, ir.MapLit):
        return {str(literal_json(entry.key)): literal_json(entry.value) for entry in expr.entries}
    if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.ref == "record" and not expr.args:
        return {kw.name: literal_json(kw.value) for kw in expr.kwargs}
    raise NotExpressible("not a literal value")


def _is_none(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.Const) and expr.value is None


def _is_len(expr: ir.Expr) -> bool:
    return (
        isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.id == "len" and len(expr.args) == 1
    )


def _pointer(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")
