"""Syntax errors do not hide the other stages' errors (issue 14): the declarations that
parsed are analysed, and their name and type errors reported beside the syntax errors,
in order of position, without noise from what the broken declarations declared."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from compiler.analyse import analyse_file, analyse_source
from compiler.cli.app import cli
from compiler.diagnostics import Diagnostic
from compiler.front.recovery import without_broken_declarations

SPEC = """\
environment shelves:
    title "Shelves"

record Book:
    id: int
    title: str

state:
    books: map[int, Book] = {}
    opened: int = 0

tool lend(id: int) -> int
    return id

tool count() -> int:
    return "many"

tool lend_twice(id: int) -> int:
    return lend(id=id) + lend(id=id) + unknown_everywhere

tool title_of(id: int) -> str:
    require id in books else not_found(f"no book {id}", field="id")
    return books[id].title + opened

test lending:
    expect lend(id=1) == 1

test counting:
    expect count() == 2
"""


def found(diagnostics: list[Diagnostic]) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in diagnostics]


def test_type_errors_are_reported_beside_a_syntax_error() -> None:
    result = analyse_source(SPEC, "shelves.envspec")
    assert result.environment is None
    # line 12: the broken tool; 16 and 23 the type errors of two tools that parsed. The
    # tool and the test that call `lend` say nothing (their bodies mention a broken name).
    assert found(result.diagnostics) == [("E1002", 12), ("E3001", 16), ("E3004", 23)]
    assert result.diagnostics == sorted(result.diagnostics, key=Diagnostic.sort_key)


def test_analyse_file_agrees(tmp_path: Path) -> None:
    spec = tmp_path / "shelves.envspec"
    spec.write_text(SPEC, encoding="utf-8")
    assert found(analyse_file(spec).diagnostics) == found(analyse_source(SPEC, str(spec)).diagnostics)


def test_a_broken_state_block_silences_its_fields() -> None:
    broken = SPEC.replace("    opened: int = 0", "    opened int = 0")
    result = analyse_source(broken, "shelves.envspec")
    # `opened` is unknown to the analysis: title_of, which uses it, is left out
    assert found(result.diagnostics) == [("E1002", 10), ("E1002", 12), ("E3001", 16)]


def test_a_broken_record_silences_its_users_only() -> None:
    broken = SPEC.replace("    id: int\n", "    id int\n", 1)
    result = analyse_source(broken, "shelves.envspec")
    # the state block mentions Book (its E2003 is left out); count() does not
    assert found(result.diagnostics) == [("E1002", 5), ("E1002", 12), ("E3001", 16)]


def test_a_record_of_a_broken_type_is_missing_too() -> None:
    spec = SPEC.replace("record Book:", "enum Shelf:\n    top low\n\nrecord Book:").replace(
        "    title: str\n", "    title: str\n    shelf: Shelf\n", 1
    )
    recovered = without_broken_declarations(spec, [5])
    assert recovered is not None and recovered.names == {"Shelf", "Book"}
    result = analyse_source(spec, "shelves.envspec")
    # Book mentions the broken Shelf, so a diagnostic naming Book would be dropped too;
    # title_of's own error (str + int) names neither and stays
    assert found(result.diagnostics) == [("E1002", 5), ("E1002", 16), ("E3001", 20), ("E3004", 27)]


def test_both_names_of_a_broken_rename_are_missing() -> None:
    recovered = without_broken_declarations('environment e:\n    title "e"\n\nrename tool a as: b\n', [4])
    assert recovered is not None and recovered.names == {"a", "b"}


def test_several_syntax_errors_and_a_clean_rest() -> None:
    broken = SPEC.replace('    return "many"', "    return 1").replace(" + opened", "")
    broken = broken.replace("test counting:", "test counting")
    result = analyse_source(broken, "shelves.envspec")
    assert found(result.diagnostics) == [("E1002", 12), ("E1002", 28)]


def test_a_broken_header_leaves_only_syntax_errors() -> None:
    broken = SPEC.replace('    title "Shelves"', "    title Shelves")
    result = analyse_source(broken, "shelves.envspec")
    assert {d.code for d in result.diagnostics} == {"E1002"}


def test_a_rest_that_does_not_parse_leaves_only_syntax_errors() -> None:
    # an unterminated block string swallows the declarations after it: the first parse
    # and the re-parse of the rest both fail, and the syntax errors are all there is
    broken = SPEC.replace('    return "many"', '    """many')
    result = analyse_source(broken, "shelves.envspec")
    assert result.diagnostics and all(d.code.startswith("E1") for d in result.diagnostics)


def test_the_recovered_text_keeps_positions() -> None:
    recovered = without_broken_declarations(SPEC, [12])
    assert recovered is not None
    assert recovered.names == {"lend"}
    lines = recovered.text.split("\n")
    assert len(lines) == len(SPEC.split("\n")) and lines[11] == lines[12] == "" and lines[13] == ""
    assert lines[14] == "tool count() -> int:"
    assert without_broken_declarations(SPEC, [2]) is None  # the header


def test_envc_check_prints_both_stages_in_order(tmp_path: Path) -> None:
    spec = tmp_path / "shelves.envspec"
    spec.write_text(SPEC, encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", str(spec)], catch_exceptions=False)
    assert result.exit_code == 1
    heads = [line for line in result.output.splitlines() if " - error " in line]
    assert [head.split(" - error ")[1].split(":")[0] for head in heads] == ["E1002", "E3001", "E3004"]
    assert "3 errors" in result.output
