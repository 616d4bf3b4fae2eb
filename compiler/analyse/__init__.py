"""Stage 3, analyse: from a loaded module to a resolved, typed `ir.Environment`.

A small driver over passes that each do one job and read what the previous ones
produced (docs/pipeline.md has the table):

1. `symbols`: the header, declarations and their names, built-in state, declared types;
2. `constants`: defaults, world data and scenarios checked and evaluated;
3. `types`: every body type-checked, names resolved (annotates `ty` and `ref`);
4. `effects`: each tool's and helper's read and write sets, from the typed bodies;
5. `tests_tasks`: tests and tasks against the tools.

Loading (files, prototypes, world JSON) is `compiler/load.py`. All problems come back
as diagnostics; a pass that finds errors does not stop the ones after it, so one run
reports as much as it can.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from compiler import builtins as bi
from compiler import ir
from compiler.analyse import constants, effects, symbols, tests_tasks, types
from compiler.analyse.context import Analysis
from compiler.diagnostics import Diagnostic, has_errors
from compiler.load import Loaded, data_file_key, load_file, load_source, prototypes_dir
from compiler.parse import gc_paused

__all__ = ["AnalysisResult", "analyse_file", "analyse_source", "analyse_loaded", "prototypes_dir"]


@dataclass
class AnalysisResult:
    environment: ir.Environment | None
    module: ir.Module | None
    diagnostics: list[Diagnostic]
    sources: dict[str, str] = field(default_factory=dict)

    def inputs(self) -> list[str]:
        """Every file the result depends on: specs, prototypes and world data files."""
        files = set(self.sources)
        if self.environment is not None:
            files |= set(self.environment.inputs)
        return sorted(files)


def analyse_file(path: Path) -> AnalysisResult:
    return analyse_loaded(load_file(path))


def analyse_source(text: str, path: str) -> AnalysisResult:
    """Analyse spec text as if it were the file `path` (prototypes resolve beside it)."""
    return analyse_loaded(load_source(text, path))


def analyse_loaded(loaded: Loaded) -> AnalysisResult:
    """Run the passes over a loaded module (stage 3 alone)."""
    module, diagnostics = loaded.module, list(loaded.diagnostics)
    if module is None or has_errors(diagnostics):
        return AnalysisResult(None, module, _sorted(diagnostics), loaded.sources)
    analysis = Analysis(module, diagnostics, loaded.data_files)
    try:
        with gc_paused():
            environment = run_passes(analysis)
    except RecursionError:
        diagnostics.append(Diagnostic("E1008", "spec is nested too deeply to analyse", module.path, 1, 1))
        environment = None
    if has_errors(diagnostics):
        environment = None
    return AnalysisResult(environment, module, _sorted(diagnostics), loaded.sources)


def run_passes(a: Analysis) -> ir.Environment | None:
    symbols.run(a)
    constants.run(a)
    types.run(a)
    summaries = effects.run(a)
    tests_tasks.run(a, summaries)
    if has_errors(a.diags):
        return None
    constants.scenario_values(a)
    return _environment(a)


def _environment(a: Analysis) -> ir.Environment:
    records = [r for r in a.records.values() if r.name != bi.AUDIT_ENTRY.name]
    return ir.Environment(
        path=a.module.path,
        header=a.header,
        enums=list(a.enums.values()),
        records=[bi.AUDIT_ENTRY, *records],
        state=list(a.state.values()),
        world=list(a.world.values()),
        world_values=a.world_values,
        state_defaults=a.state_defaults,
        scenarios=list(a.scenarios.values()),
        scenario_values=a.scenario_values,
        tools=list(a.tools.values()),
        fns=list(a.fns.values()),
        tests=a.module.tests,
        tasks=a.module.tasks,
        inputs=_data_inputs(a),
        load_options=list(a.load_options.values()),
        on_load=a.on_load,
    )


def _data_inputs(a: Analysis) -> list[str]:
    """The data files the environment's values came from (not those of a prototype's world
    field the spec re-declares, or of a dropped scenario): inputs of the generated package."""
    found = {data_file_key(a.world_file(w), w.source) for w in a.world.values() if w.source}
    found |= {data_file_key(a.state_file(name), f.source) for name, f in a.state.items() if f.source}
    found |= {data_file_key(s.file, s.source) for s in a.scenarios.values() if s.source}
    found |= {data_file_key(s.file, i.source) for s in a.scenarios.values() for i in s.items if i.source}
    return sorted(found)


def _sorted(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    unique = {(d.path, d.line, d.col, d.code, d.message): d for d in diagnostics}
    return sorted(unique.values(), key=Diagnostic.sort_key)
