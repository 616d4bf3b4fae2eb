"""The audits a candidate task must pass to be kept (`AUDITS`, in order).

Gold scores 1, doing nothing scores 0, a workspace task's script builds its start and
derives what gold writes, the request and the verifier mean the same files, perturbed
gold fails, the prompt names what the checks expect and nothing the environment
computes, every check concerns a path a gold write changes and every gold write is
checked, no other arguments for the same tools pass, two replays agree, and baseline
"hacking" policies score 0 (at most `PARTIAL_FLOOR` on a partial-credit task). Scores
come from the `scoring.py` every generated package ships, so what is audited here is
what trainers run.
"""

from __future__ import annotations

import random
import re
from typing import Any

from compiler.library import sources
from compiler.lower.schema import param_default
from compiler.synth import families, sample
from compiler.synth.task_build import (
    FILES_FIELD,
    PATH_ARGUMENTS,
    open_session,
    replay,
    score_calls,
    tool_of,
    unpointer,
)
from compiler.synth.task_prompt import discoverable, is_named, scalars

AUDITS = (
    "gold_scores_1",
    "nothing_scores_0",
    "no_recipe",
    "no_placeholder",
    "referents_unique",
    "every_prefix_fails",
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


UNIQUENESS_TRIES = 6
"""Other argument draws for the same tools tried by the uniqueness audit."""
RANDOM_CALLS = 8
"""Calls made by the random-valid-calls baseline."""
RANDOM_RUNS = 32
"""Runs of the random-valid-calls baseline, each with its own draws: a task random calls
pass even once is too easy to keep. Four times calibration's k = 8, so that a kept task
is one the random policy does not pass in calibration either (measured: docs/tasks.md)."""


PARTIAL_FLOOR = 0.5
"""The most a baseline policy may earn on a partial-credit task (binary tasks: 0)."""


class AuditFailed(Exception):
    def __init__(self, audit: str, why: str) -> None:
        super().__init__(f"{audit}: {why}")
        self.audit = audit
        self.why = why


def audit_rng(task: dict[str, Any]) -> random.Random:
    """The audits' random numbers for a sampled task: from its chain's seed alone."""
    return random.Random(f"audit:{task['source'].get('seed', task['source'].get('declared'))}")


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
    _no_recipe(task, envs)
    _no_placeholder(task, envs)
    _referents_unique(task, envs)
    _every_prefix_fails(task, envs)
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


RECIPE_ARGUMENTS = re.compile(
    r"\(\s*[a-z][\w ]* (?:\"[^\"]*\"|-?\d[\d.]*)(?:\s*,\s*[a-z][\w ]* (?:\"[^\"]*\"|-?\d[\d.]*))*\s*\)"
)
"""An argument list spelled out: `(ticket 2, resolution "river echo")`."""
STEP_POINTER = re.compile(r"\bstep (?:gave|returned|produced)\b|\bthe one the \w[\w ]* step\b")
"""A request pointing at a step of the solution instead of at what it means."""


def recipe_problem(text: str, tool_names: set[str]) -> str | None:
    """Why a request reads as a recipe of calls rather than a goal, or None."""
    for tool in sorted(tool_names):
        if "_" in tool and re.search(rf"(?<![\w]){re.escape(tool)}(?![\w])", text):
            return f"the request names the tool `{tool}`"
    listed = RECIPE_ARGUMENTS.search(text)
    if listed is not None:
        return f"the request spells out an argument list: {listed[0]!r}"
    if STEP_POINTER.search(text):
        return "the request points at a step of the solution"
    return None


def _no_recipe(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """The request states a goal: no tool named as code, no argument list, no step."""
    names = {tool for name in task["envs"] for tool in envs[name].tools}
    names |= {f"{name}{sample.CROSS_SEPARATOR}{tool}" for name in task["envs"] for tool in envs[name].tools}
    problem = recipe_problem(task["prompt"], names)
    if problem is not None:
        raise AuditFailed("no_recipe", problem)


def _no_placeholder(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """Every argument of a sampled task's gold calls came from somewhere real (the state,
    the world, a value source of the spec, an earlier result, the type's own values): the
    sampler records each one's origin, and a value a pool claims is in that pool. (A
    declared or family task's values are the spec's own: its plan draws them.)"""
    origins = task["source"].get("origins")
    if "seed" not in task["source"] or "family" in task["source"]:
        return
    if not isinstance(origins, list) or len(origins) != len(task["gold_calls"]):
        raise AuditFailed("no_placeholder", "the task does not record where its arguments come from")
    for call, origin in zip(task["gold_calls"], origins):
        pools = envs[call["env"]].model.value_pools
        for name, value in call["args"].items():
            where = origin.get(name) if isinstance(origin, dict) else None
            if not isinstance(where, str) or not _origin_known(where, pools):
                raise AuditFailed("no_placeholder", f"`{name}` of {call['tool']} has no known origin ({where!r})")
            items = value if isinstance(value, list) else [value]
            if where.startswith("pool:") and any(item not in pools[where[5:]] for item in items):
                raise AuditFailed("no_placeholder", f"{value!r} is not in the pool `{where[5:]}`")


def _origin_known(origin: str, pools: dict[str, list[Any]]) -> bool:
    kind, _, name = origin.partition(":")
    if kind == "pool":
        return name in pools
    if kind == "format":
        return name in sources.FORMATS
    return origin in sample.ORIGINS


def _referents_unique(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """Every entity the request refers to by its attributes is the only one with them in
    the start state, and the gold solution acts on that one. (A family task refers to
    nothing by attributes: its request states the plan's values, and its verifier is
    written over the same values, so what the request selects is what is checked; the
    perturbation and uniqueness audits make sure nothing else passes.)"""
    references = task["source"].get("references", [])
    for reference in references:
        env = reference["env"]
        state = open_session(envs[env], task["initial_state"][env]).state()
        container = state.get(reference["container"])
        items = container if isinstance(container, dict) else dict(enumerate(container or []))
        matching = [k for k, item in items.items() if _has(item, reference["fields"])]
        if [str(k) for k in matching] != [reference["key"]]:
            raise AuditFailed(
                "referents_unique",
                f"{reference['fields']} selects {len(matching)} of `{reference['container']}`, not exactly one",
            )
        if not _gold_uses(task, env, reference["key"], items[matching[0]]):
            raise AuditFailed("referents_unique", f"gold does not act on {reference['container']}[{reference['key']}]")


def _has(item: Any, fields: dict[str, Any]) -> bool:
    return isinstance(item, dict) and all(item.get(f) == v for f, v in fields.items())


def _gold_uses(task: dict[str, Any], env: str, key: str, item: dict[str, Any]) -> bool:
    identities = {key} | {str(v) for v in item.values() if isinstance(v, (str, int)) and not isinstance(v, bool)}
    return any(
        str(value) in identities
        for call in task["gold_calls"]
        if call["env"] == env
        for value in scalars(list(call["args"].values()))
    )


def _every_prefix_fails(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """No strict prefix of the gold calls already passes: every call of the solution is
    needed (doing nothing is the empty prefix, audited above)."""
    gold = task["gold_calls"]
    for end in range(1, len(gold)):
        if score_calls(envs, task, gold[:end])["passed"]:
            raise AuditFailed("every_prefix_fails", f"the first {end} of {len(gold)} gold calls already pass")


def needs_lookup(task: dict[str, Any]) -> bool:
    """Whether the agent must look something up: the request names an entity by its
    attributes, not by the identifier the gold calls use; in a family task, some
    argument of the gold calls is not written in the request (the agent finds it)."""
    if "family" in task["source"]:
        return any(lit["args"] != call["args"] for lit, call in zip(literal_calls(task), task["gold_calls"]))
    return any(not r.get("by_key", True) for r in task["source"].get("references", []))


def literal_calls(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The `literal` baseline: the gold tools, in order, with only the arguments whose
    values the request writes out (no reads, nothing looked up)."""
    return [
        {
            **call,
            "args": {
                n: v
                for n, v in call["args"].items()
                if scalars(v) and all(is_named(s, task["prompt"]) for s in scalars(v))
            },
        }
        for call in task["gold_calls"]
    ]


def _workspace_script(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """A workspace task (a draw of a family of a file-workspace environment) is what envc
    makes from its (environment, family, seed): its construction script builds exactly
    the files its changes add, gold writes what the solution computes from them, and the
    checks are the family's (`_family_rebuilds`)."""
    workspace = task.get("workspace")
    if workspace is None:
        return
    if not isinstance(workspace, dict) or not isinstance(workspace.get("script"), str):
        raise AuditFailed("workspace_script", "`workspace` has no construction script")
    name = str(workspace.get("env"))
    if name not in task["envs"]:
        raise AuditFailed("workspace_script", f"`workspace.env` {name!r} is not an environment of the task")
    if "family" not in task["source"]:
        raise AuditFailed("workspace_script", "a workspace task that is no draw of a family: envc cannot rebuild it")
    _family_rebuilds(task, envs)


def _family_rebuilds(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """A family task's script, start, gold writes and checks are the ones envc makes from
    its (environment, family, seed): the files come from the family's plan, what gold
    writes from its solution over those files, what the checks expect from its `verify`
    lines (the data consistency of files, for every family alike)."""
    try:
        again = families.rebuilt(task, envs)
    except families.FamilyDiscarded as why:
        raise AuditFailed("workspace_script", f"envc makes no task of this family and seed: {why.reason}") from None
    seed = task["source"].get("seed")
    parts = {
        "script": (again["workspace"]["script"], task["workspace"]["script"]),
        "start": (again["initial_state"], task["initial_state"]),
        "gold writes": (_written(again, envs), _written(task, envs)),
        "checks": (again["verifier"], task["verifier"]),
    }
    for what, (envc, row) in parts.items():
        if envc != row:
            raise AuditFailed("workspace_script", f"the {what} is not what envc builds from seed {seed!r}")


def _written(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> list[dict[str, Any]]:
    return [task["gold_calls"][i] for i in _writes(task, envs)]


def _path_consistency(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """In a file workspace, every path a gold write names is named in the request, every
    output it leaves is inspected by a check, and every check inspects a path the request
    names (or one below a folder it names): the request and the verifier mean the same files."""
    for name in task["envs"]:
        if not envs[name].is_workspace:
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
            unpointer(c["path"].split("/")[2])
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


def _writes(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> list[int]:
    return [i for i, c in enumerate(task["gold_calls"]) if envs[c["env"]].tools[tool_of(c)].writes]


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
        if param.name not in call["args"] or scalars([value]) & undetermined:
            continue  # an argument the request leaves open may take any value
        for _ in range(4):
            args = dict(call["args"])
            try:
                args[param.name] = drawer.value(
                    param, env.facts[tool.name].domains.get(param.name, []), session.view(), args
                )
            except sample.NoSource:
                break  # no other value to try for free text without a source
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
        args = {**drawer.draw(tool, session.view(), lenient=True), **keys}
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
        for value in scalars(check.get("expected")) & undetermined:
            raise AuditFailed(
                "data_consistency", f"the check of {check['path']} expects {value!r}, which nothing shows"
            )


def _undetermined_values(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> set[Any]:
    """Argument values of gold calls the agent cannot know: not in the prompt, not in the
    initial state, world or schemas, not returned by an earlier call."""
    _, initial, results = replay(envs, task, task["gold_calls"])
    known = {name: discoverable(envs[name], state) | _derived(task) for name, state in initial.items()}
    found: set[Any] = set()
    for index, call in enumerate(task["gold_calls"]):
        earlier = set().union(*(scalars(r) for r in results[:index])) if index else set()
        for value in scalars(list(call["args"].values())):
            if not (is_named(value, task["prompt"]) or value in known[call["env"]] or value in earlier):
                found.add(value)
    return found


def _derived(task: dict[str, Any]) -> set[Any]:
    """What the agent can derive though the start holds it nowhere: the arguments a
    family's solution computed from the start (a total, a workspace report; the spec's
    code, rebuilt from the seed by the determinism and workspace_script audits)."""
    if "family" not in task["source"]:
        return set()
    return scalars([list(c["args"].values()) for c in task["gold_calls"]])


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
    visible = set().union(*(scalars(s) | scalars(envs[n].world) | _schema_words(envs[n]) for n, s in initial.items()))
    visible |= scalars([list(c["args"].values()) for c in task["gold_calls"]])
    expected = set().union(*(scalars(c.get("expected")) for c in task["verifier"]["checks"]))
    return {value for value in expected - visible if len(str(value)) >= 3}


def _schema_words(env: sample.SampleEnv) -> set[str]:
    """Names the tools' schemas show the agent: record and state fields, parameters,
    tools, enum members (a field name keying an expected record is no computed value)."""
    model = env.model
    words = {f.name for r in model.records for f in r.fields} | {f.name for f in model.state}
    words |= {p.name for t in model.tools for p in t.params} | {t.name for t in model.tools}
    return words | {m for e in model.enums for m in e.members}


def required_values(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> set[Any]:
    """Values a request must name: the arguments of every gold write (paths included),
    except a parameter's default (a request need not repeat it), a value an earlier call
    returned (named by what it is: "the new ticket"), what a workspace's rules
    derive, and an entity the request refers to by its attributes (whose attribute values
    it names instead). A family task's are the values its request line states (what the
    agent finds from them is its business)."""
    source = task["source"]
    if "family" in source:
        values = source.get("values", {})
        slots = {slot for line in source.get("intents", []) for slot in sample.SLOT_NAMES.findall(line)}
        return scalars([values[slot] for slot in sorted(slots) if slot in values])
    _, initial, results = replay(envs, task, task["gold_calls"])
    references = [r for r in task["source"].get("references", []) if not r.get("by_key", True)]
    looked_up = {str(r.get("value", r["key"])) for r in references} | {r["key"] for r in references}
    needed: set[Any] = set().union(*(scalars(list(r["fields"].values())) for r in references)) if references else set()
    for index, call in enumerate(task["gold_calls"]):
        env = envs[call["env"]]
        if not env.tools[tool_of(call)].writes:
            continue
        derived = _derived(task)
        earlier = set().union(*(scalars(r) for r in results[:index])) if index else set()
        params = {p.name: p for p in env.tools[tool_of(call)].params}
        said = [v for n, v in call["args"].items() if n not in params or param_default(params[n]) != (True, v)]
        for value in scalars(said):
            if value in derived or value in earlier or str(value) in looked_up:
                continue
            needed.add(value)
    return needed


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
    """Baseline policies score 0 (binary) or at most `PARTIAL_FLOOR`: every read tool; random valid calls (in
    `RANDOM_RUNS` runs); the last
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
    for name in task["envs"]:
        env = envs[name]
        live = open_session(env, task["initial_state"][name])
        drawer = sample.ArgumentDrawer(env, rng, sample.Pool(), sources=False)
        tool_names = sorted(env.tools)
        for tool_name in tool_names:
            call = _call(name, tool_name, drawer.draw(env.tools[tool_name], live.view(), lenient=True), cross)
            (writes if env.tools[tool_name].writes else reads).append(call)
    baselines = {"every read tool": reads, "random writes": writes}
    for run in range(RANDOM_RUNS):
        baselines[f"random valid calls (run {run + 1})"] = _random_calls(task, envs, random.Random(rng.random()))
    if needs_lookup(task):
        baselines["literal"] = literal_calls(task)
    gold_writes = _writes(task, envs)
    if len(gold_writes) > 1:
        baselines["last gold write alone"] = [task["gold_calls"][gold_writes[-1]]]
    return baselines


def _random_calls(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> list[dict[str, Any]]:
    """`RANDOM_CALLS` calls per environment of tools drawn at random, with arguments drawn
    from what an agent can see (the live state, the world, results; not the spec's value
    sources), learning from refusals as the calibration's random policy does: what an
    agent acting at random may stumble on."""
    cross = len(task["envs"]) > 1
    calls: list[dict[str, Any]] = []
    for name in task["envs"]:
        env = envs[name]
        live = open_session(env, task["initial_state"][name])
        pool = sample.Pool()
        drawer = sample.ArgumentDrawer(env, rng, pool, sources=False)
        tool_names = sorted(env.tools)
        for _ in range(RANDOM_CALLS):
            tool_name = rng.choice(tool_names)
            calls.append(_call(name, tool_name, drawer.draw(env.tools[tool_name], live.view(), lenient=True), cross))
            result = live.call(tool_name, calls[-1]["args"])
            if sample.is_failure(result):
                drawer.learn(tool_name, result["error"])
            else:
                pool.add(result, env=name)
    return calls


def _call(env: str, tool: str, args: dict[str, Any], cross: bool) -> dict[str, Any]:
    return {"env": env, "tool": f"{env}{sample.CROSS_SEPARATOR}{tool}" if cross else tool, "args": args}
