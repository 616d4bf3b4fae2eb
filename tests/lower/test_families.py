"""Task families lowered (compiler/lower/families.py): the generated `FAMILIES` contract
(docs/generated-package.md, "Task families") run on a real package: plans seeded and
repeatable, their changes left on the session and the generator put back, solutions
making the agent's calls, refusals and failing `require`s as FamilyFailed, forks."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from lowered import imported_package, lowered_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "families"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[types.ModuleType]:
    files = lowered_files(FIXTURES / "shop_families.envspec")
    with imported_package(files, tmp_path_factory.mktemp("families"), "shop_families", "environment") as module:
        yield module


def test_families_are_listed_in_declaration_order(shop: types.ModuleType) -> None:
    assert list(shop.FAMILIES) == ["cancel_by_product", "book_first_free"]


def test_a_bulk_plan_draws_its_values_and_the_solution_cancels_every_match(shop: types.ModuleType) -> None:
    family = shop.FAMILIES["cancel_by_product"]
    env = shop.Environment("busy_week")
    start = env.saved_state()
    values = family.plan(env, 7)
    assert values == family.plan(shop.Environment("busy_week"), 7)  # same seed, same draws
    assert env.saved_state() == start  # this plan changes nothing, and puts the generator back
    product, ids = values["product"], values["ids"]
    pending = {o["id"] for o in start["orders"].values() if o["status"] == "pending" and product in o["products"]}
    assert sorted(pending) == ids and ids
    calls = family.solve(env, values)
    assert calls[0][0] == "list_orders" and calls[0][1] == {}
    assert [(tool, args) for tool, args, _ in calls[1:]] == [("cancel_order", {"order_id": i}) for i in ids]
    assert all(result["status"] == "cancelled" for _, _, result in calls[1:])
    after = env.state()["orders"]
    assert {o["id"] for o in after.values() if o["status"] == "cancelled"} == set(ids)


def test_seeds_give_different_draws(shop: types.ModuleType) -> None:
    family = shop.FAMILIES["cancel_by_product"]
    drawn = {family.plan(shop.Environment("busy_week"), seed)["product"] for seed in range(12)}
    assert len(drawn) > 1


def test_a_branch_plan_changes_the_start_and_the_solution_follows_the_data(shop: types.ModuleType) -> None:
    family = shop.FAMILIES["book_first_free"]
    outcomes = {}
    for seed in range(8):
        env = shop.Environment("busy_week")
        values = family.plan(env, seed)
        rooms = env.state()["rooms"]
        assert (rooms[0]["booked_by"] == "Sam Okafor") is values["taken"]  # the plan's change stays on env
        assert env.saved_state()["rng_state"] == shop.Environment("busy_week").saved_state()["rng_state"]
        calls = family.solve(env, values)
        assert [(tool, args["hour"], args["who"]) for tool, args, _ in calls] == [
            ("book_room", values["hour"], values["who"])
        ]
        outcomes[values["taken"]] = values["hour"]
    assert outcomes == {False: 10, True: 11}  # both variants from one scenario


def test_a_failing_require_of_the_plan_is_family_failed_and_changes_nothing(shop: types.ModuleType) -> None:
    family = shop.FAMILIES["cancel_by_product"]
    env = shop.Environment("busy_week")
    for order in env.view()["orders"].values():
        order["status"] = "shipped"  # no pending order: `require len(ids) >= 1` fails
    before = env.saved_state()
    with pytest.raises(shop.FamilyFailed, match=r"family `cancel_by_product`: `require len\(ids\) >= 1` failed"):
        family.plan(env, 3)
    assert env.saved_state() == before


def test_a_refused_call_of_the_solution_is_family_failed(shop: types.ModuleType) -> None:
    family = shop.FAMILIES["book_first_free"]
    env = shop.Environment("busy_week")
    values = family.plan(env, 0)
    for room in env.view()["rooms"]:
        room["booked_by"] = "Noor Haddad"  # both hours taken: the solution books 11:00, refused
    with pytest.raises(shop.FamilyFailed, match=r"family `book_first_free`: `book_room` refused: Fjord at 11 is taken"):
        family.solve(env, values)


def test_a_solution_require_failing_is_family_failed(shop: types.ModuleType) -> None:
    family = shop.FAMILIES["book_first_free"]
    env = shop.Environment("busy_week")
    values = family.plan(env, 0)
    with pytest.raises(shop.FamilyFailed, match="booked the wrong hour"):
        family.solve(env, {**values, "hour": 12})


def test_plans_and_solutions_run_on_forks_without_touching_their_siblings(shop: types.ModuleType) -> None:
    family = shop.FAMILIES["book_first_free"]
    start = shop.Environment("busy_week")
    left, right = start.fork(), start.fork()
    values = family.plan(left, 1)
    assert values["taken"] is True
    family.solve(left, values)
    assert right.state() == start.state() == shop.Environment("busy_week").state()
    assert [r["booked_by"] for r in left.state()["rooms"]] == ["Sam Okafor", values["who"]]


def test_a_spec_without_families_has_an_empty_table(tmp_path: Path) -> None:
    files = lowered_files(Path(__file__).resolve().parent.parent / "fixtures" / "golden" / "plain.envspec")
    assert "def _plan_" not in files["environment.py"]
    with imported_package(files, tmp_path, "plain_no_families", "environment") as module:
        assert module.FAMILIES == {}


def test_the_language_reference_example_is_the_fixture() -> None:
    """docs/language.md §22.2 shows tests/fixtures/families/orders_families.envspec as is."""
    page = (Path(__file__).resolve().parent.parent.parent / "docs" / "language.md").read_text(encoding="utf-8")
    fixture = (FIXTURES / "orders_families.envspec").read_text(encoding="utf-8")
    assert f"```envspec\n{fixture}```" in page


@pytest.mark.parametrize("spec", ["orders_families", "shop_families", "shop_extended"])
def test_family_fixtures_compile_with_every_check(spec: str, tmp_path: Path) -> None:
    """`envc compile` with its static checks (ruff, mypy --strict) and the generated
    tests, each family's among them."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent.parent
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "compiler.cli",
            "compile",
            "-j",
            "1",
            "-o",
            str(tmp_path),
            str(FIXTURES / f"{spec}.envspec"),
        ],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    tests = (tmp_path / spec / "tests" / "test_environment.py").read_text(encoding="utf-8")
    assert tests.count("def test_family_") == {"orders_families": 1, "shop_families": 2, "shop_extended": 3}[spec]
