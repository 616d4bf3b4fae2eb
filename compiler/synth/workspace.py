"""File-workspace tasks (the Claw family): four artifacts from one seeded plan.

A workspace task comes from one ground truth, a seeded *plan* (a site, a month, a roster,
a ledger and scoring rules), in one pass: the construction script (the plan and the
functions below, emitted as a standalone standard-library Python file) builds the
workspace files with their distractors and noisy records; the answer is computed from
those files by the rules; the request names the output path; the verifier inspects
that path, with partial credit by degree of completion. The functions between the two
markers are copied into the script verbatim (`inspect.getsource`), so they use only
the standard library and each other.
"""

from __future__ import annotations

import functools
import inspect
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compiler.synth import sample
from compiler.synth.task_build import (
    FILES_FIELD,
    WHOLE_FIELD_BYTES,
    TaskOptions,
    build_task,
    open_session,
    pointer,
)

OPENERS = ("Please", "Could you", "I need you to", "Go ahead and", "Kindly")


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
        changes = {f"/{FILES_FIELD}/{pointer(path)}": record for path, record in added.items()}
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
    place = f"/{FILES_FIELD}/{pointer(output)}"
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
