"""The docs point at files that exist: every relative link of README.md and docs/, and
every `compiler/….py` path they name in code quotes (docs/benchmarks.md excepted: its
rounds are dated records of the code as it was)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
DATED = {ROOT / "docs" / "benchmarks.md"}
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
QUOTED_MODULE = re.compile(r"`(compiler/[\w/]+\.py)`")


def broken_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    targets = [m[1] for m in LINK.finditer(text) if not re.match(r"[a-z]+:", m[1])]
    return [target for target in targets if not (page.parent / target).exists()]


def missing_modules(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [m[1] for m in QUOTED_MODULE.finditer(text) if not (ROOT / m[1]).is_file()]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_lead_to_files(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", [p for p in PAGES if p not in DATED], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_named_modules_exist(page: Path) -> None:
    assert missing_modules(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("See [the parser](../compiler/parse.py), `compiler/nowhere.py` and [web](https://x.org).\n")
    assert broken_links(page) == ["../compiler/parse.py"]
    assert missing_modules(page) == ["compiler/nowhere.py"]
