"""The `envc` program (compiler/cli/app.py): the entry point, the quick exit of finished
commands, exit 3 for a bug, what `envc --help` imports, the lazy commands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli import app as cli_module

from .conftest import ROOT, TICKETING, run


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
    """`check` (like compile, fmt, graph, new: app.QUICK_EXIT_COMMANDS) ends its process
    without Python's teardown: exit handlers do not run, yet all output arrives (here
    a large IR on a pipe) and the exit code is kept; other commands exit as usual."""
    proc = _envc_with_an_exit_handler("check", "--emit-ir", "specs/it_operations/ticketing.envspec")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["header"]["name"] == "ticketing"
    assert "checked 1 file: 0 errors" not in proc.stdout and "exit handlers ran" not in proc.stderr
    failing = _envc_with_an_exit_handler("check", "specs/nope.envspec")
    assert failing.returncode == 2 and "E0001" in failing.stdout and "exit handlers ran" not in failing.stderr
    other = _envc_with_an_exit_handler("export", "--help")
    assert other.returncode == 0 and "exit handlers ran" in other.stderr


def test_internal_error_is_one_line_exit_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def explode(path: Path) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("compiler.analyse.cache.analyse_loaded", explode)
    monkeypatch.setenv("ENVC_CHECK_CACHE", "0")  # a remembered outcome would not analyse at all
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


# --------------------------------------------------------------------------- layout

COMPILER = ROOT / "compiler"


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, wherever the import statement is (a function body,
    `if TYPE_CHECKING:`); `from package import name` counts `package.name` too."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


SHARED = ("common", "serving_options")
"""The modules of compiler/cli/ that command modules share; they import no other one."""


def test_command_modules_never_import_the_group_and_nothing_else_imports_the_cli() -> None:
    """app registers the commands; a command module imports only the shared modules (and
    its stage's modules), which import none of compiler/cli/, so the modules of
    compiler/cli/ make no circle; no stage imports the CLI."""
    shared = {f"compiler.cli.{name}" for name in SHARED}
    for path in sorted((COMPILER / "cli").glob("*.py")):
        if path.name in ("__init__.py", "__main__.py", "app.py"):
            continue
        cli_imports = {m for m in imported_modules(path) if m.startswith("compiler.cli.")}
        others = {m for m in cli_imports if m.rpartition(".")[0] not in shared and m not in shared}
        if path.stem in SHARED:
            assert not cli_imports, (path.name, cli_imports)
            continue
        assert not others, (path.name, others)
        assert "compiler.cli.common" in cli_imports, path.name
    for path in sorted(COMPILER.rglob("*.py")):
        if "cli" in path.relative_to(COMPILER).parts:
            continue
        assert not {m for m in imported_modules(path) if m.startswith("compiler.cli")}, path
