"""What the command modules share (compiler/cli/common.py): counted words and the one
line a failing command prints."""

from __future__ import annotations

import pytest

from compiler.cli.common import EXIT_ERRORS, fail, plural


@pytest.mark.parametrize(
    ("count", "word", "many", "expected"),
    [
        (0, "file", "", "0 files"),
        (1, "file", "", "1 file"),
        (2, "environment", "", "2 environments"),
        (1, "environment", "", "1 environment"),
        (1, "trajectory", "trajectories", "1 trajectory"),
        (3, "trajectory", "trajectories", "3 trajectories"),
    ],
)
def test_plural(count: int, word: str, many: str, expected: str) -> None:
    assert plural(count, word, many) == expected


def test_fail_is_one_line_and_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        fail("tasks", "chains.jsonl:2: not a JSON line", EXIT_ERRORS)
    assert exited.value.code == EXIT_ERRORS
    assert capsys.readouterr().err == "envc tasks: chains.jsonl:2: not a JSON line\n"
