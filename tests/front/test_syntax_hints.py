"""Syntax errors say what was probably meant (issue 24): a misspelt keyword gets "did you
mean", a badly indented line the indentation it could have."""

from __future__ import annotations

from compiler.analyse import analyse_source
from compiler.diagnostics import Diagnostic

HEAD = 'environment t:\n    title "T"\n\nstate:\n    xs: list[int] = []\n\ntool f(x: int) -> int:\n'


def only(body: str) -> Diagnostic:
    [found] = analyse_source(HEAD + body, "t.envspec").diagnostics
    return found


def test_a_misspelt_statement_keyword_gets_did_you_mean() -> None:
    found = only('    requre x in xs else not_found("no")\n    return x\n')
    assert (found.code, found.line, found.hint) == ("E1002", 8, "did you mean `require`?")
    assert only("    retrun x\n").hint == "did you mean `return`?"


def test_a_misspelt_declaration_keyword_gets_did_you_mean() -> None:
    found = analyse_source(HEAD + "    return x\n\nrecrd Book:\n    title: str\n", "t.envspec").diagnostics[0]
    assert found.code == "E1002" and found.hint == "did you mean `record`?"


def test_no_keyword_hint_for_an_ordinary_name() -> None:
    assert "did you mean" not in only("    xs x\n    return x\n").hint


def test_an_over_indented_line_is_told_what_indentation_the_line_above_has() -> None:
    found = only("    let y = x\n        return y\n")
    assert found.code == "E1004"
    assert "indented 8 columns, the line above 4, which opens no block" in found.hint


def test_a_bad_dedent_lists_the_open_blocks() -> None:
    found = only("    if x > 1:\n        return 1\n  return x\n")
    assert found.code == "E1004" and "the open blocks are at 8, 4, 0" in found.hint
