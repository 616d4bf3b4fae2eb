"""Stage 3, analyse: from a loaded module to a resolved, typed `ir.Environment`.

A small driver over passes that each do one job and read what the previous ones
produced (docs/pipeline.md has the table):

1. `symbols`: the header, declarations and their names, built-in state, declared types;
2. `constants`: defaults, world data and scenarios checked and evaluated;
3. `types`: every body type-checked, names resolved (annotates `ty` and `ref`);
4. `effects`: each tool's and helper's read and write sets, from the typed bodies;
5. `tests_tasks`: tests and tasks against the tools; `families`: the task families (plan,
   requests, solution, verify).

`sources` (the `values` pools and every `from SOURCE` of a parameter or field) runs after
`constants`; its warning on write tools' free-text parameters, after `effects`.

Loading (files, prototypes, world JSON) is `compiler/front/load.py`. All problems come back
as diagnostics; a pass that finds errors does not stop the ones after it, so one run
reports as much as it can.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from compiler import ir
from compiler.analyse import constants, effects, families, lookups, sources, symbols, tests_tasks, types
from compiler.analyse.allow import drop_allowed
from compiler.analyse.context import Analysis
from compiler.diagnostics import Diagnostic, has_errors
from compiler.front.load import Loaded, data_file_key, load_file, load_source, prototypes_dir
from compiler.front.parse import gc_paused
from compiler.front.recovery import without_broken_declarations
from compiler.library import builtins as bi

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


def analyse_loaded(loaded: Loaded, recover: bool = True) -> AnalysisResult:
    """Run the passes over a loaded module (stage 3 alone); with `recover`, over the
    declarations that parsed when others did not (`_beside_syntax_errors`)."""
    module, diagnostics = loaded.module, list(loaded.diagnostics)
    if module is None and recover and _syntax_only(loaded):
        return _beside_syntax_errors(loaded)
    if module is None or has_errors(diagnostics):
        return AnalysisResult(None, module, _sorted(diagnostics), loaded.sources)
    analysis = Analysis(module, diagnostics, loaded.data_files, loaded.sources)
    try:
        with gc_paused():
            environment = run_passes(analysis)
    except RecursionError:
        diagnostics.append(Diagnostic("E1008", "spec is nested too deeply to analyse", module.path, 1, 1))
        environment = None
    if has_errors(diagnostics):
        environment = None
    return AnalysisResult(environment, module, _sorted(drop_allowed(diagnostics, loaded.sources)), loaded.sources)


PARSER_CODES = frozenset({"E2001", "E2017", "E3006"})
"""Codes the parser reports besides the syntax errors (`E1xxx`): a spec with them
parses to no module, like one with a syntax error."""


def _syntax_only(loaded: Loaded) -> bool:
    """Did only the parse of the spec's own file fail (not a prototype, nor a read)?"""
    main = next(iter(loaded.sources), None)
    return (
        main is not None
        and bool(loaded.diagnostics)
        and all(d.path == main and (d.code.startswith("E1") or d.code in PARSER_CODES) for d in loaded.diagnostics)
    )


def _beside_syntax_errors(loaded: Loaded) -> AnalysisResult:
    """The syntax errors, and the errors of the declarations that parsed.

    The broken declarations are blanked out of the text (`without_broken_declarations`)
    and the rest is loaded and analysed as usual. What they declared is missing from
    that analysis, so to keep its noise out, a diagnostic is dropped when its message
    names a broken declaration's name (or a field of a broken `state` or `world` block),
    or when it lies in a declaration whose text mentions one as a word. If the rest does
    not parse either, or the header is broken, the syntax errors are all there is."""
    path, source = next(iter(loaded.sources.items()))
    syntax = list(loaded.diagnostics)
    recovered = without_broken_declarations(source, {d.line for d in syntax})
    if recovered is None:
        return AnalysisResult(None, None, _sorted(syntax), loaded.sources)
    rest = analyse_loaded(load_source(recovered.text, path), recover=False)
    if rest.module is None:
        return AnalysisResult(None, None, _sorted(syntax), loaded.sources)
    word = re.compile(r"\b(" + "|".join(map(re.escape, sorted(recovered.names))) + r")\b") if recovered.names else None
    lines = source.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    tainted = {
        (first, last)
        for first, last in recovered.spans
        if word is not None and word.search("\n".join(lines[first - 1 : last]))
    }

    def noise(d: Diagnostic) -> bool:
        if word is None:
            return False
        if word.search(d.message):
            return True
        return d.path == path and any(first <= d.line <= last for first, last in tainted)

    kept = [d for d in rest.diagnostics if not noise(d)]
    return AnalysisResult(None, None, _sorted(syntax + kept), {**rest.sources, **loaded.sources})


def run_passes(a: Analysis) -> ir.Environment | None:
    symbols.run(a)
    constants.run(a)
    sources.run(a)
    types.run(a)
    summaries = effects.run(a)
    lookups.run(a)
    sources.unsourced_parameters(a)
    tests_tasks.run(a, summaries)
    families.run(a, summaries)
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
        families=a.module.families,
        inputs=_data_inputs(a),
        load_options=list(a.load_options.values()),
        on_load=a.on_load,
        value_pools=a.value_pools,
        personas=[persona.text for persona in a.module.personas],
    )


def _data_inputs(a: Analysis) -> list[str]:
    """The data files the environment's values came from (not those of a prototype's world
    field the spec re-declares, or of a dropped scenario): inputs of the generated package."""
    found = {data_file_key(a.world_file(w), w.source) for w in a.world.values() if w.source}
    found |= {data_file_key(a.state_file(name), f.source) for name, f in a.state.items() if f.source}
    found |= {data_file_key(s.file, s.source) for s in a.scenarios.values() if s.source}
    found |= {data_file_key(s.file, i.source) for s in a.scenarios.values() for i in s.items if i.source}
    found |= {data_file_key(pool.file, pool.source) for pool in a.module.values if pool.source}
    return sorted(found)


def _sorted(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    unique = {(d.path, d.line, d.col, d.code, d.message): d for d in diagnostics}
    return sorted(unique.values(), key=Diagnostic.sort_key)
