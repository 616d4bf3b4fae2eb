"""Golden IR: the analysed environment of every shipped spec, as JSON.

A difference means the parser or the analyser changed what later stages see. If the
change is intended, run `python tests/refresh_golden.py` and review the diff.
"""

from __future__ import annotations

import json

import pytest
from refresh_golden import GOLDEN, ROOT, goldens, shipped_specs, stale_files

REFRESH = "run `python tests/refresh_golden.py` if the change is intended"
IR_GOLDENS = [(name, produce) for name, produce in goldens() if name.startswith("ir/")]


def test_every_shipped_spec_has_a_golden_ir() -> None:
    assert len(IR_GOLDENS) == len(shipped_specs()) >= 1


@pytest.mark.parametrize(("name", "produce"), IR_GOLDENS, ids=[name for name, _ in IR_GOLDENS])
def test_golden_ir(name: str, produce: object) -> None:
    path = GOLDEN / name
    assert path.is_file(), f"tests/golden/{name} is missing; {REFRESH}"
    expected = path.read_text(encoding="utf-8")
    actual = produce()  # type: ignore[operator]
    if actual != expected:
        # Compare parsed JSON first for a readable pytest diff, then the exact text.
        assert json.loads(actual) == json.loads(expected), REFRESH
        assert actual == expected, f"formatting of tests/golden/{name} changed; {REFRESH}"


def test_golden_paths_are_relative() -> None:
    present = [GOLDEN / name for name, _ in IR_GOLDENS if (GOLDEN / name).is_file()]  # missing: see test_golden_ir
    for path in present:
        assert str(ROOT) not in path.read_text(encoding="utf-8"), f"{path} holds an absolute path; {REFRESH}"


def test_no_orphaned_golden_ir() -> None:
    assert stale_files(IR_GOLDENS, "ir") == [], REFRESH
