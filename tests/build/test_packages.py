"""The one loader of generated packages (compiler/build/packages.py) takes environment
names, never paths, from anything a file says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.build import packages

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["ticketing", "_private", "Env2"])
def test_environment_names_pass(name: str) -> None:
    assert packages.env_name_problem(name) == ""


@pytest.mark.parametrize("name", ["../x", "/abs/x", "a/b", ".", "..", "", "x.y", "x\x00", "tick eting", 3, None])
def test_paths_and_other_values_are_not_environment_names(name: object) -> None:
    assert "is not an environment name" in packages.env_name_problem(name)


def test_a_package_is_found_in_its_folder_by_name_only(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "generated" / "ticketing", tmp_path / "pk" / "ticketing")
    shutil.copytree(ROOT / "generated" / "ticketing", tmp_path / "elsewhere")
    assert packages.package_in(tmp_path / "pk", "ticketing") == tmp_path / "pk" / "ticketing"
    with pytest.raises(packages.PackageError, match="is not an environment name"):
        packages.package_in(tmp_path / "pk", "../elsewhere")
    with pytest.raises(packages.PackageError, match="no generated package of `nothing`"):
        packages.package_in(tmp_path / "pk", "nothing")
