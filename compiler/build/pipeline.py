"""`envc compile`: analyse, lower and check specs, then write or compare the output.

Generation yields an in-memory map of files, so writing (`compile`) and comparing
(`compile --check`) share one code path. Each output folder carries a manifest with
the hash of every file envc wrote and of every input it read: hand edits are detected
(and never overwritten silently), and a spec whose inputs did not change is skipped
without re-running anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.build.packages import MANIFEST, read_manifest
from compiler.diagnostics import Diagnostic, has_errors
from compiler.project import compiler_fingerprint, configured_output, display_path, mirrored_output

if TYPE_CHECKING:  # the stages load lazily: an up-to-date run needs none of them
    from compiler.analyse import AnalysisResult
    from compiler.check.package import CheckResult, Package
    from compiler.llm.stats import HealStats


@dataclass
class SpecResult:
    """What happened to one spec; the CLI prints one summary row from it."""

    spec: str
    name: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    read_tools: int = 0
    write_tools: int = 0
    lines: int = 0
    static: str = "-"  # "pass", "fail", "skipped", "cached", "-"
    dynamic: str = "-"
    tests: str = ""
    status: str = "error"  # "written", "unchanged", "up-to-date", "stale", "error"
    stale_files: list[str] = field(default_factory=list)
    seconds: float = 0.0
    remap: Callable[[Diagnostic], Diagnostic] | None = None
    """Takes a diagnostic of the spec with its `llm` fills spliced in back to the files
    on disk (compiler/llm/fill.py); None for a spec without holes."""

    @property
    def ok(self) -> bool:
        return self.status in ("written", "unchanged", "up-to-date")


@dataclass
class Options:
    output: Path
    project_root: Path
    check_only: bool = False
    qc: bool = True
    force: bool = False
    offline: bool = False
    """Never ask a model: an `llm` body without a current fill in envc.lock is an error."""
    llm_log: Callable[[str], None] | None = None
    heal_stats: HealStats | None = None
    """Collects the healing pass rates of the fills asked for during the run."""
    jobs: int = 1
    """Worker processes that analyse and lower specs (compiler/build/parallel.py); the output
    is the same for any number."""
    on_lost_worker: Callable[[str], None] | None = None
    """Told when a worker process died (its specs are then done in this process)."""


def _sha(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- manifest


def _inputs_digest(inputs: list[str], root: Path) -> str | None:
    digest = hashlib.sha256(compiler_fingerprint().encode())
    for name in inputs:
        try:
            digest.update(name.encode())
            digest.update((root / name).read_bytes())
        except OSError:
            return None
    return digest.hexdigest()


def _disk_matches(folder: Path, files: dict[str, str]) -> list[str]:
    """Files whose content on disk differs from `files` (hashes), plus strays."""
    differing = []
    for relative, sha in files.items():
        try:
            if _sha((folder / relative).read_bytes()) != sha:
                differing.append(relative)
        except OSError:
            differing.append(relative)
    return differing + _strays(folder, set(files))


def _strays(folder: Path, known: set[str]) -> list[str]:
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.name != MANIFEST:
            relative = path.relative_to(folder).as_posix()
            if relative not in known and not relative.startswith(".pytest_cache"):
                found.append(relative)
    return found


# --------------------------------------------------------------------------- compile


def compile_specs(
    specs: list[Path], options: Options, progress: Callable[[str], None] | None = None
) -> list[SpecResult]:
    """Each spec up to date, or analysed and lowered (on `options.jobs` worker processes
    when that pays), then every lowered package checked in one go and written; one
    result per spec, in the order of `specs`, the same for any number of workers."""
    results: list[SpecResult] = []
    stale: list[int] = []
    for spec in specs:
        started = time.perf_counter()
        result = SpecResult(spec=display_path(spec, options.project_root))
        results.append(result)
        if _up_to_date(spec, result, options):
            result.seconds = time.perf_counter() - started
            if progress:
                progress(result.spec)
        else:
            stale.append(len(results) - 1)
    pending: list[tuple[SpecResult, Package, dict[str, str], float]] = []
    jobs = [(specs[index], results[index].spec) for index in stale]
    for index, (done, package) in zip(stale, _lower_in_workers(jobs, options), strict=True):
        spec = specs[index]
        if progress:
            progress(results[index].spec)
        if done is None:  # not lowered in a worker: here, with its `llm` fills
            started = time.perf_counter()
            package = _lower_spec(spec, results[index], options)
            results[index].seconds = time.perf_counter() - started
        else:
            results[index] = done
        if package is not None:
            pending.append((results[index], package, _manifest_files(package, spec, results[index], options), 0.0))
    _refuse_shared_names(results)
    _check_and_write([p for p in pending if not has_errors(p[0].diagnostics)], options)  # warnings do not stop it
    return results


def _refuse_shared_names(results: list[SpecResult]) -> None:
    """Two specs naming the same environment would overwrite one folder in turn, or, in
    two folders of the output, leave a task's environment name meaning two packages:
    each is an error naming both specs (up-to-date ones included)."""
    by_name: dict[str, list[SpecResult]] = {}
    for result in results:
        if result.name:
            by_name.setdefault(result.name, []).append(result)
    for name, sharing in by_name.items():
        if len(sharing) > 1:
            specs = ", ".join(r.spec for r in sharing)
            for result in sharing:
                result.diagnostics.append(Diagnostic("E6005", f"{specs} all generate `{name}`", str(result.spec), 1, 1))
                result.status = "error"


def package_parent(spec: str, options: Options) -> Path:
    """The folder a spec's package goes in, from its shown path (`SpecResult.spec`): the
    output root mirrored by the spec's folder below specs/ (compiler/project.py)."""
    return mirrored_output(options.project_root / spec, options.project_root, options.output)


def _up_to_date(spec: Path, result: SpecResult, options: Options) -> bool:
    """The fast path: inputs and compiler unchanged, and the output untouched on disk."""
    for folder in sorted(package_parent(result.spec, options).glob("*")):
        if folder.name.startswith("."):  # staging or backup folders of an interrupted write
            continue
        manifest = read_manifest(folder)
        if not manifest or manifest.get("spec") != result.spec:
            continue
        inputs = manifest.get("inputs")
        files = manifest.get("files")
        if not isinstance(inputs, list) or not isinstance(files, dict):
            return False
        digest = _inputs_digest([str(i) for i in inputs], options.project_root)
        if digest is None or manifest.get("inputs_sha") != digest:
            return False
        if _disk_matches(folder, {str(k): str(v) for k, v in files.items()}):
            return False
        if options.qc and not _qc_marker(options, str(manifest.get("inputs_sha"))).exists():
            return False
        result.name = folder.name
        summary = manifest.get("summary", {})
        if isinstance(summary, dict):
            result.read_tools = int(summary.get("read_tools", 0))
            result.write_tools = int(summary.get("write_tools", 0))
            result.lines = int(summary.get("lines", 0))
        result.static = result.dynamic = "cached" if options.qc else "skipped"
        result.status = "up-to-date"
        return True
    return False


def current_package(spec: Path, root: Path) -> Path | None:
    """The output folder holding `spec`'s package when it is up to date (same inputs, same
    compiler, files as written), else None; for stages that run generated packages."""
    options = Options(output=configured_output(root).resolve(), project_root=root, qc=False)
    result = SpecResult(spec=display_path(spec, root))
    return package_parent(result.spec, options) / result.name if _up_to_date(spec, result, options) else None


def _qc_marker(options: Options, inputs_sha: str) -> Path:
    """Proof that output for these exact inputs passed QC; kept out of the manifest so
    the generated tree stays the same whether or not checks ran."""
    return options.project_root / ".envc-cache" / "qc" / inputs_sha


def _lower_alone(job: tuple[Path, str]) -> tuple[SpecResult | None, Package | None]:
    """`_lower_spec` of one spec as a worker process runs it: the result and the package,
    or (None, None) for a spec with `llm` bodies (its fills may ask a model, log and count
    heal rates: that stays in the main process, which lowers it then)."""
    from compiler.llm import resolve

    started = time.perf_counter()
    spec, display = job
    result = SpecResult(spec=display)
    analysis = _analysed(spec, result)
    if analysis is not None and resolve.has_holes(analysis):
        return None, None
    package = _lowered(spec, analysis, [], result) if analysis is not None else None
    result.seconds = time.perf_counter() - started
    return result, package


def _lower_in_workers(jobs: list[tuple[Path, str]], options: Options) -> list[tuple[SpecResult | None, Package | None]]:
    """`_lower_alone` of each (spec, display name) on worker processes, or nothing done
    ((None, None) each: the caller lowers them itself) when workers would not pay."""
    from compiler.build import parallel

    if not parallel.worth_it(options.jobs, len(jobs)):
        return [(None, None)] * len(jobs)
    return parallel.map_in_workers(_lower_alone, jobs, options.jobs, options.on_lost_worker)


def _lower_spec(spec: Path, result: SpecResult, options: Options) -> Package | None:
    analysis = _analysed(spec, result)
    if analysis is None:
        return None
    filled = _with_fills(spec, analysis, result, options)
    if filled is None:
        return None
    analysis, extra_inputs = filled
    return _lowered(spec, analysis, extra_inputs, result)


def _analysed(spec: Path, result: SpecResult) -> AnalysisResult | None:
    """The spec analysed, its diagnostics noted; None when it yields no environment."""
    from compiler.analyse import analyse_file

    analysis = analyse_file(spec)
    result.diagnostics.extend(analysis.diagnostics)
    return analysis if analysis.environment is not None else None


def _lowered(spec: Path, analysis: AnalysisResult, extra_inputs: list[str], result: SpecResult) -> Package | None:
    from compiler.check.package import Package
    from compiler.lower import lower
    from compiler.lower.errors import LoweringError

    env = analysis.environment
    assert env is not None
    result.name = env.header.name
    result.read_tools = sum(1 for t in env.tools if not t.writes)
    result.write_tools = sum(1 for t in env.tools if t.writes)
    try:
        files = lower(env, result.spec)
    except LoweringError as exc:
        result.diagnostics.append(Diagnostic("E6001", str(exc), str(spec), env.header.line or 1, 1))
        return None
    result.lines = sum(text.count("\n") for path, text in files.items() if path.endswith(".py"))
    return Package(env=env, name=env.header.name, files=files, inputs=[*analysis.inputs(), *extra_inputs])


# --------------------------------------------------------------------------- llm fills


def _with_fills(
    spec: Path, analysis: AnalysisResult, result: SpecResult, options: Options
) -> tuple[AnalysisResult, list[str]] | None:
    """The spec with its `llm` bodies filled from envc.lock (or by the model, when not
    offline and not checking), and the files that then shape the output too (the lock,
    pyproject.toml); unchanged for a spec without holes. None when a fill is missing."""
    from compiler.llm import resolve

    if not resolve.has_holes(analysis):
        return analysis, []
    mode: resolve.Mode = "check" if options.check_only else "offline" if options.offline else "build"
    fill_options = resolve.FillOptions(
        root=options.project_root, mode=mode, qc=options.qc, display=result.spec, log=options.llm_log or _quiet
    )
    if options.heal_stats is not None:
        fill_options.stats = options.heal_stats
    resolved = resolve.resolve_spec(spec, analysis, fill_options)
    result.diagnostics.extend(resolved.diagnostics)
    if resolved.analysis is None or resolved.analysis.environment is None:
        return None
    result.remap = resolved.original
    return resolved.analysis, resolved.inputs


def _quiet(_message: str) -> None:
    pass


def _manifest_files(package: Package, spec: Path, result: SpecResult, options: Options) -> dict[str, str]:
    root = options.project_root
    inputs = sorted({display_path(Path(name), root) for name in package.inputs} | {result.spec})
    manifest = {
        "spec": result.spec,
        "inputs": inputs,
        "inputs_sha": _inputs_digest(inputs, root),
        "files": {path: _sha(text) for path, text in package.files.items()},
        "summary": {"read_tools": result.read_tools, "write_tools": result.write_tools, "lines": result.lines},
    }
    return {**package.files, MANIFEST: json.dumps(manifest, indent=2, sort_keys=True) + "\n"}


def _check_and_write(pending: list[tuple[SpecResult, Package, dict[str, str], float]], options: Options) -> None:
    if not pending:
        return
    from compiler.check import check_packages
    from compiler.check.positions import to_diagnostics

    started = time.perf_counter()
    checks: dict[str, CheckResult] = {}
    if options.qc:
        checks = check_packages([package for _, package, _, _ in pending], dynamic=True)
    share = (time.perf_counter() - started) / len(pending)
    for result, package, files, _ in pending:
        result.seconds += share
        check = checks.get(package.name)
        if check is not None:
            result.static = "pass" if check.static_ok else "fail"
            result.dynamic = "pass" if check.dynamic_ok else "fail"
            result.tests = f"{check.tests_passed} passed" + (
                f", {check.tests_failed} failed" if check.tests_failed else ""
            )
            found = to_diagnostics(package, check)
            result.diagnostics.extend(map(result.remap, found) if result.remap else found)
            if not (check.static_ok and check.dynamic_ok):
                result.status = "error"
                continue
        else:
            result.static = result.dynamic = "skipped"
        folder = package_parent(result.spec, options) / package.name
        differing = _differences(folder, files)
        if options.check_only:
            result.status = "stale" if differing else "up-to-date"
            result.stale_files = differing
            if differing:
                shown = ", ".join(differing[:8]) + (" ..." if len(differing) > 8 else "")
                message = f"{display_path(folder, options.project_root)} does not match the spec: {shown}"
                result.diagnostics.append(Diagnostic("E6003", message, str(result.spec), 1, 1))
            continue
        if not differing:
            result.status = "unchanged"
            if check is not None:
                _mark_checked(options, files)
            continue
        edited = _hand_edits(folder)
        if edited and not options.force:
            result.status = "error"
            result.stale_files = edited
            result.diagnostics.append(
                Diagnostic(
                    "E6006",
                    f"{display_path(folder, options.project_root)} has files changed by hand or not made by envc: {', '.join(edited)}; nothing was written",
                    str(result.spec),
                    1,
                    1,
                    hint="move your changes into the spec, or pass --force to overwrite them",
                )
            )
            continue
        try:
            replace_folder(folder, files)
        except OSError as exc:
            result.status = "error"
            message = f"cannot write {display_path(folder, options.project_root)}: {exc.strerror or exc}"
            result.diagnostics.append(Diagnostic("E6007", message, str(result.spec), 1, 1))
            continue
        result.status = "written"
        if check is not None:
            _mark_checked(options, files)


def _mark_checked(options: Options, files: dict[str, str]) -> None:
    manifest = json.loads(files[MANIFEST])
    marker = _qc_marker(options, str(manifest["inputs_sha"]))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("passed\n", encoding="utf-8")


def _differences(folder: Path, files: dict[str, str]) -> list[str]:
    """Files that would change: new, different, or present on disk but not generated."""
    differing = []
    for relative, text in files.items():
        try:
            if (folder / relative).read_bytes() != text.encode("utf-8"):
                differing.append(relative)
        except OSError:
            differing.append(relative)
    return differing + _strays(folder, set(files))


def _hand_edits(folder: Path) -> list[str]:
    """Files in an existing output folder that envc did not write as they are now."""
    if not folder.exists():
        return []
    manifest = read_manifest(folder)
    files = manifest.get("files") if manifest else None
    if not isinstance(files, dict):
        return _strays(folder, set())
    return _disk_matches(folder, {str(k): str(v) for k, v in files.items()})


def replace_folder(folder: Path, files: dict[str, str]) -> None:
    """Write a whole package beside the old one, then swap: never half a package."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes it private; the package is not
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        backup = folder.parent / f".{folder.name}.old"
        if backup.exists():
            shutil.rmtree(backup)
        if folder.exists():
            os.replace(folder, backup)
        try:
            os.replace(staging, folder)
        except OSError:
            if backup.exists():
                os.replace(backup, folder)  # put the old package back
            raise
        if backup.exists():
            shutil.rmtree(backup)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
