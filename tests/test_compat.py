"""The compatibility corpus (tests/compat/, SOURCES.md there): specs earlier versions of
the language accepted still compile, or their automatic rewrite (`envc fix`) does, so
growing the language breaks no spec without a way across."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler.analyse import analyse_source
from compiler.analyse.upgrade import fix_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.lower import lower

COMPAT = Path(__file__).resolve().parent / "compat"
ROWS = re.findall(
    r"^\| (\w+) \| .* \| (no|yes: [\w, ]+) \|$", (COMPAT / "SOURCES.md").read_text(encoding="utf-8"), re.M
)
NEEDS_FIX = {name: rewrites.removeprefix("yes: ").split(", ") for name, rewrites in ROWS if rewrites != "no"}


def test_the_manifest_lists_every_spec_of_the_corpus() -> None:
    assert sorted(name for name, _ in ROWS) == sorted(p.stem for p in COMPAT.glob("*.envspec"))
    assert len(ROWS) >= 10


@pytest.mark.parametrize("spec", sorted(COMPAT.glob("*.envspec")), ids=lambda p: p.stem)
def test_an_old_spec_compiles_or_its_rewrite_does(spec: Path) -> None:
    text = spec.read_text(encoding="utf-8")
    fixed = fix_source(text, str(spec))
    assert [applied.split(":")[0] for applied in fixed.applied] == NEEDS_FIX.get(spec.stem, [])
    result = analyse_source(fixed.text, str(spec))
    errors = [f"{d.line}: {d.code} {d.message}" for d in result.diagnostics if d.severity == "error"]
    assert result.environment is not None and not errors, errors
    files = lower(result.environment, spec.name)
    assert "environment.py" in files
    if spec.stem in NEEDS_FIX:  # a rewritten spec passes full QC: the rewrite keeps it working
        name = result.environment.header.name
        outcome = check_packages([Package(env=result.environment, name=name, files=files)], dynamic=True)[name]
        assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings


def test_fix_leaves_a_current_spec_alone() -> None:
    spec = Path(__file__).resolve().parent.parent / "specs" / "prototypes" / "data_pipeline.envspec"
    text = spec.read_text(encoding="utf-8")
    assert fix_source(text, str(spec)).applied == []
