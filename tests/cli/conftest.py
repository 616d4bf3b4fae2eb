"""What the tests of the `envc` command line share: the command run in process (click's
CliRunner) or as `python -m compiler.cli`, and a spec with a syntax error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from shipped import spec_path

from compiler.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]
TICKETING = spec_path("ticketing")
# Two enum members on one line without a comma: a plain syntax error (E1002 at 5:9).
MALFORMED = 'environment demo:\n    title "Demo"\n\nenum Color:\n    red green\n'
DIAGNOSTIC_HEAD = re.compile(r"^(?P<path>\S+):(?P<line>\d+):(?P<col>\d+) - error (?P<code>E\d{4}): ", re.MULTILINE)


def run_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def malformed(tmp_path: Path) -> Path:
    path = tmp_path / "bad.envspec"
    path.write_text(MALFORMED, encoding="utf-8")
    return path
