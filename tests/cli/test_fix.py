"""`envc fix` (compiler/cli/fix.py), run in process: it rewrites an old spec in place,
`--check` writes nothing and exits 1, and a current spec is left alone."""

from __future__ import annotations

from pathlib import Path

from .conftest import ROOT, run

OLD = ROOT / "tests" / "compat" / "data_pipeline_6ad3097.envspec"


def test_fix_rewrites_an_old_spec_in_place(tmp_path: Path) -> None:
    spec = tmp_path / "old.envspec"
    spec.write_text(OLD.read_text(encoding="utf-8"), encoding="utf-8")
    checked = run("fix", "--check", spec)
    assert checked.exit_code == 1 and f"would fix {spec}: as_float: 1 place" in checked.stdout
    assert spec.read_text(encoding="utf-8") == OLD.read_text(encoding="utf-8")
    fixed = run("fix", spec)
    assert fixed.exit_code == 0, fixed.stdout
    assert "let duration = as_float(obj[" in spec.read_text(encoding="utf-8")
    assert run("check", spec).exit_code == 0
    again = run("fix", "--check", spec)
    assert again.exit_code == 0 and "0 files would be fixed, 1 unchanged" in again.stdout


def test_fix_leaves_a_spec_with_other_errors_as_it_is(tmp_path: Path) -> None:
    spec = tmp_path / "broken.envspec"
    text = 'environment broken:\n    title "B"\n\ntool t() -> int:\n    return "x"\n'
    spec.write_text(text, encoding="utf-8")
    result = run("fix", spec)
    assert result.exit_code == 0 and spec.read_text(encoding="utf-8") == text


def test_fix_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    assert run("fix", tmp_path / "nope.envspec").exit_code == 2
