"""The environment library's catalog, `specs/catalog.yaml`: one row per scenario of the
paper's coarse domains (12 general ones, 13 Claw categories), each naming the spec(s)
that model it, relative to specs/.

`envc library` reads it: `check` holds the catalog and the specs folder to each other
(every row's specs exist and sit in their domain's folder, every library spec is listed
exactly once, names are valid and unique, one package per environment name); `show`
prints the table, every column but the row's own read from the specs and from the
measured task counts (`specs/library-tasks.json`, written by `envc library tasks`);
`profiles` turns the rows into `envc draft --batch` profiles. It sits in the run stage
because `library tasks` runs task synthesis; nothing below imports it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from compiler import project

CATALOG_FILE = "catalog.yaml"
"""The catalog, in the project's specs folder."""
TASKS_FILE = "library-tasks.json"
"""The measured task counts (`envc library tasks`), beside the catalog."""
GROUPS = ("general", "claw")
"""The catalog's two halves: general tool-use domains, and Claw categories."""
CLAW_FOLDER = "claw"
"""Claw categories' specs live in specs/claw/<category>/, general domains' in specs/<domain>/."""
PORTS_FOLDER = "ports"
"""Specs of specs/ that are not library environments: ports of a public benchmark, kept
as fidelity fixtures (docs/fidelity.md)."""
NAME = re.compile(r"[a-z][a-z0-9_]*")
"""What names a domain or a scenario (a folder name, and a draft profile's name)."""


class Row(BaseModel):
    """One scenario: what a user of the domain would recognise, and the specs modelling it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    title: str
    description: str
    specs: list[str]


class Domain(BaseModel):
    """A coarse domain (or Claw category) and its scenarios."""

    model_config = ConfigDict(extra="forbid")
    title: str
    scenarios: list[Row] = []


class Catalog(BaseModel):
    """The whole catalog: domains by key, in each half."""

    model_config = ConfigDict(extra="forbid")
    general: dict[str, Domain]
    claw: dict[str, Domain]

    def domains(self) -> Iterator[tuple[str, str, Domain]]:
        """(group, key, domain) in the catalog's order."""
        for group in GROUPS:
            for key, domain in getattr(self, group).items():
                yield group, key, domain

    def rows(self) -> Iterator[tuple[str, str, Domain, int, Row]]:
        """(group, domain key, domain, index, row) of every scenario, in order."""
        for group, key, domain in self.domains():
            for index, row in enumerate(domain.scenarios):
                yield group, key, domain, index, row


@dataclass(frozen=True)
class Problem:
    """Something `envc library check` finds wrong, at a file and line (a catalog row)."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


class CatalogError(ValueError):
    """The catalog cannot be read at all (missing, not YAML, not the catalog's shape)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass
class Loaded:
    """The catalog and where its rows are, so a problem names its line."""

    path: Path
    catalog: Catalog
    lines: dict[tuple[str, ...], int] = field(default_factory=dict)
    """Line of each domain (group, key) and each row (group, key, index)."""

    def line(self, *where: str | int) -> int:
        return self.lines.get(tuple(str(w) for w in where), 0)


def catalog_path(root: Path) -> Path:
    return project.specs_folder(root) / CATALOG_FILE


def domain_folder(group: str, key: str) -> str:
    """The folder of specs/ (and of generated/) holding a domain's specs."""
    return key if group == "general" else f"{CLAW_FOLDER}/{key}"


def load(root: Path) -> Loaded:
    """The project's catalog with the line of every domain and row; CatalogError when it
    cannot be read or does not have the catalog's shape (the message names file and line)."""
    path = catalog_path(root)
    shown = project.display_path(path, root)
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except OSError as exc:
        raise CatalogError(Problem(shown, 0, f"cannot read the catalog: {exc.strerror or exc}")) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        raise CatalogError(Problem(shown, line, f"not YAML: {getattr(exc, 'problem', None) or exc}")) from None
    lines = _lines(node)
    try:
        catalog = Catalog.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(str(part) for part in error["loc"])
        line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), 0)
        where = ".".join(loc) or "the catalog"
        raise CatalogError(Problem(shown, line, f"{where}: {error['msg']}")) from None
    return Loaded(path, catalog, lines)


def _lines(node: yaml.Node | None) -> dict[tuple[str, ...], int]:
    """The 1-based line of every mapping key and list item below the root, by its path."""
    found: dict[tuple[str, ...], int] = {}

    def walk(current: yaml.Node, where: tuple[str, ...]) -> None:
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                here = (*where, str(key.value))
                found[here] = key.start_mark.line + 1
                walk(value, here)
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                here = (*where, str(index))
                found[here] = item.start_mark.line + 1
                walk(item, here)

    if node is not None:
        walk(node, ())
    return found


# --------------------------------------------------------------------------- check


def check(root: Path) -> list[Problem]:
    """Everything wrong between the catalog and the specs folder, each at its file and row."""
    try:
        loaded = load(root)
    except CatalogError as exc:
        return [exc.problem]
    shown = project.display_path(loaded.path, root)
    problems = _name_problems(loaded, shown)
    listed = _row_spec_problems(loaded, root, shown, problems)
    problems += _unlisted_specs(loaded, root, listed)
    problems += _shared_packages(loaded, root, listed, shown)
    return problems


def _name_problems(loaded: Loaded, shown: str) -> list[Problem]:
    """Domain keys and scenario names that are not lower_snake_case, and scenario names used twice."""
    problems: list[Problem] = []
    for group, key, _ in loaded.catalog.domains():
        if not NAME.fullmatch(key):
            problems.append(Problem(shown, loaded.line(group, key), f"domain `{key}` is not a lower_snake_case name"))
    first: dict[str, int] = {}
    for group, key, _, index, row in loaded.catalog.rows():
        line = loaded.line(group, key, "scenarios", index)
        if not NAME.fullmatch(row.name):
            problems.append(Problem(shown, line, f"scenario `{row.name}` is not a lower_snake_case name"))
        if row.name in first:
            problems.append(
                Problem(shown, line, f"scenario `{row.name}` is listed twice (first at line {first[row.name]})")
            )
        first.setdefault(row.name, line)
        if not row.specs:
            problems.append(Problem(shown, line, f"scenario `{row.name}` names no spec"))
    return problems


def _row_spec_problems(loaded: Loaded, root: Path, shown: str, problems: list[Problem]) -> dict[str, int]:
    """Row specs that are missing, outside their domain's folder or listed twice; returns
    every listed spec (relative to specs/) with the line of its first row."""
    listed: dict[str, int] = {}
    specs = project.specs_folder(root)
    for group, key, _, index, row in loaded.catalog.rows():
        line = loaded.line(group, key, "scenarios", index)
        folder = domain_folder(group, key)
        for spec in row.specs:
            where = f"scenario `{row.name}`: spec `{spec}`"
            if spec in listed:
                problems.append(Problem(shown, line, f"{where} is listed twice (first at line {listed[spec]})"))
                continue
            listed[spec] = line
            if not (specs / spec).is_file():
                problems.append(Problem(shown, line, f"{where} does not exist (no file specs/{spec})"))
            elif Path(spec).parent.as_posix() != folder:
                problems.append(Problem(shown, line, f"{where} is not in its domain's folder specs/{folder}/"))
    return listed


def library_specs(root: Path) -> list[Path]:
    """The specs that must be in the catalog: every compiled spec but the ports."""
    specs = project.specs_folder(root)
    return [path for path in project.default_specs(root) if path.relative_to(specs).parts[0] != PORTS_FOLDER]


def _unlisted_specs(loaded: Loaded, root: Path, listed: dict[str, int]) -> list[Problem]:
    """Library specs no row names: in a folder no domain has, or simply left out."""
    specs = project.specs_folder(root)
    folders = {domain_folder(group, key): key for group, key, _ in loaded.catalog.domains()}
    problems = []
    for path in library_specs(root):
        relative = path.relative_to(specs).as_posix()
        if relative in listed:
            continue
        folder = Path(relative).parent.as_posix()
        shown = project.display_path(path, root)
        if folder == ".":
            message = "not in a domain's folder: move it to specs/<domain>/ and add a catalog row naming it"
        elif folder not in folders:
            message = f"unknown domain `{folder}`: the catalog has no domain whose folder is specs/{folder}/"
        else:
            message = f"not in the catalog: add a row naming `{relative}` under domain `{folders[folder]}`"
        problems.append(Problem(shown, 1, message))
    return problems


def _shared_packages(loaded: Loaded, root: Path, listed: dict[str, int], shown: str) -> list[Problem]:
    """Two specs of one environment name (a task names environments: one name, one package)."""
    specs = project.specs_folder(root)
    by_name: dict[str, str] = {}
    problems = []
    for spec, line in listed.items():
        name = environment_name(specs / spec)
        if name is None:
            continue
        if name in by_name:
            problems.append(
                Problem(
                    shown,
                    line,
                    f"`{spec}` and `{by_name[name]}` both define environment `{name}`: packages must be unique",
                )
            )
        by_name.setdefault(name, spec)
    return problems


HEADER = re.compile(r"^environment\s+(\w+)\s*:", re.MULTILINE)


def environment_name(spec: Path) -> str | None:
    """The name in a spec's `environment NAME:` header, without analysing it (None if unreadable)."""
    try:
        match = HEADER.search(spec.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return match.group(1) if match else None


# --------------------------------------------------------------------------- show


@dataclass
class Environment:
    """What `show` says about one spec of a row, read from its analysis."""

    spec: str
    name: str
    archetype: str
    read_tools: int
    write_tools: int
    scenarios: list[str]
    families: list[str]
    tasks_kept: int | None = None
    problem: str = ""


@dataclass
class ShownRow:
    group: str
    domain: str
    domain_title: str
    row: Row
    environments: list[Environment]

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "domain": self.domain,
            "domain_title": self.domain_title,
            "scenario": self.row.name,
            "title": self.row.title,
            "description": self.row.description,
            "environments": [vars(env) for env in self.environments],
        }


def tasks_path(root: Path) -> Path:
    return project.specs_folder(root) / TASKS_FILE


def read_tasks_kept(root: Path) -> dict[str, int]:
    """Kept tasks per environment from `specs/library-tasks.json`, or {} when absent."""
    try:
        data = json.loads(tasks_path(root).read_text(encoding="utf-8"))
        return {str(name): int(entry["kept"]) for name, entry in data["environments"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def describe(spec: Path, root: Path) -> Environment:
    """One spec's columns: its name, archetype, tools read/write, scenarios, families."""
    from compiler.analyse import analyse_file

    shown = project.display_path(spec, project.specs_folder(root))
    env = analyse_file(spec).environment if spec.is_file() else None
    if env is None:
        return Environment(shown, "", "", 0, 0, [], [], problem="does not analyse (run `envc check`)")
    return Environment(
        spec=shown,
        name=env.header.name,
        archetype=env.header.archetype or "custom",
        read_tools=sum(1 for tool in env.tools if not tool.writes),
        write_tools=sum(1 for tool in env.tools if tool.writes),
        scenarios=[scenario.name for scenario in env.scenarios],
        families=[family.name for family in env.families],
    )


def shown_rows(root: Path) -> list[ShownRow]:
    """Every row of the catalog with what its specs say (CatalogError if unreadable)."""
    loaded = load(root)
    kept = read_tasks_kept(root)
    specs = project.specs_folder(root)
    rows = []
    for group, key, domain, _, row in loaded.catalog.rows():
        envs = [describe(specs / spec, root) for spec in row.specs]
        for env in envs:
            env.tasks_kept = kept.get(env.name)
        rows.append(ShownRow(group, key, domain.title, row, envs))
    return rows


COLUMNS = (
    "domain",
    "scenario",
    "description",
    "environment",
    "archetype",
    "tools r/w",
    "scenarios",
    "task families",
    "tasks kept",
)


def table_cells(row: ShownRow) -> list[str]:
    """A row as the table's cells (several environments joined with `; `)."""
    envs = row.environments

    def joined(cell: Any) -> str:
        return "; ".join(cell(env) for env in envs) or "-"

    return [
        row.domain_title,
        row.row.title,
        row.row.description,
        joined(lambda e: e.name or e.spec),
        joined(lambda e: e.archetype or "?"),
        joined(lambda e: f"{e.read_tools}/{e.write_tools}"),
        joined(lambda e: str(len(e.scenarios))),
        joined(lambda e: ", ".join(e.families) or "-"),
        joined(lambda e: "-" if e.tasks_kept is None else str(e.tasks_kept)),
    ]


def markdown_table(rows: list[ShownRow]) -> str:
    """The table as GitHub markdown (docs/library.md holds it), one table per half."""
    parts = []
    for group in GROUPS:
        chosen = [row for row in rows if row.group == group]
        parts.append(f"### {'General tool-use' if group == 'general' else 'Claw'} ({len(chosen)} scenarios)\n")
        parts.append("| " + " | ".join(COLUMNS) + " |")
        parts.append("|" + "---|" * len(COLUMNS))
        for row in chosen:
            parts.append("| " + " | ".join(cell.replace("|", "\\|") for cell in table_cells(row)) + " |")
        parts.append("")
    return "\n".join(parts)


# --------------------------------------------------------------------------- profiles


def profiles(rows: list[ShownRow]) -> list[dict[str, Any]]:
    """One `envc draft --batch` profile per scenario: the row (domain, scenario,
    description) and the archetype of its (first) spec, so a model drafts a variant of
    the scenario on the same prototype (compiler/build/draft.py reads these keys)."""
    found = []
    for row in rows:
        archetype = next((env.archetype for env in row.environments if env.archetype), "custom")
        found.append(
            {
                "name": row.row.name,
                "description": row.row.description,
                "domain": row.domain_title,
                "scenario": row.row.title,
                "domains": [row.domain],
                "archetype": archetype,
                "group": row.group,
                "specs": [env.spec for env in row.environments],
            }
        )
    return found


# --------------------------------------------------------------------------- tasks kept

QUALITY_KEYS = (
    "needs_lookup",
    "hops_per_lookup_task",
    "distractors_per_reference",
    "distinct_prompts",
    "distinct_intents",
    "spelled_calls",
    "tool_named",
    "placeholders",
    "literal_baseline_mean_reward",
)
"""The task-quality measures of `envc tasks`' report (compiler/synth/task_quality.py) that
`specs/library-tasks.json` keeps per environment."""


def kept_summary(report: dict[str, Any]) -> dict[str, Any]:
    """What `specs/library-tasks.json` keeps of one environment's `envc tasks` report: the
    kept and candidate counts, the quality measures and the tasks kept per family."""
    quality = report.get("quality") or {}
    return {
        "kept": int(report.get("kept", 0)),
        "candidates": int(report.get("candidates", 0)),
        "keep_rate": report.get("keep_rate", 0.0),
        "quality": {key: quality[key] for key in QUALITY_KEYS if key in quality},
        "families": {name: count.get("kept", 0) for name, count in sorted((report.get("families") or {}).items())},
    }
