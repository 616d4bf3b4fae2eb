"""The `envc` command line, run for real: exit codes, output shapes, fmt in place.

Exit codes and the `path:line:col - error CODE` shape are a contract with CI scripts
and editors, so they are asserted exactly. Most cases use click's CliRunner (fast, in
process); a few run `python -m compiler.cli` in a subprocess to cover the entry point.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from compiler import cli as cli_module

ROOT = Path(__file__).resolve().parent.parent
TICKETING = ROOT / "specs" / "ticketing.envspec"
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
    return CliRunner().invoke(cli_module.cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def malformed(tmp_path: Path) -> Path:
    path = tmp_path / "bad.envspec"
    path.write_text(MALFORMED, encoding="utf-8")
    return path


def test_check_shipped_spec_subprocess() -> None:
    proc = run_subprocess("check", "specs/ticketing.envspec")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "checked 1 file: 0 errors" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_check_malformed_spec_subprocess(malformed: Path) -> None:
    proc = run_subprocess("check", str(malformed))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    match = DIAGNOSTIC_HEAD.search(proc.stdout)
    assert match is not None, proc.stdout
    assert (match["path"], match["line"], match["col"], match["code"]) == (str(malformed), "5", "9", "E1002")
    assert "^" in proc.stdout  # caret excerpt
    assert "checked 1 file: 1 error" in proc.stderr


def _envc_with_an_exit_handler(*args: str) -> subprocess.CompletedProcess[str]:
    """`envc ARGS` as the program, with an exit handler that says when it runs."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('exit handlers ran', file=sys.stderr))\n"
        f"sys.argv = ['envc', *{list(args)!r}]\n"
        "from compiler.cli import main\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_finished_command_ends_its_process_with_all_its_output() -> None:
    """`check` (like compile, fmt, graph, new: cli.QUICK_EXIT_COMMANDS) ends its process
    without Python's teardown: exit handlers do not run, yet all output arrives (here
    a large IR on a pipe) and the exit code is kept; other commands exit as usual."""
    proc = _envc_with_an_exit_handler("check", "--emit-ir", "specs/ticketing.envspec")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["header"]["name"] == "ticketing"
    assert "checked 1 file: 0 errors" not in proc.stdout and "exit handlers ran" not in proc.stderr
    failing = _envc_with_an_exit_handler("check", "specs/nope.envspec")
    assert failing.returncode == 2 and "E0001" in failing.stdout and "exit handlers ran" not in failing.stderr
    other = _envc_with_an_exit_handler("export", "--help")
    assert other.returncode == 0 and "exit handlers ran" in other.stderr


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
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "good.envspec").write_text(TICKETING.read_text(encoding="utf-8"), encoding="utf-8")
    result = run("check", tmp_path)
    assert result.exit_code == 1
    assert "checked 2 files: 1 error" in result.stderr
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


def test_internal_error_is_one_line_exit_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def explode(path: Path) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("compiler.analyse.analyse_file", explode)
    monkeypatch.delenv("ENVC_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exited:
        cli_module.main(["check", str(TICKETING)])
    assert exited.value.code == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: boom" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- start-up

HEAVY_LIBRARIES = ("pydantic", "lark", "jinja2", "libcst", "rich")
LIST_MODULES = (
    "import contextlib, io, json, sys\n"
    "from compiler import cli\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try:\n"
    "        cli.main(sys.argv[1:])\n"
    "    except SystemExit:\n"
    "        pass\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)


def modules_imported_by(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", LIST_MODULES, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout))


def test_help_imports_no_command_module_and_no_heavy_library() -> None:
    """`envc --help` lists every command from click's table and LAZY_COMMANDS alone."""
    imported = modules_imported_by("--help")
    lazy_modules = {lazy.module for lazy in cli_module.LAZY_COMMANDS.values()}
    assert not imported & lazy_modules
    assert not {m for m in imported if m.split(".")[0] in HEAVY_LIBRARIES}
    assert not {m for m in imported if m.startswith("compiler.") and m.split(".")[1] in ("serve", "adapters")}
    assert "importlib.metadata" not in imported  # the version is looked up for --version only


def test_version_option() -> None:
    result = run("--version")
    assert result.exit_code == 0 and re.fullmatch(r"envc, version \S.*\n", result.output)


def test_lazy_commands_help_is_the_commands_own() -> None:
    """The one-line help stored for each lazy command is its docstring's first sentence,
    and `envc --help` shows it."""
    import click

    context = click.Context(cli_module.cli)
    listed = run("--help").output
    for name, lazy in cli_module.LAZY_COMMANDS.items():
        command = cli_module.cli.get_command(context, name)
        assert command is not None, name
        assert command.get_short_help_str(10_000) == lazy.help, name
        assert re.search(rf"^  {name} +\S", listed, re.MULTILINE), name


def test_a_lazy_command_whose_module_is_missing_is_not_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = cli_module.LazyCommand("compiler.no_such_module:command", "Never shown.")
    monkeypatch.setitem(cli_module.LAZY_COMMANDS, "ghost", missing)
    assert "ghost" not in run("--help").output
    assert run("ghost").exit_code == 2
