"""The task families a spec declares (`family NAME:`), run generically.

A family task comes from one seeded draw of its family, through the contract every
generated package exposes in `environment.py` (`FAMILIES`: per family a `plan` and a
`solve` function; `FamilyFailed` when a `require` of the plan or a call of the solution
fails):

- the plan runs on a copy of the family's start (its `scenario`, or S0): the state it
  leaves, compared with the start, is the task's `changes`; its top-level `let` values
  are the family's values;
- one of the family's `request` lines, chosen by seed, is the prompt, its `{value}`
  slots filled with the values as a user writes them (after a persona sentence when the
  spec has personas);
- the solution runs on the task's start with the values: its calls are the gold calls;
- the `verify` lines, with the values put in for their names (`each NAME in EXPR`
  once per item), are the checks (compiler/synth/declared_tasks.py reads them).

A draw whose plan or solution fails, or whose lines say what no check can, is
discarded with the reason (`FamilyDiscarded`); `envc tasks` counts them per family.
Nothing here knows a domain: the words, values and checks are the spec's.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping
from typing import Any

from compiler import ir
from compiler.synth import sample, wording
from compiler.synth.declared_tasks import NotExpressible, literal_json, verify_checks
from compiler.synth.task_build import (
    FILES_FIELD,
    WHOLE_FIELD_BYTES,
    TaskOptions,
    build_task,
    open_session,
    pointer,
)

NOT_CARRIED = frozenset({"audit_log", "rng_state", "random_seed"})
"""Fields a plan's run changes that are not the task's start: the log of its writes and
the random numbers its seed drew (the task starts with the scenario's own)."""
BOUND_REFS = ("", "local", "param")
"""What a name that stands for a family value is bound as in a `verify` line (never a
state field, world value, enum or function)."""


class FamilyDiscarded(Exception):
    """A draw that gives no task: its plan's `require` failed, its solution failed, or a
    line of the family cannot be put in words or checks (`reason` says which)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def package_families(env: sample.SampleEnv) -> Mapping[str, Any]:
    """The package's runners by family name (none in a package compiled before families)."""
    runners: Mapping[str, Any] = getattr(env.package.environment, "FAMILIES", None) or {}
    return runners


def runnable(env: sample.SampleEnv) -> list[ir.FamilyDecl]:
    """The spec's families that its compiled package can run, in declaration order."""
    runners = package_families(env)
    return [decl for decl in env.model.families if decl.name in runners]


def family_task(env: sample.SampleEnv, decl: ir.FamilyDecl, seed: str, options: TaskOptions) -> dict[str, Any] | None:
    """The task of one draw of a family (not yet audited), or None for a discarded draw."""
    try:
        return draw_family_task(env, decl, seed, options)
    except FamilyDiscarded:
        return None


def draw_family_task(env: sample.SampleEnv, decl: ir.FamilyDecl, seed: str, options: TaskOptions) -> dict[str, Any]:
    """The task of one draw of a family (see the module doc); FamilyDiscarded says why not."""
    runner = package_families(env).get(decl.name)
    if runner is None:
        raise FamilyDiscarded("not in the compiled package (compile the spec again)")
    start: dict[str, Any] = {"scenario": decl.scenario or None, "changes": {}}
    values, changes = _planned(env, runner, start, plan_seed(seed))
    initial_state = {env.name: {"scenario": start["scenario"], "changes": changes}}
    calls, final = _solved(env, runner, initial_state[env.name], values)
    checks = family_checks(env.name, decl, values, final)
    template, request = family_request(env, decl, values, seed)
    chain = {
        "id": f"family-{env.name}-{decl.name}",
        "seed": seed,
        "envs": [env.name],
        "scenarios": {env.name: start["scenario"]},
        "calls": calls,
    }
    source = {"family": decl.name, "kind": decl.kind, "seed": seed, "values": values, "intents": [template]}
    workspace = _workspace(env, decl, seed, initial_state[env.name], final) if env.is_workspace else None
    return build_task(
        chain, {env.name: env}, options, request, checks, initial_state, workspace, source=source, reward=decl.reward
    )


def plan_seed(seed: str) -> int:
    """The integer a family's plan seeds its random built-ins with: from the task's seed
    string alone (the same in every process)."""
    return int.from_bytes(hashlib.sha256(f"family:{seed}".encode()).digest()[:4], "big")


def _planned(
    env: sample.SampleEnv, runner: Any, start: dict[str, Any], seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plan's values (JSON) and the changes its state writes make to the start."""
    try:
        base = open_session(env, start).saved_state()
        scratch = open_session(env, start)
    except Exception as error:  # the package refuses the family's scenario
        raise FamilyDiscarded(f"scenario: {error}") from None
    values = _run(env, "plan", lambda: runner.plan(scratch, seed))
    try:
        values = json.loads(json.dumps(values, sort_keys=True))
    except (TypeError, ValueError) as error:
        raise FamilyDiscarded(f"plan: its values are not JSON ({error})") from None
    if not isinstance(values, dict):
        raise FamilyDiscarded("plan: its values are not named")
    return values, state_changes(base, scratch.saved_state())


def _solved(
    env: sample.SampleEnv, runner: Any, start: dict[str, Any], values: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The solution's calls from the task's start (gold rows) and the state they leave."""
    try:
        session = open_session(env, start)
    except Exception as error:  # the package refuses the state the plan left
        raise FamilyDiscarded(f"plan: the state it leaves does not load ({error})") from None
    calls = _run(env, "solution", lambda: runner.solve(session, values))
    rows = [{"env": env.name, "tool": tool, "args": dict(args), "result": result} for tool, args, result in calls]
    if any(sample.is_failure(row["result"]) for row in rows):
        raise FamilyDiscarded("solution: a call failed")
    return rows, session.state()


def _run(env: sample.SampleEnv, part: str, step: Any) -> Any:
    """A part of the family's runner; its failure (a `require`, a domain error, or a bug
    of the generated code) discards the draw with the reason."""
    failed = getattr(env.package.environment, "FamilyFailed", None)
    try:
        return step()
    except Exception as error:
        if failed is not None and isinstance(error, failed):
            raise FamilyDiscarded(f"{part}: {error}") from None
        raise FamilyDiscarded(f"{part}: {type(error).__name__}: {error}") from None


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The changes that make `before` into `after` (as `apply_changes` reads them): a
    changed field whole up to `WHOLE_FIELD_BYTES`, else each changed entry of a map by
    JSON Pointer (whole again when an entry is gone: a pointer cannot remove)."""
    changes: dict[str, Any] = {}
    for field in sorted(after):
        if field in NOT_CARRIED or before.get(field) == after[field]:
            continue
        old, new = before.get(field), after[field]
        small = len(json.dumps(new, default=str)) <= WHOLE_FIELD_BYTES
        if small or not (isinstance(old, dict) and isinstance(new, dict)) or set(old) - set(new):
            changes[field] = new
            continue
        for key in sorted(new, key=str):
            if old.get(key) != new[key]:
                changes[f"/{pointer(field)}/{pointer(key)}"] = new[key]
    return changes


# --------------------------------------------------------------------------- the request


def family_request(env: sample.SampleEnv, decl: ir.FamilyDecl, values: dict[str, Any], seed: str) -> tuple[str, str]:
    """(the request line chosen by seed, the prompt): its slots filled with the values
    as a user writes them, after a persona sentence when the spec has personas."""
    if not decl.requests:
        raise FamilyDiscarded("request: the family has no request line")
    rng = random.Random(f"family-request:{seed}")
    template = rng.choice(decl.requests)
    missing = sorted(set(sample.SLOT_NAMES.findall(template)) - set(values))
    if missing:
        raise FamilyDiscarded(f"request: {{{missing[0]}}} is no value of the plan")
    text = sample.SLOT_NAMES.sub(lambda m: wording.show(values[m[1]], "", env), template)
    text = text.replace("{{", "{").replace("}}", "}")
    return template, wording.introduce(text[:1].upper() + text[1:], list(env.model.personas), rng)


# --------------------------------------------------------------------------- the checks


def family_checks(env: str, decl: ir.FamilyDecl, values: dict[str, Any], final: dict[str, Any]) -> list[dict[str, Any]]:
    """The family's `verify` lines as checks: the values put in for their names, `each`
    lines once per item, each check with its line's weight."""
    checks: list[dict[str, Any]] = []
    for line in decl.verify:
        for cond in _expanded(line, values):
            try:
                found = verify_checks(cond, final)
            except NotExpressible as why:
                raise FamilyDiscarded(f"verify: {why}") from None
            checks += [{"env": env, **check, "weight": line.weight} for check in found]
    if not checks:
        raise FamilyDiscarded("verify: the family checks nothing")
    return checks


def _expanded(line: ir.VerifyLine, values: dict[str, Any]) -> list[ir.Expr]:
    """A verify line's condition with the values put in; once per item with `each`."""
    cond = with_values(line.cond, values)
    if not line.each:
        return [cond]
    if line.over is None:
        raise FamilyDiscarded(f"verify: `each {line.each}` over nothing")
    try:
        items = literal_json(with_values(line.over, values))
    except NotExpressible:
        raise FamilyDiscarded(f"verify: `each {line.each}` is not over the plan's values") from None
    if not isinstance(items, list):
        raise FamilyDiscarded(f"verify: `each {line.each}` is not over a list")
    return [with_values(cond, {line.each: item}) for item in items]


def with_values(expr: ir.Expr, values: Mapping[str, Any]) -> ir.Expr:
    """`expr` with each name bound to a family value replaced by that value as a literal
    (a comprehension's own variables are left alone)."""
    if isinstance(expr, ir.Name):
        return as_literal(values[expr.id]) if expr.id in values and expr.ref in BOUND_REFS else expr
    if isinstance(expr, ir.Comprehension):
        values = {k: v for k, v in values.items() if k not in expr.targets}
    update: dict[str, Any] = {}
    for name in type(expr).model_fields:
        part = getattr(expr, name)
        if isinstance(part, ir.Node) and _is_expr(part):
            update[name] = with_values(part, values)  # type: ignore[arg-type]
        elif isinstance(part, list) and any(isinstance(p, ir.Node) for p in part):
            update[name] = [_with_values_in(p, values) for p in part]
    return expr.model_copy(update=update) if update else expr


def _with_values_in(part: Any, values: Mapping[str, Any]) -> Any:
    """A list member of an expression (an item, a keyword, a map entry) with the values in."""
    if _is_expr(part):
        return with_values(part, values)
    if isinstance(part, ir.Keyword):
        return part.model_copy(update={"value": with_values(part.value, values)})
    if isinstance(part, ir.MapEntry):
        return part.model_copy(update={"key": with_values(part.key, values), "value": with_values(part.value, values)})
    return part


def _is_expr(node: Any) -> bool:
    return isinstance(node, ir.ExprBase)


def as_literal(value: Any) -> ir.Expr:
    """A JSON value as a literal expression of the body language."""
    if isinstance(value, list):
        return ir.ListLit(items=[as_literal(item) for item in value])
    if isinstance(value, dict):
        return ir.MapLit(entries=[ir.MapEntry(key=ir.Const(value=k), value=as_literal(v)) for k, v in value.items()])
    return ir.Const(value=value)


# --------------------------------------------------------------------------- file workspaces


def _workspace(
    env: sample.SampleEnv, decl: ir.FamilyDecl, seed: str, start: dict[str, Any], final: dict[str, Any]
) -> dict[str, Any]:
    """The `workspace` artifact of a family task in a file workspace: the construction
    script of the files the plan added, and the paths the solution writes."""
    scenario = env.package.Environment(start["scenario"]).state().get(FILES_FIELD, {})
    opened = open_session(env, start).state().get(FILES_FIELD, {})
    added = {path: _text(record) for path, record in opened.items() if scenario.get(path) != record}
    outputs = sorted(path for path, record in final.get(FILES_FIELD, {}).items() if opened.get(path) != record)
    return {"env": env.name, "script": family_script(seed, decl.name, added), "outputs": outputs}


def _text(record: Any) -> str:
    content = record.get("content") if isinstance(record, dict) else record
    return content if isinstance(content, str) else json.dumps(content, sort_keys=True)


SCRIPT_MAIN = '''

def main(argv: list[str]) -> None:
    """Print the files as JSON (keys sorted), or write them below the folder given."""
    if len(argv) > 1:
        for name, text in sorted(FILES.items()):
            target = pathlib.Path(argv[1], name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="\\n")
    else:
        sys.stdout.write(json.dumps(FILES, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\\n")


if __name__ == "__main__":
    main(sys.argv)
'''


def family_script(seed: str, family: str, files: Mapping[str, str]) -> str:
    """The construction script of a family task's workspace: standalone, standard library
    only, the same bytes for the same seed, family and files. `python script.py` prints
    the files the plan adds to the scenario as JSON, `python script.py DIR` writes them."""
    entries = "".join(f"    {json.dumps(path)}: {json.dumps(files[path])},\n" for path in sorted(files))
    return (
        '"""Builds the workspace of an envc task family\'s task (generated by envc; standard library only).\n\n'
        "Run it to print the files the family's plan adds to the task's scenario as JSON, or with a folder\n"
        'to write them there.\n"""\n\nfrom __future__ import annotations\n\nimport json\nimport pathlib\nimport sys\n\n'
        f"SEED = {json.dumps(seed)}\nFAMILY = {json.dumps(family)}\n"
        f"FILES: dict[str, str] = {{\n{entries}}}\n" + SCRIPT_MAIN
    )


def rebuilt(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> dict[str, Any]:
    """The family task envc makes from a task's (environment, family, seed): what the
    audits compare a row with. FamilyDiscarded when it makes none."""
    source = task["source"]
    env = envs[task["envs"][0]]
    decl = next((d for d in env.model.families if d.name == source.get("family")), None)
    if decl is None:
        raise FamilyDiscarded(f"{env.name} declares no family {source.get('family')!r}")
    options = TaskOptions(tasks=1, max_turns=task["max_turns"], timeout_s=task["timeout_s"])
    return draw_family_task(env, decl, str(source.get("seed")), options)
