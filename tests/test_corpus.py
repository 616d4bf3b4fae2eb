"""The malformed-spec corpus: one file per case under `tests/corpus/`, each naming the
diagnostics the analyser must report, exactly.

A case file starts with a comment line

    # expect: E1002 9:13 E1002 12:8 E2018 _support/cycle_b.envspec:2:1

listing `CODE line:col` pairs, sorted by (file, line, col, code). A pair whose position
has a `file:` prefix is reported in a helper file of `tests/corpus/_support/` (a
prototype the case extends); the prefix is relative to `tests/corpus/`. Adding a case
adds no code: drop a file named `<CODE>_<short_name>.envspec` into the folder.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from compiler.analyse import analyse_file, analyse_source
from compiler.diagnostics import CODES, Diagnostic
from compiler.front.grammar import MAX_SOURCE_BYTES
from compiler.front.parse import parse_source

CORPUS = Path(__file__).resolve().parent / "corpus"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "diagnostics.md"
CASES = sorted(CORPUS.glob("*.envspec"))
EXPECT = re.compile(r"^# expect:(?P<pairs>( E\d{4} (\S+:)?\d+:\d+)+)\s*$")
PAIR = re.compile(r"(?P<code>E\d{4}) (?:(?P<file>\S+):)?(?P<line>\d+):(?P<col>\d+)")
# Codes a spec file cannot produce: unreadable files (E0001), bad UTF-8 and oversized
# input (tested below in Python), and findings in generated code (E6xxx).
NOT_FROM_SPECS = {"E0001", "E0002", "E0005"}


@dataclass(frozen=True, order=True)
class Expected:
    """One expected diagnostic; `file` is "" for the case file itself."""

    file: str
    line: int
    col: int
    code: str

    def __str__(self) -> str:
        where = f"{self.file}:" if self.file else ""
        return f"{self.code} {where}{self.line}:{self.col}"


def expectations(case: Path) -> list[Expected]:
    first_line = case.read_bytes().split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    match = EXPECT.match(first_line)
    assert match, f"{case.name}: the first line must be `# expect: CODE line:col ...`"
    return [Expected(m["file"] or "", int(m["line"]), int(m["col"]), m["code"]) for m in PAIR.finditer(match["pairs"])]


def reported(diagnostics: list[Diagnostic], case: Path) -> list[Expected]:
    """Diagnostics as `Expected` values, with paths relative to the corpus folder."""
    found = []
    for d in diagnostics:
        path = Path(d.path).resolve()
        file = "" if path == case.resolve() else path.relative_to(CORPUS).as_posix()
        found.append(Expected(file, d.line, d.col, d.code))
    return sorted(found)


def case_id(case: Path) -> str:
    return case.stem


def spec_codes() -> set[str]:
    return {code for code in CODES if code not in NOT_FROM_SPECS and not code.startswith("E6")}


# --------------------------------------------------------------------------- the corpus


def test_corpus_is_not_empty() -> None:
    assert len(CASES) >= 70


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_case_reports_exactly_the_expected_diagnostics(case: Path) -> None:
    expected = expectations(case)
    assert expected == sorted(expected), f"{case.name}: list the expectations in sorted order"
    result = analyse_file(case)
    found = reported(result.diagnostics, case)
    details = "\n".join(f"  {d.path}:{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics)
    assert found == expected, f"reported: # expect: {' '.join(map(str, found))}\n{details}"
    assert result.environment is None


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_case_name_starts_with_an_expected_code(case: Path) -> None:
    code = case.name.split("_", 1)[0]
    assert code in CODES, f"{case.name}: unknown code {code}"
    assert code in {e.code for e in expectations(case)}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_case_diagnostics_have_positions(case: Path) -> None:
    for d in analyse_file(case).diagnostics:
        assert d.line >= 1 and d.col >= 1, d


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_analyse_source_agrees_with_analyse_file(case: Path) -> None:
    """Both entry points (and the parser alone) take hostile text without raising."""
    text = case.read_bytes().decode("utf-8")
    from_file = analyse_file(case).diagnostics
    from_text = analyse_source(text, str(case)).diagnostics
    assert [(d.code, d.line, d.col) for d in from_text] == [(d.code, d.line, d.col) for d in from_file]
    parse_source(text, str(case))


def test_every_spec_code_is_covered() -> None:
    covered = {e.code for case in CASES for e in expectations(case)}
    assert sorted(spec_codes() - covered) == []


def test_every_code_is_documented_with_a_real_example() -> None:
    text = DOCS.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| (E\d{4}) \|", text, re.MULTILINE))
    assert documented == set(CODES), "docs/diagnostics.md must have one table row per code"
    examples = re.findall(r"\(\.\./tests/corpus/([^)]+\.envspec)\)", text)
    assert examples and all((CORPUS / name).is_file() for name in examples)


def test_support_files_are_not_cases() -> None:
    assert all(case.parent == CORPUS for case in CASES)
    assert not any(case.name.startswith("_") for case in CASES)


# --------------------------------------------------------------------------- input-level codes


def test_invalid_utf8_is_e0002(tmp_path: Path) -> None:
    path = tmp_path / "latin1.envspec"
    path.write_bytes(b'environment library:\n    title "Biblioth\xe8que"\n')
    diagnostics = analyse_file(path).diagnostics
    assert [(d.code, d.line, d.col) for d in diagnostics] == [("E0002", 2, 1)]


def test_oversized_input_is_e0005() -> None:
    text = "environment big:\n" + "# padding\n" * (MAX_SOURCE_BYTES // 10 + 1)
    diagnostics = analyse_source(text, "big.envspec").diagnostics
    assert [(d.code, d.line, d.col) for d in diagnostics] == [("E0005", 1, 1)]


def test_missing_file_is_e0001(tmp_path: Path) -> None:
    diagnostics = analyse_file(tmp_path / "absent.envspec").diagnostics
    assert [d.code for d in diagnostics] == ["E0001"]


# A NUL is refused wherever it is (tests/corpus/E1001_nul_byte.envspec has one after a
# value, where the lexer alone already stopped): (where, spec bytes, line, col).
NUL_SPECS = [
    ("in_a_string", b'environment library:\n    title "Lend\x00ing"\n', 2, 16),
    ("in_a_comment", b'environment library:\n    title "Lending"\n# note \x00\n', 3, 8),
    ("in_an_identifier", b'environment lib\x00rary:\n    title "Lending"\n', 1, 16),
]


@pytest.mark.parametrize(("raw", "line", "col"), [c[1:] for c in NUL_SPECS], ids=[c[0] for c in NUL_SPECS])
def test_a_nul_byte_is_refused_by_envc_check(tmp_path: Path, raw: bytes, line: int, col: int) -> None:
    path = tmp_path / "nul.envspec"
    path.write_bytes(raw)
    for entry in (analyse_file(path).diagnostics, parse_source(raw.decode("utf-8"), str(path)).diagnostics):
        assert [(d.code, d.line, d.col) for d in entry] == [("E1001", line, col)]
    command = [sys.executable, "-m", "compiler.cli", "check"]
    text = subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert text.returncode == 1, text.stdout + text.stderr
    assert f"{path}:{line}:{col} - error E1001: NUL character (U+0000)" in text.stdout
    found = subprocess.run(
        [*command, "--format", "json", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert found.returncode == 1, found.stdout + found.stderr
    [diagnostic] = json.loads(found.stdout)
    assert (diagnostic["code"], diagnostic["line"], diagnostic["col"]) == ("E1001", line, col)
    assert "NUL" in diagnostic["message"]
