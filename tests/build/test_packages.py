"""The one loader of generated packages (compiler/build/packages.py) takes environment
names, never paths, from anything a file says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shipped import package_dir

from compiler.build import packages

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["ticketing", "_private", "Env2"])
def test_environment_names_pass(name: str) -> None:
    assert packages.env_name_problem(name) == ""


@pytest.mark.parametrize("name", ["../x", "/abs/x", "a/b", ".", "..", "", "x.y", "x\x00", "tick eting", 3, None])
def test_paths_and_other_values_are_not_environment_names(name: object) -> None:
    assert "is not an environment name" in packages.env_name_problem(name)


def test_a_package_is_found_in_its_folder_by_name_only(tmp_path: Path) -> None:
    shutil.copytree(package_dir("ticketing"), tmp_path / "pk" / "ticketing")
    shutil.copytree(package_dir("ticketing"), tmp_path / "elsewhere")
    assert packages.package_in(tmp_path / "pk", "ticketing") == tmp_path / "pk" / "ticketing"
    with pytest.raises(packages.PackageError, match="is not an environment name"):
        packages.package_in(tmp_path / "pk", "../elsewhere")
    with pytest.raises(packages.PackageError, match="no generated package of `nothing`"):
        packages.package_in(tmp_path / "pk", "nothing")


def test_a_package_is_found_at_any_depth_and_never_inside_another(tmp_path: Path) -> None:
    """generated/<domain>/<name>/ (and generated/claw/<category>/<name>/) are found by name;
    a package's own subfolders are not searched, hidden folders neither."""
    shutil.copytree(package_dir("ticketing"), tmp_path / "it_operations" / "ticketing")
    shutil.copytree(package_dir("claw_workspace"), tmp_path / "claw" / "spreadsheets" / "claw_workspace")
    shutil.copytree(package_dir("bfcl_ticket"), tmp_path / ".staging" / "bfcl_ticket")
    shutil.copytree(package_dir("bfcl_message"), tmp_path / "it_operations" / "ticketing" / "data" / "bfcl_message")
    assert packages.find_packages(tmp_path) == {
        "ticketing": tmp_path / "it_operations" / "ticketing",
        "claw_workspace": tmp_path / "claw" / "spreadsheets" / "claw_workspace",
    }
    assert packages.package_in(tmp_path, "claw_workspace") == tmp_path / "claw" / "spreadsheets" / "claw_workspace"
    with pytest.raises(packages.PackageError, match="no generated package of `bfcl_ticket`"):
        packages.package_in(tmp_path, "bfcl_ticket")


def test_two_packages_of_one_name_are_an_error_naming_both(tmp_path: Path) -> None:
    shutil.copytree(package_dir("ticketing"), tmp_path / "a" / "ticketing")
    shutil.copytree(package_dir("ticketing"), tmp_path / "b" / "ticketing")
    with pytest.raises(
        packages.PackageError, match=r"two packages of `ticketing` below .*a/ticketing and .*b/ticketing"
    ):
        packages.package_in(tmp_path, "ticketing")
