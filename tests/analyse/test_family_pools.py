"""A family's plan and solution draw from the spec's `values` pools by name
(compiler/analyse/families.py): the name becomes the pool's list, unless a state or world
field, a helper or a local of the family takes it."""

from __future__ import annotations

from compiler import ir
from compiler.analyse import analyse_source
from compiler.ir.tree import walk

SPEC = """
environment pools_in_plans:
    title "Pools in plans"

values titles = ["Printer jams", "VPN drops"]
values owners = ["ana", "bo"]

record Ticket:
    id: int
    title: str

state:
    tickets: map[int, Ticket] = {}
    owners: list[str] = ["carol"]

tool open_ticket(title: str) -> int:
    let id = len(tickets) + 1
    tickets[id] = Ticket(id=id, title=title)
    return id

family open_one:
    kind lookup
    plan:
        let title = random_choice(titles)
        let owner = random_choice(owners)
    request "Open a ticket about {title} for {owner}."
    solution:
        open_ticket(title=title)
    verify len([t for t in values(tickets) if t.title == title]) == 1
"""


def _family() -> ir.FamilyDecl:
    result = analyse_source(SPEC, "pools.envspec")
    assert [d.render() for d in result.diagnostics if d.severity == "error"] == []
    assert result.environment is not None
    return result.environment.families[0]


def test_a_pool_name_in_a_plan_is_the_pools_list() -> None:
    title = _family().plan[0]
    assert isinstance(title, ir.Let)
    lists = [n for n in walk(title.value) if isinstance(n, ir.ListLit)]
    assert [[c.value for c in lst.items if isinstance(c, ir.Const)] for lst in lists] == [["Printer jams", "VPN drops"]]


def test_a_state_field_of_the_same_name_wins_over_the_pool() -> None:
    owner = _family().plan[1]
    assert isinstance(owner, ir.Let)
    assert not [n for n in walk(owner.value) if isinstance(n, ir.ListLit)]
    assert sorted(n.id for n in walk(owner.value) if isinstance(n, ir.Name)) == ["owners", "random_choice"]
