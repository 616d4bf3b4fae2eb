"""The values of task synthesis (compiler/synth/values.py): every format of the table
makes values of its type within its constraints, the same seed gives the same values in
any process, pools are drawn from, bad sources are a `ValueSourceError` naming them."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import faker.generator
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.library.sources import FORMATS
from compiler.synth.values import GENERATORS, ValueSourceError, draw_distinct, draw_value

ROOT = Path(__file__).resolve().parents[2]
CLOCK = "2025-01-13T10:20:00"
EXAMPLE_DOMAIN = r"example\.(com|org|net)"
WORDS = r"[a-z]+(_[a-z]+)*"
PATTERNS = {
    "person_name": r"[A-Z][A-Za-z'-]+ [A-Z][A-Za-z'-]+",
    "first_name": r"[A-Z][A-Za-z'-]+",
    "last_name": r"[A-Z][A-Za-z'-]+",
    "email": rf"[a-z0-9._]+@{EXAMPLE_DOMAIN}",
    "phone": r"\+1-[2-9][0-8]\d-555-01\d\d",
    "username": r"[a-z0-9._]+",
    "company": r"[A-Z][A-Za-z ,.&'-]+",
    "job_title": r"[A-Z][A-Za-z ,/()'&-]+",
    "street_address": r"\d+ [A-Z][A-Za-z .'-]+\d*",
    "city": r"[A-Z][A-Za-z .'-]+",
    "country": r"[A-Z][A-Za-z ,.'&-]+",
    "postcode": r"\d{5}",
    "url": rf"https://www\.{EXAMPLE_DOMAIN}/[a-z]+(/[a-z]+)?",
    "color": r"[a-z]+",
    "time_of_day": r"(0[89]|1[0-7]):(00|15|30|45)",
}
"""The shape of each text format without arguments."""
PREFIXES_AND_SUFFIXES = re.compile(r"\b(Mr|Mrs|Ms|Miss|Dr|MD|DDS|PhD|DVM|Jr|Sr|II|III|IV|V)\b\.?")
LOREM = re.compile(r"\b(lorem|ipsum|dolor|amet|consectetur|adipiscing)\b", re.IGNORECASE)
RESULT_TYPES = {"str": str, "int": int, "float": float, "date": str, "datetime": str}

seeds = st.integers(min_value=0, max_value=2**64)


def draw(name: str, args: list[Any] | None = None, seed: int = 0, clock: str = CLOCK) -> Any:
    return draw_value(name, args or [], {}, random.Random(seed), clock)


def test_every_format_of_the_table_has_a_generator_and_every_generator_a_format() -> None:
    assert list(GENERATORS) == list(FORMATS)


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=60)
@given(seed=seeds)
def test_every_format_makes_its_result_type_on_one_line_without_filler(name: str, seed: int) -> None:
    value = draw(name, seed=seed)
    assert type(value) is RESULT_TYPES[FORMATS[name].result]
    text = str(value)
    assert "\n" not in text and text == text.strip() and text
    assert not LOREM.search(text)
    if name in PATTERNS:
        assert re.fullmatch(PATTERNS[name], text), text


@pytest.mark.parametrize("name", ["person_name", "first_name", "last_name"])
@settings(max_examples=200)
@given(seed=seeds)
def test_names_have_no_titles_or_suffixes(name: str, seed: int) -> None:
    assert not PREFIXES_AND_SUFFIXES.search(draw(name, seed=seed))


@settings(max_examples=200)
@given(seed=seeds, low=st.integers(-(10**6), 10**6), width=st.integers(0, 10**6), cents=st.booleans())
def test_amounts_have_two_decimals_within_their_bounds(seed: int, low: int, width: int, cents: bool) -> None:
    bounds = [low / 100, (low + width) / 100] if cents else [low, low + width]
    value = draw("amount", bounds, seed)
    assert bounds[0] <= value <= bounds[1]
    assert value == round(value, 2) and repr(value) == repr(round(value * 100) / 100)


def test_an_amount_range_of_one_cent_gives_that_cent() -> None:
    assert draw("amount", [0.1, 0.1]) == 0.1
    assert draw("amount", [19.99, 19.991]) == 19.99


@settings(max_examples=200)
@given(seed=seeds, low=st.integers(-(10**9), 10**9), width=st.integers(0, 10**9))
def test_integers_fall_within_both_bounds(seed: int, low: int, width: int) -> None:
    assert low <= draw("integer", [low, low + width], seed) <= low + width


clocks = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2090, 1, 1)).map(
    lambda moment: moment.replace(microsecond=0).isoformat()
)


@settings(max_examples=300)
@given(seed=seeds, clock=clocks, days=st.integers(1, 400))
def test_dates_fall_within_days_after_the_clock(seed: int, clock: str, days: int) -> None:
    value = dt.date.fromisoformat(draw("date", [days], seed, clock))
    start = dt.datetime.fromisoformat(clock).date()
    assert start < value <= start + dt.timedelta(days=days)


@settings(max_examples=300)
@given(seed=seeds, clock=clocks, days=st.integers(1, 400))
def test_datetimes_are_working_quarter_hours_within_days_after_the_clock(seed: int, clock: str, days: int) -> None:
    text = draw("datetime", [days], seed, clock)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:00", text)
    value, start = dt.datetime.fromisoformat(text), dt.datetime.fromisoformat(clock)
    assert start < value <= start + dt.timedelta(days=days)
    assert dt.time(8) <= value.time() <= dt.time(17, 45) and value.minute % 15 == 0


def test_the_datetimes_of_one_day_are_the_slots_after_the_clock_until_the_same_time_next_day() -> None:
    values = set(draw_distinct("datetime", [1], {}, random.Random(0), "2025-01-13T10:20:00", 40))
    expected = {f"2025-01-13T{slot}:00" for slot in quarter_hours() if slot > "10:20"}
    expected |= {f"2025-01-14T{slot}:00" for slot in quarter_hours() if slot <= "10:20"}
    assert values == expected


def quarter_hours() -> list[str]:
    return [f"{hour:02d}:{minute:02d}" for hour in range(8, 18) for minute in (0, 15, 30, 45)]


def test_times_of_day_are_the_forty_working_quarter_hours() -> None:
    assert sorted(draw_distinct("time_of_day", [], {}, random.Random(1), CLOCK, 40)) == quarter_hours()


@pytest.mark.parametrize("name", ["file_name", "file_path"])
@settings(max_examples=100)
@given(seed=seeds, extension=st.from_regex(r"[a-z0-9]{1,4}(\.[a-z0-9]{1,3})?", fullmatch=True))
def test_files_are_words_with_the_extension_given(name: str, seed: int, extension: str) -> None:
    value = draw(name, [extension], seed)
    folders = r"([a-z]+|\d{4})/([a-z]+/|\d{4}/)?" if name == "file_path" else ""
    assert re.fullmatch(rf"{folders}{WORDS}\.{re.escape(extension)}", value), value


def test_file_paths_have_one_or_two_folders() -> None:
    depths = {draw("file_path", seed=seed).count("/") for seed in range(200)}
    assert depths == {1, 2}


def test_file_names_default_to_txt() -> None:
    assert draw("file_name").endswith(".txt")


# Determinism.

PROGRAM = """
import json, random, sys
from compiler.synth.values import GENERATORS, draw_value
rng = random.Random(int(sys.argv[1]))
print(json.dumps([draw_value(name, [], {}, rng, "2025-01-13T10:20:00") for name in GENERATORS for _ in range(5)]))
"""


def values_in_a_fresh_process(seed: int, hash_seed: str) -> list[Any]:
    environment = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(seed)], capture_output=True, text=True, env=environment, check=True
    )
    values: list[Any] = json.loads(done.stdout)
    return values


def test_the_same_seed_gives_the_same_values_in_fresh_processes_and_others_differ() -> None:
    first = values_in_a_fresh_process(7, "1")
    assert values_in_a_fresh_process(7, "2") == first
    other = values_in_a_fresh_process(8, "3")
    assert other != first
    per_format = len(first) // len(GENERATORS)
    for i, name in enumerate(GENERATORS):
        chunk = slice(i * per_format, (i + 1) * per_format)
        assert first[chunk] != other[chunk], f"{name} gives the same values for seeds 7 and 8"


def test_values_depend_on_the_callers_rng_alone() -> None:
    """Faker's shared random is neither used nor advanced, and draws interleaved with
    draws on another rng give what they give alone."""
    shared = faker.generator.random.getstate()
    rng = random.Random(3)
    alone = [draw_value("person_name", [], {}, rng, CLOCK) for _ in range(5)]
    rng, other = random.Random(3), random.Random(4)
    interleaved = []
    for _ in range(5):
        interleaved.append(draw_value("person_name", [], {}, rng, CLOCK))
        draw_value("first_name", [], {}, other, CLOCK)
    assert interleaved == alone and len(set(alone)) > 1
    assert faker.generator.random.getstate() == shared


# Pools.


def test_a_pool_is_drawn_from_uniformly_by_name() -> None:
    pools = {"titles": ["Printer jammed", "VPN drops", "Laptop for new starter"]}
    rng = random.Random(0)
    counts = {title: 0 for title in pools["titles"]}
    for _ in range(3000):
        counts[draw_value("titles", [], pools, rng, CLOCK)] += 1
    assert all(900 < count < 1100 for count in counts.values()), counts


def test_pool_values_come_back_as_written() -> None:
    pools = {"limits": [{"max": 3}, 2.5, None]}
    drawn = {json.dumps(draw_value("limits", [], pools, random.Random(seed), CLOCK)) for seed in range(50)}
    assert drawn == {'{"max": 3}', "2.5", "null"}


# Distinct values.


@pytest.mark.parametrize("name", list(FORMATS))
def test_distinct_draws_of_every_format_differ(name: str) -> None:
    values = draw_distinct(name, [], {}, random.Random(5), CLOCK, 10)
    assert len(values) == 10 == len(set(values))


def test_distinct_draws_of_a_pool_are_distinct_as_json() -> None:
    pools = {"tags": ["a", "b", "a", {"x": 1, "y": 2}, {"y": 2, "x": 1}]}
    values = draw_distinct("tags", [], pools, random.Random(0), CLOCK, 3)
    assert sorted(json.dumps(value, sort_keys=True) for value in values) == ['"a"', '"b"', '{"x": 1, "y": 2}']


def test_all_values_of_a_small_source_can_be_drawn_distinct() -> None:
    assert sorted(draw_distinct("integer", [1, 5], {}, random.Random(0), CLOCK, 5)) == [1, 2, 3, 4, 5]
    assert sorted(draw_distinct("amount", [1, 1.04], {}, random.Random(0), CLOCK, 5)) == [1, 1.01, 1.02, 1.03, 1.04]
    assert len(draw_distinct("color", [], {}, random.Random(0), CLOCK, 15)) == 15


@pytest.mark.parametrize(
    ("name", "args", "pools", "count", "message"),
    [
        ("integer", [1, 3], {}, 5, "`integer` has 3 distinct values, 5 asked for"),
        ("date", [2], {}, 3, "`date` has 2 distinct values, 3 asked for"),
        ("color", [], {}, 16, "`color` has 15 distinct values, 16 asked for"),
        ("tags", [], {"tags": ["a", "a", "b"]}, 3, "pool `tags` has 2 distinct values, 3 asked for"),
    ],
)
def test_too_few_distinct_values_is_an_error_naming_the_source(
    name: str, args: list[Any], pools: dict[str, list[Any]], count: int, message: str
) -> None:
    with pytest.raises(ValueSourceError, match=re.escape(message)):
        draw_distinct(name, args, pools, random.Random(0), CLOCK, count)


def test_distinct_draws_are_reproducible() -> None:
    assert draw_distinct("company", [], {}, random.Random(9), CLOCK, 8) == draw_distinct(
        "company", [], {}, random.Random(9), CLOCK, 8
    )


# Errors.


@pytest.mark.parametrize(
    ("name", "args", "pools", "clock", "message"),
    [
        ("colour", [], {}, CLOCK, "unknown value source `colour`"),
        ("email", ["x"], {}, CLOCK, "`email` takes at most 0 arguments, got 1"),
        ("integer", [1, 2, 3], {}, CLOCK, "`integer` takes at most 2 arguments, got 3"),
        ("integer", [1.5], {}, CLOCK, "`integer`: argument `low` must be int, got 1.5"),
        ("integer", [True], {}, CLOCK, "`integer`: argument `low` must be int, got True"),
        ("amount", ["5"], {}, CLOCK, "`amount`: argument `low` must be float, got '5'"),
        ("amount", [float("nan")], {}, CLOCK, "`amount`: argument `low` must be float"),
        ("amount", [10, 5], {}, CLOCK, "`amount(10, 5)`: no amount with two decimals between 10 and 5"),
        ("amount", [0.001, 0.009], {}, CLOCK, "no amount with two decimals between 0.001 and 0.009"),
        ("integer", [9, 1], {}, CLOCK, "`integer(9, 1)`: low 9 is above high 1"),
        ("date", [0], {}, CLOCK, "`date(0)`: days must be 1 or more, not 0"),
        ("datetime", [-3], {}, CLOCK, "`datetime(-3)`: days must be 1 or more, not -3"),
        ("file_name", ["c/sv"], {}, CLOCK, "`file_name(\"c/sv\")`: extension 'c/sv' is not letters and digits"),
        ("file_path", [""], {}, CLOCK, "`file_path(\"\")`: extension '' is not letters and digits"),
        ("file_name", [".csv"], {}, CLOCK, "extension '.csv' is not letters and digits"),
        ("titles", [], {"titles": []}, CLOCK, "value pool `titles` is empty"),
        ("titles", [2], {"titles": ["a"]}, CLOCK, "value pool `titles` takes no arguments, got 1"),
        ("date", [], {}, "2025-01-13", "the scenario's clock '2025-01-13' is not YYYY-MM-DDTHH:MM:SS"),
    ],
)
def test_a_bad_source_is_a_value_source_error_naming_it(
    name: str, args: list[Any], pools: dict[str, list[Any]], clock: str, message: str
) -> None:
    with pytest.raises(ValueSourceError, match=re.escape(message)):
        draw_value(name, args, pools, random.Random(0), clock)
    with pytest.raises(ValueSourceError, match=re.escape(message)):
        draw_distinct(name, args, pools, random.Random(0), clock, 1)


def test_a_value_source_error_is_a_value_error() -> None:
    assert issubclass(ValueSourceError, ValueError)


def test_missing_arguments_take_the_formats_defaults() -> None:
    assert all(1 <= draw("integer", seed=seed) <= 100 for seed in range(100))
    assert all(0 <= draw("integer", [0], seed) <= 100 for seed in range(100))
    assert {draw("integer", [100], seed) for seed in range(5)} == {100}
