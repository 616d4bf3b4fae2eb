"""Runtime helpers: module-level functions a generated environment includes when its
bodies call them (date arithmetic on ISO-8601 strings, regex tests that never raise,
json views, list removal without errors).

This is real Python, linted and type-checked with the compiler. Lowering copies each
needed function's source into the generated module (`compiler/library/helpers.py`),
with the helpers it calls; registry entries name them without the leading underscore.
Helpers may use what every generated module imports (`dt`, `json`, `re`, `Any`) and
defines (`DomainError`, `_show`), nothing else.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Defined by every generated environment module (templates/environment.py.jinja).

    class DomainError(Exception):
        def __init__(self, kind: str, message: str, **fields: Any) -> None: ...

    def _show(value: Any) -> str: ...


def _moment(text: str) -> dt.datetime:
    """An ISO-8601 date or datetime as a datetime (dates at midnight)."""
    return dt.datetime.fromisoformat(text if "T" in text else text + "T00:00:00")


def _format_like(moment: dt.datetime, template: str) -> str:
    """Back to text, in the same shape (date or datetime) as the input had."""
    return moment.date().isoformat() if "T" not in template else moment.isoformat(timespec="seconds")


def _remove_first(items: list[Any], item: Any) -> None:
    """Remove the first equal item, if there is one."""
    if item in items:
        items.remove(item)


def _json_key(key: Any) -> Any:
    """A json value used as a key of a map with str and int keys: nothing else is one."""
    if type(key) not in (str, int):
        raise DomainError("invalid_argument", f"a key must be a string or an integer, got {_show(key)}")
    return key


def _add_seconds(text: str, seconds: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(seconds=seconds), text)


def _add_minutes(text: str, minutes: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(minutes=minutes), text)


def _add_hours(text: str, hours: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(hours=hours), text)


def _add_days(text: str, days: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(days=days), text)


def _seconds_between(start: str, end: str) -> int:
    return int((_moment(end) - _moment(start)).total_seconds())


def _days_between(start: str, end: str) -> int:
    return (_moment(end).date() - _moment(start).date()).days


def _matches(text: str, pattern: str) -> bool:
    """Whole-string match; a pattern that is not a valid regular expression matches nothing."""
    try:
        return re.fullmatch(pattern, text) is not None
    except re.error:
        return False


def _stable_hash(text: str) -> int:
    """FNV-1a (32 bit): the same on every run and machine, unlike hash()."""
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x01000193) % 2**32
    return value


def _type_of(value: Any) -> str:
    """The JSON type of a value: null, bool, int, float, str, list or map."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "list" if isinstance(value, list) else "map"


def _as_number(value: Any) -> float | None:
    """A number as given (an int stays an int: a `number`), or None for anything else
    (bools are not numbers)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def _as_float(value: Any) -> float | None:
    """A number as a float (what `as_number` gave before it kept ints as ints), or None
    for anything else (bools are not numbers)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _format_datetime(text: str, template: str) -> str:
    """An ISO date or datetime written by a strftime-like format: Python's strftime in the
    C locale for the directives envc takes (`%Y` always four digits), and any other
    `%x` left as written, so the result depends on no locale or platform."""
    moment = _moment(text)
    days = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
    months = ("January", "February", "March", "April", "May", "June", "July", "August")
    months_after = ("September", "October", "November", "December")
    hour12 = moment.hour % 12 or 12
    fields = {
        "Y": f"{moment.year:04d}",
        "y": f"{moment.year % 100:02d}",
        "m": f"{moment.month:02d}",
        "d": f"{moment.day:02d}",
        "H": f"{moment.hour:02d}",
        "I": f"{hour12:02d}",
        "M": f"{moment.minute:02d}",
        "S": f"{moment.second:02d}",
        "p": "AM" if moment.hour < 12 else "PM",
        "j": f"{moment.timetuple().tm_yday:03d}",
        "a": days[moment.weekday()][:3],
        "A": days[moment.weekday()],
        "b": (months + months_after)[moment.month - 1][:3],
        "B": (months + months_after)[moment.month - 1],
        "%": "%",
    }
    return re.sub(r"%(.)", lambda found: fields.get(found[1], found[0]), template, flags=re.DOTALL)


def _repr(value: Any) -> str:
    """Python's `repr`, under a name of its own: a spec's local may be called `repr`."""
    return repr(value)


def _as_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _as_list(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None


def _as_map(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _valid_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _search(text: str, pattern: str) -> bool:
    """Whether the pattern occurs anywhere; an invalid pattern occurs nowhere."""
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _parse_int(text: str) -> int | None:
    """Decimal digits with an optional sign, else None."""
    stripped = text.strip()
    return int(stripped) if re.fullmatch(r"[-+]?[0-9]{1,18}", stripped) else None


def _parse_number(text: str) -> float | None:
    """A finite decimal number, else None."""
    stripped = text.strip()
    if not re.fullmatch(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", stripped):
        return None
    value = float(stripped)
    return value if value not in (float("inf"), float("-inf")) else None


def _parse_json(text: str) -> Any:
    """The JSON value of a text, or None when it is not valid JSON."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _weekday(text: str) -> int:
    """Monday is 0."""
    return _moment(text).weekday()


def _json_dumps(value: Any, indent: int | None = None, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
    """Python's json.dumps, for generated tests (which do not import json)."""
    return json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)


def _parse_datetime(text: str, template: str) -> str | None:
    """`datetime.strptime(text, template)` as an ISO-8601 datetime, or None when the text
    does not match (or the format is not one strptime takes). A time zone the format
    reads is dropped (the local time as written stays), and so are fractions of a second."""
    try:
        moment = dt.datetime.strptime(text, template)
    except ValueError:
        return None
    return moment.replace(tzinfo=None).isoformat(timespec="seconds")
