"""Loading the values and wording for tasks (compiler/front/load.py): `describe` in any
spec, its lines replacing a prototype's item by item after renames, `describe record`,
pools and personas merged, and the checks loading makes (intents, refers, names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import ir
from compiler.front.load import intent_problems, load_file, load_source, rename_slot

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "task_values"


def tool(module: ir.Module, name: str) -> ir.ToolDecl:
    return next(t for t in module.tools if t.name == name)


def record(module: ir.Module, name: str) -> ir.RecordDecl:
    return next(r for r in module.records if r.name == name)


@pytest.fixture(scope="module")
def desk() -> ir.Module:
    loaded = load_file(FIXTURES / "desk.envspec")
    assert loaded.diagnostics == []
    assert loaded.module is not None
    return loaded.module


def test_a_spec_describes_a_prototype_tool_again_item_by_item(desk: ir.Module) -> None:
    create = tool(desk, "create_ticket")
    assert create.doc == "Open an entity."  # the prototype's doc: the spec gives none
    subject, owner = create.params
    assert (subject.name, subject.doc, subject.values_from and subject.values_from.name) == (
        "subject",
        "A summary.",
        "titles",
    )
    assert (owner.doc, owner.values_from and owner.values_from.name) == ("Who asked.", "first_name")
    assert owner.values_from is not None and owner.values_from.file.endswith("desk.envspec")
    assert subject.values_from is not None and subject.values_from.file.endswith("desk_prototype.envspec")


def test_a_renamed_parameter_is_renamed_in_the_intents(desk: ir.Module) -> None:
    assert tool(desk, "create_ticket").intents == ["open one about {subject} for {owner}"]


def test_a_spec_describes_its_own_tool(desk: ir.Module) -> None:
    count = tool(desk, "count_tickets")
    assert (count.doc, count.intents) == ("How many tickets there are.", ["how many tickets are open?"])


def test_describe_record_replaces_noun_refers_and_sources_after_a_rename(desk: ir.Module) -> None:
    ticket = record(desk, "Ticket")
    assert ticket.noun == "ticket"
    assert [(r.field, r.template, r.before) for r in ticket.refers] == [
        ("owner", "of {}", False),
        ("title", "{}", True),
    ]
    sources = {f.name: f.values_from.name if f.values_from else None for f in ticket.fields}
    assert sources == {"id": None, "title": "titles", "owner": "person_name"}


def test_pools_and_personas_are_the_prototypes_then_the_specs(desk: ir.Module) -> None:
    assert [p.name for p in desk.values] == ["titles", "streets", "priorities"]
    assert [p.text for p in desk.personas] == ["I run a small office.", "I answer the phone too."]


def test_a_values_file_is_read_beside_the_spec_that_names_it() -> None:
    loaded = load_file(FIXTURES / "desk.envspec")
    assert [Path(key).name for key in loaded.data_files] == ["streets.json"]
    assert loaded.data_files[str(FIXTURES / "streets.json")].data == ["Elm Street", "Oak Avenue"]


SPEC = """environment desk:
    title "Desk"

record Ticket:
    id: int
    title: str

state:
    tickets: map[int, Ticket] = {}

tool add(title: str) -> int:
    return 1
"""


def codes(extra: str) -> list[tuple[str, int, int]]:
    """(code, line, col) of what loading reports, lines relative to `extra`."""
    first = SPEC.count("\n")
    return [(d.code, d.line - first, d.col) for d in load_source(SPEC + extra, "spec.envspec").diagnostics]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ('describe tool add:\n    intent "add {title}"\n', []),
        ('describe tool add:\n    intent "add {name}"\n', [("E2036", 2, 5)]),
        ('describe tool add:\n    intent "add {{title}} {"\n', [("E2036", 2, 5)]),
        ('describe tool nope:\n    "x"\n', [("E2038", 1, 1)]),
        ('describe tool add:\n    "x"\ndescribe tool add:\n    "y"\n', [("E2001", 3, 1)]),
        ("describe tool add:\n    param nope from titles\n", [("E2023", 2, 5)]),
        ('describe record Ticket:\n    refer title "about {}"\n', []),
        ('describe record Ticket:\n    refer title "about {} {}"\n', [("E2037", 2, 5)]),
        ('describe record Ticket:\n    refer nope "about {}"\n', [("E2008", 2, 5)]),
        ("describe record Ticket:\n    field nope from titles\n", [("E2008", 2, 21)]),
        ('describe record Tiket:\n    noun "t"\n', [("E2038", 1, 1)]),
        ('describe record Ticket:\n    noun "t"\ndescribe record Ticket:\n    noun "u"\n', [("E2001", 3, 1)]),
    ],
)
def test_loading_checks_what_describes_name(extra: str, expected: list[tuple[str, int, int]]) -> None:
    assert codes(extra) == expected


def test_describe_needs_no_extends_any_more() -> None:
    loaded = load_source(SPEC + 'describe tool add:\n    "Add one."\n    param title "What."\n', "spec.envspec")
    assert loaded.diagnostics == [] and loaded.module is not None
    add = tool(loaded.module, "add")
    assert (add.doc, add.params[0].doc) == ("Add one.", "What.")


@pytest.mark.parametrize(
    ("intent", "problems"),
    [
        ("open {title}", []),
        ("{{literal}} and {title}", []),
        ("open {nope}", ["`{nope}` names no parameter"]),
        ("open {}", ["`{}` names no parameter"]),
        ("open }", ["a single `}`; write `}}` for a brace"]),
        ("open {title", ["a `{` is never closed"]),
    ],
)
def test_intent_problems(intent: str, problems: list[str]) -> None:
    assert intent_problems(intent, ["title"]) == problems


def test_rename_slot_leaves_escaped_braces_alone() -> None:
    assert rename_slot("{{title}} {title} {titles}", "title", "subject") == "{{title}} {subject} {titles}"
