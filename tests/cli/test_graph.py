"""`envc graph` (compiler/cli/graph.py): formats, output files, exit codes (docs/graph.md, "The command").

JSON and DOT need nothing but envc; svg and png run graphviz's `dot` for real (skipped
without it unless `CI` is set, as in tests/test_graph_render.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from shipped import copy_spec, spec_path

from compiler.cli import graph as graph_command
from compiler.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]
TICKETING = spec_path("ticketing")
BFCL_TICKET = spec_path("bfcl_ticket")
SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None and not os.environ.get("CI"), reason="graphviz's `dot` is not installed"
)


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["graph", *(str(a) for a in args)], catch_exceptions=False)


def test_json_to_stdout() -> None:
    result = run(TICKETING)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"tool_graphs"}  # one spec: no env graph
    graph = data["tool_graphs"]["ticketing"]
    assert len(graph["nodes"]) == 13
    login = next(n for n in graph["nodes"] if n["id"] == "login")
    assert login["kind"] == "write" and [p["name"] for p in login["params"]] == ["username", "password"]
    edge = next(e for e in graph["edges"] if (e["source"], e["target"]) == ("login", "create_ticket"))
    assert edge["kinds"] == ["state", "precondition"] and edge["weight"] == 4.0
    assert "13 tools" in result.stderr


def test_json_is_the_same_bytes_every_run_and_in_a_file(tmp_path: Path) -> None:
    first, second = run(TICKETING, BFCL_TICKET), run(TICKETING, BFCL_TICKET)
    assert first.stdout_bytes == second.stdout_bytes
    out = tmp_path / "graph.json"
    assert run(TICKETING, BFCL_TICKET, "-o", out).exit_code == 0
    assert out.read_bytes() == first.stdout_bytes
    data = json.loads(first.stdout)
    assert set(data["tool_graphs"]) == {"ticketing", "bfcl_ticket"}
    pairs = {(e["source"], e["target"]) for e in data["env_graph"]["edges"]}
    assert pairs == {("ticketing", "bfcl_ticket"), ("bfcl_ticket", "ticketing")}


def test_a_directory_means_every_spec_below_it(tmp_path: Path) -> None:
    copy_spec("ticketing", tmp_path, "a.envspec")  # with the data files their scenarios read
    copy_spec("calendar", tmp_path, "b.envspec")
    result = run(tmp_path)
    assert result.exit_code == 0, result.stderr
    assert set(json.loads(result.stdout)["tool_graphs"]) == {"ticketing", "team_calendar"}


def test_dot_to_stdout() -> None:
    result = run(TICKETING, "--format", "dot", "--top", "0", "--min-weight", "2")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("digraph envc {")
    assert "weight ≥ 2" in result.stdout


@needs_dot
def test_svg_has_one_node_per_tool(tmp_path: Path) -> None:
    out = tmp_path / "ticketing.svg"
    result = run(TICKETING, "--format", "svg", "-o", out)
    assert result.exit_code == 0, result.stderr
    tree = ET.parse(out).getroot()
    nodes = [g for g in tree.iter(f"{SVG}g") if g.get("class") == "node"]
    assert len(nodes) == 13
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0o600


@needs_dot
def test_png_to_a_file_and_to_a_pipe(tmp_path: Path) -> None:
    out = tmp_path / "ticketing.png"
    assert run(TICKETING, "--format", "png", "-o", out).exit_code == 0
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    piped = run(TICKETING, "--format", "png")  # CliRunner's stdout is not a terminal
    assert piped.exit_code == 0 and piped.stdout_bytes.startswith(b"\x89PNG")


def test_png_to_a_terminal_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_command, "_stdout_is_terminal", lambda: True)
    result = run(TICKETING, "--format", "png")
    assert result.exit_code == 2
    assert "-o FILE" in result.stderr


def test_svg_without_graphviz_is_a_clean_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run(TICKETING, "--format", "svg", "-o", tmp_path / "x.svg")
    assert result.exit_code == 2
    assert "envc graph: graphviz's `dot` is not on PATH" in result.stderr
    assert not (tmp_path / "x.svg").exists()


def test_a_spec_with_errors_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.envspec"
    bad.write_text('environment demo:\n    title "Demo"\n\nenum Color:\n    red green\n', encoding="utf-8")
    result = run(TICKETING, bad)
    assert result.exit_code == 1
    assert f"{bad}:5:9 - error E1002" in result.stderr
    assert result.stdout == ""


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = run(tmp_path / "nope.envspec")
    assert result.exit_code == 2
    assert "E0001" in result.stderr


def test_two_specs_with_one_name_exit_1(tmp_path: Path) -> None:
    copy_spec("ticketing", tmp_path, "copy.envspec")
    result = run(TICKETING, tmp_path / "copy.envspec")
    assert result.exit_code == 1
    assert "E6005" in result.stderr and "both define environment `ticketing`" in result.stderr


def test_a_bad_weights_table_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.envc.graph]\nprecondition = -3\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run(TICKETING)
    assert result.exit_code == 2
    assert "envc graph: [tool.envc.graph] precondition must be a non-negative number" in result.stderr


def test_weights_from_the_project_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.envc.graph]\nprecondition = 10\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    data = json.loads(run(TICKETING).stdout)
    edge = next(e for e in data["tool_graphs"]["ticketing"]["edges"] if e["source"] == "login")
    assert edge["weight"] == 11.0  # state 1 + precondition 10


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--top", "2"), "shape pictures"),
        (("--format", "svg", "--view", "envs"), "two or more specs"),
        (("--format", "gif"), "Invalid value for '--format'"),
        (("--format", "dot", "--top", "-1"), "Invalid value for '--top'"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    result = run(TICKETING, *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_an_unwritable_output_exits_2(tmp_path: Path) -> None:
    result = run(TICKETING, "-o", tmp_path / "missing" / "graph.json")
    assert result.exit_code == 2
    assert "envc graph: cannot write" in result.stderr
    assert "Traceback" not in result.stderr


@needs_dot
def test_the_entry_point_in_a_subprocess(tmp_path: Path) -> None:
    out = tmp_path / "two.svg"
    args = ["graph", str(TICKETING), str(BFCL_TICKET), "--format", "svg", "-o", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "graph of 2 environments: 22 tools" in proc.stderr
    tree = ET.parse(out).getroot()
    titles = {t.text for g in tree.iter(f"{SVG}g") if g.get("class") == "node" for t in g.iter(f"{SVG}title")}
    assert {"env:ticketing", "env:bfcl_ticket", "ticketing.login", "bfcl_ticket.ticket_login"} <= titles
