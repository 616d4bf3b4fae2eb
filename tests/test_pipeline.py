"""`envc compile` end to end on a throwaway project (`compiler/build/pipeline.py`, `compiler/cli/__init__.py`).

Each test builds a project in tmp_path: a pyproject.toml with `[tool.envc] output = "out"`
and specs under specs/. Most runs pass `--no-qc` (the checks are not the point and cost
seconds); two tests run the full static and dynamic QC.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from shipped import copy_spec, package_dir

from compiler import project as envc_project
from compiler.analyse import analyse_file
from compiler.build import packages, pipeline
from compiler.cli import app as cli_module
from compiler.front import cache as parse_cache_module
from compiler.front import fastparse_decls
from compiler.front.parse import parse_source
from compiler.lower import lower

ROOT = Path(__file__).resolve().parent.parent
COUNTER = '''\
environment counter:
    title "Counter"
    doc "A counter that only goes up."

state:
    count: int = 0

tool bump(by: int = 1 min 1 max 10) -> int:
    """Add to the counter."""
    count += by
    return count

tool peek() -> int:
    """The counter."""
    return count

test bumping:
    bump(by=2)
    expect count == 2
'''
# A type error (E3001) in a tool body: the spec analyses to nothing.
BROKEN = COUNTER.replace("    count += by\n", '    count += "by"\n')


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.envc]\noutput = "out"\n')
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "counter.envspec").write_text(COUNTER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def envc(*args: str) -> Result:
    return CliRunner().invoke(cli_module.cli, ["compile", *args], catch_exceptions=False)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below `folder` (hidden ones included), by relative path."""
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def expected_files(spec: Path, display: str) -> dict[str, str]:
    analysis = analyse_file(spec)
    assert analysis.environment is not None
    return lower(analysis.environment, display)


def row(result: Result, spec: str) -> str:
    return next(line for line in result.stdout.splitlines() if line.startswith(spec))


def edit_spec(project: Path) -> None:
    path = project / "specs" / "counter.envspec"
    path.write_text(path.read_text().replace('"""The counter."""', '"""The counter, now."""'), encoding="utf-8")


def leftovers(output: Path) -> list[str]:
    """Staging and backup folders replace_folder may leave beside the packages."""
    return sorted(p.name for p in output.iterdir() if p.name.startswith(".")) if output.exists() else []


# --------------------------------------------------------------------------- writing and the fast path


def test_first_compile_writes_the_configured_output(project: Path) -> None:
    result = envc("--no-qc")
    assert result.exit_code == 0, result.output
    assert row(result, "specs/counter.envspec").split()[-1] == "written"
    folder = project / "out" / "counter"
    files = snapshot(folder)
    expected = expected_files(project / "specs" / "counter.envspec", "specs/counter.envspec")
    assert set(files) == {*expected, packages.MANIFEST}
    for relative, text in expected.items():
        assert files[relative] == text.encode("utf-8"), relative
    manifest = json.loads(files[packages.MANIFEST])
    assert manifest["spec"] == "specs/counter.envspec"
    assert manifest["inputs"] == ["specs/counter.envspec"]
    assert set(manifest["files"]) == set(expected)
    assert not (project / "generated").exists(), "the configured output replaces the default"
    assert leftovers(project / "out") == []


def test_second_compile_takes_the_fast_path(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert envc("--no-qc").exit_code == 0
    before = snapshot(project / "out")
    stamps = {p: p.stat().st_mtime_ns for p in (project / "out").rglob("*")}

    def must_not_run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an up-to-date spec is neither analysed nor lowered")

    monkeypatch.setattr("compiler.analyse.analyse_file", must_not_run)
    monkeypatch.setattr("compiler.lower.lower", must_not_run)
    result = envc("--no-qc")
    assert result.exit_code == 0, result.output
    assert row(result, "specs/counter.envspec").split()[-1] == "up-to-date"
    assert snapshot(project / "out") == before
    assert {p: p.stat().st_mtime_ns for p in (project / "out").rglob("*")} == stamps


def test_output_option_overrides_the_config(project: Path) -> None:
    result = envc("specs/counter.envspec", "-o", "elsewhere", "--no-qc")
    assert result.exit_code == 0, result.output
    assert (project / "elsewhere" / "counter" / "environment.py").is_file()
    assert not (project / "out").exists()


def test_changed_inputs_digest_misses_the_fast_path(project: Path) -> None:
    """As if envc itself had changed: the spec is compiled again and the manifest renewed."""
    assert envc("--no-qc").exit_code == 0
    manifest = project / "out" / "counter" / packages.MANIFEST
    data = json.loads(manifest.read_text())
    data["inputs_sha"] = "0" * 64  # as if envc itself had changed
    manifest.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    result = envc("--no-qc")
    assert result.exit_code == 0, result.output
    assert row(result, "specs/counter.envspec").split()[-1] == "written"
    assert json.loads(manifest.read_text())["inputs_sha"] != "0" * 64


# --------------------------------------------------------------------------- --check


def test_check_lists_stale_files_and_writes_nothing(project: Path) -> None:
    assert envc("--no-qc").exit_code == 0
    assert envc("--check").exit_code == 0
    edit_spec(project)
    before = snapshot(project / "out")
    result = envc("--check")
    assert result.exit_code == 1, result.output
    assert row(result, "specs/counter.envspec").split()[-1] == "stale"
    stale = sorted(line for line in result.stderr.splitlines() if line.startswith("stale: "))
    assert "stale: out/counter/environment.py" in stale
    assert "stale: out/counter/tools.json" in stale
    assert "stale: out/counter/sessions.py" not in stale, "only files that would change are listed"
    assert snapshot(project / "out") == before
    assert envc("--no-qc").exit_code == 0
    assert envc("--check").exit_code == 0


def test_check_on_a_fresh_project_lists_every_file(project: Path) -> None:
    result = envc("--check")
    assert result.exit_code == 1
    assert "stale: out/counter/environment.py" in result.stderr
    assert not (project / "out").exists()


# --------------------------------------------------------------------------- hand edits and strays


def test_hand_edit_is_refused_without_force(project: Path) -> None:
    assert envc("--no-qc").exit_code == 0
    folder = project / "out" / "counter"
    target = folder / "environment.py"
    target.write_text(target.read_text() + "# my local fix\n")
    edit_spec(project)
    before = snapshot(project / "out")
    result = envc("--no-qc")
    assert result.exit_code == 1, result.output
    assert "E6006" in result.stderr and "environment.py" in result.stderr
    assert "--force" in result.stderr
    assert snapshot(project / "out") == before, "nothing was written"
    check = envc("--check")
    assert check.exit_code == 1 and "stale: out/counter/environment.py" in check.stderr

    forced = envc("--no-qc", "--force")
    assert forced.exit_code == 0, forced.output
    assert "# my local fix" not in target.read_text()
    expected = expected_files(project / "specs" / "counter.envspec", "specs/counter.envspec")
    assert target.read_text(encoding="utf-8") == expected["environment.py"]
    assert envc("--check").exit_code == 0
    assert leftovers(project / "out") == []


def test_stray_file_is_refused_without_force(project: Path) -> None:
    assert envc("--no-qc").exit_code == 0
    folder = project / "out" / "counter"
    (folder / "notes.txt").write_text("keep me\n")
    (folder / "tests" / "test_mine.py").write_text("def test_mine() -> None: ...\n")
    before = snapshot(project / "out")
    result = envc("--no-qc")
    assert result.exit_code == 1, result.output
    assert "E6006" in result.stderr and "notes.txt" in result.stderr and "tests/test_mine.py" in result.stderr
    assert snapshot(project / "out") == before
    assert envc("--no-qc", "--force").exit_code == 0
    assert not (folder / "notes.txt").exists() and not (folder / "tests" / "test_mine.py").exists()


def test_folder_without_manifest_is_not_overwritten(project: Path) -> None:
    folder = project / "out" / "counter"
    folder.mkdir(parents=True)
    (folder / "environment.py").write_text("# somebody else's package\n")
    result = envc("--no-qc")
    assert result.exit_code == 1, result.output
    assert "E6006" in result.stderr
    assert snapshot(folder) == {"environment.py": b"# somebody else's package\n"}


# --------------------------------------------------------------------------- errors


def test_spec_with_an_analysis_error_writes_nothing(project: Path) -> None:
    (project / "specs" / "counter.envspec").write_text(BROKEN, encoding="utf-8")
    result = envc("--no-qc")
    assert result.exit_code == 1, result.output
    line = BROKEN.splitlines().index('    count += "by"') + 1
    assert f"counter.envspec:{line}:" in result.stderr and " - error E3" in result.stderr
    assert "Traceback" not in result.output
    assert not (project / "out").exists() or snapshot(project / "out") == {}


def test_broken_spec_leaves_the_previous_output_alone(project: Path) -> None:
    assert envc("--no-qc").exit_code == 0
    before = snapshot(project / "out")
    (project / "specs" / "counter.envspec").write_text(BROKEN, encoding="utf-8")
    assert envc("--no-qc").exit_code == 1
    assert envc("--check").exit_code == 1
    assert snapshot(project / "out") == before


def test_one_broken_spec_does_not_stop_the_others(project: Path) -> None:
    (project / "specs" / "bad.envspec").write_text(BROKEN.replace("counter", "bad_counter", 1), encoding="utf-8")
    result = envc("--no-qc")
    assert result.exit_code == 1
    assert row(result, "specs/counter.envspec").split()[-1] == "written"
    assert row(result, "specs/bad.envspec").split()[-1] == "error"
    assert sorted(p.name for p in (project / "out").iterdir()) == ["counter"]


def test_missing_spec_is_a_usage_error(project: Path) -> None:
    result = envc("specs/nope.envspec", "--no-qc")
    assert result.exit_code == 2, result.output
    assert "nope.envspec" in result.stderr
    empty = project / "empty"
    empty.mkdir()
    assert envc(str(empty), "--no-qc").exit_code == 2
    assert not (project / "out").exists()


def test_no_specs_at_all_is_a_usage_error(project: Path) -> None:
    (project / "specs" / "counter.envspec").unlink()
    result = envc("--no-qc")
    assert result.exit_code == 2
    assert "no specs" in result.stderr


# --------------------------------------------------------------------------- atomic replacement


def fail_on_nth_open(monkeypatch: pytest.MonkeyPatch, n: int, error: BaseException) -> None:
    """Make the n-th file replace_folder opens fail (it writes each file of the package)."""
    opened = 0

    def flaky(*args: Any, **kwargs: Any) -> Any:
        nonlocal opened
        opened += 1
        if opened == n:
            raise error
        return open(*args, **kwargs)

    monkeypatch.setattr(pipeline, "open", flaky, raising=False)


def test_failure_while_writing_keeps_the_old_package(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert envc("--no-qc").exit_code == 0
    before = snapshot(project / "out")
    edit_spec(project)
    fail_on_nth_open(monkeypatch, 4, OSError(28, "No space left on device"))
    result = envc("--no-qc")
    monkeypatch.undo()
    assert result.exit_code == 2, result.output  # an I/O error, like an unreadable spec
    assert "E6007" in result.stderr and "No space left on device" in result.stderr
    assert snapshot(project / "out") == before, "the old package is intact"
    assert leftovers(project / "out") == [], "no staging folder is left behind"
    monkeypatch.chdir(project)
    assert envc("--no-qc").exit_code == 0, "the next run recovers"
    assert envc("--check").exit_code == 0


def test_interrupt_while_writing_keeps_the_old_package(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert envc("--no-qc").exit_code == 0
    before = snapshot(project / "out")
    edit_spec(project)
    fail_on_nth_open(monkeypatch, 4, KeyboardInterrupt())
    options = pipeline.Options(output=project / "out", project_root=project, qc=False)
    with pytest.raises(KeyboardInterrupt):
        pipeline.compile_specs([project / "specs" / "counter.envspec"], options)
    monkeypatch.undo()
    assert snapshot(project / "out") == before
    assert leftovers(project / "out") == []


def test_failure_while_writing_a_new_package_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fail_on_nth_open(monkeypatch, 2, OSError(5, "Input/output error"))
    with pytest.raises(OSError):
        pipeline.replace_folder(tmp_path / "out" / "pkg", {"a.py": "a\n", "b/c.py": "c\n", "d.json": "{}\n"})
    assert os.listdir(tmp_path / "out") == []


def test_replace_folder_swaps_whole_packages(tmp_path: Path) -> None:
    folder = tmp_path / "out" / "pkg"
    pipeline.replace_folder(folder, {"a.py": "one\n", "sub/b.py": "two\n"})
    pipeline.replace_folder(folder, {"a.py": "three\n"})
    assert snapshot(folder) == {"a.py": b"three\n"}
    assert os.listdir(tmp_path / "out") == ["pkg"]
    mode = (folder / "a.py").stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert folder.stat().st_mode & 0o777 == 0o777 & ~umask
    assert mode == 0o666 & ~umask


# --------------------------------------------------------------------------- full QC (the two slow tests)


def test_full_qc_on_a_copy_of_ticketing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped spec compiles, passes every check, is cached, and matches generated/."""
    (project / "specs" / "counter.envspec").unlink()
    spec = copy_spec("ticketing", project / "specs" / "it_operations")  # where the shipped one is: same headers
    options = pipeline.Options(output=project / "out", project_root=project)
    [result] = pipeline.compile_specs([spec], options)
    assert result.status == "written", [d.message for d in result.diagnostics]
    assert (result.static, result.dynamic) == ("pass", "pass")
    assert result.tests.endswith(" passed") and int(result.tests.split()[0]) > 50
    assert result.diagnostics == []
    written = snapshot(project / "out" / "it_operations" / "ticketing")
    committed = snapshot(package_dir("ticketing"))
    assert {k: v for k, v in written.items() if k != packages.MANIFEST} == {
        k: v for k, v in committed.items() if k != packages.MANIFEST
    }, "the same spec gives the same package wherever it is compiled"
    assert list((project / ".envc-cache" / "qc").iterdir()), "a QC marker records the pass"

    def must_not_run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("QC already passed for these inputs")

    monkeypatch.setattr("compiler.check.check_packages", must_not_run)
    [again] = pipeline.compile_specs([spec], options)
    assert (again.status, again.static, again.dynamic) == ("up-to-date", "cached", "cached")


def test_failing_generated_test_writes_nothing(project: Path) -> None:
    wrong = COUNTER.replace("expect count == 2", "expect count == 3")
    (project / "specs" / "counter.envspec").write_text(wrong, encoding="utf-8")
    result = envc()
    assert result.exit_code == 1, result.output
    assert "E6002" in result.stderr and "test_bumping" in result.stderr
    step_line = wrong.splitlines().index("    expect count == 3") + 1
    assert f"counter.envspec:{step_line}:5 - error E6002" in result.stderr, "reported at the failing step"
    assert "::test_bumping - assert 2 == 3" in result.stderr, "pytest's message, whole"
    assert "fail" in row(result, "specs/counter.envspec").split()
    assert not (project / "out").exists() or snapshot(project / "out") == {}
    assert not (project / ".envc-cache" / "qc").exists() or not list((project / ".envc-cache" / "qc").iterdir())


@pytest.mark.parametrize(
    "step",
    [
        "expect count == 3",  # an assertion
        "bump(by=1) raises not_found",  # expect_error's pytest.fail: the call succeeds
        "bump(by=11)",  # a DomainError: the argument is refused
    ],
)
def test_a_failing_spec_test_is_reported_once_at_its_line(project: Path, step: str) -> None:
    """The generic invariants replay the spec's tests (same calls, same trace; threads);
    a test that fails is its own failure, so they compare it up to where it stopped
    rather than failing at the header line too. The failure is reported at the step
    that failed (the line of `run_NAME` its traceback passes through)."""
    wrong = COUNTER.replace("expect count == 2", step)
    (project / "specs" / "counter.envspec").write_text(wrong, encoding="utf-8")
    result = envc()
    assert result.exit_code == 1, result.output
    step_line = wrong.splitlines().index(f"    {step}") + 1
    reported = [line for line in result.stderr.splitlines() if " - error " in line]
    assert len(reported) == 1 and f"counter.envspec:{step_line}:5 - error E6002" in reported[0], reported
    assert "test_bumping" in reported[0]


# --------------------------------------------------------------------------- the compiler fingerprint

PACKAGE = Path(envc_project.__file__).resolve().parent
COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".*")


def checkout_copy(tmp_path: Path) -> Path:
    """The compiler package with its templates and grammar beside it, as in a source checkout."""
    top = tmp_path / "checkout"
    shutil.copytree(PACKAGE, top / "compiler", ignore=COPY_IGNORE)
    for name in ("templates", "grammar", "specs/prototypes"):
        shutil.copytree(ROOT / name, top / name, ignore=COPY_IGNORE)
    return top / "compiler"


def wheel_copy(checkout: Path, tmp_path: Path) -> Path:
    """The same files laid out as the wheel installs them (see pyproject.toml)."""
    package = tmp_path / "site-packages" / "compiler"
    shutil.copytree(checkout, package)
    for name, inside in (("templates", "templates"), ("grammar", "grammar"), ("specs/prototypes", "prototypes")):
        shutil.copytree(checkout.parent / name, package / inside)
    return package


def test_fingerprint_covers_every_module_of_the_package() -> None:
    assert envc_project.compiler_fingerprint() == envc_project.fingerprint_of(PACKAGE)
    keys = set(envc_project.fingerprint_files(PACKAGE))
    assert {
        "front/parse.py",
        "ir/__init__.py",
        "build/pipeline.py",
        "project.py",
        "lower/__init__.py",
        "grammar/envspec.lark",
    } <= keys
    assert {"templates/environment.py.jinja", "templates/README.md.jinja"} <= keys
    modules = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    excluded = envc_project.FINGERPRINT_EXCLUDED
    left_out = {module if module in excluded else module.split("/", 1)[0] for module in modules - keys}
    assert left_out == set(envc_project.FINGERPRINT_EXCLUDED), "every other module is covered"


def test_fingerprint_does_not_depend_on_the_layout(tmp_path: Path) -> None:
    checkout = checkout_copy(tmp_path)
    wheel = wheel_copy(checkout, tmp_path)
    assert envc_project.fingerprint_files(checkout).keys() == envc_project.fingerprint_files(wheel).keys()
    assert envc_project.fingerprint_of(checkout) == envc_project.fingerprint_of(wheel)
    assert not any(key.startswith(("prototypes/", "specs/")) for key in envc_project.fingerprint_files(wheel))


@pytest.mark.parametrize(
    "new_file",
    ["new_stage.py", "analyse_extra/__init__.py", "library/deep/nested.py", "lower/extra.py", "library/data.json"],
)
def test_a_new_file_in_the_package_changes_the_fingerprint(tmp_path: Path, new_file: str) -> None:
    package = checkout_copy(tmp_path)
    before = envc_project.fingerprint_of(package)
    path = package / new_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("VALUE = 1\n", encoding="utf-8")
    assert new_file in envc_project.fingerprint_files(package)
    assert envc_project.fingerprint_of(package) != before
    path.write_text("VALUE = 2\n", encoding="utf-8")
    assert envc_project.fingerprint_of(package) != before, "and so does editing it"


@pytest.mark.parametrize("where", ["templates/extra.jinja", "templates/partials/row.jinja", "grammar/envspec.lark"])
def test_templates_and_grammar_change_the_fingerprint(tmp_path: Path, where: str) -> None:
    package = checkout_copy(tmp_path)
    before = envc_project.fingerprint_of(package)
    path = package.parent / where
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n")
    assert envc_project.fingerprint_of(package) != before
    wheel = wheel_copy(package, tmp_path)
    assert envc_project.fingerprint_of(wheel) == envc_project.fingerprint_of(package)


def test_moving_code_between_modules_changes_the_fingerprint(tmp_path: Path) -> None:
    """Keys are hashed with the bytes: the same text under another name is another compiler."""
    package = checkout_copy(tmp_path)
    (package / "a.py").write_text("X = 1\n", encoding="utf-8")
    before = envc_project.fingerprint_of(package)
    (package / "a.py").rename(package / "b.py")
    assert envc_project.fingerprint_of(package) != before


@pytest.mark.parametrize(
    "unrelated",
    [
        "cli/compile.py",
        "front/fmt.py",
        "build/scaffold.py",
        "run/rollout.py",
        "__pycache__/parse.cpython-311.pyc",
        "lower/__pycache__/schema.cpython-311.pyc",
        ".parse.py.swp",
        "parse.py~",
        "prototypes/extra.envspec",
    ],
)
def test_files_that_cannot_shape_output_leave_the_fingerprint(tmp_path: Path, unrelated: str) -> None:
    package = checkout_copy(tmp_path)
    before = envc_project.fingerprint_of(package)
    path = package / unrelated
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n# edited\n")
    assert envc_project.fingerprint_of(package) == before


def test_no_fingerprinted_module_imports_an_excluded_one() -> None:
    """The excluded modules cannot shape the output only while nothing else uses them."""
    import ast

    excluded = {f"compiler.{name.removesuffix('.py').replace('/', '.')}" for name in envc_project.FINGERPRINT_EXCLUDED}
    assert "compiler.serve" in excluded  # a subpackage is excluded whole
    for key, path in envc_project.fingerprint_files(PACKAGE).items():
        if not key.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            used = {name for name in names if any(name == e or name.startswith(e + ".") for e in excluded)}
            assert not used, f"compiler/{key} imports {used}: take it out of FINGERPRINT_EXCLUDED"


def test_a_prototype_edit_reaches_the_manifest_through_its_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prototypes are not in the fingerprint: every manifest lists those its spec extends."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.envc]\noutput = "out"\n')
    (tmp_path / "specs" / "prototypes").mkdir(parents=True)
    copy_spec("ticketing", tmp_path / "specs")  # with the data files its scenarios read
    shutil.copy(ROOT / "specs" / "prototypes" / "transactional_workspace.envspec", tmp_path / "specs" / "prototypes")
    monkeypatch.chdir(tmp_path)
    assert envc("--no-qc").exit_code == 0
    manifest = json.loads((tmp_path / "out" / "ticketing" / packages.MANIFEST).read_text())
    assert "specs/prototypes/transactional_workspace.envspec" in manifest["inputs"]
    prototype = tmp_path / "specs" / "prototypes" / "transactional_workspace.envspec"
    prototype.write_text(prototype.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    result = envc("--check")
    assert result.exit_code == 1 and "stale: out/ticketing/.envc-manifest.json" in result.output, result.output


# --------------------------------------------------------------------------- the parse cache


PROTOTYPE_CHILD = """\
environment desk:
    title "Desk"
    extends "transactional_workspace"
"""


def _cached(folder: Path | None) -> parse_cache_module.ParseCache:
    return parse_cache_module.ParseCache(folder)


def test_parse_cache_hits_give_fresh_equal_modules(tmp_path: Path) -> None:
    """A second parse of the same text, in this process or the next (a new cache on the
    same folder), is a hit: the same IR, as new objects later stages may change."""
    text = COUNTER
    first = _cached(tmp_path)
    parsed = first.parse(text, "specs/counter.envspec")
    assert parsed.module is not None and first.misses == 1
    again = first.parse(text, "specs/counter.envspec")
    assert first.hits == 1 and again.module is not None and again.module is not parsed.module
    assert again.module.model_dump_json() == parsed.module.model_dump_json()
    again.module.tools[0].name = "changed"
    next_run = _cached(tmp_path)
    from_disk = next_run.parse(text, "specs/counter.envspec")
    assert next_run.hits == 1 and next_run.misses == 0 and from_disk.module is not None
    assert from_disk.module.model_dump_json() == parsed.module.model_dump_json()


def test_parse_cache_misses_for_changed_text_and_other_paths(tmp_path: Path) -> None:
    cache = _cached(tmp_path)
    cache.parse(COUNTER, "a.envspec")
    changed = cache.parse(COUNTER.replace('title "Counter"', 'title "Tally"'), "a.envspec")
    elsewhere = cache.parse(COUNTER, "b.envspec")
    assert cache.misses == 3 and cache.hits == 0
    assert changed.module is not None and changed.module.header is not None
    assert changed.module.header.title == "Tally"
    assert elsewhere.module is not None and elsewhere.module.path == "b.envspec"


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # cut short: a write that never finished
        lambda data: data.replace(b'"tools"', b'"tooLs"'),  # payload changed under its hash
        lambda data: b"",
        lambda data: b"envc-parse-1 " + b"0" * 64 + b"\nnot json",
    ],
    ids=["truncated", "bit-flip", "empty", "bad-payload"],
)
def test_parse_cache_ignores_and_removes_a_damaged_entry(tmp_path: Path, damage: Any) -> None:
    _cached(tmp_path).parse(COUNTER, "c.envspec")
    (entry,) = tmp_path.glob("*.json")
    entry.write_bytes(damage(entry.read_bytes()))
    cache = _cached(tmp_path)
    result = cache.parse(COUNTER, "c.envspec")
    assert cache.hits == 0 and cache.misses == 1
    assert result.module is not None and result.diagnostics == []
    fresh = parse_source(COUNTER, "c.envspec").module
    assert fresh is not None and result.module.model_dump_json() == fresh.model_dump_json()
    assert _cached(tmp_path).parse(COUNTER, "c.envspec").module is not None
    assert entry.read_bytes().startswith(b"envc-parse-1 ")  # rewritten whole


def test_parse_cache_never_uses_an_entry_of_another_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envc_project, "compiler_fingerprint", lambda: "envc version A")
    _cached(tmp_path).parse(COUNTER, "d.envspec")
    monkeypatch.setattr(envc_project, "compiler_fingerprint", lambda: "envc version B")
    other = _cached(tmp_path)
    other.parse(COUNTER, "d.envspec")
    assert other.hits == 0 and other.misses == 1
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_parse_cache_keeps_no_spec_with_syntax_errors(tmp_path: Path) -> None:
    cache = _cached(tmp_path)
    broken = COUNTER + "\ntool oops(:\n"
    first, second = cache.parse(broken, "e.envspec"), cache.parse(broken, "e.envspec")
    assert first.module is None and first.diagnostics
    assert second.diagnostics == first.diagnostics
    assert cache.misses == 2 and not list(tmp_path.glob("*.json"))


def test_parse_cache_without_a_writable_folder_still_parses(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", encoding="utf-8")
    cache = _cached(blocker / "parse")
    assert cache.parse(COUNTER, "f.envspec").module is not None
    assert cache.parse(COUNTER, "f.envspec").module is not None and cache.hits == 1  # in memory


def test_specs_extending_one_prototype_parse_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _cached(None)  # in memory only
    monkeypatch.setattr(parse_cache_module, "parse_cache", lambda: cache)
    for index in range(3):
        spec = tmp_path / f"desk{index}.envspec"
        spec.write_text(PROTOTYPE_CHILD.replace("desk", f"desk{index}"), encoding="utf-8")
        assert analyse_file(spec).environment is not None
    assert cache.misses == 4 and cache.hits == 2  # three specs, one prototype parsed once


def test_only_parses_worth_reading_back_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec the fast parser read is not written (writing costs what parsing took); its
    prototype is, and so is any text Lark had to parse (the fast parser refused it)."""
    cache = _cached(tmp_path / "parse")
    monkeypatch.setattr(parse_cache_module, "parse_cache", lambda: cache)
    spec = tmp_path / "desk.envspec"
    spec.write_text(PROTOTYPE_CHILD, encoding="utf-8")
    assert analyse_file(spec).environment is not None
    assert len(cache.memory) == 1 and len(list((tmp_path / "parse").glob("*.json"))) == 1
    assert analyse_file(spec).environment is not None
    assert (cache.hits, cache.misses) == (1, 3)  # the prototype from the cache, the spec parsed again
    monkeypatch.setattr(fastparse_decls, "parse_decls", lambda text: None)
    lark = cache.parse(COUNTER, "counter.envspec", remember=False)
    assert lark.by_lark and lark.module is not None and len(cache.memory) == 2
    assert cache.parse(COUNTER, "counter.envspec", remember=False).module is not None and cache.hits == 2


def test_parse_cache_memory_keeps_the_newest_within_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _cached(None)
    cache.parse(COUNTER, "g0.envspec")
    one_entry = len(next(iter(cache.memory.values())))
    monkeypatch.setattr(parse_cache_module, "PARSE_CACHE_IN_MEMORY_BYTES", 2 * one_entry + one_entry // 2)
    for index in range(1, 4):
        cache.parse(COUNTER, f"g{index}.envspec")
    assert len(cache.memory) == 2
    cache.parse(COUNTER, "g3.envspec")
    cache.parse(COUNTER, "g0.envspec")
    assert (cache.hits, cache.misses) == (1, 5)
