"""What `envc check` remembers (compiler/analyse/cache.py): an unchanged spec is not
analysed again and prints exactly what an analysis prints; a change to any input — the
spec, a prototype it extends, a data file, a prototype appearing where one is looked
for — is analysed again; a broken entry is a miss."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from compiler.analyse import cache
from compiler.cli import app as cli_module

BASE = '''\
environment base:
    title "Shelf"
    doc "Books on a shelf."

state:
    books: list[str] from "books.json"

tool count_books() -> int:
    """How many books are on the shelf."""
    return len(books)
'''

CHILD = """\
environment shelf:
    title "Shelf"
    doc "Books on a shelf, counted."
    extends "counterbase"

tool first_book() -> str:
    \"\"\"The first book on the shelf.\"\"\"
    require len(books) > 0 else not_found("the shelf is empty", entity="books")
    return books[0]
"""


@pytest.fixture
def shelf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A spec extending a prototype from its `prototypes/` folder, which reads a data
    file; a private cache folder; analyses counted."""
    (tmp_path / "prototypes").mkdir()
    (tmp_path / "prototypes" / "counterbase.envspec").write_text(BASE, encoding="utf-8")
    (tmp_path / "prototypes" / "books.json").write_text('["Emma", "Persuasion"]', encoding="utf-8")
    (tmp_path / "shelf.envspec").write_text(CHILD, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(cache.CHECK_CACHE_SWITCH, raising=False)
    yield tmp_path


class Counted:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        analyse = cache.analyse_loaded

        def counting(*args: object, **kwargs: object) -> object:
            self.calls += 1
            return analyse(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(cache, "analyse_loaded", counting)


def check(*args: str) -> Result:
    return CliRunner().invoke(cli_module.cli, ["check", "--jobs", "1", *args], catch_exceptions=False)


def test_an_unchanged_spec_is_not_analysed_again(shelf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted(monkeypatch)
    first, second = check("shelf.envspec"), check("shelf.envspec")
    assert first.exit_code == second.exit_code == 0, first.output
    assert first.output == second.output
    assert counted.calls == 1


def test_a_remembered_error_prints_as_an_analysis_does(shelf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (shelf / "shelf.envspec").write_text(CHILD.replace("return books[0]", "return len(books)"), encoding="utf-8")
    counted = Counted(monkeypatch)
    for fmt in ("text", "json"):
        fresh, remembered = check("shelf.envspec", "--format", fmt), check("shelf.envspec", "--format", fmt)
        assert fresh.exit_code == remembered.exit_code == 1
        assert "E3001" in fresh.output and remembered.output == fresh.output
    assert "9 |     return len(books)" in check("shelf.envspec").output  # the excerpt, from the remembered source
    assert counted.calls == 1  # the entry the first run wrote serves both formats


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda root: (root / "shelf.envspec").write_text(CHILD + "\n# a comment\n"), id="the spec"),
        pytest.param(
            lambda root: (root / "prototypes" / "counterbase.envspec").write_text(
                BASE.replace("How many", "The number of")
            ),
            id="its prototype",
        ),
        pytest.param(lambda root: (root / "prototypes" / "books.json").write_text('["Emma"]'), id="a data file"),
        pytest.param(lambda root: (root / "prototypes" / "books.json").unlink(), id="a data file removed"),
    ],
)
def test_a_changed_input_is_analysed_again(shelf: Path, monkeypatch: pytest.MonkeyPatch, change: object) -> None:
    counted = Counted(monkeypatch)
    check("shelf.envspec")
    change(shelf)  # type: ignore[operator]
    again = check("shelf.envspec")
    assert counted.calls == 2
    monkeypatch.setenv(cache.CHECK_CACHE_SWITCH, "0")
    assert again.output == check("shelf.envspec").output


def test_a_prototype_appearing_earlier_in_the_search_is_used(shelf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted(monkeypatch)
    assert check("shelf.envspec").exit_code == 0
    (shelf / "counterbase").write_text("environment broken\n", encoding="utf-8")  # beside the spec: found first
    again = check("shelf.envspec")
    assert counted.calls == 2
    assert again.exit_code == 1 and "counterbase" in again.output


def test_a_broken_entry_is_a_miss(shelf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check("shelf.envspec")
    [entry] = (shelf / "cache" / "envc" / "check").glob("*.json")
    for broken in ("{", '{"inputs": 3}', "", '{"inputs": {}, "absent": [], "sources": [], "diagnostics": [{"x": 1}]}'):
        entry.write_text(broken, encoding="utf-8")
        counted = Counted(monkeypatch)
        result = check("shelf.envspec")
        assert result.exit_code == 0 and counted.calls == 1, result.output


def test_the_switch_keeps_no_entry(shelf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CHECK_CACHE_SWITCH, "0")
    counted = Counted(monkeypatch)
    check("shelf.envspec")
    check("shelf.envspec")
    assert counted.calls == 2
    assert not (shelf / "cache" / "envc" / "check").exists()
