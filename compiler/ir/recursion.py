"""Records that contain themselves (issue 24): which records are recursive, which
cycles have no end, and the depth a recursive value may reach.

A record may hold itself through a list, a map, an optional or an absent-able field
(`children: map[str, Node]`): such values are finite trees. A cycle of fields that are
always there (`next: Node` in `Node`) has no finite value and is refused (`E3023`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler import ir
from compiler.ir import typesys as ts

DEPTH_LIMIT = 100
"""How deeply the JSON form of a state field or argument holding a recursive record may
nest (lists and objects, one level each). Python's copies, comparisons and JSON
encoders recurse in C against `sys.getrecursionlimit()`; this bound keeps every one of
them far below it (a change that goes deeper is a `limit_exceeded` domain error)."""


def _mentioned(ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl]) -> set[str]:
    """The record names a type mentions, however deep inside containers."""
    found: set[str] = set()
    stack = [ty]
    while stack:
        current = stack.pop()
        if current.name in records:
            found.add(current.name)
        stack.extend(current.args)
    return found


def _edges(records: Mapping[str, ir.RecordDecl]) -> dict[str, set[str]]:
    """Each record's records: those its fields mention, and a union's members."""
    return {name: set(r.members).union(*(_mentioned(f.type, records) for f in r.fields)) for name, r in records.items()}


def _endless_edges(records: Mapping[str, ir.RecordDecl]) -> dict[str, set[str]]:
    """Each record's records that every value of it holds: fields always there whose type
    is the record itself (not inside a container or optional), and a union's members."""
    return {
        name: set(r.members) | {f.type.name for f in r.fields if not f.absent and f.type.name in records}
        for name, r in records.items()
    }


def _on_cycle(start: str, edges: Mapping[str, Iterable[str]]) -> bool:
    """Whether `start` reaches itself along `edges` (an explicit stack)."""
    seen: set[str] = set()
    stack = list(edges.get(start, ()))
    while stack:
        name = stack.pop()
        if name == start:
            return True
        if name not in seen:
            seen.add(name)
            stack.extend(edges.get(name, ()))
    return False


def recursive_records(records: Mapping[str, ir.RecordDecl]) -> frozenset[str]:
    """The records (and unions) that contain themselves, directly or through others."""
    edges = _edges(records)
    return frozenset(name for name in records if _on_cycle(name, edges))


def endless_records(records: Mapping[str, ir.RecordDecl]) -> list[str]:
    """The records whose every value would hold another of them: no finite value."""
    edges = _endless_edges(records)
    return [name for name in records if _on_cycle(name, edges)]


def nesting(value: Any, limit: int) -> int:
    """How deeply lists and objects nest in a JSON-like value (1 for a flat one), found
    with an explicit stack and given up just past `limit`, so any depth is safe."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            items: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            items = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            break
        stack.extend((child, depth + 1) for child in items)
    return deepest


def holds_recursive(ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl], recursive: frozenset[str]) -> bool:
    """Whether values of `ty` may hold a recursive record (and so need the depth bound)."""
    return bool(reachable_records(ty, records) & recursive)


def reachable_records(ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl]) -> set[str]:
    """Every record a value of `ty` may hold, through fields and members too."""
    edges = _edges(records)
    found: set[str] = set()
    stack = list(_mentioned(ty, records))
    while stack:
        name = stack.pop()
        if name not in found:
            found.add(name)
            stack.extend(edges.get(name, ()))
    return found


def schema_defs(
    types: Iterable[ir.TypeRef],
    enums: Mapping[str, ir.EnumDecl],
    records: Mapping[str, ir.RecordDecl],
    recursive: frozenset[str],
) -> dict[str, Any]:
    """The `$defs` a schema of `types` needs: one per recursive record they may hold,
    each with the others as `$ref`s (an inlined recursive schema would never end)."""
    needed: set[str] = set()
    for ty in types:
        needed |= reachable_records(ty, records) & recursive
    return {name: ts.record_schema(records[name], enums, records, recursive) for name in sorted(needed)}
