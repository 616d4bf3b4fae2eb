"""The committed generated/ packages are exactly what the compiler makes of specs/.

This is `envc compile --check` as CI runs it on every spec change: it fails when a spec,
a prototype, a world file or the compiler changed without regenerating, or when a file
under generated/ was edited by hand.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_packages_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"generated/ is stale; run `envc compile`:\n{result.stdout}\n{result.stderr}"
    assert "up-to-date" in result.stdout


def test_every_shipped_spec_has_a_generated_package() -> None:
    specs = sorted((ROOT / "specs").glob("*.envspec"))
    manifests = sorted((ROOT / "generated").glob("*/.envc-manifest.json"))
    named = {m.read_text(encoding="utf-8").split('"spec": "')[1].split('"')[0] for m in manifests}
    assert {f"specs/{s.name}" for s in specs} <= named
