"""The effects the types pass infers as it checks a body (`effects.infer_while_checking`,
the type checker calling the effects hooks) are exactly those of `EffectWalker`'s own
walk of the typed body: the same first node reading and writing each field, the same
alias roots, raised errors, diagnostics and undo-journal marks. Checked on every shipped
spec, fixture and corpus file, and on the benchmark spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from shipped import library_specs

from benchmarks.frontend import generate
from compiler import ir
from compiler.analyse import constants, effects, symbols, types
from compiler.analyse.context import Analysis
from compiler.front.load import Loaded, load_file, load_source
from compiler.ir.tree import walk

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted([*library_specs(), *ROOT.glob("tests/**/*.envspec")])
PARSED = [path for path in SPECS if load_file(path).module is not None]  # (not the corpus's syntax errors)


def _typed(loaded: Loaded) -> Analysis:
    assert loaded.module is not None
    a = Analysis(loaded.module, [], loaded.data_files, loaded.sources)
    symbols.run(a)
    constants.run(a)
    types.run(a)
    return a


def _marks(module: ir.Module) -> list[tuple[int, bool, bool]]:
    """The undo-journal marks the effects rules set, and whether they were set."""
    found = []
    for node in walk(module):
        if isinstance(node, (ir.Assign, ir.Delete)):
            found.append((id(node), node.touches_state, "touches_state" in node.model_fields_set))
        elif isinstance(node, ir.Call):
            found.append((id(node), node.mutates_state, "mutates_state" in node.model_fields_set))
    return found


def _found(hooks: effects.BodyEffects) -> tuple[Any, ...]:
    fx = hooks.effects
    return (
        [(name, id(node)) for name, node in fx.reads.items()],
        [(name, id(node)) for name, node in fx.writes.items()],
        fx.return_roots,
        fx.errors,
        hooks.held,
    )


def _compare(a: Analysis) -> int:
    """Walk every body again with `EffectWalker` and compare; the number of bodies the
    type checker's walk inferred (not walked again because of an error)."""
    inferred: dict[int, effects.BodyEffects] = dict(a.inferred_effects)
    marks = _marks(a.module)
    a.inferred_effects.clear()
    summaries = effects.run(a)  # every body walked by EffectWalker
    assert _marks(a.module) == marks
    bodies = [(fn, True) for fn in a.fns.values()] + [(tool, False) for tool in a.tools.values()]
    if a.on_load is not None:
        bodies.append((a.on_load, True))
    fused = 0
    for body, is_helper in bodies:
        walker = effects.EffectWalker(a, summaries, body, is_helper)
        walker.held = []
        walker.check()
        hooks = inferred[id(body)]
        assert _found(hooks) == _found(walker), body.name
        fused += type(hooks) is effects.BodyEffects
    return fused


def test_specs_are_found() -> None:
    assert len(PARSED) > 150


@pytest.mark.parametrize("path", PARSED, ids=lambda p: str(p.relative_to(ROOT)))
def test_inferred_effects_are_those_of_the_walk(path: Path) -> None:
    _compare(_typed(load_file(path)))


def test_benchmark_spec_is_inferred_in_one_walk() -> None:
    """A clean spec: every body's effects come from the type checker's walk."""
    a = _typed(load_source(generate(300), "bench.envspec"))
    assert a.diags == []
    assert _compare(a) == len(a.fns) + len(a.tools) - sum(1 for fn in a.fns.values() if fn.recursion)


CHAIN_SPEC = """environment chains:
    title "Chains"

state:
    total: int = 0
    limit: int = 10

tool bounded(n: int) -> bool:
    require 0 <= n <= limit else invalid_argument("out of range")
    require total < n < limit else invalid_argument("out of range")
    total = n
    return True
"""


def test_comparison_chains_are_inferred_in_the_check() -> None:
    """A chain whose first operand is a constant (checked after the next operand) still
    goes the way of the effects walk: the constant reads nothing."""
    a = _typed(load_source(CHAIN_SPEC, "chains.envspec"))
    assert a.diags == []
    assert _compare(a) == 1
    assert (a.tools["bounded"].reads, a.tools["bounded"].writes) == (["limit", "total"], ["total"])
