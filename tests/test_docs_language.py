"""The examples of the language reference (docs/language.md) check as the page says.

The page promises: every `envspec` block passes `envc check`, or, where a line is marked
`# E…`, fails with exactly that code on that line. A block that starts with
`environment` (or with `# file: NAME` and then `environment`) is a spec of its own,
written under that file name so that a later spec can `extends` it. Any other block is a
fragment, checked appended to the page's running example and to the error-free
fragments before it. Examples that read data files (`from "data/shelves.json"`) find
them beside them: the page gives each in a block headed ```json data/NAME.json. This
keeps the reference true as the language changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from compiler.analyse import analyse_file

PAGE = Path(__file__).resolve().parent.parent / "docs" / "language.md"
FILE_LINE = re.compile(r"^# file: (\S+)\n")
MARK = re.compile(r"#\s*(E\d{4})\b")


@dataclass(frozen=True)
class Block:
    """One ```envspec block of the page: where it starts, and its text."""

    line: int  # of the page, for failure messages
    text: str

    @property
    def file_name(self) -> str | None:
        """The spec's own file, for a block that is a whole spec; None for a fragment."""
        found = FILE_LINE.match(self.text)
        if found:
            return found.group(1)
        head = re.match(r"environment (\w+):", self.text)
        return f"{head.group(1)}.envspec" if head else None

    def expected(self, offset: int = 0) -> list[tuple[str, int]]:
        """The (code, line) pairs its `# E…` marks promise, lines counted from `offset`."""
        return [
            (code, offset + number)
            for number, line in enumerate(self.text.splitlines(), start=1)
            for code in MARK.findall(line.split('"')[-1])  # a mark is a comment, not text in a string
        ]


def data_files() -> dict[str, str]:
    """The page's ```json NAME blocks: the data files its examples read, by path."""
    text = PAGE.read_text(encoding="utf-8")
    return {found.group(1): found.group(2) for found in re.finditer(r"^```json (\S+)\n(.*?)^```$", text, re.M | re.S)}


def page_blocks() -> list[Block]:
    text = PAGE.read_text(encoding="utf-8")
    blocks = []
    for found in re.finditer(r"^```envspec\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        blocks.append(Block(text.count("\n", 0, found.start()) + 1, found.group(1)))
    return blocks


def found_codes(path: Path) -> list[tuple[str, int]]:
    return sorted((d.code, d.line) for d in analyse_file(path).diagnostics)


@pytest.fixture(scope="module")
def checked(
    tmp_path_factory: pytest.TempPathFactory,
) -> list[tuple[Block, list[tuple[str, int]], list[tuple[str, int]]]]:
    """Each block with the codes its marks promise and the codes `envc check` reports."""
    folder = tmp_path_factory.mktemp("language-page")
    for name, content in data_files().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content, encoding="utf-8")
    blocks = page_blocks()
    running = blocks[0]
    assert running.file_name == "library.envspec", "the page starts with its running example"
    fragments = ""
    results = []
    for block in blocks:
        name = block.file_name
        if name is not None:
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text, encoding="utf-8")
            results.append((block, sorted(block.expected()), found_codes(path)))
            continue
        base = running.text + fragments + "\n"
        path = folder / "fragment.envspec"
        path.write_text(base + block.text, encoding="utf-8")
        expected = sorted(block.expected(offset=base.count("\n")))
        results.append((block, expected, found_codes(path)))
        if not expected:
            fragments += "\n" + block.text
    return results


def test_the_page_has_its_examples() -> None:
    blocks = page_blocks()
    assert len(blocks) >= 20
    assert sum(block.file_name is not None for block in blocks) >= 4


def test_the_page_gives_the_data_files_its_examples_read() -> None:
    assert set(data_files()) >= {
        "data/shelves.json",
        "data/patrons.json",
        "data/crowded.json",
        "data/inspected_books.json",
    }


def test_every_example_checks_as_the_page_says(
    checked: list[tuple[Block, list[tuple[str, int]], list[tuple[str, int]]]],
) -> None:
    wrong = [
        f"block at docs/language.md:{block.line}: expected {expected or 'no diagnostics'}, got {found or 'none'}"
        for block, expected, found in checked
        if expected != found
    ]
    assert not wrong, "\n".join(wrong)


def test_a_wrong_example_would_be_caught(tmp_path: Path) -> None:
    """The check can fail: a spec whose mark promises the wrong code is reported."""
    block = Block(1, "environment oops:\n    seed 1\n\ntool t() -> int:\n    return x  # E3001\n")
    path = tmp_path / "oops.envspec"
    path.write_text(block.text, encoding="utf-8")
    assert block.expected() == [("E3001", 5)]
    assert found_codes(path) == [("E2002", 5)]
