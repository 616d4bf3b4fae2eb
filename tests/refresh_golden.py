"""Rewrite the golden files under `tests/golden/`: the one way to update them.

    python tests/refresh_golden.py           # rewrite every golden file that changed
    python tests/refresh_golden.py --check   # write nothing; exit 1 if any is stale

Each golden file is a `(name, producer)` pair in `GOLDENS`: `name` is the path below
`tests/golden/`, and the producer returns the file's exact text. The tests
(`tests/test_golden_*.py`) compare the same producers with the files on disk, so the
test and the refresh can never disagree. To add a kind of golden file, write a
producer and append its pairs to `goldens()`.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SPECS = ROOT / "specs"

if str(ROOT) not in sys.path:  # run as a script from a source checkout
    sys.path.insert(0, str(ROOT))

from compiler import ir  # noqa: E402
from compiler.analyse import analyse_file  # noqa: E402

Producer = Callable[[], str]


class GoldenError(Exception):
    """A producer could not make its golden file (e.g. the spec has errors)."""


# --------------------------------------------------------------------------- producers


def relative_path(value: str) -> str:
    """`value` relative to the repository root when it is an absolute path inside it."""
    path = Path(value)
    return path.relative_to(ROOT).as_posix() if path.is_absolute() and path.is_relative_to(ROOT) else value


def relative_paths(node: object) -> None:
    """Make every path in the IR (`path`, `file`, `inputs`, ...) relative to the
    repository root, so the golden files do not depend on where the checkout lives."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, ir.BaseModel):
            for name in type(item).model_fields:
                value = getattr(item, name)
                if isinstance(value, str):
                    setattr(item, name, relative_path(value))
                elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                    setattr(item, name, [relative_path(v) for v in value])
                elif isinstance(value, (list, ir.BaseModel)):
                    stack.append(value)


def analysed_ir(spec: Path) -> str:
    """The analysed environment of a shipped spec as JSON, as `envc check --emit-ir` prints it."""
    result = analyse_file(spec)
    if result.environment is None:
        problems = "; ".join(f"{d.path}:{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics)
        raise GoldenError(f"{spec.relative_to(ROOT)} does not analyse cleanly: {problems}")
    relative_paths(result.environment)
    return result.environment.model_dump_json(indent=2) + "\n"


def shipped_specs() -> list[Path]:
    return sorted(SPECS.rglob("*.envspec"))


PACKAGE_SUFFIX = ".golden"
"""Appended to every golden package file, so pytest never collects the golden copy of a
package's own `tests/test_environment.py` (nor puts the copy on sys.path)."""
PACKAGE_FILES = (
    "README.md",
    "__init__.py",
    "environment.py",
    "openai_tools.json",
    "sessions.py",
    "tests/__init__.py",
    "tests/test_environment.py",
    "tools.json",
)
"""The files `lower()` makes for every spec (tests/test_golden_packages.py checks it), so
listing the golden files needs no lowering; a producer lowers its spec when it runs."""


@functools.cache
def analysed_environment(spec: Path) -> ir.Environment:
    result = analyse_file(spec)
    if result.environment is None:
        problems = "; ".join(f"{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics[:3])
        raise GoldenError(f"{spec.relative_to(ROOT)} does not analyse cleanly: {problems}")
    return result.environment


@functools.cache
def lowered_package(spec: Path) -> tuple[str, dict[str, str]]:
    """(environment name, files) of the package `lower()` makes for a shipped spec, with
    the spec named in headers as `specs/<name>.envspec`; lowered once per process."""
    from compiler.lower import lower

    env = analysed_environment(spec)
    return env.header.name, lower(env, spec.relative_to(ROOT).as_posix())


def environment_name(spec: Path) -> str:
    """The name in the spec's `environment NAME:` header, read without analysing it."""
    match = re.search(r"^environment\s+(\w+)\s*:", spec.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1) if match else spec.stem


def lowered_file(spec: Path, relative: str) -> str:
    """One file of a lowered shipped spec, byte for byte."""
    name, files = lowered_package(spec)
    if name != environment_name(spec):
        raise GoldenError(f"{spec.relative_to(ROOT)}: environment `{name}` is not what its header says")
    return files[relative]


def package_goldens(spec: Path) -> list[tuple[str, Producer]]:
    """`packages/<env>/<file>.golden` for every file `lower()` makes for `spec`."""
    name = environment_name(spec)
    return [
        (f"packages/{name}/{relative}{PACKAGE_SUFFIX}", functools.partial(lowered_file, spec, relative))
        for relative in PACKAGE_FILES
    ]


# --------------------------------------------------------------------------- the list


def goldens() -> list[tuple[str, Producer]]:
    """Every golden file as (path below tests/golden/, producer of its text)."""
    pairs: list[tuple[str, Producer]] = []
    for spec in shipped_specs():
        name = spec.relative_to(SPECS).with_suffix(".json").as_posix()
        pairs.append((f"ir/{name}", functools.partial(analysed_ir, spec)))
        if spec.parent == SPECS:  # compiled specs; prototypes are only extended
            pairs.extend(package_goldens(spec))
    return pairs


def stale_files(pairs: list[tuple[str, Producer]], kind: str) -> list[Path]:
    """Golden files of one kind (a folder below tests/golden/) that no producer makes."""
    produced = {GOLDEN / name for name, _ in pairs}
    folder = GOLDEN / kind
    return sorted(p for p in folder.rglob("*") if p.is_file() and p not in produced) if folder.is_dir() else []


def kinds(pairs: list[tuple[str, Producer]]) -> set[str]:
    return {name.split("/", 1)[0] for name, _ in pairs}


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    orphans = [p for kind in sorted(kinds(pairs)) for p in stale_files(pairs, kind)]
    for orphan in orphans:
        changed.append(orphan.relative_to(GOLDEN).as_posix() + " (no longer produced)")
        if not args.check:
            orphan.unlink()
    verb = "stale" if args.check else "updated"
    for name in changed:
        print(f"{verb}: tests/golden/{name}")
    for problem in failed:
        print(f"failed: {problem}", file=sys.stderr)
    print(f"{len(pairs)} golden files, {len(changed)} {verb}, {len(failed)} failed", file=sys.stderr)
    return 1 if failed or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
