"""Where and how `envc compile` reports a failing generated test or static check
(compiler/check/positions.py): a task's verify says when it ran and against which state
(issue 24), at the `verify` line."""

from __future__ import annotations

from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.check.positions import to_diagnostics
from compiler.lower import lower

SPEC = """environment shelf:
    title "Shelf"

state:
    books: list[str] = ["Dune"]

scenario stocked:
    books = ["Dune", "Emma"]

tool add(title: str) -> int:
    books.append(title)
    return len(books)

task add_emma:
    scenario stocked
    request "Add Emma."
    solution:
        add(title="Emma")
    verify "Emma" in books
"""


def _diagnostics(text: str) -> list[str]:
    result = analyse_source(text, "shelf.envspec")
    assert result.environment is not None, result.diagnostics
    package = Package(env=result.environment, name="shelf", files=lower(result.environment, "shelf.envspec"))
    checked = check_packages([package], dynamic=True)["shelf"]
    return [f"{d.line} {d.code} {d.message}" for d in to_diagnostics(package, checked)]


def test_a_verify_that_holds_before_the_solution_says_so_at_the_verify_line() -> None:
    [found] = _diagnostics(SPEC)
    assert found.startswith("19 E6002"), found
    assert "verify ran against the start state of scenario `stocked`, before the solution, and already holds" in found


def test_a_verify_that_fails_after_the_solution_says_so() -> None:
    [found] = _diagnostics(SPEC.replace('verify "Emma" in books', 'verify "Zola" in books'))
    assert found.startswith("19 E6002"), found
    assert "verify ran against the state after the solution's calls, and does not hold" in found


def test_a_mypy_error_in_a_python_body_points_at_the_body_and_says_it_is_the_authors() -> None:
    text = SPEC.replace(
        "tool add(title: str) -> int:\n    books.append(title)\n    return len(books)\n",
        "tool add(title: str) -> int:\n    reads books\n    writes books\n"
        "    python \"return str(len(self._state['books']))\"\n",
    ).split("task add_emma")[0]
    result = analyse_source(text, "shelf.envspec")
    assert result.environment is not None, result.diagnostics
    package = Package(env=result.environment, name="shelf", files=lower(result.environment, "shelf.envspec"))
    checked = check_packages([package], dynamic=False)["shelf"]
    [found] = [d for d in to_diagnostics(package, checked) if "mypy" in d.message]
    assert (found.code, found.line, found.col) == ("E6001", 13, 5)
    assert found.message.startswith("mypy, in the `python` body of `add`: ")
    assert "the `python` body you wrote for `add`, not code envc generated" in found.hint
    assert "report this" not in found.effective_hint()
