"""Built-in methods of str (and the ISO-8601 temporal types, which are strings), list,
map and set. One `Method` entry each; the order in each receiver's table is the order
the language reference lists them (and hints suggest them)."""

from __future__ import annotations

from collections.abc import Callable

from compiler import ir
from compiler.ir import typesys as ts
from compiler.library.entry import Method, Signature
from compiler.library.ports import Emitter

S, N, B = ts.STR, ts.INT, ts.BOOL


def _fixed(params: list[ir.TypeRef], result: ir.TypeRef, required: int) -> Signature:
    return lambda receiver, given: (params, result, required)


def _item(build: str) -> Signature:
    """A list or set method whose signature mentions the item type (or the receiver)."""
    table: dict[str, Callable[[ir.TypeRef], tuple[list[ir.TypeRef], ir.TypeRef, int]]] = {
        "append": lambda r: ([r.args[0]], ts.NONE, 1),
        "insert": lambda r: ([N, r.args[0]], ts.NONE, 2),
        "remove": lambda r: ([r.args[0]], ts.NONE, 1),
        "extend": lambda r: ([r], ts.NONE, 1),
        "pop": lambda r: ([N], r.args[0], 0),
        "index": lambda r: ([r.args[0]], N, 1),
        "count": lambda r: ([r.args[0]], N, 1),
        "copy": lambda r: ([], r, 0),
        "add": lambda r: ([r.args[0]], ts.NONE, 1),
        "discard": lambda r: ([r.args[0]], ts.NONE, 1),
    }
    rule = table[build]
    return lambda receiver, given: rule(receiver)


def _map_get(receiver: ir.TypeRef, given: int) -> tuple[list[ir.TypeRef], ir.TypeRef, int]:
    key, value = receiver.args
    return [key, value], ts.optional(value) if given < 2 else value, 1


def _map_view(index: int) -> Signature:
    return lambda receiver, given: ([], ts.list_of(receiver.args[index]), 0)


def _map_pop(receiver: ir.TypeRef, given: int) -> tuple[list[ir.TypeRef], ir.TypeRef, int]:
    key, value = receiver.args
    return [key], ts.optional(value), 1


def lower_copy(em: Emitter, call: ir.Call, func: ir.Attr, obj: str, args: list[str]) -> str:
    """A deep copy typed as the receiver (state stays unaliased)."""
    return em.copy_of(func.obj, ts.strip_optional(func.ty or func.obj.ty or ts.ANY))


def lower_remove(em: Emitter, call: ir.Call, func: ir.Attr, obj: str, args: list[str]) -> str:
    """Removing an item that is not there does nothing (Python's raises)."""
    return f"_remove_first({obj}, {args[0]})"


def lower_map_keys(em: Emitter, call: ir.Call, func: ir.Attr, obj: str, args: list[str]) -> str:
    return f"list({em.expr(func.obj)})"


def lower_map_values(em: Emitter, call: ir.Call, func: ir.Attr, obj: str, args: list[str]) -> str:
    return f"list({obj}.values())"


def lower_map_pop(em: Emitter, call: ir.Call, func: ir.Attr, obj: str, args: list[str]) -> str:
    """A missing key gives None (Python's raises)."""
    return f"{obj}.pop({args[0]}, None)"


_TEXT = [
    Method("str", "lower", _fixed([], S, 0)),
    Method("str", "upper", _fixed([], S, 0)),
    Method("str", "strip", _fixed([S], S, 0)),
    Method("str", "lstrip", _fixed([S], S, 0)),
    Method("str", "rstrip", _fixed([S], S, 0)),
    Method("str", "splitlines", _fixed([], ts.list_of(S), 0)),
    Method("str", "title", _fixed([], S, 0)),
    Method("str", "startswith", _fixed([S], B, 1)),
    Method("str", "endswith", _fixed([S], B, 1)),
    Method("str", "split", _fixed([S], ts.list_of(S), 0)),
    Method("str", "join", _fixed([ts.list_of(S)], S, 1)),
    Method("str", "replace", _fixed([S, S], S, 2)),
    Method("str", "find", _fixed([S], N, 1)),
    Method("str", "count", _fixed([S], N, 1)),
    Method("str", "isdigit", _fixed([], B, 0)),
    Method("str", "zfill", _fixed([N], S, 1)),
]
_LISTS = [
    Method("list", "append", _item("append"), mutates=True),
    Method("list", "insert", _item("insert"), mutates=True),
    Method("list", "remove", _item("remove"), mutates=True, lower=lower_remove, runtime=("remove_first",)),
    Method("list", "extend", _item("extend"), mutates=True),
    Method("list", "pop", _item("pop"), mutates=True),
    Method("list", "clear", _fixed([], ts.NONE, 0), mutates=True),
    Method("list", "index", _item("index")),
    Method("list", "count", _item("count")),
    Method("list", "copy", _item("copy"), lower=lower_copy),
]
_MAPS = [
    Method("map", "get", _map_get, key_argument=True),
    Method("map", "keys", _map_view(0), lower=lower_map_keys),
    Method("map", "values", _map_view(1), lower=lower_map_values),
    Method("map", "pop", _map_pop, mutates=True, key_argument=True, lower=lower_map_pop),
    Method("map", "clear", _fixed([], ts.NONE, 0), mutates=True),
    Method("map", "copy", _item("copy"), lower=lower_copy),
]
_SETS = [
    Method("set", "add", _item("add"), mutates=True),
    Method("set", "discard", _item("discard"), mutates=True),
    Method("set", "copy", _item("copy"), lower=lower_copy),
]


METHODS: dict[tuple[str, str], Method] = {(m.receiver, m.name): m for m in [*_TEXT, *_LISTS, *_MAPS, *_SETS]}
RECEIVERS: dict[str, tuple[str, ...]] = {
    receiver: tuple(name for kind, name in METHODS if kind == receiver) for receiver in ("str", "list", "map", "set")
}
"""Method names per receiver kind, in table order."""
