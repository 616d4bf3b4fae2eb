"""The committed generated/ packages are exactly what the compiler makes of specs/.

This is `envc compile --check` as CI runs it on every spec change: it fails when a spec,
a prototype, a world file or the compiler changed without regenerating, or when a file
under generated/ was edited by hand. generated/ is also the golden copy of every
package: each file is compared with what `lower()` makes now, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from refresh_golden import analysed_environment, environment_name, lowered_package
from shipped import GENERATED, library_specs, package_dir, package_dirs, package_names
from shipped import SPECS as SPECS_DIR

from compiler.analyse import analyse_file
from compiler.build.packages import MANIFEST

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
    specs = library_specs()
    manifests = sorted(folder / MANIFEST for folder in package_dirs().values())
    named = {json.loads(m.read_text(encoding="utf-8"))["spec"] for m in manifests}
    assert {s.relative_to(ROOT).as_posix() for s in specs} <= named


# --------------------------------------------------------------------------- generated/ against lower()
#
# `envc compile --check` skips a spec whose manifest still matches its inputs and the
# compiler fingerprint; then it compares the files on disk with the manifest's hashes,
# not with what the compiler makes now. These tests lower every spec in-process and
# compare every file of its package byte for byte, so they do not rely on the
# fingerprint: generated/ is the golden copy of every package.

SPECS = library_specs()
REGENERATE = "generated/ is not what the compiler makes; run `envc compile` if the change is intended"


def on_disk(folder: Path) -> dict[str, bytes]:
    """Every file of a generated package but its manifest and caches, by relative path."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and path.name != MANIFEST
        and not {"__pycache__", ".pytest_cache"} & set(path.relative_to(folder).parts)
    }


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.stem)
def test_every_generated_file_is_what_lower_makes(spec: Path) -> None:
    name, files = lowered_package(spec)
    folder = package_dir(name)
    found = on_disk(folder)
    assert sorted(found) == sorted(files), f"{REGENERATE}: files differ in generated/{name}"
    for relative, text in files.items():
        if found[relative] != text.encode("utf-8"):
            # A readable line diff first, then the exact bytes (line endings, trailing space).
            assert found[relative].decode("utf-8").splitlines() == text.splitlines(), f"{relative}: {REGENERATE}"
            assert found[relative] == text.encode("utf-8"), f"bytes of {relative}: {REGENERATE}"


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.stem)
def test_every_manifest_lists_the_files_and_inputs(spec: Path) -> None:
    name, files = lowered_package(spec)
    manifest = json.loads((package_dir(name) / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["spec"] == spec.relative_to(ROOT).as_posix()
    assert manifest["files"] == {p: hashlib.sha256(t.encode("utf-8")).hexdigest() for p, t in files.items()}, REGENERATE
    inputs = {Path(p).resolve().relative_to(ROOT).as_posix() for p in analyse_file(spec).inputs()}
    assert manifest["inputs"] == sorted(inputs | {manifest["spec"]}), REGENERATE
    assert analysed_environment(spec).header.name == name


def test_every_generated_package_has_its_spec() -> None:
    """A package whose spec was removed or renamed is left over: delete it."""
    assert set(package_names()) == {environment_name(spec) for spec in SPECS}
    for spec in SPECS:  # each in the folder of generated/ that mirrors its spec's folder of specs/
        assert package_dir(environment_name(spec)).parent.relative_to(GENERATED) == spec.parent.relative_to(SPECS_DIR)
