"""Compile-time QC runs no code it should not (issue 23, finding 4): envc's AST rules
refuse a `python` body that reaches the operating system before any generated test runs,
and the generated tests themselves run isolated, with their own home, temporary and
working folder, no network, no processes and no writes outside that folder
(compiler/check/dynamic.py, compiler/check/sandboxed_pytest.py)."""

from __future__ import annotations

import socket
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.analyse import analyse_source
from compiler.check import check_packages, dynamic
from compiler.check.package import Package, write_tree
from compiler.lower import lower

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A real socket on loopback: whatever QC runs must never connect to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    yield server
    server.close()


def connected(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except TimeoutError:
        return False
    return True


def probe_package(body: str, name: str = "probe_env") -> Package:
    """A spec whose one tool has `body` as its python body, lowered (the generated tests
    call every tool with sample arguments, so the body runs if the tests do)."""
    header = [
        f"environment {name}:",
        '    title "Probe"',
        '    doc "A python body that reaches past envc\'s rules."',
        "",
    ]
    state = ["state:", "    hits: int = 0", ""]
    tool = ["tool poke() -> int:", '    """Poke."""', "    reads hits", "    writes nothing", '    python """']
    spec = "\n".join([*header, *state, *tool, textwrap.indent(body, "    "), '    """', ""])
    analysis = analyse_source(spec, str(ROOT / "specs" / f"{name}.envspec"))
    assert analysis.environment is not None, analysis.diagnostics
    files = lower(analysis.environment, f"specs/{name}.envspec")
    return Package(env=analysis.environment, name=name, files=files)


def test_the_threading_dict_bypass_is_refused_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    package = probe_package(f'threading.__dict__["_os"].system("touch {marker}")\nreturn self._state["hits"]')
    result = check_packages([package])[package.name]
    messages = [f.message for f in result.findings]
    assert not result.static_ok and not result.dynamic_ok
    assert "`.__dict__` reaches Python's internals: forbidden in an environment" in messages
    assert any(m.startswith("generated tests not run: envc's AST rules refused") for m in messages)
    assert result.tests_passed == result.tests_failed == 0
    assert not marker.exists()


def test_a_body_opening_a_socket_is_refused_before_anything_runs(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    package = probe_package(f'import socket\nsocket.create_connection(("127.0.0.1", {port}))\nreturn 0')
    result = check_packages([package])[package.name]
    assert "import of `socket` is not allowed here" in [f.message for f in result.findings]
    assert not result.dynamic_ok and not connected(listener)


def test_if_the_rules_missed_it_the_test_sandbox_refuses_the_process(tmp_path: Path) -> None:
    """The same bypass run straight by the dynamic check, as if the AST rules had let it
    through: the audit hook refuses `os.system`, and the test that called it fails."""
    marker = tmp_path / "ran"
    package = probe_package(f'threading.__dict__["_os"].system("touch {marker}")\nreturn self._state["hits"]')
    write_tree(tmp_path / "tree" / package.name, package.files)
    result = dynamic.tests_alone(tmp_path / "tree", package)
    assert not result.dynamic_ok and result.tests_failed >= 1 and result.tests_passed > 0
    assert any("starting a process is refused" in f.message for f in result.findings), result.findings
    assert not marker.exists()


PROBE_TESTS = """\
from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

REAL_HOME = Path({real_home!r})


def test_connect() -> None:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()


def test_lookup() -> None:
    socket.getaddrinfo("example.com", 80)


def test_write_to_the_real_home() -> None:
    (REAL_HOME / {leak!r}).write_text("leaked")


def test_process() -> None:
    subprocess.run(["true"], check=False)


def test_own_home_and_folder() -> None:
    assert Path.home() != REAL_HOME and Path.cwd() == Path.home()
    (Path.home() / "notes.txt").write_text("fine")
    Path(os.path.expanduser("~/more.txt")).write_text("fine")
    assert {{"ENVC_QC_SECRET", "PYTHONPATH"}}.isdisjoint(os.environ)
"""


def test_the_generated_tests_run_without_network_processes_or_the_real_home(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVC_QC_SECRET", "hunter2")
    leak = f"envc-qc-leak-{uuid.uuid4().hex}"
    real_home = Path.home()
    text = PROBE_TESTS.format(real_home=str(real_home), port=listener.getsockname()[1], leak=leak)
    package = probe_package("return 0", "sandbox_probe")
    files = {"__init__.py": "", "tests/__init__.py": "", "tests/test_environment.py": text}
    write_tree(tmp_path / "tree" / package.name, files)
    together = dynamic.start_tests_together(tmp_path / "tree", [package])
    outcome = dynamic.finish_tests_together(together, tmp_path / "tree", [package])
    try:
        assert outcome is not None
        result = outcome[package.name]
        failed = {line.split("::")[1].split(" ")[0]: line for line in (f.message for f in result.findings)}
        assert set(failed) == {"test_connect", "test_lookup", "test_write_to_the_real_home", "test_process"}
        assert result.tests_passed == 1
        assert "envc QC: network access is refused" in failed["test_connect"]
        assert "envc QC: network access is refused" in failed["test_lookup"]
        assert (
            "envc QC: writing outside the test's temporary folder is refused" in failed["test_write_to_the_real_home"]
        )
        assert "envc QC: starting a process is refused" in failed["test_process"]
        assert not connected(listener)
        assert not (real_home / leak).exists()
        assert not together.sandbox.exists()  # the run's own folder went with it
    finally:
        (real_home / leak).unlink(missing_ok=True)
