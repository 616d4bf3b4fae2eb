"""Hypothesis strategies for what a hostile agent sends as tool arguments: lone
surrogates, NaN and infinities, integers past MAX_INT, nesting past MAX_DEPTH, huge
strings, keys that are not names, mixed with ordinary JSON. Shared by the in-process
property test (tests/test_hostile_arguments.py) and its served variant
(tests/serve/test_hostile.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

SPECIAL: list[Any] = [
    "\ud800",
    "a\udfffb",
    float("nan"),
    float("inf"),
    -float("inf"),
    10**4000,
    -(10**30),
    10**300,
    -(10**300),
    10**300 - 1,
    "",
    "0",
    "1",
    1,
    0,
    -1,
    True,
    None,
]


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value] if levels % 2 else {"k": value}
    return value


def leaves() -> st.SearchStrategy[Any]:
    special = st.sampled_from(SPECIAL)
    return st.one_of(
        special,
        special,
        special,
        st.text(max_size=12),
        st.integers(),
        st.floats(),
        st.booleans(),
        st.none(),
        st.integers(min_value=1, max_value=300_000).map(lambda n: "x" * n),
    )


def values() -> st.SearchStrategy[Any]:
    """A hostile JSON-ish value."""
    keys = st.one_of(st.text(max_size=6), st.sampled_from(["\ud800", "id", "1", "-5", "9" * 30]))
    tree = st.recursive(
        leaves(),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
        max_leaves=12,
    )
    return st.one_of(leaves(), tree, st.integers(min_value=50, max_value=700).map(nested))


def arguments(params: list[str]) -> st.SearchStrategy[Any]:
    """Arguments for a tool with these parameter names: mostly an object of some of them
    (now and then with a name it does not have), sometimes not an object at all."""
    whole = st.fixed_dictionaries({name: values() for name in params})
    some = st.fixed_dictionaries({}, optional={name: values() for name in params})
    stray = st.dictionaries(st.sampled_from(["\ud800", "nope"]), values(), min_size=1, max_size=1)
    mixed = st.builds(lambda known, other: {**known, **other}, whole, stray)
    return st.one_of(whole, whole, whole, some, mixed, values())
