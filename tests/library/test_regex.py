"""The runtime's linear-time matcher (`compiler/library/runtime.py`): the same answers as
Python's `re` on the subset both take, refusals outside it, and no catastrophic
backtracking."""

from __future__ import annotations

import re
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.library import runtime

ALPHABET = "ab1 _\n-é٣"
"""Texts and literals: letters, a digit, space, `_`, a newline, `-`, a non-ASCII letter and digit."""

_LITERAL = st.sampled_from(["a", "b", "1", " ", "_", "-", "é", "\\n", "\\.", "\\-", "\\x61", "\\u0062", "\\t"])
_CLASS = st.sampled_from(
    ["[ab]", "[^a]", "[a-c]", "[]a]", "[^]b]", "[a-]", "[\\d_]", "[^\\w]", "[\\s1]", "[\\D]", "[é-ê]", "[\\n-]"]
)
_ESCAPE = st.sampled_from(["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "."])
_ANCHOR = st.sampled_from(["^", "$", "\\A", "\\Z"])
_REPEAT = st.sampled_from(["*", "+", "?", "{2}", "{1,}", "{0,2}", "{,2}", "{1,3}", "*?", "+?", "??", "{1,2}?"])


def _patterns() -> st.SearchStrategy[str]:
    atoms = st.one_of(_LITERAL, _CLASS, _ESCAPE)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        group = st.builds(lambda kind, body: f"{kind}{body})", st.sampled_from(["(", "(?:", "(?P<g>"]), inner)
        repeated = st.builds(lambda item, rep: item + rep, st.one_of(atoms, group), _REPEAT)
        sequence = st.lists(st.one_of(inner, repeated, _ANCHOR), min_size=0, max_size=4).map("".join)
        return st.one_of(group, repeated, sequence, st.lists(sequence, min_size=2, max_size=3).map("|".join))

    return st.recursive(atoms, extend, max_leaves=12)


def _valid_for_re(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


@settings(max_examples=3000, deadline=None)
@given(
    flags=st.sampled_from(["", "(?i)", "(?s)", "(?is)"]),
    body=_patterns(),
    texts=st.lists(st.text(alphabet=ALPHABET + "ABÉ", max_size=8), min_size=1, max_size=6),
)
def test_same_answers_as_re_on_the_shared_subset(flags: str, body: str, texts: list[str]) -> None:
    pattern = flags + body
    if not _valid_for_re(pattern) or "(?P<g>" in pattern.replace("(?P<g>", "", 1):  # a name used twice
        return
    assert runtime._valid_regex(pattern), runtime._regex_problem(pattern)
    for text in texts:
        assert runtime._matches(text, pattern) == (re.fullmatch(pattern, text) is not None), (pattern, text)
        assert runtime._search(text, pattern) == (re.search(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(a)\\1", "backreference"),
        ("(?P<x>a)(?P=x)", "backreference"),
        ("a(?=b)", "lookaround"),
        ("(?<!a)b", "lookaround"),
        ("a(?i:b)c", "a flag other than"),
        ("(?m)^a", "a flag other than"),
        ("\\bword\\b", "word boundary"),
        ("a++", "possessive"),
        ("a{1001}", "repeat count"),
        ("(?:a{1000}){30}", "expands to more than"),
        ("[z-a]", "bad character range"),
        ("(unclosed", "missing )"),
        ("[[a]", "nested set"),
        ("x[^[ab]", "nested set"),
        ("[a--b]", "set operation"),
        ("[\\w&&\\d]", "set operation"),
        ("[a~~b]", "set operation"),
        ("[a||b]", "set operation"),
    ],
)
def test_patterns_outside_the_subset_are_refused_with_a_reason(pattern: str, why: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before `re` could warn about it
        problem = runtime._regex_problem(pattern)
    assert problem is not None and why in problem
    assert not runtime._valid_regex(pattern)
    assert not runtime._matches("aa", pattern) and not runtime._search("aa", pattern)


@pytest.mark.parametrize(
    "pattern", ["[\\[a]+", "[a[]+", "[]a]+", "[a\\-\\-b]+", "[a-z-]+", "[&~|]+", "a--b", "[^\\[]x", "[a-]-"]
)
def test_classes_that_only_look_like_set_operations_still_match_as_re_does(pattern: str) -> None:
    assert runtime._regex_problem(pattern) is None
    for text in ["a", "[a", "a--b", "-&", "b~|", "[x", "zx", "ab-"]:
        assert runtime._matches(text, pattern) == (re.fullmatch(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize("count", [40, 1000, 100_000])
def test_nested_repeats_answer_in_linear_time(count: int) -> None:
    """`(a+)+$` against `a`s and a `!`: minutes for `re` at 40; milliseconds here."""
    text = "a" * count + "!"
    started = time.perf_counter()
    assert not runtime._matches(text, "(a+)+$")
    assert not runtime._search(text, "(a+)+$")
    assert not runtime._search(text, "(a|aa)*b")
    assert time.perf_counter() - started < 0.05 + count * 2e-6


def test_the_work_is_charged_to_the_call() -> None:
    """A charge callback hears of every character and every new DFA transition."""
    charged: list[int] = []
    assert runtime._matches("ab" * 50, "(?:ab)*", charged.append)
    assert charged[0] == 100 and sum(charged) > 100


def test_a_dfa_past_its_state_limit_starts_afresh_and_answers_the_same() -> None:
    """`(a|b)*a(a|b){12}` has 2^13 DFA states: the table is emptied when full."""
    pattern = "(?:a|b)*a(?:a|b){12}"
    texts = ["".join("ab"[(i * 7919 + j * 104729) % 3 % 2] for j in range(40)) for i in range(60)]
    for text in texts:
        assert runtime._search(text, pattern) == (re.search(pattern, text) is not None)
