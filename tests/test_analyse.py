"""Stage 3, analyse: names, types, None-narrowing, read/write inference, `extends`,
world data and scenarios.

Most tests analyse a small shop spec (`SHOP`, 24 lines) with one tool or helper added
after it, so the added text starts on line 25.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shipped import spec_path

from compiler import ir
from compiler.analyse import AnalysisResult, analyse_file, analyse_loaded, analyse_source
from compiler.diagnostics import did_you_mean, render_text
from compiler.front.load import Loaded
from compiler.front.parse import parse_source

ROOT = Path(__file__).resolve().parent.parent
TICKETING = spec_path("ticketing")

SHOP = """environment shop:
    title "Shop"

enum Status:
    open, closed

record Item:
    id: int
    name: str
    status: Status = Status.open
    note: optional[str] = None
    labels: list[str] = []

state:
    items: map[int, Item] = {}
    tags: list[str] = []
    count: int = 0
    owner: optional[str] = None
    opened_at: datetime = "2025-01-01T09:00:00"

world:
    catalogue: list[str] = ["lamp", "desk"]
    prices: map[str, int] = {"lamp": 20, "desk": 90}

"""
FIRST_LINE = SHOP.count("\n") + 1  # the line the added text starts on


def analyse(extra: str = "", path: str = "spec.envspec") -> AnalysisResult:
    return analyse_source(SHOP + extra, path)


def clean(extra: str = "") -> ir.Environment:
    result = analyse(extra)
    assert result.diagnostics == [], [(d.code, d.line, d.col, d.message) for d in result.diagnostics]
    assert result.environment is not None
    return result.environment


def found(extra: str) -> list[tuple[str, int, int]]:
    """(code, line, col) of every diagnostic, lines relative to the added text (1-based)."""
    return [(d.code, d.line - FIRST_LINE + 1, d.col) for d in analyse(extra).diagnostics]


def tool(environment: ir.Environment, name: str) -> ir.ToolDecl:
    return next(t for t in [*environment.tools, *environment.fns] if t.name == name)


def effects(extra: str, name: str = "act") -> tuple[list[str], list[str]]:
    t = tool(clean(extra), name)
    return t.reads, t.writes


def write_spec(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the shipped spec


@pytest.fixture(scope="module")
def ticketing() -> ir.Environment:
    result = analyse_file(TICKETING)
    assert result.diagnostics == []
    assert result.environment is not None
    return result.environment


@pytest.mark.parametrize(
    ("name", "reads", "writes"),
    [
        ("login", ["audit_log", "clock"], ["audit_log", "current_user"]),
        ("logout", ["audit_log", "clock", "current_user"], ["audit_log", "current_user"]),
        ("whoami", ["current_user"], []),
        ("list_tickets", ["current_user", "tickets"], []),
        ("get_ticket", ["current_user", "tickets"], []),
        (
            "create_ticket",
            ["audit_log", "clock", "current_user", "next_ticket_id", "tickets"],
            ["audit_log", "next_ticket_id", "tickets"],
        ),
        ("close_ticket", ["audit_log", "clock", "current_user", "tickets"], ["audit_log", "tickets"]),
    ],
)
def test_ticketing_read_write_sets(ticketing: ir.Environment, name: str, reads: list[str], writes: list[str]) -> None:
    t = tool(ticketing, name)
    assert (t.reads, t.writes) == (reads, writes)
    assert t.side_effect == (f"modifies {', '.join(writes)}" if writes else "none")


def test_ticketing_helpers_and_errors(ticketing: ir.Environment) -> None:
    assert tool(ticketing, "require_login").reads == ["current_user"]
    assert tool(ticketing, "find_ticket").writes == []
    assert tool(ticketing, "login").errors == ["invalid_argument", "not_found", "unauthenticated"]
    assert "unauthenticated" in tool(ticketing, "create_ticket").errors  # raised inside the helper


def test_ticketing_data(ticketing: ir.Environment) -> None:
    assert ticketing.state_defaults["tickets"] == {} and ticketing.state_defaults["current_user"] is None
    assert ticketing.state_defaults["audit_log"] == [] and ticketing.state_defaults["clock"] == ticketing.header.clock
    busy = ticketing.scenario_values["busy_queue"]
    assert busy["tickets"][1]["priority"] == 4
    assert busy["tickets"][1]["description"] == ""  # record default filled in
    assert busy["tickets"][1]["assignee"] is None
    assert ticketing.world_values["agents"] == ["alice", "bob", "dmitri"]


def test_analysis_annotates_names_and_types(ticketing: ir.Environment) -> None:
    login = tool(ticketing, "login")
    assignment = next(s for s in login.body if isinstance(s, ir.Assign))
    assert isinstance(assignment.target, ir.Name)
    assert (assignment.target.ref, assignment.target.ty.name) == ("state", "optional")
    assert isinstance(assignment.value, ir.Name) and assignment.value.ref == "param"


# --------------------------------------------------------------------------- read and write sets


@pytest.mark.parametrize(
    ("body", "reads", "writes"),
    [
        pytest.param("tool act() -> int:\n    return len(items)\n", ["items"], [], id="read-only"),
        pytest.param("tool act() -> int:\n    count = 1\n    return 0\n", [], ["count"], id="assign"),
        pytest.param(
            "tool act() -> int:\n    state.count = 2\n    return state.count\n", ["count"], ["count"], id="state-dot"
        ),
        pytest.param(
            'tool act(id: int) -> bool:\n    let t = items[id]\n    t.name = "x"\n    return True\n',
            ["items"],
            ["items"],
            id="local-alias",
        ),
        pytest.param(
            'tool act(id: int) -> bool:\n    let t = items[id]\n    let u = t\n    u.note = "x"\n    return True\n',
            ["items"],
            ["items"],
            id="alias-of-alias",
        ),
        pytest.param(
            'tool act(id: int) -> bool:\n    let t = copy(items[id])\n    t.name = "x"\n    return t.id > 0\n',
            ["items"],
            [],
            id="copy-breaks-alias",
        ),
        pytest.param(
            "tool act() -> int:\n    for t in values(items):\n        t.status = Status.closed\n    return 0\n",
            ["items"],
            ["items"],
            id="loop-over-values",
        ),
        pytest.param(
            'tool act() -> int:\n    for key, t in items:\n        t.labels.append("seen")\n    return 0\n',
            ["items"],
            ["items"],
            id="loop-over-map-pairs",
        ),
        pytest.param(
            "tool act() -> int:\n    let open = [t for t in values(items) if t.status == Status.open]\n"
            "    for t in open:\n        t.status = Status.closed\n    return len(open)\n",
            ["items"],
            ["items"],
            id="comprehension-keeps-alias",
        ),
        pytest.param(
            "tool act() -> int:\n    for t in items.values():\n        t.status = Status.closed\n    return 0\n",
            ["items"],
            ["items"],
            id="loop-over-values-method",
        ),
        pytest.param(
            'tool act(id: int) -> bool:\n    let found = items.get(id)\n    require found is not None else not_found("x")\n'
            '    found.name = "y"\n    return True\n',
            ["items"],
            ["items"],
            id="map-get-alias",
        ),
        pytest.param(
            'tool act(id: int) -> bool:\n    let labels = items[id].labels\n    labels.append("x")\n    return True\n',
            ["items"],
            ["items"],
            id="nested-field-alias",
        ),
        pytest.param(
            'tool act() -> int:\n    let mine: list[str] = []\n    mine.append("x")\n    return len(mine)\n',
            [],
            [],
            id="local-list",
        ),
        pytest.param(
            'tool act() -> int:\n    let mine = tags.copy()\n    mine.append("x")\n    return len(mine)\n',
            ["tags"],
            [],
            id="copy-method-is-fresh",
        ),
        pytest.param(
            'tool act() -> int:\n    let mine = sorted(tags)\n    mine.append("x")\n    return len(mine)\n',
            ["tags"],
            [],
            id="sorted-is-fresh",
        ),
        pytest.param(
            "tool act() -> int:\n    count += 1\n    return 0\n", ["count"], ["count"], id="augmented-assign-reads"
        ),
        pytest.param(
            "tool act(id: int) -> bool:\n    del items[id]\n    return True\n", ["items"], ["items"], id="del"
        ),
        pytest.param('tool act() -> bool:\n    tags.append("new")\n    return True\n', ["tags"], ["tags"], id="method"),
        pytest.param(
            'tool act() -> bool:\n    audit("ping")\n    return True\n',
            ["audit_log", "clock"],
            ["audit_log"],
            id="audit",
        ),
        pytest.param("tool act() -> datetime:\n    return now()\n", ["clock"], [], id="clock"),
        pytest.param(
            'tool act() -> int:\n    return next_id("item")\n', ["id_counters"], ["id_counters"], id="next-id"
        ),
        pytest.param("tool act() -> int:\n    return random_int(1, 6)\n", ["rng_state"], ["rng_state"], id="random"),
        pytest.param(
            'tool act() -> int:\n    return prices["lamp"] + len(catalogue)\n', [], [], id="world-is-not-state"
        ),
    ],
)
def test_inferred_effects(body: str, reads: list[str], writes: list[str]) -> None:
    assert effects(body) == (reads, writes)


HELPERS = """fn retitle(item: Item, name: str) -> bool:
    item.name = name
    return True

fn add_tag(xs: list[str], tag: str) -> bool:
    xs.append(tag)
    return True

fn find(id: int) -> Item:
    require id in items else not_found(f"no item {id}", entity="item")
    return items[id]

"""


@pytest.mark.parametrize(
    ("body", "reads", "writes"),
    [
        pytest.param(
            'tool act(id: int) -> bool:\n    return retitle(items[id], "x")\n',
            ["items"],
            ["items"],
            id="helper-mutates-param",
        ),
        pytest.param(
            'tool act() -> bool:\n    return add_tag(tags, "x")\n', ["tags"], ["tags"], id="helper-mutates-state-list"
        ),
        pytest.param(
            'tool act() -> int:\n    let mine: list[str] = []\n    add_tag(mine, "x")\n    return len(mine)\n',
            [],
            [],
            id="helper-mutates-local",
        ),
        pytest.param(
            'tool act(id: int) -> bool:\n    let t = find(id)\n    t.name = "y"\n    return True\n',
            ["items"],
            ["items"],
            id="helper-returns-alias",
        ),
        pytest.param("tool act(id: int) -> str:\n    return find(id).name\n", ["items"], [], id="helper-read"),
        pytest.param(
            'tool act(id: int) -> bool:\n    let t = find(id)\n    return add_tag(t.labels, "z")\n',
            ["items"],
            ["items"],
            id="helper-chain",
        ),
    ],
)
def test_effects_through_helpers(body: str, reads: list[str], writes: list[str]) -> None:
    assert effects(HELPERS + body) == (reads, writes)


def test_helpers_report_no_state_writes_of_their_own() -> None:
    environment = clean(HELPERS)
    assert (tool(environment, "retitle").writes, tool(environment, "add_tag").writes) == ([], [])
    assert tool(environment, "find").errors == ["not_found"]


def test_tool_errors_include_helper_errors() -> None:
    environment = clean(
        HELPERS + 'tool act(id: int) -> str:\n    require id > 0 else conflict("x")\n    return find(id).name\n'
    )
    assert tool(environment, "act").errors == ["conflict", "invalid_argument", "not_found"]


def test_builtin_state_appears_only_when_used() -> None:
    plain = clean("tool act() -> int:\n    return count\n")
    assert [f.name for f in plain.state][-2:] == ["audit_log", "clock"]
    counted = clean('tool act() -> int:\n    return next_id("item") + random_int(1, 2)\n')
    assert {"id_counters", "rng_state"} <= set(counted.state_defaults)
    named = clean('tool act() -> int:\n    """Not `next_id` nor `random_int`."""\n    return count\n')
    assert [f.name for f in named.state][-2:] == ["audit_log", "clock"]


def test_builtin_state_of_a_module_without_its_text() -> None:
    """The calls that add built-in state are found in the bodies when the spec's text is
    not at hand (the symbols pass skips the walk only when no text names them)."""
    parsed = parse_source(SHOP + 'tool act() -> int:\n    return next_id("item")\n', "spec.envspec")
    assert parsed.module is not None
    result = analyse_loaded(Loaded(parsed.module, [], {}))
    assert result.environment is not None, result.diagnostics
    assert "id_counters" in result.environment.state_defaults
    assert "rng_state" not in result.environment.state_defaults


# --------------------------------------------------------------------------- declared effects


DECLARED = """tool act(id: int) -> bool:
{effects}
    count = count + 1
    audit("act")
    require id in items else not_found("x")
    return True
"""


@pytest.mark.parametrize(
    ("effects_line", "expected"),
    [
        pytest.param("    writes count", [], id="writes-matches"),
        pytest.param("    reads count, items", [], id="reads-match"),
        pytest.param("    writes items", [("E4002", 1, 1), ("E4001", 3, 5)], id="wrong-write"),
        pytest.param("    writes count, tags", [("E4002", 1, 1)], id="extra-write"),
        pytest.param("    reads count", [("E4003", 5, 19)], id="missing-read"),
        pytest.param("    reads count, items, owner", [("E4008", 1, 1)], id="extra-read"),
        pytest.param("    writes count, stock", [("E2006", 1, 1)], id="unknown-field"),
    ],
)
def test_declared_effects_are_checked(effects_line: str, expected: list[tuple[str, int, int]]) -> None:
    assert found(DECLARED.format(effects=effects_line)) == expected


def test_audit_log_and_clock_need_no_declaration() -> None:
    environment = clean(
        'tool act() -> bool:\n    reads count, opened_at\n    writes count\n    count = count + 1\n    audit("act")\n    return now() > opened_at\n'
    )
    assert tool(environment, "act").writes == ["audit_log", "count"]


def test_escape_body_takes_declared_effects() -> None:
    environment = clean('tool act() -> int:\n    reads items\n    writes count\n    python "return 1"\n')
    t = tool(environment, "act")
    assert (t.reads, t.writes, t.side_effect) == (["items"], ["count"], "modifies count")


def test_declared_side_effect_is_kept() -> None:
    environment = clean('tool act() -> int:\n    side_effect "sends an e-mail"\n    return count\n')
    assert tool(environment, "act").side_effect == "sends an e-mail"


# --------------------------------------------------------------------------- None-narrowing

NARROWED = {
    "require": '    let o = owner\n    require o is not None else invalid_state("nobody")\n    return len(o)\n',
    "if-fail": '    let o = owner\n    if o is None:\n        fail unauthenticated("nobody")\n    return len(o)\n',
    "if-return-else": "    let o = owner\n    if o is None:\n        return 0\n    else:\n        return len(o)\n",
    "if-not-none": "    let o = owner\n    if o is not None:\n        return len(o)\n    return 0\n",
    "not-is-none": "    let o = owner\n    if not (o is None):\n        return len(o)\n    return 0\n",
    "and-chain": "    let o = owner\n    let p = owner\n    if o is not None and p is not None and len(o) > len(p):\n        return len(o) - len(p)\n    return 0\n",
    "or-then-return": "    let o = owner\n    if o is None or len(o) == 0:\n        return 0\n    return len(o)\n",
    "ternary": "    let o = owner\n    return len(o) if o is not None else 0\n",
    "ternary-negated": "    let o = owner\n    return 0 if o is None else len(o)\n",
    "elif": "    let o = owner\n    let p = owner\n    if o is None:\n        return 0\n    elif p is None:\n        return len(o)\n    return len(o) + len(p)\n",
    "assigned-value": '    let o = owner\n    o = "guest"\n    return len(o)\n',
}

NOT_NARROWED = {
    "no-check": ("tool act() -> int:\n    let o = owner\n    return len(o)\n", (3, 16)),
    "after-if-body": (
        'tool act() -> int:\n    let o = owner\n    if o is not None:\n        audit("seen", entity=o)\n    return len(o)\n',
        (5, 16),
    ),
    "or-keeps-optional": ("tool act() -> bool:\n    let o = owner\n    return o is not None or len(o) > 0\n", (3, 33)),
    "wrong-ternary-branch": ("tool act() -> int:\n    let o = owner\n    return len(o) if o is None else 0\n", (3, 16)),
    "reassigned-none": (
        'tool act() -> int:\n    let o = owner\n    require o is not None else invalid_state("x")\n    o = None\n    return len(o)\n',
        (5, 16),
    ),
    "state-field": (
        'tool act() -> int:\n    require owner is not None else invalid_state("x")\n    return len(owner)\n',
        (3, 16),
    ),
    "record-field": (
        'tool act(id: int) -> int:\n    require items[id].note is not None else invalid_state("x")\n    return len(items[id].note)\n',
        (3, 16),
    ),
}


@pytest.mark.parametrize("name", list(NARROWED))
def test_none_narrowing(name: str) -> None:
    clean("tool act() -> int:\n" + NARROWED[name])


def test_none_narrowing_of_optional_parameter() -> None:
    clean(
        "tool act(label: optional[str] = None) -> int:\n    if label is None:\n        return 0\n    return len(label)\n"
    )


@pytest.mark.parametrize("name", list(NOT_NARROWED))
def test_values_that_may_be_none_are_reported(name: str) -> None:
    body, (line, col) = NOT_NARROWED[name]
    assert found(body) == [("E3009", line, col)]


# --------------------------------------------------------------------------- world data from JSON

WORLD_SPEC = """environment shop:
    title "Shop"

enum Size:
    small, large

record Product:
    sku: str
    price: int
    size: Size = Size.small
    note: optional[str] = None

world:
    catalogue: map[int, Product] from "catalogue.json"
    stock_by_size: map[Size, int] from "data/sizes.json"

tool price_of(id: int) -> int:
    require id in catalogue else not_found(f"no product {id}", entity="product", allowed=sorted(keys(catalogue)))
    return catalogue[id].price
"""


def test_world_data_loads_from_json_next_to_the_spec(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "shop.envspec", WORLD_SPEC)
    write_spec(
        tmp_path,
        "catalogue.json",
        json.dumps({"1": {"sku": "A-1", "price": 5}, "20": {"sku": "B-2", "price": 7, "size": "large"}}),
    )
    write_spec(tmp_path, "data/sizes.json", json.dumps({"small": 3, "large": 1}))
    result = analyse_file(spec)
    assert result.diagnostics == []
    assert result.environment is not None
    catalogue = result.environment.world_values["catalogue"]
    assert list(catalogue) == [1, 20]  # int keys, converted from JSON's strings
    assert catalogue[1] == {"sku": "A-1", "price": 5, "size": "small", "note": None}  # defaults filled
    assert result.environment.world_values["stock_by_size"] == {"small": 3, "large": 1}
    assert [w.source for w in result.environment.world] == ["catalogue.json", "data/sizes.json"]


@pytest.mark.parametrize(
    ("catalogue", "code", "fragment"),
    [
        ('{"x": {"sku": "A", "price": 5}}', "E3001", "key 'x' is not an int"),
        ('{"1": {"sku": "A", "price": "5"}}', "E3001", "where int is expected"),
        ('{"1": {"sku": "A", "price": 5, "size": "huge"}}', "E3001", "not a member of Size"),
        ('{"1": {"sku": "A"}}', "E3001", "needs field 'price'"),
        ('{"1": {"sku": "A", "price": 5, "colour": "red"}}', "E3001", "has no field 'colour'"),
        ('{"1": ', "E0003", "not valid JSON"),
        (None, "E0003", "cannot read"),
    ],
)
def test_world_data_is_checked(tmp_path: Path, catalogue: str | None, code: str, fragment: str) -> None:
    spec = write_spec(tmp_path, "shop.envspec", WORLD_SPEC)
    write_spec(tmp_path, "data/sizes.json", '{"small": 1}')
    if catalogue is not None:
        write_spec(tmp_path, "catalogue.json", catalogue)
    diagnostics = analyse_file(spec).diagnostics
    assert [(d.code, d.line, d.col) for d in diagnostics] == [(code, 14, 5)]
    assert fragment in diagnostics[0].message


@pytest.mark.parametrize("source", ["../outside.json", "/etc/hostname"])
def test_world_file_must_stay_inside_the_spec_folder(tmp_path: Path, source: str) -> None:
    write_spec(tmp_path, "outside.json", "[]")
    spec = write_spec(
        tmp_path, "inner/shop.envspec", SHOP.replace("world:\n", f'world:\n    extra: list[str] from "{source}"\n')
    )
    assert [d.code for d in analyse_file(spec).diagnostics] == ["E0003"]


# --------------------------------------------------------------------------- scenarios


def test_scenario_values_are_checked_and_normalised() -> None:
    environment = clean(
        "scenario busy:\n"
        '    owner = "ann"\n'
        '    opened_at = "2025-02-03T10:30:00"\n'
        '    items = {7: {"id": 7, "name": "lamp", "status": "closed"}, 8: Item(id=8, name="desk", status=Status.open)}\n'
    )
    busy = environment.scenario_values["busy"]
    assert busy["owner"] == "ann"
    assert busy["items"][7] == {"id": 7, "name": "lamp", "status": "closed", "note": None, "labels": []}
    assert busy["items"][8]["status"] == "open"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param('count = "three"', [("E3001", 2, 13)], id="wrong-type"),
        pytest.param('opened_at = "yesterday"', [("E3001", 2, 17)], id="bad-datetime"),
        pytest.param('items = {1: {"id": 1, "name": "x", "status": "shut"}}', [("E3001", 2, 13)], id="bad-enum-string"),
        pytest.param('items = {1: Item(id=1, name="x", status=Status.shut)}', [("E2007", 2, 45)], id="bad-enum-member"),
        pytest.param('items = {1: {"id": 1}}', [("E3001", 2, 13)], id="missing-field"),
        pytest.param("count = len(tags)", [("E3014", 2, 13)], id="not-a-literal"),
        pytest.param("cuont = 3", [("E2006", 2, 5)], id="unknown-field"),
        pytest.param("count = 1\n    count = 2", [("E2005", 3, 5)], id="set-twice"),
    ],
)
def test_scenario_values_are_type_checked(item: str, expected: list[tuple[str, int, int]]) -> None:
    assert found(f"scenario busy:\n    {item}\n") == expected


# --------------------------------------------------------------------------- extends

PROTOTYPE = """environment lending:
    title "Lending prototype"
    archetype transactional_workspace
    domains "lending"

record Book:
    id: int
    title: str

state:
    books: map[int, Book] = {}
    next_book_id: int = 1

scenario empty_shelf:
    next_book_id = 1

fn find(id: int) -> Book:
    require id in books else not_found(f"no book {id}")
    return books[id]

tool list_books() -> list[Book]:
    return sorted(values(books), key=lambda b: b.id)

tool count_books() -> int:
    return len(books)

test starts_empty:
    expect len(list_books()) == 0
"""


def child(body: str, extends: str = "lending.envspec") -> str:
    return f'environment branch:\n    title "Branch"\n    extends "{extends}"\n\n{body}'


@pytest.fixture
def prototype_dir(tmp_path: Path) -> Path:
    write_spec(tmp_path, "lending.envspec", PROTOTYPE)
    return tmp_path


def analyse_child(folder: Path, body: str, extends: str = "lending.envspec") -> AnalysisResult:
    return analyse_file(write_spec(folder, "branch.envspec", child(body, extends)))


def test_extends_merges_the_prototype(prototype_dir: Path) -> None:
    result = analyse_child(
        prototype_dir,
        "state:\n    opened: bool = True\n\ntool open_branch() -> bool:\n    opened = True\n    return opened\n",
    )
    assert result.diagnostics == []
    environment = result.environment
    assert environment is not None
    header = environment.header
    assert (header.name, header.title, header.archetype, header.domains) == (
        "branch",
        "Branch",
        "transactional_workspace",
        ["lending"],
    )
    assert [t.name for t in environment.tools] == ["list_books", "count_books", "open_branch"]
    assert [f.name for f in environment.state][:3] == ["books", "next_book_id", "opened"]
    assert [t.name for t in environment.tests] == ["starts_empty"]
    assert tool(environment, "list_books").file == str(prototype_dir / "lending.envspec")
    assert tool(environment, "open_branch").file == str(prototype_dir / "branch.envspec")
    assert set(result.sources) == {str(prototype_dir / "lending.envspec"), str(prototype_dir / "branch.envspec")}


def test_override_replaces_a_prototype_tool(prototype_dir: Path) -> None:
    result = analyse_child(
        prototype_dir, 'override tool count_books() -> int:\n    audit("count")\n    return len(keys(books))\n'
    )
    assert result.diagnostics == [] and result.environment is not None
    counted = tool(result.environment, "count_books")
    assert counted.file.endswith("branch.envspec") and counted.writes == ["audit_log"]
    assert [t.name for t in result.environment.tools] == ["list_books", "count_books"]


def test_drop_removes_prototype_declarations(prototype_dir: Path) -> None:
    result = analyse_child(
        prototype_dir,
        "drop tool count_books\ndrop test starts_empty\ndrop scenario empty_shelf\n\nscenario empty_shelf:\n    next_book_id = 5\n",
    )
    assert result.diagnostics == [] and result.environment is not None
    assert [t.name for t in result.environment.tools] == ["list_books"]
    assert result.environment.tests == []
    assert result.environment.scenario_values == {"empty_shelf": {"next_book_id": 5}}


def test_domain_spec_reseeds_a_prototype_state_field(prototype_dir: Path) -> None:
    result = analyse_child(prototype_dir, "state:\n    next_book_id: int = 100\n")
    assert result.diagnostics == [] and result.environment is not None
    assert result.environment.state_defaults["next_book_id"] == 100


@pytest.mark.parametrize(
    ("body", "expected", "hint"),
    [
        pytest.param(
            "tool count_books() -> int:\n    return 0\n",
            [("E2011", 5, 1)],
            "write `override tool count_books` to replace it",
            id="tool",
        ),
        pytest.param(
            "scenario empty_shelf:\n    next_book_id = 2\n",
            [("E2011", 5, 1)],
            "write `drop scenario empty_shelf` first to replace it",
            id="scenario",
        ),
        pytest.param(
            "override tool remove_book(id: int) -> bool:\n    return True\n",
            [("E2012", 5, 1)],
            "",
            id="override-missing",
        ),
        pytest.param("drop tool count_book\n", [("E2012", 5, 1)], "did you mean `count_books`?", id="drop-missing"),
    ],
)
def test_extends_errors(prototype_dir: Path, body: str, expected: list[tuple[str, int, int]], hint: str) -> None:
    diagnostics = analyse_child(prototype_dir, body).diagnostics
    assert [(d.code, d.line, d.col) for d in diagnostics] == expected
    assert diagnostics[0].hint == hint
    assert diagnostics[0].path == str(prototype_dir / "branch.envspec")


def test_prototype_found_in_prototypes_folder(tmp_path: Path) -> None:
    write_spec(tmp_path, "prototypes/lending.envspec", PROTOTYPE)
    result = analyse_child(tmp_path, "", extends="lending")
    assert result.diagnostics == [] and result.environment is not None


def test_errors_in_the_prototype_are_reported_there(tmp_path: Path) -> None:
    write_spec(tmp_path, "lending.envspec", PROTOTYPE.replace("return len(books)", "return len(bookz)"))
    diagnostics = analyse_child(tmp_path, "").diagnostics
    assert [(Path(d.path).name, d.code, d.line) for d in diagnostics] == [("lending.envspec", "E2002", 25)]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({}, [("branch.envspec", "E0004", 1)], id="missing"),
        pytest.param(
            {"lending.envspec": child("", "branch.envspec")}, [("lending.envspec", "E2018", 1)], id="two-file-cycle"
        ),
    ],
)
def test_extends_failures(tmp_path: Path, files: dict[str, str], expected: list[tuple[str, str, int]]) -> None:
    for name, text in files.items():
        write_spec(tmp_path, name, text)
    diagnostics = analyse_child(tmp_path, "").diagnostics
    assert [(Path(d.path).name, d.code, d.line) for d in diagnostics] == expected


# --------------------------------------------------------------------------- hints and multi-error reporting


def test_did_you_mean() -> None:
    assert did_you_mean("itmes", ["items", "tags"]) == "did you mean `items`?"
    assert did_you_mean("zzz", ["items", "tags"]) == ""


@pytest.mark.parametrize(
    ("extra", "code", "hint"),
    [
        ("tool act() -> int:\n    return len(itmes)\n", "E2002", "did you mean `items`?"),
        ("tool act() -> int:\n    return lenn(items)\n", "E2002", "did you mean `len`?"),
        ("tool act(s: Stauts) -> int:\n    return 0\n", "E2003", "did you mean `Status`?"),
        ("tool act(id: int) -> str:\n    return items[id].nmae\n", "E2008", "did you mean `name`?"),
        ("tool act() -> Status:\n    return Status.opne\n", "E2007", "did you mean `open`?"),
        ('tool act() -> int:\n    fail not_fonud("x")\n', "E2013", "did you mean `not_found`?"),
        (
            "tool act() -> int:\n    return 0\n\ntest t:\n    scenario bsuy\n    act()\n\nscenario busy:\n    count = 1\n",
            "E2010",
            "did you mean `busy`?",
        ),
        (
            "tool act(limit: int) -> int:\n    return limit\n\ntest t:\n    act(limti=1)\n",
            "E3006",
            "did you mean `limit`?",
        ),
        ("tool act() -> int:\n    return 0\n\ntest t:\n    atc()\n", "E2009", "did you mean `act`?"),
    ],
)
def test_did_you_mean_hints(extra: str, code: str, hint: str) -> None:
    result = analyse(extra)
    matching = [d for d in result.diagnostics if d.code == code]
    assert matching and matching[0].hint == hint, result.diagnostics
    assert f"  hint: {hint}" in render_text(matching[0], result.sources["spec.envspec"])


def test_unknown_archetype_hint() -> None:
    diagnostics = analyse_source("environment shop:\n    archetype data_pipline\n", "spec.envspec").diagnostics
    assert [(d.code, d.hint) for d in diagnostics] == [("E2015", "did you mean `data_pipeline`?")]


def test_syntax_errors_in_several_declarations_reported_together() -> None:
    extra = "enum Size:\n    small large\n\nrecord Box:\n    id int\n\ntool act() -> int:\n    return (1\n\ntool ok() -> int:\n    return 1\n"
    assert found(extra) == [("E1002", 2, 11), ("E1002", 5, 8), ("E1002", 10, 1)]


def test_type_errors_in_several_tools_reported_together() -> None:
    extra = (
        'tool a() -> int:\n    return "x"\n\n'
        "tool b() -> int:\n    return len(owner)\n\n"
        "tool c() -> int:\n    if count:\n        return 1\n    return cuont\n"
    )
    assert found(extra) == [("E3001", 2, 12), ("E3009", 5, 16), ("E3010", 8, 8), ("E2002", 10, 12)]


def test_semantic_analysis_goes_on_beside_syntax_errors() -> None:
    """A syntax error in one declaration does not hide the type errors of the others
    (tests/test_diagnostics_recovery.py has the rules); they come in order of position."""
    assert [code for code, _, _ in found('tool a() -> int:\n    return "x"\n\nenum Size:\n    small large\n')] == [
        "E3001",
        "E1002",
    ]


def test_missing_header() -> None:
    result = analyse_source("enum Size:\n    small\n", "spec.envspec")
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("E2004", 1, 1)]
    assert result.environment is None


def test_a_literal_takes_its_type_from_the_other_side_of_a_comparison() -> None:
    """`["a"] == tags` and `tags == ["a"]` mean the same, with the literal on either side."""
    clean('tool act() -> bool:\n    return ["a"] == tags and tags == ["a"] and {} == prices and [] != catalogue\n')


def test_comparing_two_constants_is_reported() -> None:
    """Always the same result (and mypy --strict refuses `"x" != "y"` in the generated code)."""
    assert found('tool act() -> bool:\n    return "x" != "y"\n') == [("E3004", 2, 12)]
    assert found("tool act() -> bool:\n    return 1 == 1\n") == [("E3004", 2, 12)]
