"""Fixtures of the LLM tests: a loopback chat-completions server and a project pointing at it.

The project is a throwaway folder (pyproject.toml with `[tool.envc.llm]` naming the
server's URL, specs/shelf.envspec with one `llm` body), and the process works inside it.
The key lives in an environment variable only these tests set, `ENVC_TEST_KEY`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from compiler.cli import app as cli_module

from .chat_server import ChatServer

SECRET = "sk-envc-test-0123456789-do-not-leak"
SPEC = '''\
environment shelf:
    title "Shelf"
    doc "A small library shelf."

record Book:
    """A book on the shelf."""
    id: int
    title: str
    tags: list[str] = []

state:
    books: map[int, Book] = {1: {"id": 1, "title": "Dune"}, 2: {"id": 2, "title": "Emma"}}

tool add_book(title: str min_length 1) -> Book:
    """Put a book on the shelf."""
    let book = Book(id=len(books) + 1, title=title)
    books[book.id] = book
    return book

tool count_books() -> int:
    """How many books are on the shelf."""
    reads books
    writes nothing
    llm "Return the number of books on the shelf."

test counting:
    expect count_books() == 2
    add_book(title="Ulysses")
    expect count_books() == 3
'''
GOOD = "return len(books)\n"


def pyproject(url: str, **settings: object) -> str:
    values = {
        "model": "scripted-model",
        "base_url": url,
        "api_key_env": "ENVC_TEST_KEY",
        "timeout": 3,
        "retries": 2,
        "backoff": 0.01,
        "attempts": 3,
        **settings,
    }
    lines = [f"{key} = {_toml(value)}" for key, value in values.items()]
    return '[project]\nname = "demo"\n\n[tool.envc]\noutput = "out"\n\n[tool.envc.llm]\n' + "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text(pyproject(server.url), encoding="utf-8")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "shelf.envspec").write_text(SPEC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENVC_TEST_KEY", SECRET)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path


def envc(*args: str) -> Result:
    return CliRunner().invoke(cli_module.cli, list(args), catch_exceptions=False)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below `folder`, hidden ones included, by relative path."""
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
    }
