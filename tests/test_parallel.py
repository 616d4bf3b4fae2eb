"""Specs on worker processes (compiler/build/parallel.py): `envc check` and `envc compile` give
the same output with any number of workers, in the same order, and a worker that dies
costs time, not results."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from llm.conftest import SPEC as LLM_SPEC
from test_pipeline import BROKEN, COUNTER, snapshot

from compiler.analyse.cache import CHECK_CACHE_SWITCH
from compiler.build import parallel
from compiler.cli import app as cli_module

ROOT = Path(__file__).resolve().parent.parent
PARENT = os.getpid()


def square(n: int) -> int:
    return n * n


def dies_in_a_worker(n: int) -> int:
    """Kills the worker process it runs in at 3 (a crash); in the test process, squares."""
    if n == 3 and os.getpid() != PARENT:
        os._exit(9)
    return n * n


def fails_at_three(n: int) -> int:
    if n == 3:
        raise ValueError("three")
    return n


def test_results_come_back_in_the_order_of_the_items() -> None:
    assert parallel.map_in_workers(square, list(range(12)), jobs=3) == [n * n for n in range(12)]


def test_an_exception_of_a_task_is_raised_again() -> None:
    with pytest.raises(ValueError, match="three"):
        parallel.map_in_workers(fails_at_three, list(range(8)), jobs=2)


def test_a_dead_worker_is_reported_and_its_items_are_done_here() -> None:
    told: list[str] = []
    assert parallel.map_in_workers(dies_in_a_worker, list(range(8)), jobs=2, on_lost=told.append) == [
        n * n for n in range(8)
    ]
    assert len(told) == 1 and "run in this process" in told[0]


def test_few_items_or_one_job_start_no_worker() -> None:
    assert not parallel.worth_it(1, 20)
    assert not parallel.worth_it(4, parallel.MIN_ITEMS - 1)
    assert parallel.worth_it(2, parallel.MIN_ITEMS)


def test_the_default_is_one_worker_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(6)))
    assert parallel.default_jobs() == 6


# --------------------------------------------------------------------------- the commands


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Five small specs, one with an analysis error and one with an `llm` body (no fill:
    with --offline an error, reported from the main process)."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.envc]\noutput = "out"\n')
    specs = tmp_path / "specs"
    specs.mkdir()
    for index in range(1, 4):
        text = COUNTER.replace("environment counter:", f"environment counter{index}:")
        (specs / f"counter{index}.envspec").write_text(text, encoding="utf-8")
    (specs / "broken.envspec").write_text(BROKEN.replace("environment counter:", "environment broken:"))
    (specs / "shelf.envspec").write_text(LLM_SPEC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(CHECK_CACHE_SWITCH, "0")  # every run analyses, on the workers asked for
    yield tmp_path


def envc(*args: str) -> Result:
    return CliRunner().invoke(cli_module.cli, list(args), catch_exceptions=False)


def without_times(text: str) -> str:
    return re.sub(r"\b\d+\.\d\ds\b", "T", text)


def test_compile_writes_the_same_bytes_and_rows_with_one_job_or_several(project: Path) -> None:
    one = envc("compile", "--no-qc", "--offline", "--jobs", "1", "-o", "one")
    several = envc("compile", "--no-qc", "--offline", "--jobs", "2", "-o", "several")
    assert one.exit_code == several.exit_code == 1  # the broken spec and the unfilled llm body
    assert without_times(one.output) == without_times(several.output)
    assert "specs/broken.envspec" in one.output and "specs/shelf.envspec" in one.output
    written = snapshot(project / "one")
    assert sorted({name.split("/")[0] for name in written}) == ["counter1", "counter2", "counter3"]
    assert written == snapshot(project / "several")


def test_check_prints_the_same_with_one_job_or_several(project: Path) -> None:
    for fmt in ("text", "json"):
        one = envc("check", "specs", "--format", fmt, "--jobs", "1")
        several = envc("check", "specs", "--format", fmt, "--jobs", "2")
        assert one.exit_code == several.exit_code == 1
        assert one.output == several.output
        assert "E3004" in one.output


def test_check_of_the_shipped_specs_is_the_same_on_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHECK_CACHE_SWITCH, "0")
    # One domain's folder of the library (several specs, data files, two archetypes):
    # the whole library would only repeat the same comparison 80 more times.
    specs = str(ROOT / "specs" / "productivity")
    one = envc("check", specs, "--format", "json", "--jobs", "1")
    several = envc("check", specs, "--format", "json")
    assert one.exit_code == several.exit_code == 0
    assert one.output == several.output
