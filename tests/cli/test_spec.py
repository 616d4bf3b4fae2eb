"""`envc check` and `envc fmt` (compiler/cli/spec.py), run for real: exit codes, output
shapes, fmt in place.

Exit codes and the `path:line:col - error CODE` shape are a contract with CI scripts
and editors, so they are asserted exactly. Most cases use click's CliRunner (fast, in
process); a few run `python -m compiler.cli` in a subprocess to cover the entry point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shipped import copy_spec

from .conftest import DIAGNOSTIC_HEAD, MALFORMED, ROOT, TICKETING, run, run_subprocess


def test_check_shipped_spec_subprocess() -> None:
    proc = run_subprocess("check", "specs/it_operations/ticketing.envspec")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.endswith("checked 1 file: 0 errors\n")
    assert "Traceback" not in proc.stderr


def test_check_malformed_spec_subprocess(malformed: Path) -> None:
    proc = run_subprocess("check", str(malformed))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    match = DIAGNOSTIC_HEAD.search(proc.stdout)
    assert match is not None, proc.stdout
    assert (match["path"], match["line"], match["col"], match["code"]) == (str(malformed), "5", "9", "E1002")
    assert "^" in proc.stdout  # caret excerpt
    assert proc.stdout.endswith("checked 1 file: 1 error\n")  # after the diagnostics, on their stream


def test_check_summary_follows_the_diagnostics_under_2_and_1(malformed: Path) -> None:
    """With stdout and stderr on one pipe (`2>&1`), the summary is the last line, whole:
    it is written on the diagnostics' own stream, so the two never interleave."""
    proc = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "check", str(malformed), str(TICKETING)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stdout.splitlines()
    assert lines[-1] == "checked 2 files: 1 error", proc.stdout
    assert lines[0].startswith(f"{malformed}:5:9 - error E1002"), proc.stdout
    assert sum("checked" in line for line in lines) == 1


def test_check_missing_file_subprocess(tmp_path: Path) -> None:
    proc = run_subprocess("check", str(tmp_path / "nope.envspec"))
    assert proc.returncode == 2
    assert "E0001" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_check_not_utf8_is_io_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.envspec"
    path.write_bytes(b"environment caf\xe9:\n")
    result = run("check", path)
    assert result.exit_code == 2
    assert "E0002" in result.stdout


def test_check_json_format(malformed: Path) -> None:
    result = run("check", "--format", "json", malformed)
    assert result.exit_code == 1
    diagnostics = json.loads(result.stdout)
    assert diagnostics and all({"code", "line", "col", "path", "message"} <= set(d) for d in diagnostics)
    assert diagnostics[0]["code"] == "E1002"
    assert (diagnostics[0]["line"], diagnostics[0]["col"]) == (5, 9)


def test_check_json_format_clean_spec() -> None:
    result = run("check", "--format", "json", TICKETING)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


def test_check_emit_ir() -> None:
    result = run("check", "--emit-ir", TICKETING)
    assert result.exit_code == 0, result.stderr
    environment = json.loads(result.stdout)
    assert environment["header"]["name"] == "ticketing"
    assert any(tool["name"] == "create_ticket" for tool in environment["tools"])


def test_check_emit_ir_with_errors_prints_no_ir(malformed: Path) -> None:
    result = run("check", "--emit-ir", malformed)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "E1002" in result.stderr


def test_check_directory_checks_every_spec(tmp_path: Path, malformed: Path) -> None:
    copy_spec("ticketing", tmp_path / "sub", "good.envspec")  # with the data files its scenarios read
    result = run("check", tmp_path)
    assert result.exit_code == 1
    assert "checked 2 files: 1 error" in result.stdout
    assert str(malformed) in result.stdout


def test_check_empty_directory_is_io_error(tmp_path: Path) -> None:
    result = run("check", tmp_path)
    assert result.exit_code == 2
    assert "no .envspec files" in result.stdout


def test_usage_errors_exit_2() -> None:
    assert run("check", "--format", "xml", TICKETING).exit_code == 2
    assert run("check").exit_code == 2
    assert run("no-such-command").exit_code == 2


def test_fmt_check_and_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "ticketing.envspec"
    path.write_text(TICKETING.read_text(encoding="utf-8"), encoding="utf-8")
    assert run("fmt", path).exit_code == 0  # bring it to the canonical layout first
    assert run("fmt", "--check", path).exit_code == 0
    canonical = path.read_bytes()

    messy = canonical.decode().replace("enum Status:\n", "enum Status:   \n") + "\n\n\n"
    path.write_text(messy, encoding="utf-8")
    checked = run("fmt", "--check", path)
    assert checked.exit_code == 1
    assert f"would reformat {path}" in checked.stdout
    assert path.read_text(encoding="utf-8") == messy  # --check writes nothing

    assert run("fmt", path).exit_code == 0
    assert path.read_bytes() == canonical
    assert run("fmt", "--check", path).exit_code == 0
    assert [p.name for p in tmp_path.iterdir()] == ["ticketing.envspec"]  # no temp files left


def test_fmt_leaves_malformed_file_untouched(malformed: Path) -> None:
    result = run("fmt", malformed)
    assert result.exit_code == 1
    assert DIAGNOSTIC_HEAD.search(result.stdout) is not None
    assert malformed.read_text(encoding="utf-8") == MALFORMED


def test_fmt_counts_only_the_files_it_could_read(tmp_path: Path) -> None:
    """A file that could not be read is neither reformatted nor unchanged."""
    missing = tmp_path / "missing.envspec"
    alone = run("fmt", missing)
    assert alone.exit_code == 2 and "E0001" in alone.stdout
    assert "unchanged" not in alone.output and "reformatted" not in alone.output
    good = tmp_path / "good.envspec"
    good.write_text(TICKETING.read_text(encoding="utf-8"), encoding="utf-8")
    assert run("fmt", good).exit_code == 0  # to the canonical layout first
    both = run("fmt", "--check", good, missing)
    assert both.exit_code == 2
    assert "0 files would be reformatted, 1 unchanged; 1 file not read" in both.stderr
