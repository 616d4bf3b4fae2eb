"""The references a model is given stay true (compiler/llm/reference.md, spec_reference.md).

Every ```envspec block of them parses; the body-language example also analyses in a
small spec that declares what it uses; and the list of built-ins in the prompt is the
registry's, so a new built-in reaches the model without editing the page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler import library
from compiler.analyse import analyse_source
from compiler.front.parse import parse_source
from compiler.llm import prompt

LLM = Path(__file__).resolve().parents[2] / "compiler" / "llm"
BLOCK = re.compile(r"```envspec\n(.*?)```", re.DOTALL)
HEADER = 'environment probe:\n    title "Probe"\n\n'
BLOCKS = [
    (page, text) for page in ("reference.md", "spec_reference.md") for text in BLOCK.findall((LLM / page).read_text())
]
CONTEXT = """\
record Book:
    id: int
    title: str
    due: optional[date]

state:
    books: map[int, Book] = {}
"""


@pytest.mark.parametrize(("page", "text"), BLOCKS, ids=[f"{p}-{i}" for i, (p, _) in enumerate(BLOCKS)])
def test_every_example_parses(page: str, text: str) -> None:
    source = text if text.startswith("environment") else HEADER + text
    result = parse_source(source, f"{page}.envspec")
    assert result.diagnostics == [], result.diagnostics


def test_the_body_example_analyses() -> None:
    (example,) = BLOCK.findall((LLM / "reference.md").read_text())
    result = analyse_source(HEADER + CONTEXT + "\n" + example, "probe.envspec")
    assert result.environment is not None and result.diagnostics == [], result.diagnostics


def test_the_prompt_lists_every_built_in_of_the_registry() -> None:
    text = prompt.language_reference()
    assert all(f"`{f.example}`" in text for f in library.FUNCTIONS.values())
    assert all(name in text for (_, name) in library.METHODS)
