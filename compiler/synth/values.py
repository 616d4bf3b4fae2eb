"""Values for task synthesis, drawn from a value source: a spec's pool or a built-in format.

A spec says where the values of a tool parameter or a record field come from
(`param requester from person_name`, `field total from amount(5, 500)`, or one of its
`values` pools); the task sampler asks this module for them. The formats are those of
`compiler.library.sources.FORMATS`, one generator each (a test keeps the two in step).

Every value depends only on the caller's `random.Random` and the scenario's clock:
Faker's data lists give realistic names and addresses, and its generator is reseeded
from the caller's rng before each use, never from Faker's shared random. Faker is pinned
in pyproject.toml because its lists change between releases.

The analyser reports bad sources in specs with positions; `ValueSourceError` here is the
last line of defence, naming the source.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import random
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from faker import Faker
from faker.providers.address.en_US import Provider as UsAddress
from faker.providers.color import Provider as ColorProvider

from compiler.library.sources import FORMATS, ArgValue, Format

Scalar = str | int | float
"""What a format makes (dates and times as ISO text)."""

LOCALE = "en_US"
EXAMPLE_DOMAINS = ("example.com", "example.org", "example.net")
"""The domains reserved for examples (RFC 2606): addresses that can never reach anyone."""
DAY_START = dt.time(8, 0)
QUARTERS_PER_DAY = 40
"""Quarter hours from 08:00 to 17:45, the working-hours slots of `datetime` and `time_of_day`."""
QUARTER = dt.timedelta(minutes=15)
DISTINCT_TRIES_PER_VALUE = 50
"""Draws allowed per distinct value asked for, for formats too large to enumerate."""

DOCUMENT_QUALIFIERS = (
    "annual", "monthly", "quarterly", "weekly", "draft", "final", "team", "project",
    "meeting", "customer", "supplier", "sales", "travel", "training", "budget", "holiday",
)  # fmt: skip
DOCUMENT_NOUNS = (
    "report", "notes", "summary", "invoice", "budget", "schedule", "plan", "agenda",
    "minutes", "contract", "proposal", "review", "inventory", "roster", "forecast",
    "receipt", "checklist", "timesheet", "overview", "backup", "export", "letter",
)  # fmt: skip
"""Words of file names: the kinds of documents any office keeps, so a name reads as a real
file in every domain (`quarterly_report.csv`). Faker's own word lists are lorem ipsum or
English words at random (`whose_either.csv`), which mean nothing as file names."""
FOLDERS = ("documents", "reports", "shared", "archive", "projects", "records", "exports", "team")
"""Folders of `file_path` and sections of `url`, as neutral as `DOCUMENT_NOUNS`."""
AREA_CODES = tuple(code for code in range(200, 1000) if code // 10 % 10 != 9 and code % 100 != 11)
"""Area codes of the North American plan's shape: first digit 2-9, middle digit not 9,
not an N11 service code."""
COUNTRIES = tuple(dict.fromkeys(re.sub(r" \(.*?\)", "", country) for country in UsAddress.countries))
"""Faker's countries as people name them: `Slovakia`, not `Slovakia (Slovak Republic)`."""
COLORS = tuple(dict.fromkeys(ColorProvider.safe_colors))
"""The 15 web-safe colour names (`teal`, `navy`): the ones anybody can name."""
EXTENSION = re.compile(r"[A-Za-z0-9]+(\.[A-Za-z0-9]+)*")


class ValueSourceError(ValueError):
    """A source that cannot make values: unknown, wrong arguments, an empty pool, too few."""


@dataclass(frozen=True)
class Draw:
    """What one draw sees: the caller's rng, the scenario's clock and the bound arguments."""

    rng: random.Random
    clock: dt.datetime
    args: dict[str, ArgValue]


@dataclass(frozen=True)
class Generator:
    """How a format makes values: `make` one at random, or, for a format of few values,
    `size` and `at` enumerate them all (the value of index 0 <= i < size), so distinct
    draws are an exact sample and the shortfall is known before drawing."""

    make: Callable[[Draw], Scalar]
    size: Callable[[Draw], int] | None = None
    at: Callable[[Draw, int], Scalar] | None = None


# Faker, seeded from the caller's rng.

_local = threading.local()


def _faker(draw: Draw) -> Faker:
    """The thread's cached Faker (creating one takes about a millisecond), reseeded from the
    draw's rng: what it makes next depends on that rng alone."""
    fake: Faker | None = getattr(_local, "faker", None)
    if fake is None:
        fake = _local.faker = Faker(LOCALE)
    fake.seed_instance(draw.rng.getrandbits(64))
    return fake


def _person_name(draw: Draw) -> str:
    fake = _faker(draw)
    return f"{fake.first_name()} {fake.last_name()}"


def _email(draw: Draw) -> str:
    return f"{_faker(draw).user_name()}@{draw.rng.choice(EXAMPLE_DOMAINS)}"


# Formats of few values, enumerated.


def _indexed(size: Callable[[Draw], int], at: Callable[[Draw, int], Scalar]) -> Generator:
    def make(draw: Draw) -> Scalar:
        return at(draw, draw.rng.randrange(size(draw)))

    return Generator(make, size, at)


def _listed(values: Sequence[str]) -> Generator:
    return _indexed(lambda draw: len(values), lambda draw, i: values[i])


def _cents(draw: Draw) -> tuple[int, int]:
    """The first and last whole cent of `amount`'s range (Decimal: 0.1 is not 10 cents in floats)."""
    low = math.ceil(Decimal(str(draw.args["low"])) * 100)
    high = math.floor(Decimal(str(draw.args["high"])) * 100)
    if low > high:
        raise ValueError(f"no amount with two decimals between {draw.args['low']} and {draw.args['high']}")
    return low, high


def _amount_size(draw: Draw) -> int:
    low, high = _cents(draw)
    return high - low + 1


def _amount_at(draw: Draw, i: int) -> float:
    return (_cents(draw)[0] + i) / 100


def _integer_size(draw: Draw) -> int:
    low, high = int(draw.args["low"]), int(draw.args["high"])
    if low > high:
        raise ValueError(f"low {low} is above high {high}")
    return high - low + 1


def _days(draw: Draw) -> int:
    days = int(draw.args["days"])
    if days < 1:
        raise ValueError(f"days must be 1 or more, not {days}")
    return days


def _date_at(draw: Draw, i: int) -> str:
    return (draw.clock.date() + dt.timedelta(days=i + 1)).isoformat()


def _quarters_up_to(moment: dt.datetime) -> int:
    """How many working-hours slots of `moment`'s day are at or before it."""
    start = dt.datetime.combine(moment.date(), DAY_START)
    if moment < start:
        return 0
    return min(QUARTERS_PER_DAY, (moment - start) // QUARTER + 1)


def _datetime_at(draw: Draw, i: int) -> str:
    """Slot `i` after the clock: slots are numbered from 08:00 of the clock's day, and those
    at or before the clock are skipped, so the `days * 40` slots end at the clock `days` days on."""
    slot = _quarters_up_to(draw.clock) + i
    day, quarter = divmod(slot, QUARTERS_PER_DAY)
    start = dt.datetime.combine(draw.clock.date() + dt.timedelta(days=day), DAY_START)
    return (start + quarter * QUARTER).isoformat()


def _time_of_day_at(draw: Draw, i: int) -> str:
    minutes = DAY_START.hour * 60 + 15 * i
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _phone_at(draw: Draw, i: int) -> str:
    """Numbers 555-0100 to 555-0199 are reserved for fiction in every area code."""
    area, line = divmod(i, 100)
    return f"+1-{AREA_CODES[area]}-555-01{line:02d}"


# Formats of many values, made at random.


def _extension(draw: Draw) -> str:
    extension = str(draw.args["extension"])
    if not EXTENSION.fullmatch(extension):
        raise ValueError(f"extension {extension!r} is not letters and digits (like `csv` or `tar.gz`)")
    return extension


def _file_name(draw: Draw) -> str:
    words = [draw.rng.choice(DOCUMENT_NOUNS)]
    if draw.rng.random() < 0.75:
        words.insert(0, draw.rng.choice(DOCUMENT_QUALIFIERS))
    return f"{'_'.join(words)}.{_extension(draw)}"


def _file_path(draw: Draw) -> str:
    folders = [draw.rng.choice(FOLDERS)]
    if draw.rng.random() < 0.5:
        year = draw.clock.year - draw.rng.randrange(3)
        folders.append(str(year) if draw.rng.random() < 0.5 else draw.rng.choice(FOLDERS))
    return "/".join([*folders, _file_name(draw)])


def _url(draw: Draw) -> str:
    path = [draw.rng.choice(FOLDERS)]
    if draw.rng.random() < 0.5:
        path.append(draw.rng.choice(DOCUMENT_NOUNS))
    return f"https://www.{draw.rng.choice(EXAMPLE_DOMAINS)}/{'/'.join(path)}"


GENERATORS: dict[str, Generator] = {
    "person_name": Generator(_person_name),
    "first_name": Generator(lambda draw: _faker(draw).first_name()),
    "last_name": Generator(lambda draw: _faker(draw).last_name()),
    "email": Generator(_email),
    "phone": _indexed(lambda draw: len(AREA_CODES) * 100, _phone_at),
    "username": Generator(lambda draw: _faker(draw).user_name()),
    "company": Generator(lambda draw: _faker(draw).company()),
    "job_title": Generator(lambda draw: _faker(draw).job()),
    "street_address": Generator(lambda draw: _faker(draw).street_address()),
    "city": Generator(lambda draw: _faker(draw).city()),
    "country": _listed(COUNTRIES),
    "postcode": Generator(lambda draw: _faker(draw).postcode()),
    "url": Generator(_url),
    "color": _listed(COLORS),
    "amount": _indexed(_amount_size, _amount_at),
    "integer": _indexed(_integer_size, lambda draw, i: int(draw.args["low"]) + i),
    "date": _indexed(_days, _date_at),
    "datetime": _indexed(lambda draw: _days(draw) * QUARTERS_PER_DAY, _datetime_at),
    "time_of_day": _indexed(lambda draw: QUARTERS_PER_DAY, _time_of_day_at),
    "file_name": Generator(_file_name),
    "file_path": Generator(_file_path),
}
"""One generator per format of `FORMATS`, by name."""


# The entry points.


def draw_value(name: str, args: Sequence[Any], pools: dict[str, list[Any]], rng: random.Random, clock: str) -> Any:
    """One value of source `name` (`args` as written in the spec: `amount(50, 5000)`)."""
    if name in pools:
        return rng.choice(_pool(name, args, pools))
    generator, draw = _format_draw(name, args, rng, clock)
    with _named(name, draw):
        return generator.make(draw)


def draw_distinct(
    name: str, args: Sequence[Any], pools: dict[str, list[Any]], rng: random.Random, clock: str, count: int
) -> list[Any]:
    """`count` different values of source `name` (a task's distractors), or a
    `ValueSourceError` when the source has fewer."""
    if name in pools:
        return _distinct_of_pool(name, _pool(name, args, pools), rng, count)
    generator, draw = _format_draw(name, args, rng, clock)
    with _named(name, draw):
        return _distinct_of_format(name, generator, draw, count)


def _pool(name: str, args: Sequence[Any], pools: dict[str, list[Any]]) -> list[Any]:
    if args:
        raise ValueSourceError(f"value pool `{name}` takes no arguments, got {len(args)}")
    if not pools[name]:
        raise ValueSourceError(f"value pool `{name}` is empty")
    return pools[name]


def _distinct_of_pool(name: str, pool: list[Any], rng: random.Random, count: int) -> list[Any]:
    """Distinct as JSON text: two equal objects are one value, whatever their key order."""
    unique = list({json.dumps(value, sort_keys=True): value for value in pool}.values())
    if len(unique) < count:
        raise ValueSourceError(f"value pool `{name}` has {len(unique)} distinct values, {count} asked for")
    return rng.sample(unique, count)


def _distinct_of_format(name: str, generator: Generator, draw: Draw, count: int) -> list[Scalar]:
    if generator.size is not None and generator.at is not None:
        size = generator.size(draw)
        if size < count:
            raise ValueSourceError(f"value source `{name}` has {size} distinct values, {count} asked for")
        return [generator.at(draw, i) for i in draw.rng.sample(range(size), count)]
    found: dict[Scalar, None] = {}
    for _ in range(count * DISTINCT_TRIES_PER_VALUE):
        found[generator.make(draw)] = None
        if len(found) == count:
            return list(found)
    raise ValueSourceError(
        f"value source `{name}` gave {len(found)} distinct values in {count * DISTINCT_TRIES_PER_VALUE} draws, {count} asked for"
    )


@contextmanager
def _named(name: str, draw: Draw) -> Iterator[None]:
    """Turns a generator's complaint about its arguments into a `ValueSourceError` naming the source."""
    try:
        yield
    except ValueSourceError:
        raise
    except ValueError as error:
        raise ValueSourceError(f"value source `{name}{_written(draw.args.values())}`: {error}") from None


def _format_draw(name: str, args: Sequence[Any], rng: random.Random, clock: str) -> tuple[Generator, Draw]:
    if name not in FORMATS:
        known = ", ".join(FORMATS)
        raise ValueSourceError(f"unknown value source `{name}`: not a pool of the spec nor a format ({known})")
    return GENERATORS[name], Draw(rng, _clock(clock), _bind(FORMATS[name], args))


def _bind(source: Format, args: Sequence[Any]) -> dict[str, ArgValue]:
    """The format's arguments by name: those given, in order, then the defaults."""
    if len(args) > len(source.args):
        raise ValueSourceError(
            f"value source `{source.name}` takes at most {len(source.args)} arguments, got {len(args)}"
        )
    bound: dict[str, ArgValue] = {}
    for i, parameter in enumerate(source.args):
        value = args[i] if i < len(args) else parameter.default
        if not _fits(value, parameter.type):
            raise ValueSourceError(
                f"value source `{source.name}`: argument `{parameter.name}` must be {parameter.type}, got {value!r}"
            )
        bound[parameter.name] = value
    return bound


def _fits(value: Any, type_name: str) -> bool:
    if isinstance(value, bool):
        return False
    if type_name == "float":
        return isinstance(value, int | float) and math.isfinite(value)
    return isinstance(value, {"int": int, "str": str}[type_name])


@functools.lru_cache(maxsize=64)
def _clock(clock: str) -> dt.datetime:
    """Parsed once per clock: a run draws many values at few clocks."""
    try:
        return dt.datetime.strptime(clock, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise ValueSourceError(f"the scenario's clock {clock!r} is not YYYY-MM-DDTHH:MM:SS") from None


def _written(args: Iterable[ArgValue]) -> str:
    return "(" + ", ".join(json.dumps(arg) for arg in args) + ")"
