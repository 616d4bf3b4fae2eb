"""Fills checked by the real front end, no model involved (compiler/llm/fill.py, prompt.py).

A fill is spliced into the spec text in place of its `llm` statement and the result is
loaded and analysed; each refusal is classed by the first stage it fails, with the
problem placed at a line of the fill and, for the user, at the `llm` line on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import ir
from compiler.analyse import AnalysisResult, analyse_file
from compiler.llm import fill, prompt
from compiler.llm.heal import describe

from .conftest import GOOD, SPEC

TAG = '''
tool tag_book(book_id: int, tag: str) -> Book:
    """Tag a book."""
    reads books
    writes books
    llm """
    Add the tag to the book unless it has it; a missing book is not_found.
    Return the book.
    """

# a comment after the hole
test tagging:
    tag_book(book_id=1, tag="sf")
    expect books[1].tags == ["sf"]
'''
TAG_BODY = """\
let book = books.get(book_id)
require book is not None else not_found(f"no book {book_id}", entity="book", field="book_id")
if tag not in book.tags:
    book.tags.append(tag)
return book
"""


@pytest.fixture
def analysed(tmp_path: Path) -> tuple[Path, AnalysisResult]:
    spec = tmp_path / "shelf.envspec"
    spec.write_text(SPEC + TAG, encoding="utf-8")
    result = analyse_file(spec)
    assert result.environment is not None, result.diagnostics
    return spec, result


def holes_of(result: AnalysisResult) -> dict[str, fill.Hole]:
    assert result.environment is not None
    return {h.name: h for h in fill.find_holes(result.environment)}


def check(spec: Path, result: AnalysisResult, bodies: dict[str, str]) -> fill.FillCheck:
    holes = holes_of(result)
    return fill.check_fills(spec, result.sources, {holes[n]: b for n, b in bodies.items()}, result.diagnostics)


def test_holes_are_found_with_the_lines_they_occupy(analysed: tuple[Path, AnalysisResult]) -> None:
    spec, result = analysed
    holes = holes_of(result)
    lines = SPEC.count("\n")
    assert (
        holes["count_books"].start == SPEC.splitlines().index('    llm "Return the number of books on the shelf."') + 1
    )
    assert holes["count_books"].indent == 4 and holes["count_books"].key == "tool count_books"
    assert holes["tag_book"].start == lines + 6 and holes["tag_book"].stop >= lines + 9


def test_correct_fills_analyse_and_become_bodies(analysed: tuple[Path, AnalysisResult]) -> None:
    spec, result = analysed
    verdict = check(spec, result, {"count_books": GOOD, "tag_book": TAG_BODY})
    assert verdict.ok, verdict.diagnostics()
    assert verdict.analysis is not None and verdict.analysis.environment is not None
    tools = {t.name: t for t in verdict.analysis.environment.tools}
    assert tools["count_books"].escape is None and tools["count_books"].reads == ["books"]
    assert tools["tag_book"].writes == ["books"] and tools["tag_book"].errors


def test_a_type_error_is_placed_in_the_fill_and_at_the_llm_line(analysed: tuple[Path, AnalysisResult]) -> None:
    spec, result = analysed
    verdict = check(spec, result, {"count_books": 'let n = len(books)\nreturn n + "x"\n'})
    assert verdict.stage == "types"
    (item,) = verdict.located
    assert (item.hole and item.hole.name, item.fill_line, item.fill_col) == ("count_books", 2, 8)
    on_disk = item.original
    assert on_disk.path == str(spec) and on_disk.line == holes_of(result)["count_books"].start
    assert "line 2, column 8" in on_disk.notes[-1] and 'return n + "x"' in on_disk.notes[-1]
    assert describe(verdict.located, item.hole)[0].startswith("line 2, column 8: E3004")


def test_diagnostics_after_a_fill_move_back_to_their_lines(analysed: tuple[Path, AnalysisResult]) -> None:
    """A fill longer than its `llm` statement shifts later lines; the map shifts them back."""
    spec, result = analysed
    long_body = "let a = 1\nlet b = 2\nlet c = 3\nlet d = 4\nlet e = 5\nreturn len(books) + a + b + c + d + e\n"
    holes = holes_of(result)
    spliced, line_map = fill.splice(result.sources[str(spec)], {holes["count_books"]: long_body})
    original = result.sources[str(spec)].split("\n")
    for number, text in enumerate(spliced.split("\n"), start=1):
        line, hole, fill_line = line_map.locate(number)
        if hole is None:
            assert original[line - 1] == text
        else:
            assert text.strip() == long_body.split("\n")[fill_line - 1].strip()


def test_a_fill_that_writes_an_undeclared_field_fails_effects(analysed: tuple[Path, AnalysisResult]) -> None:
    spec, result = analysed
    verdict = check(spec, result, {"count_books": 'books[1].title = "Dune!"\nreturn len(books)\n'})
    assert verdict.stage == "effects"
    assert [d.code for d in verdict.diagnostics()] == ["E4001"]
    assert "writes `books` but does not declare it" in verdict.diagnostics()[0].message


def test_a_fill_that_reads_less_than_declared_fails_effects(analysed: tuple[Path, AnalysisResult]) -> None:
    spec, result = analysed
    verdict = check(spec, result, {"count_books": "return 2\n"})
    assert verdict.stage == "effects" and [d.code for d in verdict.diagnostics()] == ["E4008"]


@pytest.mark.parametrize(
    ("body", "stage"),
    [
        ("return len(books\n", "parse"),
        ('return "unclosed\n', "parse"),
        ("def count():\n    return 1\n", "parse"),
        ('return 1\n\ntool extra() -> int:\n    """x"""\n    return 2\n', "parse"),
    ],
)
def test_malformed_fills_fail_parse(analysed: tuple[Path, AnalysisResult], body: str, stage: str) -> None:
    spec, result = analysed
    assert check(spec, result, {"count_books": body}).stage == stage


def test_a_fill_cannot_change_the_declaration_around_it(analysed: tuple[Path, AnalysisResult]) -> None:
    """Block lines parse where the `llm` line was, so they would change the tool itself."""
    spec, result = analysed
    verdict = check(spec, result, {"tag_book": 'side_effect "tags a book"\n' + TAG_BODY})
    assert verdict.stage == "structure" and [d.code for d in verdict.diagnostics()] == ["E6108"]


@pytest.mark.parametrize(
    "body",
    [
        "python \"return len(self._state['books'])\"\n",
        'python """\nimport os\nos.system("id")\nreturn 0\n"""\n',
    ],
)
def test_a_fill_is_never_a_python_body(analysed: tuple[Path, AnalysisResult], body: str) -> None:
    """Python is trusted author code: a model's answer that is a `python` escape is refused
    before it is analysed, lowered or run."""
    spec, result = analysed
    verdict = check(spec, result, {"count_books": body})
    assert verdict.stage == "structure" and [d.code for d in verdict.diagnostics()] == ["E6108"]
    assert verdict.diagnostics()[0].message == fill.PYTHON_FROM_A_MODEL


def test_warnings_the_spec_already_had_are_not_blamed_on_the_fill(analysed: tuple[Path, AnalysisResult]) -> None:
    spec, result = analysed
    holes = holes_of(result)
    baseline = list(result.diagnostics)
    verdict = fill.check_fills(spec, result.sources, {holes["count_books"]: GOOD}, baseline)
    assert verdict.ok


# --------------------------------------------------------------------------- replies


def decl(name: str = "count_books", kind: type[ir.ToolDecl] = ir.ToolDecl) -> ir.ToolDecl:
    return kind(name=name, params=[], returns=ir.TypeRef(name="int"))


@pytest.mark.parametrize(
    "reply",
    [
        "return len(books)",
        "```envspec\nreturn len(books)\n```",
        "Sure! Here it is:\n\n```\n    return len(books)\n```\nIt counts the books.",
        'tool count_books() -> int:\n    """How many."""\n    reads books\n    writes nothing\n    return len(books)\n',
        "```envspec\ntool count_books() -> int:\n    reads books\n    writes nothing\n    return len(books)\n```",
    ],
)
def test_the_body_is_read_out_of_a_reply(reply: str) -> None:
    assert prompt.extract_body(reply, decl()) == "return len(books)\n"


@pytest.mark.parametrize("reply", ["", "   \n", "```envspec\n```", "I cannot do that.```"])
def test_a_reply_without_a_body_gives_none(reply: str) -> None:
    assert prompt.extract_body(reply, decl()) is None


def test_bodies_are_normalised_before_they_are_spliced_and_locked() -> None:
    assert fill.normalise_body("\n\n    let a = 1  \n\tif a > 0:\n\t\treturn a\n\n") == (
        "let a = 1\nif a > 0:\n    return a\n"
    )
    assert fill.normalise_body("\n \n") == ""


# --------------------------------------------------------------------------- prompts


def test_the_prompt_is_built_from_the_ir(analysed: tuple[Path, AnalysisResult]) -> None:
    _, result = analysed
    env = result.environment
    assert env is not None
    system, user = prompt.fill_messages(env, fill.declaration(env, holes_of(result)["tag_book"]))
    assert system.role == "system" and "not Python" in system.content
    assert "`random_int(" in system.content and "invalid_state" in system.content, "built-ins from the registry"
    text = user.content
    assert "record Book:" in text and "books: map[int, Book]" in text, "records and the state schema"
    assert "tool add_book(title: str min_length 1) -> Book:" in text and "books[book.id] = book" in text
    assert "test tagging:" in text and "test counting:" not in text, "only the tests that exercise it"
    assert "It must read exactly: books. It must write exactly: books." in text
    assert "Add the tag to the book unless it has it" in text


def test_the_prompt_ignores_layout_and_comments(tmp_path: Path) -> None:
    """Reformatting a spec or editing a comment keeps the request, so the lock stays current."""
    first, second = tmp_path / "a" / "shelf.envspec", tmp_path / "b" / "shelf.envspec"
    first.parent.mkdir()
    second.parent.mkdir()
    first.write_text(SPEC, encoding="utf-8")
    second.write_text("# a comment\n" + SPEC.replace("    doc ", "    # note\n    doc "), encoding="utf-8")
    texts = []
    for spec in (first, second):
        result = analyse_file(spec)
        assert result.environment is not None
        hole = fill.find_holes(result.environment)[0]
        texts.append(
            [m.content for m in prompt.fill_messages(result.environment, fill.declaration(result.environment, hole))]
        )
    assert texts[0] == texts[1]


def test_a_hole_in_a_prototype_is_filled_in_the_prototype_text(tmp_path: Path) -> None:
    """The rewrite hook of compiler/front/load.py reaches prototypes: the fill is spliced into
    the file that declares the hole, and its problems are placed there."""
    (tmp_path / "prototypes").mkdir()
    (tmp_path / "prototypes" / "base.envspec").write_text(
        SPEC.replace("environment shelf:", "environment base:"), encoding="utf-8"
    )
    spec = tmp_path / "branch.envspec"
    spec.write_text('environment branch:\n    title "Branch"\n    extends "base"\n', encoding="utf-8")
    result = analyse_file(spec)
    assert result.environment is not None, result.diagnostics
    (hole,) = fill.find_holes(result.environment)
    assert hole.file == str(tmp_path / "prototypes" / "base.envspec")
    good = fill.check_fills(spec, result.sources, {hole: GOOD}, result.diagnostics)
    assert good.ok and good.analysis is not None and good.analysis.environment is not None
    assert next(t for t in good.analysis.environment.tools if t.name == "count_books").escape is None
    bad = fill.check_fills(spec, result.sources, {hole: 'return "many"\n'}, result.diagnostics)
    assert bad.stage == "types" and {d.path for d in bad.diagnostics()} == {hole.file}
    assert ("E3001", hole.start) in {(d.code, d.line) for d in bad.diagnostics()}, "at the llm line"
