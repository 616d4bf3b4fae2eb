"""IR printed for prompts reads back as the same IR (compiler/llm/render.py).

Every body, test and task of every shipped spec and prototype is printed and parsed
again; the two trees must agree, positions aside. So what a model is shown is exactly
what the spec means, after prototypes are merged and renamed.
"""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path
from typing import Any

import pytest
from shipped import library_specs

from compiler import ir
from compiler.front.load import load_file
from compiler.front.parse import parse_source
from compiler.llm import render
from compiler.llm.fill import _without_positions

ROOT = Path(__file__).resolve().parents[2]
SPECS = library_specs() + sorted((ROOT / "specs" / "prototypes").glob("*.envspec"))
HEAD = 'environment t:\n    title "t"\n\n'


@functools.cache
def merged(spec: Path) -> ir.Module:
    module = load_file(spec).module
    assert module is not None
    return module


def parsed(text: str) -> ir.Module:
    result = parse_source(HEAD + text, "probe.envspec")
    assert result.module is not None, (text, result.diagnostics)
    return result.module


def same(a: Any, b: Any) -> bool:
    return bool(_without_positions(a) == _without_positions(b))


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_bodies_round_trip(spec: Path) -> None:
    for decl in [*merged(spec).tools, *merged(spec).fns]:
        if decl.escape is not None:
            continue
        text = "tool probe() -> None:\n" + textwrap.indent(render.body_text(decl.body), "    ")
        back = parsed(text).tools[0].body
        assert same([s.model_dump() for s in back], [s.model_dump() for s in decl.body]), decl.name


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_tests_tasks_records_and_signatures_round_trip(spec: Path) -> None:
    module = merged(spec)
    for test in module.tests:
        assert same(
            parsed(render.test_text(test) + "\n").tests[0].model_dump(exclude={"file"}),
            test.model_dump(exclude={"file"}),
        )
    for task in module.tasks:
        assert same(
            parsed(render.task_text(task) + "\n").tasks[0].model_dump(exclude={"file"}),
            task.model_dump(exclude={"file"}),
        )
    wording = {"values_from"}  # a source is a `describe` line of the spec, not part of the declaration
    for record in module.records:
        back = parsed(render.record_text(record) + "\n").records[0]
        assert same(
            [f.model_dump(exclude=wording) for f in back.fields], [f.model_dump(exclude=wording) for f in record.fields]
        )
        assert back.doc == record.doc
    for decl in module.tools:
        back_tool = parsed(render.callable_text(decl) + "\n").tools[0]
        assert same(
            [p.model_dump(exclude=wording) for p in back_tool.params],
            [p.model_dump(exclude=wording) for p in decl.params],
        )
        assert (back_tool.declared_reads, back_tool.declared_writes) == (decl.declared_reads, decl.declared_writes)


def test_precedence_is_kept_with_the_fewest_parentheses() -> None:
    source = "let a = (1 + 2) * 3 - -x\nlet b = not (p and q) or r\nlet c = (y if p else z).title\nreturn a\n"
    body = (
        parsed(
            "tool probe(x: int, p: bool, q: bool, r: bool, y: Book, z: Book) -> int:\n"
            + textwrap.indent(source, "    ")
        )
        .tools[0]
        .body
    )
    assert render.body_text(body) == source
