"""Rewrite the golden files under `tests/golden/`: the one way to update them.

    python tests/refresh_golden.py           # rewrite every golden file that changed
    python tests/refresh_golden.py --check   # write nothing; exit 1 if any is stale

Two kinds, both meant to be read in review:

- `ir/NAME.json`: the analysed IR of a small dedicated spec, `tests/fixtures/golden/
  NAME.envspec`, each exercising one area (`IR_SPECS`). It is `envc check --emit-ir`
  written more compactly: a type is its spec text (`"map[int, Book]"`), a node's
  position is one `"at": "line:col-end_line:end_col"` key, and positions are kept for
  `plain` only (the others would mostly change when a line is added above).
- `digest/SPEC.json`, `digest/prototypes/PROTO.json`: what every shipped spec means,
  without positions: header, records, enums, state and world fields with their types,
  scenarios, per tool and helper its parameters, return type, reads, writes, errors and
  side effect, tests and tasks. It changes when a spec's meaning changes, not its layout.

The generated packages themselves are compared with `generated/` by
`tests/test_generated_up_to_date.py`, not copied here.

Each golden file is a `(name, producer)` pair from `goldens()`: `name` is the path below
`tests/golden/`, and the producer returns the file's exact text. The tests
(`tests/test_golden_ir.py`) compare the same producers with the files on disk, so the
test and the refresh can never disagree. To add a kind of golden file, write a producer
and append its pairs to `goldens()`. Files below `tests/golden/` that no producer makes
are deleted by the refresh (and fail `--check`).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SPECS = ROOT / "specs"
FIXTURES = ROOT / "tests" / "fixtures" / "golden"

if str(ROOT) not in sys.path:  # run as a script from a source checkout
    sys.path.insert(0, str(ROOT))

from compiler import ir  # noqa: E402
from compiler.analyse import analyse_file  # noqa: E402
from compiler.front import fmt  # noqa: E402

Producer = Callable[[], str]

IR_SPECS = {
    "plain": "enums, records, state, world, a scenario, read and write tools, a test, a task",
    "extends": "a prototype (prototypes/desk.envspec) with rename, override, drop, re-declared fields",
    "world": "world data inline and from JSON files",
    "effects": "helpers and aliasing: inferred reads, writes and errors",
}
"""The dedicated specs of `tests/fixtures/golden/` with an IR golden, and what each covers."""
WITH_POSITIONS = {"plain"}
"""IR goldens that keep source positions (one is enough to cover them)."""
POSITION_FIELDS = ("line", "col", "end_line", "end_col")


class GoldenError(Exception):
    """A producer could not make its golden file (e.g. the spec has errors)."""


# --------------------------------------------------------------------------- shared helpers


def relative_path(value: str) -> str:
    """`value` relative to the repository root when it is an absolute path inside it."""
    path = Path(value)
    return path.relative_to(ROOT).as_posix() if path.is_absolute() and path.is_relative_to(ROOT) else value


def shipped_specs() -> list[Path]:
    """Every shipped spec: every spec below specs/, the prototypes in `specs/prototypes/` included."""
    return sorted(SPECS.rglob("*.envspec"))


@functools.cache
def analysed_environment(spec: Path) -> ir.Environment:
    """The analysed environment of a spec, once per process; callers must not change it."""
    result = analyse_file(spec)
    if result.environment is None:
        problems = "; ".join(f"{d.path}:{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics[:3])
        raise GoldenError(f"{relative_path(str(spec))} does not analyse cleanly: {problems}")
    return result.environment


@functools.cache
def lowered_package(spec: Path) -> tuple[str, dict[str, str]]:
    """(environment name, files) of the package `lower()` makes for a shipped spec, with
    the spec named in headers as `specs/<name>.envspec`, as `envc compile` names it;
    lowered once per process (the tests on generated packages share it)."""
    from compiler.lower import lower

    env = analysed_environment(spec)
    return env.header.name, lower(env, spec.relative_to(ROOT).as_posix())


def environment_name(spec: Path) -> str:
    """The name in the spec's `environment NAME:` header, read without analysing it."""
    match = re.search(r"^environment\s+(\w+)\s*:", spec.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1) if match else spec.stem


WIDTH = 100
"""Short lists and maps that fit in this many columns are written on one line."""


def dump(data: object) -> str:
    """JSON indented by two, like `json.dumps(indent=2)`, but with a short list of
    scalars (`"reads": ["books", "clock"]`) or a map with one scalar (`{"id": "int"}`)
    on one line, so a file reads like a table."""
    return _json(data, 0, 0) + "\n"


def _json(value: object, level: int, prefix: int) -> str:
    if not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False)
    pad = "  " * (level + 1)
    if isinstance(value, list):
        flat = json.dumps(value, ensure_ascii=False)
        if all(not isinstance(v, (dict, list)) for v in value) and 2 * level + prefix + len(flat) < WIDTH:
            return flat
        items = [pad + _json(v, level + 1, 0) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * level + "]"
    if len(value) == 1 and not isinstance(next(iter(value.values())), (dict, list)):
        flat = json.dumps(value, ensure_ascii=False)
        if 2 * level + prefix + len(flat) < WIDTH:
            return flat
    lines = []
    for key, item in value.items():
        name = key if isinstance(key, str) else json.dumps(key)  # keys as json.dumps writes them: 1 -> "1"
        head = json.dumps(name, ensure_ascii=False) + ": "
        lines.append(pad + head + _json(item, level + 1, len(head)))
    return "{\n" + ",\n".join(lines) + "\n" + "  " * level + "}"


# --------------------------------------------------------------------------- producer: IR of small specs


def plain_ir(value: Any, positions: bool) -> Any:
    """The IR as JSON-ready data in the compact golden form (see the module doc)."""
    if isinstance(value, ir.TypeRef):  # analysed types carry no position of their own
        return fmt.type_ref(value)
    if isinstance(value, BaseModel):
        out: dict[str, Any] = {}
        if positions and isinstance(value, ir.Node) and any(getattr(value, f) for f in POSITION_FIELDS):
            out["at"] = f"{value.line}:{value.col}-{value.end_line}:{value.end_col}"
        for name in type(value).model_fields:
            item = getattr(value, name)
            if name in POSITION_FIELDS or (not positions and _only_positions(item)):
                continue
            if isinstance(item, str):
                item = relative_path(item)
            elif isinstance(item, list) and all(isinstance(v, str) for v in item):
                item = [relative_path(v) for v in item]
            out[name] = plain_ir(item, positions)
        return out
    if isinstance(value, list):
        return [plain_ir(v, positions) for v in value]
    if isinstance(value, dict):
        return {k: plain_ir(v, positions) for k, v in value.items()}
    return value


def _only_positions(value: object) -> bool:
    """A map of bare `Node`s (`EnvHeader.item_places`): nothing but positions."""
    return isinstance(value, dict) and bool(value) and all(type(v) is ir.Node for v in value.values())


def analysed_ir(spec: Path, positions: bool) -> str:
    """The analysed environment of a dedicated golden spec, in the compact golden form."""
    result = analyse_file(spec)  # fresh: nothing cached is shared with other producers
    if result.environment is None:
        problems = "; ".join(f"{d.path}:{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics)
        raise GoldenError(f"{relative_path(str(spec))} does not analyse cleanly: {problems}")
    return dump(plain_ir(result.environment, positions))


# --------------------------------------------------------------------------- producer: digest of shipped specs


def _typed(type_: ir.TypeRef, default: ir.Expr | None = None, constraints: list[ir.Constraint] | None = None) -> str:
    """`int = 1 min 1 max 10`: a type with its default and constraints, as the spec writes them."""
    text = fmt.type_ref(type_)
    if default is not None:
        text += f" = {fmt.expr(default)}"
    for constraint in constraints or []:
        text += f" {constraint.kind} {fmt.expr(constraint.value)}"
    return text


def _callable(decl: ir.ToolDecl, spec: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "params": {p.name: _typed(p.type, p.default, p.constraints) for p in decl.params},
        "returns": fmt.type_ref(decl.returns),
        "reads": decl.reads,
        "writes": decl.writes,
        "errors": decl.errors,
    }
    if decl.side_effect:
        entry["side_effect"] = decl.side_effect
    if decl.escape is not None:
        entry["body"] = decl.escape.kind
    if decl.override:
        entry["override"] = True
    if relative_path(decl.file) != spec:
        entry["from"] = relative_path(decl.file)
    return entry


def digest(env: ir.Environment, spec: str) -> dict[str, Any]:
    """What a spec means, position-free (see the module doc); `spec` is its display path."""
    header = env.header
    decls: list[ir.Decl] = [header, *env.enums, *env.records, *env.scenarios, *env.tools, *env.fns]
    sources = {relative_path(d.file) for d in [*decls, *env.tests, *env.tasks] if d.file}
    return {
        "spec": spec,
        "environment": {
            "name": header.name,
            "title": header.title,
            "archetype": header.archetype,
            "extends": header.extends,
            "domains": header.domains,
            "seed": header.seed,
            "rng": header.rng,
            "clock": header.clock,
        },
        "sources": sorted(sources | {spec}),
        "world_files": sorted(relative_path(p) for p in env.inputs),
        "enums": {e.name: e.members for e in env.enums},
        "records": {r.name: {f.name: _typed(f.type, f.default) for f in r.fields} for r in env.records},
        "state": {f.name: fmt.type_ref(f.type) for f in env.state},
        "world": {
            w.name: fmt.type_ref(w.type) + (f" from {json.dumps(w.source)}" if w.source else "") for w in env.world
        },
        "scenarios": {s.name: [item.name for item in s.items] for s in env.scenarios},
        "tools": {t.name: _callable(t, spec) for t in env.tools},
        "fns": {f.name: _callable(f, spec) for f in env.fns},
        "tests": [t.name for t in env.tests],
        "tasks": {
            t.name: {"scenario": t.scenario, "solution": [_called(step) for step in t.solution]} for t in env.tasks
        },
    }


def _called(step: ir.Expr) -> str:
    """The tool a solution step calls."""
    return step.func.id if isinstance(step, ir.Call) and isinstance(step.func, ir.Name) else fmt.expr(step)


def spec_digest(spec: Path) -> str:
    return dump(digest(analysed_environment(spec), spec.relative_to(ROOT).as_posix()))


# --------------------------------------------------------------------------- the list


def ir_specs() -> list[Path]:
    return [FIXTURES / f"{name}.envspec" for name in IR_SPECS]


def goldens() -> list[tuple[str, Producer]]:
    """Every golden file as (path below tests/golden/, producer of its text)."""
    pairs: list[tuple[str, Producer]] = []
    for spec in ir_specs():
        pairs.append((f"ir/{spec.stem}.json", functools.partial(analysed_ir, spec, spec.stem in WITH_POSITIONS)))
    for spec in shipped_specs():
        name = spec.relative_to(SPECS).with_suffix(".json").as_posix()
        pairs.append((f"digest/{name}", functools.partial(spec_digest, spec)))
    return pairs


def stale_files(pairs: list[tuple[str, Producer]], kind: str = "") -> list[Path]:
    """Golden files that no producer makes: below `tests/golden/KIND/`, or anywhere
    below `tests/golden/` when `kind` is empty."""
    produced = {GOLDEN / name for name, _ in pairs}
    folder = GOLDEN / kind if kind else GOLDEN
    return sorted(p for p in folder.rglob("*") if p.is_file() and p not in produced) if folder.is_dir() else []


def kinds(pairs: list[tuple[str, Producer]]) -> set[str]:
    return {name.split("/", 1)[0] for name, _ in pairs}


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a golden file is stale")
    args = parser.parse_args(argv)
    pairs = goldens()
    changed: list[str] = []
    failed: list[str] = []
    for name, produce in pairs:
        path = GOLDEN / name
        try:
            text = produce()
        except GoldenError as error:  # keep going: report every spec that cannot be made
            failed.append(f"tests/golden/{name}: {error}")
            continue
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        changed.append(name)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
    orphans = stale_files(pairs)
    for orphan in orphans:
        changed.append(orphan.relative_to(GOLDEN).as_posix() + " (no longer produced)")
        if not args.check:
            orphan.unlink()
    if not args.check and GOLDEN.is_dir():  # folders the orphans leave empty
        for folder in sorted((p for p in GOLDEN.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            if not any(folder.iterdir()):
                folder.rmdir()
    verb = "stale" if args.check else "updated"
    for name in changed:
        print(f"{verb}: tests/golden/{name}")
    for problem in failed:
        print(f"failed: {problem}", file=sys.stderr)
    print(f"{len(pairs)} golden files, {len(changed)} {verb}, {len(failed)} failed", file=sys.stderr)
    return 1 if failed or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
