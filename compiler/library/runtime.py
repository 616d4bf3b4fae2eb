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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

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


def _not_found(entity: str, key: Any, field: str) -> NoReturn:
    """A lookup on a key or position the agent chose that the map or list lacks: a domain
    error the agent can act on, not a crash (docs/language.md §17)."""
    fields = {"field": field} if field else {}
    raise DomainError("not_found", f"{entity} has no entry {_show(key)}", entity=entity, key=key, **fields)


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


def _matches(text: str, pattern: str, charge: Callable[[int], None] | None = None) -> bool:
    """Whole-string match, in time linear in the text (`_regex`); a pattern that is not a
    valid regular expression of the subset matches nothing. `charge` is the call's step
    budget (`Environment._count_steps`), told of the work as it is done."""
    found = _regex(pattern, False)
    return found is not None and _regex_run(found, text, charge)


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
    """Whether `matches` and `search` take the pattern: valid for Python's `re` and within
    the linear-time subset (`_regex_problem`)."""
    return _regex(pattern, False) is not None


def _search(text: str, pattern: str, charge: Callable[[int], None] | None = None) -> bool:
    """Whether the pattern occurs anywhere, in linear time; an invalid pattern occurs nowhere."""
    found = _regex(pattern, True)
    return found is not None and _regex_run(found, text, charge)


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


# --------------------------------------------------------------------------- regular expressions
# `matches`, `search` and `valid_regex` (and tool parameters' `pattern` rules) run on this
# matcher, not on `re`'s backtracking one: a pattern is parsed to a Thompson NFA and the
# NFA run as a lazily built DFA (each state a set of NFA positions), so a text costs time
# linear in its length whatever the pattern (RE2's guarantee: `(a+)+$` on 10,000 `a`s and
# a `!` answers in milliseconds). The subset is what that allows, with Python's meaning:
# literals and escapes, `.`, classes with ranges and `\d \w \s` (and `\D \W \S`), the
# anchors `^ $ \A \Z`, groups (plain, `(?:…)`, `(?P<name>…)`), `|`, and `* + ? {m} {m,}
# {m,n}` (lazy forms too). Backreferences, lookarounds, `\b`, inline flags, conditionals
# and possessive repeats are refused: such a pattern is not valid here.

_REGEX_MAX_REPEAT: int = 1000
"""The largest count a `{m,n}` repeat may give (RE2's limit)."""
_REGEX_MAX_PROGRAM: int = 20_000
"""The most NFA instructions a pattern may expand to (repeats are copies)."""
_REGEX_MAX_STATES: int = 4096
"""DFA states a pattern keeps before its table is started afresh (memory stays bounded)."""
_REGEX_MAX_CACHED: int = 512
"""Patterns kept compiled; past that the cache is emptied."""
_REGEX_CACHE: dict[tuple[str, bool], _Regex | None] = {}
_REGEX_ESCAPES: dict[str, str] = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


class _Regex:
    """One pattern's program and the DFA built from it so far. A DFA state is a set of
    program positions (characters to read, the end, or anchors not yet known to hold);
    `rows[i]` maps a character to the next state, filled in as texts need it."""

    __slots__ = ("accept", "index", "program", "rows", "search", "sets", "settled", "start")

    def __init__(self, program: list[tuple[Any, ...]], search: bool) -> None:
        self.program = program
        self.search = search
        self.start = _regex_closure(program, [0], True, False, False)[0]
        self.sets: list[frozenset[int]] = []
        self.rows: list[dict[str, int]] = []
        self.accept: list[bool] = []
        self.index: dict[frozenset[int], int] = {}
        self.settled: dict[tuple[int, bool, bool, bool], int] = {}
        """(state, begin, end, endz) -> the state where those anchors hold (`_regex_settle`)."""
        self.state(frozenset())  # 0: no thread left

    def state(self, threads: frozenset[int]) -> int:
        """The number of a DFA state, made when new; a full table is emptied first (the
        caller must then not store a transition from a state it numbered before)."""
        found = self.index.get(threads)
        if found is not None:
            return found
        if len(self.sets) >= _REGEX_MAX_STATES:
            self.sets, self.rows, self.accept, self.index, self.settled = [], [], [], {}, {}
            self.state(frozenset())
        self.index[threads] = len(self.sets)
        self.sets.append(threads)
        self.rows.append({})
        self.accept.append(len(self.program) - 1 in threads)
        return len(self.sets) - 1


def _regex(pattern: str, search: bool) -> _Regex | None:
    """The compiled pattern (`search`: with a leading `.*` of any character), or None when
    it is not valid (`_regex_problem`); kept for the next call."""
    key = (pattern, search)
    if key in _REGEX_CACHE:
        return _REGEX_CACHE[key]
    if len(_REGEX_CACHE) >= _REGEX_MAX_CACHED:
        _REGEX_CACHE.clear()
    try:
        found: _Regex | None = _Regex(_regex_program(pattern, search), search)
    except (ValueError, re.error, RecursionError):
        found = None
    _REGEX_CACHE[key] = found
    return found


def _regex_problem(pattern: str) -> str | None:
    """Why the pattern is not valid (Python's `re` refuses it, or it is outside the
    linear-time subset), or None. The compiler reports it for a literal pattern (E3019)."""
    try:
        _regex_program(pattern, False)
    except re.error as error:
        return str(error)
    except ValueError as error:
        return str(error)
    except RecursionError:
        return "the pattern nests too deeply"
    return None


def _regex_program(pattern: str, search: bool) -> list[tuple[Any, ...]]:
    """The NFA program: `("char", class)`, `("split", a, b)`, `("jmp", a)`, `("at", kind)`,
    and `("match",)` last. Valid for `re` first, so only the subset is this parser's to
    check."""
    _regex_refuse_set_operations(pattern)
    re.compile(pattern)
    flags = re.match(r"(?:\(\?[is]+\))*", pattern)
    assert flags is not None
    node, end = _regex_alternation(pattern, flags.end())
    if end != len(pattern):  # `re` accepted it, so this is an unbalanced `)`
        raise ValueError(f"unbalanced parenthesis at position {end}")
    program: list[tuple[Any, ...]] = []
    if search:  # any text before the match: `(?s:.)*`
        program += [("split", 1, 3), ("char", (True, (), ""), False), ("jmp", 0)]
    start = len(program)
    _regex_emit(node, program)
    program.append(("match",))
    fold, dotall = "i" in flags[0], "s" in flags[0]
    for pc in range(start, len(program)):
        if program[pc][0] == "char":  # `.` under `(?s)` takes a newline too; `(?i)` ignores case
            rule = (True, (), "") if dotall and program[pc][1][2] == "." else program[pc][1]
            program[pc] = ("char", rule, fold)
    return program


def _regex_alternation(pattern: str, at: int) -> tuple[tuple[Any, ...], int]:
    branches = []
    node, at = _regex_sequence(pattern, at)
    branches.append(node)
    while at < len(pattern) and pattern[at] == "|":
        node, at = _regex_sequence(pattern, at + 1)
        branches.append(node)
    return (branches[0] if len(branches) == 1 else ("alt", tuple(branches))), at


def _regex_sequence(pattern: str, at: int) -> tuple[tuple[Any, ...], int]:
    items: list[tuple[Any, ...]] = []
    while at < len(pattern) and pattern[at] not in "|)":
        item, at = _regex_atom(pattern, at)
        item, at = _regex_repeats(pattern, at, item)
        items.append(item)
    return ("cat", tuple(items)), at


def _regex_atom(pattern: str, at: int) -> tuple[tuple[Any, ...], int]:
    char = pattern[at]
    if char == "(":
        return _regex_group(pattern, at + 1)
    if char == "[":
        return _regex_class(pattern, at + 1)
    if char == ".":
        return ("char", (True, ((10, 10),), ".")), at + 1  # kind `.`: no class, a mark for `(?s)`
    if char == "^":
        return ("at", "begin"), at + 1
    if char == "$":
        return ("at", "end"), at + 1
    if char == "\\":
        anchors = {"A": "begin", "Z": "endz"}
        if pattern[at + 1] in anchors:
            return ("at", anchors[pattern[at + 1]]), at + 2
        item, at = _regex_escape(pattern, at + 1, False)
        return ("char", item), at
    return ("char", (False, ((ord(char), ord(char)),), "")), at + 1


def _regex_group(pattern: str, at: int) -> tuple[tuple[Any, ...], int]:
    """After `(`: a plain, non-capturing or named group; other `(?` forms are refused."""
    if pattern.startswith("?:", at):
        at += 2
    elif pattern.startswith("?P<", at):
        at = pattern.index(">", at) + 1
    elif pattern.startswith("?", at):
        what = "a backreference" if pattern.startswith("?P=", at) else "a lookaround"
        if not pattern.startswith(("?=", "?!", "?<=", "?<!", "?P="), at):
            what = "a flag other than a leading (?i) or (?s), a comment, conditional or atomic group"
        raise ValueError(f"{what} at position {at - 1} is outside the linear-time subset")
    node, at = _regex_alternation(pattern, at)
    return node, at + 1  # past `)`


def _regex_refuse_set_operations(pattern: str) -> None:
    """Refuse what `re` reads today but warns will mean set operations one day (a class
    opening with `[`, or holding `--`, `&&`, `~~` or `||`): ambiguous, so outside the
    subset. Checked before `re` sees the pattern, which would print a FutureWarning."""
    at, size = 0, len(pattern)
    while at < size:
        if pattern[at] == "\\":
            at += 2
            continue
        at += 1
        if pattern[at - 1] != "[":
            continue
        at += pattern.startswith("^", at)
        if pattern.startswith("[", at):
            raise ValueError(f"a `[` opening a class at position {at} is ambiguous (a nested set); write `\\[`")
        first = at
        while at < size and (pattern[at] != "]" or at == first):
            if pattern[at] == "\\":
                at += 2
                continue
            if pattern[at] in "-&~|" and pattern.startswith(pattern[at], at + 1):
                raise ValueError(
                    f"`{pattern[at] * 2}` in a class at position {at} is ambiguous (a set operation); escape one"
                )
            at += 1
        at += 1


def _regex_class(pattern: str, at: int) -> tuple[tuple[Any, ...], int]:
    """After `[`: ranges and class escapes up to the closing `]` (a `]` first is literal)."""
    negated = pattern[at] == "^"
    at += negated
    ranges: list[tuple[int, int]] = []
    kinds = ""
    first = at
    while pattern[at] != "]" or at == first:
        if pattern[at] == "\\":
            item, at = _regex_escape(pattern, at + 1, True)
        else:
            item, at = (False, ((ord(pattern[at]), ord(pattern[at])),), ""), at + 1
        if pattern[at] == "-" and pattern[at + 1] != "]" and not item[2]:  # a range (`re` checked its ends)
            if pattern[at + 1] == "\\":
                upper, at = _regex_escape(pattern, at + 2, True)
            else:
                upper, at = (False, ((ord(pattern[at + 1]), ord(pattern[at + 1])),), ""), at + 2
            item = (False, ((item[1][0][0], upper[1][0][1]),), "")
        ranges += item[1]
        kinds += item[2]
    return ("char", (negated, tuple(ranges), kinds)), at + 1


def _regex_escape(pattern: str, at: int, in_class: bool) -> tuple[tuple[bool, tuple[tuple[int, int], ...], str], int]:
    """After `\\`: a character class `(negated, ranges, kinds)` and where it ends."""
    char = pattern[at]
    if char in "dDwWsS":
        return (False, (), char), at + 1
    if char in "xuU":
        size = {"x": 2, "u": 4, "U": 8}[char]
        code = int(pattern[at + 1 : at + 1 + size], 16)
        return (False, ((code, code),), ""), at + 1 + size
    if char == "b" and in_class:
        return (False, ((8, 8),), ""), at + 1
    if char == "0" or (char in "1234567" and in_class):  # octal: up to three digits
        digits = char
        while len(digits) < 3 and at + len(digits) < len(pattern) and pattern[at + len(digits)] in "01234567":
            digits += pattern[at + len(digits)]
        return (False, ((int(digits, 8), int(digits, 8)),), ""), at + len(digits)
    if char.isdigit() or char in "bBN":
        what = "a backreference" if char.isdigit() else "a word boundary" if char in "bB" else "a named character"
        raise ValueError(f"{what} at position {at - 1} is outside the linear-time subset")
    code = ord(_REGEX_ESCAPES.get(char, char))
    return (False, ((code, code),), ""), at + 1


def _regex_repeats(pattern: str, at: int, item: tuple[Any, ...]) -> tuple[tuple[Any, ...], int]:
    """The repeat after an atom, if any (`re` already refused a repeat of a repeat)."""
    if at >= len(pattern) or pattern[at] not in "*+?{":
        return item, at
    low, high, end = {"*": (0, -1, at + 1), "+": (1, -1, at + 1), "?": (0, 1, at + 1)}.get(pattern[at], (0, 0, 0))
    if pattern[at] == "{":
        bounds = re.match(r"\{([0-9]*)(,?)([0-9]*)\}", pattern[at:])
        if bounds is None or pattern.startswith("{}", at):
            return item, at  # a literal `{`: the next atom reads it
        low = int(bounds[1] or 0)
        high = int(bounds[3]) if bounds[3] else (-1 if bounds[2] else low)
        end = at + bounds.end()
        if max(low, high) > _REGEX_MAX_REPEAT:
            raise ValueError(f"a repeat count over {_REGEX_MAX_REPEAT} at position {at}")
    if end < len(pattern) and pattern[end] == "?":
        end += 1  # lazy: the same yes or no
    elif end < len(pattern) and pattern[end] == "+":
        raise ValueError(f"a possessive repeat at position {end} is outside the linear-time subset")
    return ("repeat", item, low, high), end


def _regex_emit(node: tuple[Any, ...], program: list[tuple[Any, ...]]) -> None:
    """Append the instructions of `node` (Thompson's construction)."""
    if len(program) > _REGEX_MAX_PROGRAM:
        raise ValueError(f"the pattern expands to more than {_REGEX_MAX_PROGRAM} steps")
    kind = node[0]
    if kind == "cat":
        for item in node[1]:
            _regex_emit(item, program)
    elif kind == "alt":
        jumps = []
        for branch in node[1][:-1]:
            split = len(program)
            program.append(("split", split + 1, -1))
            _regex_emit(branch, program)
            jumps.append(len(program))
            program.append(("jmp", -1))
            program[split] = ("split", split + 1, len(program))
        _regex_emit(node[1][-1], program)
        for jump in jumps:
            program[jump] = ("jmp", len(program))
    elif kind == "repeat":
        _regex_emit_repeat(node[1], node[2], node[3], program)
    else:  # "char", "at"
        program.append(node)


def _regex_emit_repeat(item: tuple[Any, ...], low: int, high: int, program: list[tuple[Any, ...]]) -> None:
    for _ in range(low):
        _regex_emit(item, program)
    if high == -1:  # L: split(L+1, out); item; jmp L
        loop = len(program)
        program.append(("split", loop + 1, -1))
        _regex_emit(item, program)
        program.append(("jmp", loop))
        program[loop] = ("split", loop + 1, len(program))
        return
    splits = []
    for _ in range(high - low):
        splits.append(len(program))
        program.append(("split", len(program) + 1, -1))
        _regex_emit(item, program)
    for split in splits:
        program[split] = ("split", split + 1, len(program))


def _regex_closure(
    program: list[tuple[Any, ...]], pcs: Any, begin: bool, end: bool, endz: bool
) -> tuple[frozenset[int], int]:
    """The threads at `pcs` after the jumps, splits and anchors that hold here (`begin`:
    at the start; `end`: where `$` holds; `endz`: at the very end), and the instructions
    visited. An anchor that does not hold stays, in case it holds after all once the
    position is known better (the start or the end of the text)."""
    seen: set[int] = set()
    kept: list[int] = []
    stack = list(pcs)
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue
        seen.add(pc)
        op = program[pc]
        if op[0] == "jmp":
            stack.append(op[1])
        elif op[0] == "split":
            stack += (op[2], op[1])
        elif op[0] == "at" and (begin if op[1] == "begin" else end if op[1] == "end" else endz):
            stack.append(pc + 1)
        else:
            kept.append(pc)
    return frozenset(kept), len(seen)


def _regex_holds(rule: tuple[bool, tuple[tuple[int, int], ...], str], char: str, fold: bool) -> bool:
    """Whether a character class takes `char` (`\\d \\w \\s` as Python's `re` reads them in
    text; `fold`: under `(?i)`, or its lower or upper case)."""
    negated, ranges, kinds = rule
    variants = {char, char.lower(), char.upper()} if fold else (char,)
    found = any(low <= ord(each) <= high for each in variants if len(each) == 1 for low, high in ranges)
    for kind in kinds:
        if found:
            break
        if kind == ".":
            continue
        if kind in "dD":
            found = char.isdecimal() == (kind == "d")
        elif kind in "wW":
            found = (char.isalnum() or char == "_") == (kind == "w")
        else:
            found = char.isspace() == (kind == "s")
    return found != negated


def _regex_step(compiled: _Regex, state: int, char: str) -> tuple[frozenset[int], int]:
    """The threads after reading `char` in `state` (anchors inside the text do not hold)."""
    program = compiled.program
    moved = [
        pc + 1
        for pc in compiled.sets[state]
        if program[pc][0] == "char" and _regex_holds(program[pc][1], char, program[pc][2])
    ]
    threads, cost = _regex_closure(program, moved, False, False, False)
    return threads, cost + len(compiled.sets[state])


def _regex_settle(compiled: _Regex, state: int, begin: bool, end: bool, endz: bool) -> int:
    """`state` where more anchors are known to hold: the start, or the end of the text
    (kept, as transitions are: every text settles at its start and end)."""
    key = (state, begin, end, endz)
    found = compiled.settled.get(key)
    if found is None:
        settled = compiled.settled
        found = compiled.state(_regex_closure(compiled.program, compiled.sets[state], begin, end, endz)[0])
        if settled is compiled.settled:  # not started afresh meanwhile
            settled[key] = found
    return found


def _regex_run(compiled: _Regex, text: str, charge: Callable[[int], None] | None) -> bool:
    """Whether the program reaches its end over the whole text (a search program reads any
    text before its pattern, and stops at the first match)."""
    if charge is not None:
        charge(len(text))
    size = len(text)
    # Anchors hold only at the start and near the end: elsewhere one table lookup a character.
    last = size - 1 if size > 0 and text[-1] == "\n" else size  # `$` holds here and at the end
    state = _regex_settle(compiled, compiled.state(compiled.start), True, last == 0, size == 0)
    rows, accept, search = compiled.rows, compiled.accept, compiled.search
    for position, char in enumerate(text):
        if position == last and position > 0:
            state = _regex_settle(compiled, state, False, True, False)
            rows, accept = compiled.rows, compiled.accept
        if search and accept[state]:
            return True
        following = rows[state].get(char)
        if following is None:
            threads, cost = _regex_step(compiled, state, char)
            if charge is not None:
                charge(cost)
            following = compiled.state(threads)
            if rows is compiled.rows:  # not started afresh: keep the transition
                rows[state][char] = following
            rows, accept = compiled.rows, compiled.accept
        state = following
        if not state:
            return False
    if size > 0:
        state = _regex_settle(compiled, state, False, True, True)
    return compiled.accept[state]
