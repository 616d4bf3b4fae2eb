"""The command samples of README.md and docs/*.md are what the commands print today.

Each block marked `<!-- refresh -->` is rerun in a fresh clone by tests/refresh_docs.py
(the same code that rewrites them) and compared in every column but `envc compile`'s
`time`. A sample that fails here: run `python tests/refresh_docs.py` and review the diff.
"""

from __future__ import annotations

import re

import pytest
from refresh_docs import ROOT, Sample, all_samples, comparable, documents, run_sample

TABLE_HEADER = re.compile(r"^spec +env +tools r/w +lines .* time +result$", re.MULTILINE)
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NOT_RERUN = {
    "docs/qc.md": 1,  # E6001/E6002 on hand-made specs-x/typo, shelf and ratio, not in the repo
}
"""Blocks holding `envc compile`'s table that are not samples, per file, and why."""

TABLE = """\
$ envc compile specs/productivity/calendar.envspec
spec                    env            tools r/w  lines  static  dynamic  tests       time   result
specs/productivity/calendar.envspec  team_calendar  4/5        4042   pass    pass     152 passed  1.04s  unchanged
"""


@pytest.mark.parametrize("sample", all_samples(), ids=lambda sample: sample.name)
def test_the_sample_is_what_its_commands_print(sample: Sample) -> None:
    assert comparable(run_sample(sample)) == comparable(sample.body), (
        f"{sample.name} is stale: run `python tests/refresh_docs.py`"
    )


def test_the_readme_shows_a_sample_of_compile() -> None:
    commands = [c for s in all_samples() if s.path == ROOT / "README.md" for c in s.commands]
    assert "envc compile specs/productivity/calendar.envspec" in commands


def test_only_the_time_column_may_differ() -> None:
    faster = TABLE.replace("1.04s  unchanged", "12.50s  unchanged").replace("time   result", "time    result")
    assert comparable(faster) == comparable(TABLE)
    assert (
        "specs/productivity/calendar.envspec | team_calendar | 4/5 | 4042 | pass | pass | 152 passed | <time> | unchanged"
        in (comparable(TABLE))
    )
    for before, after in [("4042", "3999"), ("152 passed", "151 passed"), ("unchanged", "written"), ("4/5", "5/4")]:
        assert comparable(TABLE.replace(before, after)) != comparable(TABLE), after
    assert comparable(TABLE + "stale: generated/x\n") != comparable(TABLE)


def test_every_compile_table_is_a_sample_or_named_as_not_rerun() -> None:
    unmarked: dict[str, int] = {}
    for path in documents():
        text = path.read_text(encoding="utf-8")
        bodies = {s.body for s in all_samples() if s.path == path}
        for block in FENCE.finditer(text):
            if TABLE_HEADER.search(block[1]) and block[1] not in bodies:
                name = path.relative_to(ROOT).as_posix()
                unmarked[name] = unmarked.get(name, 0) + 1
    assert unmarked == NOT_RERUN
