"""The language's types: construction, comparison, assignability, JSON Schema, and
validation of JSON data (world files, scenarios, defaults) against a type.

Types are `ir.TypeRef` values in canonical form: primitives by name, `list[T]`,
`map[K, V]`, `optional[T]`, enum and record names, `None`, and the internal `any`
used after an error so that one mistake is reported once.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Any

from compiler import ir
from compiler.ir.tree import construct

PRIMITIVES = ("str", "int", "float", "number", "bool", "datetime", "date", "time", "json")
TEMPORAL = ("datetime", "date", "time")
CONTAINERS = ("list", "map", "set", "json")
SET_ITEMS = ("str", "int")
"""Scalars a `set[T]` may hold (and enums): hashable, and orderable for a canonical form."""


def t(name: str, *args: ir.TypeRef) -> ir.TypeRef:
    """`ir.TypeRef(name=name, args=[*args])` without pydantic's validation, which would
    keep the same values (a name and TypeRefs): the analysis builds a few thousand types
    on a 5,000-line spec, and validating each was a tenth of the symbols pass."""
    values = {"line": 0, "col": 0, "end_line": 0, "end_col": 0, "name": name, "args": [*args]}
    return construct(ir.TypeRef, values, {"name", "args"})


STR = t("str")
INT = t("int")
FLOAT = t("float")
NUMBER = t("number")
"""An int or a float, kept as given (`500` stays `500`); arithmetic as Python's."""
BOOL = t("bool")
NONE = t("None")
ANY = t("any")
JSON = t("json")
ZIP = "zip"
"""The type of `zip(xs, ys, ...)`, its arguments the lists' item types: no value of the
language (there are no tuples), only what a loop or comprehension may go over, one
loop variable per list (`for a, b in zip(xs, ys)`)."""
DATETIME = t("datetime")
DATE = t("date")
TIME = t("time")


def list_of(item: ir.TypeRef) -> ir.TypeRef:
    return t("list", item)


def map_of(key: ir.TypeRef, value: ir.TypeRef) -> ir.TypeRef:
    return t("map", key, value)


def holds_set(ty: ir.TypeRef) -> bool:
    """Whether a value of this type may contain a set, which no JSON value can."""
    return ty.name == "set" or any(holds_set(arg) for arg in ty.args)


def optional(inner: ir.TypeRef) -> ir.TypeRef:
    if inner.name in ("optional", "None", "any"):
        return inner
    return t("optional", inner)


def strip_optional(ty: ir.TypeRef) -> ir.TypeRef:
    return ty.args[0] if ty.name == "optional" else ty


def is_optional(ty: ir.TypeRef) -> bool:
    return ty.name in ("optional", "None")


def required_field(field_: ir.Field_) -> bool:
    """Whether a record's data must give the field: no default, not optional, and not one
    whose key may be absent (`name?: T`)."""
    return field_.default is None and not is_optional(field_.type) and not field_.absent


def is_numeric(ty: ir.TypeRef) -> bool:
    return ty.name in ("int", "float", "number", "any")


def is_container(ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl]) -> bool:
    """Whether values of this type are mutable references (aliasing matters)."""
    base = strip_optional(ty)
    return base.name in CONTAINERS or base.name in records or base.name == "any"


def same(a: ir.TypeRef, b: ir.TypeRef) -> bool:
    if a is b:  # the commonest case: one type object (a declared type, a constant like STR) met twice
        return True
    if a.name != b.name or len(a.args) != len(b.args):
        return False
    return all(same(x, y) for x, y in zip(a.args, b.args))


def show(ty: ir.TypeRef) -> str:
    if not ty.args:
        return ty.name
    return f"{ty.name}[{', '.join(show(a) for a in ty.args)}]"


def assignable(src: ir.TypeRef, dst: ir.TypeRef) -> bool:
    """Can a value of type `src` be stored where `dst` is expected?

    Containers are invariant (as mypy sees the generated code); int widens to float;
    the temporal types are ISO strings and widen to str; anything fits `json`.
    """
    if src is dst or (src.name == dst.name and not src.args and not dst.args):
        return True  # a type fits itself (the type checker asks this of one object ~half the time)
    if dst.name == "json":
        return not holds_set(src)  # json holds JSON values only; a set has no JSON form
    if src.name == "any" or dst.name == "any":
        return True
    if same(src, dst):
        return True
    if dst.name == "optional":
        inner = dst.args[0]
        if src.name == "None":
            return True
        return assignable(strip_optional(src), inner)
    if src.name == "optional":
        return False
    if src.name == "int" and dst.name == "float":
        return True
    if src.name in ("int", "float") and dst.name == "number":
        return True
    if src.name in TEMPORAL and dst.name == "str":
        return True
    if src.name == dst.name and src.name in ("list", "map", "set"):
        return all(_invariant(a, b) for a, b in zip(src.args, dst.args))
    return False


def _invariant(a: ir.TypeRef, b: ir.TypeRef) -> bool:
    return (
        a.name == "any"
        or b.name == "any"
        or same(a, b)
        or (
            a.name == b.name
            and a.name in ("list", "map", "set", "optional")
            and all(_invariant(x, y) for x, y in zip(a.args, b.args))
        )
    )


def join(a: ir.TypeRef, b: ir.TypeRef) -> ir.TypeRef | None:
    """The least type holding both (for ternaries, list items); None if there is none."""
    if assignable(a, b):
        return b
    if assignable(b, a):
        return a
    if a.name == "None":
        return optional(b)
    if b.name == "None":
        return optional(a)
    if assignable(strip_optional(a), strip_optional(b)) or assignable(strip_optional(b), strip_optional(a)):
        return optional(join(strip_optional(a), strip_optional(b)) or ANY)
    return None


FORMAT_SPEC = re.compile(
    r"(?:(?P<fill>[^{}\\\"'\t\n\r\f\v])?(?P<align>[<>^=]))?(?P<sign>[-+ ])?(?P<alternate>#)?(?P<zero>0)?"
    r"(?P<width>[0-9]{1,3})?(?P<grouping>[,_])?(?:\.(?P<precision>[0-9]{1,3}))?(?P<type>[sdboxXeEfFgG%])?"
)
"""The format specs f-strings take (`{x:SPEC}`): Python's `[[fill]align][sign][#][0][width]
[grouping][.precision][type]`, with width and precision of at most three digits, a fill
that is not a quote, backslash, brace, tab or line break, and no locale (`n`) or character (`c`)
types. Whether a spec fits the value's type is checked by the analyser (`format_problem`)."""


def format_problem(spec: str, kind: str) -> str:
    """Why a format spec (one `FORMAT_SPEC` takes) does not fit a value of `kind` (`int`,
    `float` or `str`), or "" when it fits: what Python would refuse, or would show
    differently for an int and a float (a float variable may hold an int)."""
    found = FORMAT_SPEC.fullmatch(spec)
    if found is None:
        return f"`{spec}` is not a format spec envc takes"
    part = found.groupdict()
    presentation = part["type"]
    if kind == "str":
        for name, what in (
            ("sign", "a sign"),
            ("alternate", "`#`"),
            ("zero", "zero padding"),
            ("grouping", "grouping"),
        ):
            if part[name]:
                return f"{what} is for numbers; a str takes fill, alignment, width, `.precision` and `s`"
        if part["align"] == "=":
            return "`=` alignment is for numbers"
        if presentation not in (None, "s"):
            return f"`{presentation}` formats numbers, not text"
        return ""
    if presentation == "s":
        return "`s` formats text; a number takes d, b, o, x, X (int) or e, f, g, % (both)"
    if kind == "int" and presentation in (None, "d", "b", "o", "x", "X"):
        if part["precision"]:
            return "an int takes no precision; give a float type (`.2f`) to show decimals"
        if part["grouping"] == "," and presentation in ("b", "o", "x", "X"):
            return f"`,` grouping does not go with `{presentation}`; use `_`"
        return ""
    if kind == "float" and presentation in ("d", "b", "o", "x", "X"):
        return f"`{presentation}` formats ints; a float takes e, E, f, F, g, G or %"
    if kind == "float" and presentation is None and part["precision"]:
        return "a precision needs a type for a float: `.2f` (fixed) or `.2g` (significant digits)"
    return ""


# --------------------------------------------------------------------------- JSON Schema


def orderable(a: ir.TypeRef, b: ir.TypeRef) -> bool:
    """Whether `<` compares values of the two types (numbers, text, ISO-8601 strings)."""
    if a.name == "any" or b.name == "any":
        return True
    if is_numeric(a) and is_numeric(b):
        return True
    return a.name == b.name and a.name in ("str", *TEMPORAL)


def element_types(iterable: ir.TypeRef, count: int) -> list[ir.TypeRef] | None:
    """The types of the `count` loop variables of `for ... in` a value of this type
    (a map gives its keys, or keys and values), or None when it cannot be looped over."""
    if iterable.name in ("any", "json"):
        return [iterable] * count
    if iterable.name in ("list", "set"):
        return [iterable.args[0]] * count
    if iterable.name == "map" and count in (1, 2):
        return list(iterable.args[:count])
    if iterable.name == "str" and count == 1:
        return [STR]
    if iterable.name == ZIP and count == len(iterable.args):
        return list(iterable.args)
    return None


def json_schema(
    ty: ir.TypeRef,
    enums: Mapping[str, ir.EnumDecl],
    records: Mapping[str, ir.RecordDecl],
    refs: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a type; records inline, closed to extra keys, except
    the records in `refs` (recursive ones), which are `{"$ref": "#/$defs/NAME"}`."""
    name = ty.name
    if name in refs:
        return {"$ref": f"#/$defs/{name}"}
    if name == "str":
        return {"type": "string"}
    if name == "int":
        return {"type": "integer"}
    if name in ("float", "number"):
        return {"type": "number"}
    if name == "bool":
        return {"type": "boolean"}
    # No `format`: JSON Schema's date-time and time demand a zone offset, and these
    # values are zone-less local times in one fixed-width form.
    if name == "datetime":
        return {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$"}
    if name == "date":
        return {"type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
    if name == "time":
        return {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}:[0-9]{2}$"}
    if name in ("json", "any"):
        return {}
    if name == "None":
        return {"type": "null"}
    if name == "list":
        return {"type": "array", "items": json_schema(ty.args[0], enums, records, refs)}
    if name == "set":
        return {"type": "array", "items": json_schema(ty.args[0], enums, records, refs), "uniqueItems": True}
    if name == "map" and ty.args[0].name == "json":
        value_schema = json_schema(ty.args[1], enums, records, refs)
        pair = {
            "type": "array",
            "prefixItems": [{"type": ["string", "integer"]}, value_schema],
            "minItems": 2,
            "maxItems": 2,
        }
        # An object (string keys) as data arrives, or [key, value] pairs as envc writes it.
        return {"anyOf": [{"type": "object", "additionalProperties": value_schema}, {"type": "array", "items": pair}]}
    if name == "map":
        schema: dict[str, Any] = {
            "type": "object",
            "additionalProperties": json_schema(ty.args[1], enums, records, refs),
        }
        key = ty.args[0]
        if key.name == "int":
            schema["propertyNames"] = {"pattern": "^-?[0-9]+$"}
        elif key.name in enums:
            schema["propertyNames"] = {"enum": list(enums[key.name].members)}
        return schema
    if name == "optional":
        return {"anyOf": [json_schema(ty.args[0], enums, records, refs), {"type": "null"}]}
    if name in enums:
        return {"type": "string", "enum": list(enums[name].members)}
    if name in records and records[name].is_union:
        return _union_schema(records[name], enums, records, refs)
    if name in records:
        return record_schema(records[name], enums, records, refs)
    return {}


def record_schema(
    record: ir.RecordDecl,
    enums: Mapping[str, ir.EnumDecl],
    records: Mapping[str, ir.RecordDecl],
    refs: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A record's own schema (a union's is `anyOf` its members'), never a `$ref`."""
    if record.is_union:
        return _union_schema(record, enums, records, refs)
    return {
        "type": "object",
        "properties": {f.name: _field_schema(f, enums, records, refs) for f in record.fields},
        "required": [f.name for f in record.fields if required_field(f)],
        "additionalProperties": False,
    }


def _field_schema(
    field_: ir.Field_,
    enums: Mapping[str, ir.EnumDecl],
    records: Mapping[str, ir.RecordDecl],
    refs: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A record field's schema; a union member's tag has its one value (an `enum` of one,
    which every JSON Schema subset that function-calling APIs take understands)."""
    if field_.tag:
        return {"type": "string", "enum": [field_.tag]}
    return json_schema(field_.type, enums, records, refs)


def _union_schema(
    union: ir.RecordDecl,
    enums: Mapping[str, ir.EnumDecl],
    records: Mapping[str, ir.RecordDecl],
    refs: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """`anyOf` the members, each with its tag required (`anyOf`, not `oneOf`: the tags
    already make the members exclusive, and `anyOf` is what function-calling APIs accept)."""
    options = []
    for member in union.members:
        if member in records:
            schema = record_schema(records[member], enums, records, refs)
            schema["required"] = [union.tag, *(name for name in schema["required"] if name != union.tag)]
            options.append(schema)
    return {"anyOf": options}


# --------------------------------------------------------------------------- JSON data


_ISO_CHECKS = {
    "datetime": _dt.datetime.fromisoformat,
    "date": _dt.date.fromisoformat,
    "time": _dt.time.fromisoformat,
}
# One fixed-width form each, so that comparing the strings orders the moments.
_DATETIME_SHAPE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_DATE_SHAPE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME_SHAPE = re.compile(r"^\d{2}:\d{2}:\d{2}$")
_SHAPES = {"datetime": _DATETIME_SHAPE, "date": _DATE_SHAPE, "time": _TIME_SHAPE}


def valid_temporal(kind: str, text: str) -> bool:
    """ISO-8601 without zone offsets, seconds included: `2025-01-31T09:30:00`, `2025-01-31`, `09:30:00`."""
    if not _SHAPES[kind].match(text):
        return False
    try:
        _ISO_CHECKS[kind](text)
    except ValueError:
        return False
    return True


class DataChecker:
    """Checks a JSON-like Python value against a type, filling record defaults.

    Returns the normalised value (int map keys from JSON strings, defaults filled) and
    a list of `path: problem` strings.
    """

    def __init__(
        self,
        enums: Mapping[str, ir.EnumDecl],
        records: Mapping[str, ir.RecordDecl],
        record_defaults: Mapping[str, dict[str, Any]],
    ) -> None:
        self.enums = enums
        self.records = records
        self.record_defaults = record_defaults

    def check(self, value: Any, ty: ir.TypeRef, path: str, problems: list[str]) -> Any:
        name = ty.name
        if name in ("json", "any"):
            if not _is_json(value):
                problems.append(f"{path}: not a JSON value")
            return value
        if name == "optional":
            return None if value is None else self.check(value, ty.args[0], path, problems)
        if value is None:
            problems.append(f"{path}: None where {show(ty)} is expected")
            return value
        if name == "str":
            return self._expect(isinstance(value, str), value, ty, path, problems)
        if name in TEMPORAL:
            if not isinstance(value, str) or not valid_temporal(name, value):
                problems.append(f"{path}: {value!r} is not an ISO-8601 {name}")
            return value
        if name == "int":
            return self._expect(isinstance(value, int) and not isinstance(value, bool), value, ty, path, problems)
        if name == "float":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            return float(value) if ok else self._expect(False, value, ty, path, problems)
        if name == "number":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            return value if ok else self._expect(False, value, ty, path, problems)
        if name == "bool":
            return self._expect(isinstance(value, bool), value, ty, path, problems)
        if name == "list":
            if not isinstance(value, list):
                return self._expect(False, value, ty, path, problems)
            return [self.check(item, ty.args[0], f"{path}[{i}]", problems) for i, item in enumerate(value)]
        if name == "map":
            return self._check_map(value, ty, path, problems)
        if name == "set":
            return self._check_set(value, ty, path, problems)
        if name in self.enums:
            if value not in self.enums[name].members:
                problems.append(f"{path}: {value!r} is not a member of {name} ({', '.join(self.enums[name].members)})")
            return value
        if name in self.records and self.records[name].is_union:
            return self._check_union(value, self.records[name], path, problems)
        if name in self.records:
            return self._check_record(value, name, path, problems)
        problems.append(f"{path}: unknown type {show(ty)}")
        return value

    def _expect(self, ok: bool, value: Any, ty: ir.TypeRef, path: str, problems: list[str]) -> Any:
        if not ok:
            problems.append(f"{path}: {_describe(value)} where {show(ty)} is expected")
        return value

    def _check_set(self, value: Any, ty: ir.TypeRef, path: str, problems: list[str]) -> Any:
        """A set is written as a list of distinct items; its JSON form is that list, sorted."""
        if not isinstance(value, (list, set, frozenset)):
            return self._expect(False, value, ty, path, problems)
        items = [self.check(item, ty.args[0], f"{path}[{i}]", problems) for i, item in enumerate(value)]
        if not all(isinstance(item, (str, int)) for item in items):
            return value  # the problem is already reported, and such items are not hashable
        if len(set(items)) != len(items):
            problems.append(f"{path}: a set lists an item twice")
        return sorted(set(items))

    def _check_map(self, value: Any, ty: ir.TypeRef, path: str, problems: list[str]) -> Any:
        key_type, value_type = ty.args
        if key_type.name == "json" and isinstance(value, list):
            return self._check_pairs(value, ty, path, problems)
        if not isinstance(value, dict):
            return self._expect(False, value, ty, path, problems)
        result: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = key
            if key_type.name == "int":
                if isinstance(key, str) and re.fullmatch(r"-?[0-9]+", key):
                    new_key = int(key)
                elif not isinstance(key, int) or isinstance(key, bool):
                    problems.append(f"{path}: key {key!r} is not an int")
            elif key_type.name == "json":
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    problems.append(f"{path}: key {key!r} is not a str or an int")
            elif key_type.name in self.enums:
                if key not in self.enums[key_type.name].members:
                    problems.append(f"{path}: key {key!r} is not a member of {key_type.name}")
            elif not isinstance(key, str):
                problems.append(f"{path}: key {key!r} is not a str")
            result[new_key] = self.check(item, value_type, f"{path}[{key!r}]", problems)
        return result

    def _check_pairs(self, value: list[Any], ty: ir.TypeRef, path: str, problems: list[str]) -> Any:
        """A map[json, V] as envc writes it: [key, value] pairs, keys str or int as they were."""
        result: dict[Any, Any] = {}
        for index, pair in enumerate(value):
            if not (isinstance(pair, list) and len(pair) == 2):
                problems.append(f"{path}[{index}]: not a [key, value] pair")
                continue
            key, item = pair
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                problems.append(f"{path}[{index}]: key {key!r} is not a str or an int")
            elif key in result:
                problems.append(f"{path}[{index}]: key {key!r} appears twice")
            else:
                result[key] = self.check(item, ty.args[1], f"{path}[{key!r}]", problems)
        return result

    def _check_union(self, value: Any, union: ir.RecordDecl, path: str, problems: list[str]) -> Any:
        """A union value is the member its tag names."""
        tag = value.get(union.tag) if isinstance(value, dict) else None
        member = next((m for m, v in union.members.items() if v == tag), None)
        if member is None:
            tags = ", ".join(repr(v) for v in union.members.values())
            shown = f"{union.tag} {tag!r}" if isinstance(value, dict) and union.tag in value else f"no {union.tag}"
            problems.append(f"{path}: {shown} where {union.name} needs {union.tag} one of {tags}")
            return value
        return self._check_record(value, member, path, problems)

    def _check_record(self, value: Any, name: str, path: str, problems: list[str]) -> Any:
        if not isinstance(value, dict):
            problems.append(f"{path}: {_describe(value)} where record {name} is expected")
            return value
        record = self.records[name]
        fields = {f.name: f for f in record.fields}
        result: dict[str, Any] = {}
        for key in value:
            if key not in fields:
                problems.append(f"{path}: record {name} has no field {key!r}")
        for field_ in record.fields:
            if field_.name in value and field_.tag and value[field_.name] != field_.tag:
                problems.append(f"{path}.{field_.name}: {value[field_.name]!r} where {name} has {field_.tag!r}")
            if field_.name in value:
                result[field_.name] = self.check(value[field_.name], field_.type, f"{path}.{field_.name}", problems)
            elif field_.absent:
                continue  # the key stays absent
            elif field_.name in self.record_defaults.get(name, {}):
                result[field_.name] = _copy_json(self.record_defaults[name][field_.name])
            elif is_optional(field_.type):
                result[field_.name] = None
            else:
                problems.append(f"{path}: record {name} needs field {field_.name!r}")
        return result


def _describe(value: Any) -> str:
    kind = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "map", type(None): "None"}.get(
        type(value), type(value).__name__
    )
    text = repr(value)
    return f"{kind} {text if len(text) < 40 else text[:37] + '...'}"


def _is_json(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif not (item is None or isinstance(item, (str, int, float, bool))):
            return False
    return True


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value
