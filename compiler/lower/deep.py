"""The depth bound of recursive records in the generated package (issue 24): which state
fields hold a recursive record, and the line that ends a write tool's call on them.

Generated copies, JSON conversions and comparisons of such values recurse in Python (and
in C, against the same limit), so a value may nest at most `DEPTH_LIMIT` levels: a write
that goes deeper is rolled back and refused (`limit_exceeded`), and an argument or
scenario value that does is refused before anything recurses on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from compiler import ir
from compiler.ir.recursion import holds_recursive, recursive_records
from compiler.lower.literals import py_str


def deep_state_fields(env: ir.Environment, records: Mapping[str, ir.RecordDecl]) -> frozenset[str]:
    """The state fields whose values may hold a recursive record."""
    recursive = recursive_records(records)
    if not recursive:
        return frozenset()
    return frozenset(f.name for f in env.state if holds_recursive(f.type, records, recursive))


def depth_check(fields: Sequence[str], undo: str = "self._undo") -> list[str]:
    """The `finally` line of a write tool that writes these fields, before `finish`;
    `undo` is how the tool reaches its journal."""
    if not fields:
        return []
    values = ", ".join(f"{py_str(name)}: self._state[{py_str(name)}]" for name in fields)
    return [f"    _refuse_deep({undo}, {{{values}}})"]
