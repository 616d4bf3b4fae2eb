"""The text built-ins of issue 24 against Python's own functions, on seeded inputs: the
generated package's tools (`strip`/`lstrip`/`rstrip` with and without characters,
`splitlines`, `utf8_len`, `repr`, `format_datetime`) give what Python gives on 100,000
texts, 20,000 json values and 100,000 datetimes with random formats. A seeded generator
(not hypothesis) keeps the run short and the inputs the same on every run."""

from __future__ import annotations

import datetime as dt
import locale
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lowered import imported_package, lowered_files

from compiler.library.text import FORMAT_DIRECTIVES

SPEC = Path(__file__).resolve().parents[1] / "fixtures" / "growth" / "text_tools.envspec"
ALPHABET = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029xyzXé€😀\ud800\"'\\\x00"
"""Every kind of character the functions treat apart: Python's line breaks and
whitespace, quotes and backslashes for repr, multi-byte and lone-surrogate code points."""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    files = lowered_files(SPEC)
    with imported_package(files, tmp_path_factory.mktemp("text"), "text_tools", "environment") as module:
        yield module.Environment()


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 12)))


def _json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randrange(-(10**12), 10**12)
    if kind == 3:
        return rng.choice([rng.uniform(-1e6, 1e6), 0.1, 1e-7, 1e22, -0.0])
    if kind == 4:
        return _text(rng)
    if kind == 5:
        return [_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_text(rng): _json(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_text_built_ins_equal_pythons_on_100000_texts(env: Any) -> None:
    rng = random.Random(24)
    for _ in range(100_000):
        text, chars = _text(rng), _text(rng)[:3]
        cut = env.cut(text=text, chars=chars)
        expected = {
            "both": text.strip(chars),
            "left": text.lstrip(chars),
            "right": text.rstrip(chars),
            "bare": text.strip(),
            "lines": text.splitlines(),
            "bytes": len(text.encode("utf-8", "surrogatepass")),
            "shown": repr(text),
        }
        assert cut == expected, (text, chars)


def test_utf8_len_counts_bytes() -> None:
    assert len("é€😀".encode()) == 2 + 3 + 4


def test_repr_equals_pythons_on_20000_json_values(env: Any) -> None:
    rng = random.Random(2024)
    for _ in range(20_000):
        value = _json(rng)
        assert env.shown(value=value) == repr(value), value


def test_format_datetime_equals_strftime_in_the_c_locale_on_100000_datetimes(env: Any) -> None:
    assert locale.setlocale(locale.LC_TIME) == "C"  # strftime's day and month names are English
    rng = random.Random(7)
    directives = sorted(FORMAT_DIRECTIVES)
    start = dt.datetime(1000, 1, 1).timestamp()
    end = dt.datetime(9999, 12, 31).timestamp()
    for _ in range(100_000):
        moment = dt.datetime.fromtimestamp(rng.uniform(start, end)).replace(microsecond=0)
        template = "".join(rng.choice(["%" + rng.choice(directives), rng.choice(" -/:,x")]) for _ in range(4))
        got = env.written(at=moment.isoformat(), template=template)
        assert got == moment.strftime(template), (moment, template)
