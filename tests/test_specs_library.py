"""The shipped library: every spec under specs/ compiles into a package whose own
generated tests pass, and `envc new` scaffolds compile for every archetype."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import pytest
from refresh_golden import environment_name
from shipped import GENERATED, library_specs, package_dir, package_dirs

from compiler.analyse import analyse_file, prototypes_dir
from compiler.build import scaffold

ROOT = Path(__file__).resolve().parent.parent
SPECS = library_specs()
PROTOTYPES = sorted(prototypes_dir().glob("*.envspec"))


def _package_of(spec: Path) -> Path:
    """The package of a shipped spec, by the name in its header (no analysis: the
    generated tests are what this file measures)."""
    return package_dir(environment_name(spec))


@dataclass
class Outcome:
    """What one package's generated tests did in the shared run."""

    passed: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def generated_tests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """The generated tests of every shipped package, run in ONE pytest process (one
    start-up for the library, not one per package: the suite's cost per environment is
    its tests, not an interpreter), each package's outcome read from the JUnit report.
    Every package's tests are `tests/test_environment.py`; each `tests/` is a package of
    its environment's package, so pytest imports them as `NAME.tests.test_environment`
    and the equal basenames never collide."""
    report = tmp_path_factory.mktemp("generated-tests") / "junit.xml"
    folders = package_dirs()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(GENERATED),
            f"--junitxml={report}",
            *[str(folder / "tests") for folder in folders.values()],
        ],
        cwd=GENERATED,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert report.is_file(), run.stdout[-3000:] + run.stderr[-2000:]
    return outcomes_by_package(report, {name: folder.relative_to(GENERATED) for name, folder in folders.items()})


def outcomes_by_package(report: Path, where: dict[str, Path]) -> dict[str, Outcome]:
    """Each package's passed and failed tests in a JUnit report, by the package's folder
    below the rootdir (`it_operations/ticketing` -> classnames `it_operations.ticketing.…`)."""
    prefixes = {".".join(folder.parts) + ".": name for name, folder in where.items()}
    outcomes = {name: Outcome() for name in where}
    for case in ElementTree.parse(report).iter("testcase"):
        classname = case.get("classname") or ""
        name = next((n for prefix, n in prefixes.items() if classname.startswith(prefix)), None)
        if name is None:
            continue
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is None and case.find("skipped") is None:
            outcomes[name].passed += 1
        elif problem is not None:
            outcomes[name].failed += 1
            outcomes[name].failures.append(f"{case.get('name')}: {(problem.get('message') or '')[:300]}")
    return outcomes


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_generated_tests_of_each_spec_pass(spec: Path, generated_tests: dict[str, Outcome]) -> None:
    outcome = generated_tests[_package_of(spec).name]
    assert outcome.failed == 0, "\n".join(outcome.failures[:10])
    assert outcome.passed > 0


def test_outcomes_are_told_apart_by_package(tmp_path: Path) -> None:
    """Two packages' tests of one basename are counted for each package (a report as
    pytest writes it for generated/<domain>/<package>/tests/test_environment.py)."""
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="a.shop.tests.test_environment" name="test_one"/>'
        '<testcase classname="a.shop.tests.test_environment" name="test_two"><failure message="boom"/></testcase>'
        '<testcase classname="b.shop_two.tests.test_environment" name="test_one"/>'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )
    found = outcomes_by_package(report, {"shop": Path("a/shop"), "shop_two": Path("b/shop_two")})
    assert (found["shop"].passed, found["shop"].failed, found["shop_two"].passed) == (1, 1, 1)
    assert found["shop"].failures == ["test_two: boom"]


@pytest.mark.parametrize("prototype", PROTOTYPES, ids=[p.stem for p in PROTOTYPES])
def test_prototypes_analyse_cleanly(prototype: Path) -> None:
    result = analyse_file(prototype)
    assert result.environment is not None, [str(d) for d in result.diagnostics]
    header = result.environment.header
    # An archetype's prototype is named after it; a prototype built on another
    # (csv_workspace on file_workspace) keeps the archetype of the one it extends.
    expected = prototype.stem if not header.extends else Path(header.extends).stem
    assert header.archetype == expected


def test_every_archetype_has_a_prototype_and_a_domain_spec() -> None:
    archetypes = {analyse_file(p).environment.header.archetype for p in PROTOTYPES}  # type: ignore[union-attr]
    assert len(archetypes) == 10
    assert archetypes <= {p.stem for p in PROTOTYPES}
    extended = {analyse_file(s).environment.header.archetype for s in SPECS}  # type: ignore[union-attr]
    assert archetypes <= extended


@pytest.mark.parametrize("archetype", scaffold.available_archetypes())
def test_scaffold_compiles_as_it_stands(archetype: str, tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "my_domain.envspec"
    (tmp_path / "pyproject.toml").write_text('[tool.envc]\noutput = "out"\n', encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "new", "my_domain", "--archetype", archetype, "-o", str(spec)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    qc = [] if archetype in ("custom", "transactional_workspace") else ["--no-qc"]
    run = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", *qc, str(spec)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "out" / "my_domain" / "environment.py").is_file()
