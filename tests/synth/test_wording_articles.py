"""Slots filled into intents read as a person writes them (compiler/synth/wording.py):
`a` becomes `an` before a value that starts with a vowel sound we can tell from its
first letter, quoted or not; other text is left alone."""

from __future__ import annotations

import pytest

from compiler.synth.wording import _fill


@pytest.mark.parametrize(
    ("template", "words", "expected"),
    [
        ("start a {product} loan for {who}", {"product": "auto", "who": "bo"}, "start an auto loan for bo"),
        ("A {product} loan", {"product": "personal"}, "A personal loan"),
        ("A {title} ticket", {"title": '"orbit"'}, 'An "orbit" ticket'),
        ("open a {kind} account", {"kind": "user"}, "open a user account"),
        ("a table and a {thing}", {"thing": "ice bucket"}, "a table and an ice bucket"),
    ],
)
def test_the_article_before_a_slot_fits_the_value(template: str, words: dict[str, str], expected: str) -> None:
    assert _fill(template, words) == expected
