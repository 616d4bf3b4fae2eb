"""The runtime helpers a generated module needs, as source text copied from
`compiler/library/runtime.py`: each helper with every helper it calls, found from the
functions' own code (so a new dependency needs no bookkeeping)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

RUNTIME_FILE = Path(__file__).with_name("runtime.py")


@functools.cache
def _runtime_functions() -> dict[str, tuple[str, frozenset[str]]]:
    """Helper name (without `_`) -> (source, names of the helpers it uses). Helpers are the
    module's functions, classes and annotated constants (`_REGEX_CACHE: ... = {}`)."""
    text = RUNTIME_FILE.read_text(encoding="utf-8")
    tree = ast.parse(text)
    nodes = {name: node for node in tree.body if (name := _defined_name(node)) is not None}
    functions: dict[str, tuple[str, frozenset[str]]] = {}
    for name, node in nodes.items():
        source = ast.get_source_segment(text, node)
        assert source is not None
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in nodes} - {name}
        functions[name[1:]] = (source, frozenset(other[1:] for other in used))
    return functions


def _defined_name(node: ast.stmt) -> str | None:
    """The `_name` a top-level statement of runtime.py defines, if it is a helper."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id.startswith("_"):
        return node.target.id
    return None


def runtime_names() -> frozenset[str]:
    """Every helper runtime.py defines."""
    return frozenset(_runtime_functions())


def needed(names: Iterable[str]) -> list[str]:
    """The helpers among `names` (other names are ignored: they mark template features)
    and everything they call, sorted by name."""
    functions = _runtime_functions()
    todo = [name for name in names if name in functions]
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(functions[name][1])
    return sorted(found)


def sources(names: Iterable[str]) -> list[str]:
    """Source text of `needed(names)`, in that order."""
    functions = _runtime_functions()
    return [functions[name][0] for name in needed(names)]
