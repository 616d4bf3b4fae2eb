"""Dates and times are ISO text (docs/language.md §7): indexing and slicing one gives a
`str`, as the docs say (issue 24: E3004 said otherwise)."""

from __future__ import annotations

from compiler.analyse import analyse_source

HEAD = 'environment dates:\n    title "Dates"\n\nstate:\n    days: list[date] = []\n\n'


def codes(body: str) -> list[str]:
    return [d.code for d in analyse_source(HEAD + body, "d.envspec").diagnostics]


def test_a_slice_or_item_of_a_date_time_or_datetime_is_text() -> None:
    assert codes("tool y(d: date, t: datetime, h: time) -> str:\n    return d[:4] + t[11:16] + h[0] + d[-2:]\n") == []


def test_a_slice_of_a_date_is_not_a_date() -> None:
    assert codes("tool y(d: date) -> date:\n    return d[:10]\n") == ["E3001"]
