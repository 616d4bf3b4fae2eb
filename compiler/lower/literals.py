"""Python source for constants: string literals (invisible characters escaped), docstring
text, JSON-like values, and values typed as the IR declares them (a set is `{...}`, not its
JSON list); and the JSON value of a constant IR expression."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from compiler import ir
from compiler.ir import typesys as ts


def py_str(text: str, quote: str = '"') -> str:
    """A Python string literal with the given quote character. Characters that do not
    show (controls, zero-width and direction marks, odd spaces) are written as escapes,
    so the source says what the string holds (ruff's PLE2502, PLE2510-PLE2515)."""
    body = escape_invisible(json.dumps(text, ensure_ascii=False)[1:-1])
    if quote == "'":
        body = body.replace('\\"', '"').replace("'", "\\'")
    return f"{quote}{body}{quote}"


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp", "Zs"})
"""Unicode categories written as escapes. Unassigned code points (Cn) are left as they
are: which ones are unassigned depends on the Python that runs envc, and the output may not."""


def escape_invisible(text: str) -> str:
    """`text` with every character that does not show, except space, tab and line break,
    as a Python escape (`\\u200b`); backslashes must already be escaped."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(ch) if ch not in " \t\n" and unicodedata.category(ch) in _INVISIBLE else ch for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def docstring(text: str) -> str:
    """Text that is safe between triple quotes in generated code."""
    cleaned = escape_invisible(text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"'))
    if cleaned.endswith('"'):
        cleaned += " "
    return cleaned or "No description."


def block_docstring(text: str) -> str:
    """A whole docstring's text: one that spans lines ends with a line break, so its closing
    quotes sit on a line of their own (ruff format then indents them)."""
    cleaned = docstring(text)
    return cleaned + "\n" if "\n" in cleaned else cleaned


def const_json(e: ir.Expr) -> object:
    """The JSON value of a constant expression (a record field's or a parameter's default,
    a constraint's bound): the analyser allows only literals there."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Unary) and isinstance(e.operand, ir.Const) and isinstance(e.operand.value, (int, float)):
        return -e.operand.value
    if isinstance(e, ir.Attr):
        return e.name
    if isinstance(e, ir.ListLit):
        return [const_json(i) for i in e.items]
    if isinstance(e, ir.MapLit):
        return {const_json(x.key): const_json(x.value) for x in e.entries}
    raise AssertionError("record defaults are literals (the analyser checks this)")


def py_value(value: object) -> str:
    """Python source for a JSON-like constant (state defaults, world data, samples)."""
    if isinstance(value, str):
        return py_str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_value(k)}: {py_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py_value(v) for v in value) + "]"
    return repr(value)


def typed_value(
    values: dict[str, Any],
    types: dict[str, ir.TypeRef],
    records: dict[str, ir.RecordDecl],
    shipped: Mapping[str, str] | None = None,
) -> str:
    """Python source for a mapping of fields, each spelled for its type: the IR keeps a
    set as its JSON form (a sorted list), and Python needs `set()` or `{...}` for it. A
    field in `shipped` is that expression instead (it reads the field's data file)."""
    shipped = shipped or {}
    return (
        "{"
        + ", ".join(
            f"{py_value(k)}: {shipped[k] if k in shipped else typed_literal(v, types.get(k), records)}"
            for k, v in values.items()
        )
        + "}"
    )


def typed_literal(value: Any, ty: ir.TypeRef | None, records: dict[str, ir.RecordDecl]) -> str:
    """Python source for one constant of a type (see `typed_value`)."""
    if ty is None or value is None or not _holds_set(ty, records, set()):
        return py_value(value)
    base = ts.strip_optional(ty)
    if base.name == "set":
        return "{" + ", ".join(py_value(v) for v in value) + "}" if value else "set()"
    if base.name == "list":
        return "[" + ", ".join(typed_literal(v, base.args[0], records) for v in value) + "]"
    if base.name == "map":
        return (
            "{" + ", ".join(f"{py_value(k)}: {typed_literal(v, base.args[1], records)}" for k, v in value.items()) + "}"
        )
    if base.name in records:
        fields = {f.name: f.type for f in _record_of(value, records[base.name], records).fields}
        return typed_value(value, fields, records)
    return py_value(value)


def _holds_set(ty: ir.TypeRef, records: dict[str, ir.RecordDecl], seen: set[str]) -> bool:
    """`ts.holds_set`, looking inside records too (each record once)."""
    if ty.name == "set":
        return True
    if ty.name in records and ty.name not in seen:
        seen.add(ty.name)
        members = [ts.t(member) for member in records[ty.name].members]  # a union's own fields are the shared ones
        if any(_holds_set(f.type, records, seen) for f in records[ty.name].fields) or any(
            _holds_set(member, records, seen) for member in members
        ):
            return True
    return any(_holds_set(arg, records, seen) for arg in ty.args)


def data_json(value: Any, ty: ir.TypeRef | None, records: dict[str, ir.RecordDecl]) -> str:
    """The text of a data file shipped in a generated package: the value as JSON in the
    form the package's `conform` reads back (a `map[json, V]` as `[key, value]` pairs, so
    `1` and `"1"` stay apart), in the order of the spec's file (map order is meaningful),
    on one line with fixed separators, non-ASCII characters as they are (UTF-8). Byte for
    byte the same for the same value."""
    wire = value if ty is None or not _holds_pairs(ty, records, set()) else _wire(value, ty, records)
    text = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
    if not _encodable(text):
        text = json.dumps(wire, separators=(",", ":"))  # a lone surrogate: escaped, so the file is UTF-8
    return text + "\n"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _holds_pairs(ty: ir.TypeRef, records: dict[str, ir.RecordDecl], seen: set[str]) -> bool:
    """Whether a value of the type may hold a `map[json, V]` (written as pairs)."""
    if ty.name == "map" and ty.args and ty.args[0].name == "json":
        return True
    if ty.name in records and ty.name not in seen:
        seen.add(ty.name)
        members = [ts.t(member) for member in records[ty.name].members]  # a union's own fields are the shared ones
        if any(_holds_pairs(f.type, records, seen) for f in records[ty.name].fields) or any(
            _holds_pairs(member, records, seen) for member in members
        ):
            return True
    return any(_holds_pairs(arg, records, seen) for arg in ty.args)


def _wire(value: Any, ty: ir.TypeRef, records: dict[str, ir.RecordDecl]) -> Any:
    if value is None:
        return None
    base = ts.strip_optional(ty)
    if base.name in ("list", "set"):
        return [_wire(item, base.args[0], records) for item in value]
    if base.name == "map":
        items = [(key, _wire(item, base.args[1], records)) for key, item in value.items()]
        return [[key, item] for key, item in items] if base.args[0].name == "json" else dict(items)
    if base.name in records:
        fields = {f.name: f.type for f in _record_of(value, records[base.name], records).fields}
        return {key: _wire(item, fields[key], records) if key in fields else item for key, item in value.items()}
    return value


def _record_of(value: dict[str, Any], record: ir.RecordDecl, records: dict[str, ir.RecordDecl]) -> ir.RecordDecl:
    """The record a value is: for a union, the member its tag names (checked already)."""
    for member, tag in record.members.items():
        if value.get(record.tag) == tag:
            return records[member]
    return record
