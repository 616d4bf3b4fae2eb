"""`envc lock` (compiler/cli/llm.py) on specs without `llm` bodies and on a spec it
cannot read; the model-backed runs are in tests/llm/."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import TICKETING, run


def test_lock_says_when_specs_have_no_llm_bodies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("lock", TICKETING)
    assert result.exit_code == 0, result.output
    assert "no llm bodies in these specs" in result.stderr


def test_lock_of_a_missing_spec_reports_only_that(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not also "no llm bodies in these specs": the spec was never read."""
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "missing.envspec"
    result = run("lock", missing)
    assert result.exit_code == 2
    assert f"E0001: cannot read {missing}" in result.stderr
    assert "no llm bodies" not in result.output
    assert list(tmp_path.iterdir()) == []
