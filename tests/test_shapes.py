"""Shapes real data has (issue 14): record fields whose key may be absent (`nickname?:
str`), which is not None: the key is left out of the value, its JSON and its schema's
`required`, and a body reads the field only where a presence test (`"nickname" in c`)
or an assignment showed it there."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from lowered import imported_package, lowered_files

from compiler.analyse import analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.front.fmt import format_source
from compiler.front.parse import parse_source
from compiler.lower import lower

SPEC = Path(__file__).resolve().parent / "fixtures" / "shapes" / "customer_shapes.envspec"
HEADER = 'environment shape_rules:\n    title "Shapes"\n\nrecord Guest:\n    name: str\n    nickname?: str\n\n'


def codes(body: str) -> list[str]:
    return [d.code for d in analyse_source(HEADER + body, "s.envspec").diagnostics if d.severity == "error"]


def tool(*lines: str) -> str:
    return "tool t(guest: Guest) -> str:\n" + "".join(f"    {line}\n" for line in lines)


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return lowered_files(SPEC)


@pytest.fixture(scope="module")
def package(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with imported_package(files, tmp_path_factory.mktemp("shapes"), "customer_shapes", "environment") as imported:
        yield imported


# --------------------------------------------------------------------------- parse and format


def test_the_marker_parses_on_record_fields_only() -> None:
    parsed = parse_source(HEADER, "s.envspec")
    assert parsed.module is not None and parsed.diagnostics == []
    fields = parsed.module.records[0].fields
    assert [(f.name, f.absent) for f in fields] == [("name", False), ("nickname", True)]
    state = parse_source(HEADER + 'state:\n    note?: str = "x"\n', "s.envspec")
    assert [(d.code, d.line, d.col) for d in state.diagnostics] == [("E1002", 9, 9)]


def test_fmt_keeps_the_marker() -> None:
    source = HEADER.replace("nickname?: str", "nickname  ?:optional[ str ]")
    out = format_source(source, "s.envspec").text
    assert out is not None and "    nickname?: optional[str]\n" in out
    assert format_source(out, "s.envspec").text == out


# --------------------------------------------------------------------------- type rules


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["return guest.nickname"], ["E3030"]),
        (['if "nickname" in guest:', "    return guest.nickname", "return guest.name"], []),
        (['if "nickname" not in guest:', "    return guest.name", "return guest.nickname"], []),
        (['require "nickname" in guest else not_found("none")', "return guest.nickname"], []),
        (['return guest.nickname if "nickname" in guest else guest.name'], []),
        (['return guest.name if "nickname" not in guest else guest.nickname'], []),
        (['if "nickname" in guest and len(guest.nickname) > 2:', '    return "long"', "return guest.name"], []),
        (['if "nickname" in guest or len(guest.nickname) > 2:', '    return "x"', "return guest.name"], ["E3030"]),
        (['if not ("nickname" in guest):', "    return guest.nickname", "return guest.name"], ["E3030"]),
        (['if "nickname" in guest:', "    pass", "return guest.nickname"], ["E3030"]),
        (["let g = guest", 'g.nickname = "x"', "return g.nickname"], []),
        (["let g = guest", 'g.nickname = "x"', "del g.nickname", "return g.nickname"], ["E3030"]),
        (
            ["let g = guest", 'if "nickname" in g:', '    g = Guest(name="x")', "    return g.nickname", 'return ""'],
            ["E3030"],
        ),
        (["let g = guest", 'g.nickname += "x"', "return g.name"], ["E3030"]),
        (['let b = "name" in guest', "return guest.name"], ["E3004"]),
        (['let b = "nick" in guest', "return guest.name"], ["E2008"]),
        (['let k = "nickname"', "let b = k in guest", "return guest.name"], ["E3004"]),
        (["del guest.name", 'return ""'], ["E3008"]),
        (["del guest.nickname", 'return ""'], []),
        (['let g = Guest(name="a")', 'let h: Guest = {"name": "b"}', "return g.name + h.name"], []),
        (['let g = Guest(nickname="a")', "return g.name"], ["E3007"]),
    ],
)
def test_reading_needs_a_presence_test(lines: list[str], expected: list[str]) -> None:
    assert codes(tool(*lines)) == expected


def test_state_records_are_read_through_a_local() -> None:
    spec = 'state:\n    front: Guest = Guest(name="a")\n\n'
    assert codes(spec + tool("return front.nickname")) == ["E3030"]
    assert codes(spec + tool("let f = front", 'return f.nickname if "nickname" in f else ""')) == []


def test_a_helper_that_may_delete_the_field_ends_a_presence_test() -> None:
    forget = "fn forget(g: Guest) -> None:\n    del g.nickname\n\nfn outer(g: Guest) -> None:\n    forget(g)\n\n"
    look = "fn look(g: Guest) -> str:\n    return g.name\n\n"
    after = ['if "nickname" in guest:', "    {}(guest)", "    return guest.nickname", 'return ""']
    assert codes(forget + tool(*(line.format("forget") for line in after))) == ["E3030"]
    assert codes(forget + tool(*(line.format("outer") for line in after))) == ["E3030"]  # through another
    assert codes(look + tool(*(line.replace("{}(guest)", "let n = look(guest)") for line in after))) == []


def test_a_tool_called_in_a_test_ends_presence_tests() -> None:
    spec = 'state:\n    g: Guest = {"name": "a"}\n\ntool touch() -> None:\n    pass\n\n'
    ok = 'test t:\n    let x = g\n    expect "nickname" in x and x.nickname == "n"\n'
    assert codes(spec + ok) == []
    late = 'test t:\n    let x = g\n    expect "nickname" in x and touch() is None and x.nickname == "n"\n'
    assert codes(spec + late) == ["E3030"]


def test_a_default_on_an_absent_field_is_refused() -> None:
    assert codes("record R:\n    a?: int = 1\n") == ["E3031"]


def test_data_may_leave_the_key_out() -> None:
    ok = 'state:\n    g: Guest = {"name": "a"}\n    h: list[Guest] = [{"name": "b", "nickname": "c"}]\n'
    assert codes(ok) == []
    assert codes('state:\n    g: Guest = {"nickname": "a"}\n') == ["E3001"]
    assert codes('state:\n    g: Guest = {"name": "a", "nickname": None}\n') == ["E3001"]


# --------------------------------------------------------------------------- effects


def test_del_of_a_field_in_state_is_a_write() -> None:
    result = analyse_source(
        HEADER
        + "state:\n    guests: map[int, Guest] = {}\n\n"
        + "tool forget(id: int) -> None:\n    let g = guests[id]\n    del g.nickname\n",
        "s.envspec",
    )
    assert result.environment is not None, result.diagnostics
    forget = result.environment.tools[0]
    assert forget.reads == ["guests"] and forget.writes == ["guests"]


# --------------------------------------------------------------------------- lowering and behaviour


def test_full_qc_passes(files: dict[str, str]) -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="customer_shapes", files=files)], dynamic=True)
    outcome = checked["customer_shapes"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings


def test_lowered_as_not_required_keys(files: dict[str, str]) -> None:
    source = files["environment.py"]
    assert "    nickname: NotRequired[str]\n" in source and "    note: NotRequired[str | None]\n" in source
    assert 'return c.get("nickname", c["name"])' in source  # `c.nickname if "nickname" in c else c.name`


def test_schema_leaves_absent_fields_out_of_required(files: dict[str, str]) -> None:
    tools = {t["name"]: t for t in json.loads(files["tools.json"])["tools"]}
    customer = tools["add_customer"]["parameters"]["properties"]["customer"]
    assert customer["required"] == ["id", "name"]
    assert customer["properties"]["nickname"] == {"type": "string"}  # absent, not null
    assert customer["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_absent_keys_stay_absent(package: ModuleType) -> None:
    env = package.Environment()
    assert json.loads(env.state_json())["customers"]["1"] == {"id": 1, "name": "Ann"}
    assert env.call("set_nickname", {"customer_id": 1, "nickname": "annie"})["nickname"] == "annie"
    assert env.call("forget_nickname", {"customer_id": 1}) == {"id": 1, "name": "Ann"}
    refused = env.call("forget_nickname", {"customer_id": 1})
    assert refused["error"]["kind"] == "invalid_state"
    added = env.call("add_customer", {"customer": {"id": 9, "name": "Flo", "note": None}})
    assert added == {"id": 9, "name": "Flo", "note": None}
    assert env.state()["customers"]["9"] == {"id": 9, "name": "Flo", "note": None}
    wrong = env.call("add_customer", {"customer": {"id": 10, "name": "G", "nickname": None}})
    assert wrong["error"]["kind"] == "invalid_argument" and "nickname" in wrong["error"]["message"]


def test_a_failed_call_puts_a_deleted_key_back_in_its_place(package: ModuleType) -> None:
    env = package.Environment()
    before = env.state_json()
    env._undo.tool = "test"  # a call that deletes, then fails
    try:
        customer = env._state["customers"][2]
        env._undo.save_record(customer)
        customer.pop("nickname", None)
        env._undo.rollback()
    finally:
        env._undo.finish()
    assert env.state_json() == before  # byte for byte: the key is back where it was


def _random_customer(rng: random.Random, number: int) -> dict[str, Any]:
    customer: dict[str, Any] = {"id": number, "name": f"c{number}"}
    if rng.random() < 0.5:
        customer["nickname"] = rng.choice(["a", "bee", "\u00e9t\u00e9"])
    if rng.random() < 0.5:
        customer["tags"] = [rng.choice("xyz") for _ in range(rng.randrange(3))]
    if rng.random() < 0.5:
        customer["address"] = {"street": "s", "city": rng.choice(["Oslo", "Rome"])}
    if rng.random() < 0.5:
        customer["note"] = rng.choice([None, "n"])
    return customer


def test_seeded_round_trips_through_calls_snapshots_and_forks(package: ModuleType) -> None:
    """Customers with random keys left out go in as arguments and come back unchanged
    from results, the state, a restored snapshot, a fork and a rebuilt environment; random
    calls then change the fork and the parent apart."""
    rng = random.Random(14)
    for round_ in range(40):
        env = package.Environment()
        given = [_random_customer(rng, 100 + i) for i in range(5)]
        for customer in given:
            assert env.call("add_customer", {"customer": customer}) == customer
        public = json.loads(env.state_json())["customers"]
        assert [public[str(c["id"])] for c in given] == given
        snapshot = env.snapshot()
        fork = env.fork()
        calls = [
            ("set_nickname", {"nickname": "zed"}),
            ("forget_nickname", {}),
            ("tag", {"label": "t"}),
            ("move", {"city": "Bern"}),
        ]
        for _ in range(6):
            name, extra = rng.choice(calls)
            fork.call(name, {"customer_id": rng.choice(given)["id"], **extra})
        assert [json.loads(env.state_json())["customers"][str(c["id"])] for c in given] == given, round_
        env.restore(snapshot)
        assert json.loads(env.state_json())["customers"] == public
        rebuilt = package.Environment(fork.saved_state())
        assert rebuilt.state_json() == fork.state_json()


# =========================================================================== tagged unions

UNIONS = Path(__file__).resolve().parent / "fixtures" / "shapes" / "retail_payments.envspec"
TILL = (
    'environment till:\n    title "Till"\n\n'
    "record Card:\n    last_four: str\n    amount: float\n\n"
    "record Cash:\n    amount: float\n    note?: str\n\n"
    'union Payment by source:\n    Card = "credit_card"\n    Cash = "cash"\n\n'
)


def till_codes(*lines: str) -> list[str]:
    body = "tool t(p: Payment) -> str:\n" + "".join(f"    {line}\n" for line in lines)
    return [d.code for d in analyse_source(TILL + body, "u.envspec").diagnostics if d.severity == "error"]


@pytest.fixture(scope="module")
def union_files() -> dict[str, str]:
    return lowered_files(UNIONS)


@pytest.fixture(scope="module")
def payments(union_files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with imported_package(union_files, tmp_path_factory.mktemp("unions"), "retail_payments", "environment") as imported:
        yield imported


def test_renaming_a_member_record_renames_it_in_the_union(tmp_path: Path) -> None:
    (tmp_path / "till.envspec").write_text(TILL + "tool pay(p: Payment) -> str:\n    return p.source\n", "utf-8")
    child = 'environment shop:\n    title "Shop"\n    extends "till.envspec"\n\nrename record Card as CreditCard\n'
    (tmp_path / "shop.envspec").write_text(child, "utf-8")
    result = analyse_file(tmp_path / "shop.envspec")
    assert result.environment is not None, result.diagnostics
    union = next(r for r in result.environment.records if r.name == "Payment")
    assert union.members == {"CreditCard": "credit_card", "Cash": "cash"}
    assert "Card" not in {r.name for r in result.environment.records}


def test_a_union_parses_and_formats() -> None:
    parsed = parse_source(TILL, "u.envspec")
    assert parsed.module is not None and parsed.diagnostics == []
    union = parsed.module.records[2]
    assert (union.name, union.tag, union.members) == ("Payment", "source", {"Card": "credit_card", "Cash": "cash"})
    messy = TILL.replace(
        'union Payment by source:\n    Card = "credit_card"', 'union Payment  by source :\n  Card="credit_card"'
    )
    messy = messy.replace('    Cash = "cash"', '  Cash   =  "cash"')
    out = format_source(messy, "u.envspec").text
    assert out is not None and 'union Payment by source:\n    Card = "credit_card"\n    Cash = "cash"\n' in out
    assert format_source(out, "u.envspec").text == out


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (['return f"{p.amount}"'], []),  # a field every member has
        (["return p.source"], []),
        (["return p.last_four"], ["E3032"]),
        (['if p.source == "credit_card":', "    return p.last_four", 'return ""'], []),
        (['if p.source != "credit_card":', '    return ""', "return p.last_four"], []),
        (['require p.source == "credit_card" else invalid_argument("a card")', "return p.last_four"], []),
        (['return p.last_four if p.source == "credit_card" else ""'], []),
        (['if p.source == "cash":', "    return p.last_four", 'return ""'], ["E2008"]),
        (['if p.source == "cash" and "note" in p:', "    return p.note", 'return ""'], []),
        (['p.source = "cash"', 'return ""'], ["E3008"]),
        (["let q = p", 'if q.source == "credit_card":', "    q = p", "    return q.last_four", 'return ""'], ["E3032"]),
        (['let c: Payment = Card(last_four="1234", amount=1.0)', "return c.source"], []),
        (['let c: Payment = {"source": "cash", "amount": 1.0}', "return c.source"], []),
        (['let c: Payment = {"source": "cheque", "amount": 1.0}', "return c.source"], ["E3001"]),
        (['let c: Payment = {"amount": 1.0}', "return c.source"], ["E3001"]),
        (["let c = Payment(amount=1.0)", 'return ""'], ["E3005"]),
        (["let c: Card = Cash(amount=1.0)", 'return ""'], ["E3001"]),
        (['let cards: list[Payment] = [Card(last_four="1", amount=1.0)]', "return cards[0].source"], []),
        (
            [
                'if p.source == "credit_card":',
                "    return p.last_four",
                "else:",
                '    return p.note if "note" in p else ""',
            ],
            [],
        ),
        (['if p.source != "cash":', "    return p.last_four", 'return ""'], []),
        (['if p.source == "cash":', '    return ""', "return p.last_four"], []),  # the one member left
        (['if p.source == "cash":', '    return ""', "p = p", "return p.last_four"], ["E4007", "E3032"]),
        (['if p.source == "bitcoin":', '    return ""', 'return ""'], ["E3004"]),
    ],
)
def test_union_type_rules(lines: list[str], expected: list[str]) -> None:
    assert till_codes(*lines) == expected


def test_union_declarations_are_checked() -> None:
    base = 'environment till:\n    title "Till"\n\nrecord Cash:\n    amount: float\n\n'
    assert analyse_source(base + 'union P by source:\n    Cash = "cash"\n', "u.envspec").environment is not None
    nested = base + 'union P by source:\n    Cash = "cash"\n\nunion Q by kind:\n    P = "p"\n'
    assert [d.code for d in analyse_source(nested, "u.envspec").diagnostics] == ["E3033"]
    twice = base + 'union P by source:\n    Cash = "cash"\n\nunion Q by kind:\n    Cash = "c"\n'
    assert [d.code for d in analyse_source(twice, "u.envspec").diagnostics] == ["E3033"]
    bad_data = base + 'union P by source:\n    Cash = "cash"\n\nstate:\n    p: P = {"source": "card", "amount": 1.0}\n'
    assert [d.code for d in analyse_source(bad_data, "u.envspec").diagnostics] == ["E3001"]
    wrong_tag = (
        base + 'union P by source:\n    Cash = "cash"\n\nstate:\n    c: Cash = {"source": "card", "amount": 1.0}\n'
    )
    assert [d.code for d in analyse_source(wrong_tag, "u.envspec").diagnostics] == ["E3001"]
    error_tag = base + 'union P by error:\n    Cash = "cash"\n'
    assert [d.code for d in analyse_source(error_tag, "u.envspec").diagnostics] == ["E2014"]
    cycle = base + 'record Box:\n    inner: P\n\nunion P by source:\n    Box = "box"\n    Cash = "cash"\n'
    assert {d.code for d in analyse_source(cycle, "u.envspec").diagnostics} == {"E3023"}


def test_union_full_qc_passes(union_files: dict[str, str]) -> None:
    result = analyse_file(UNIONS)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="retail_payments", files=union_files)], dynamic=True)
    outcome = checked["retail_payments"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings


def test_union_lowered_as_a_union_of_tagged_typeddicts(union_files: dict[str, str]) -> None:
    source = union_files["environment.py"]
    assert "Payment = Card | GiftCard | Paypal\n" in source
    assert '    source: Literal["credit_card"]\n' in source
    assert 'if p["source"] == "credit_card":\n' in source  # narrowing, as mypy reads it


def test_union_schema_is_any_of_tagged_members(union_files: dict[str, str]) -> None:
    tools = {t["name"]: t for t in json.loads(union_files["tools.json"])["tools"]}
    payment = tools["pay"]["parameters"]["properties"]["payment"]
    assert [option["properties"]["source"] for option in payment["anyOf"]] == [
        {"type": "string", "enum": [tag]} for tag in ("credit_card", "gift_card", "paypal")
    ]
    assert all(option["required"][0] == "source" for option in payment["anyOf"])
    paypal = payment["anyOf"][2]
    assert "note" in paypal["properties"] and "note" not in paypal["required"]


def test_json_picks_the_member_by_its_tag(payments: ModuleType) -> None:
    env = payments.Environment()
    gift = {"source": "gift_card", "balance": 5.0, "amount": 2}
    order = env.call("pay", {"order_id": 1, "payment": gift})
    assert order["payments"][1] == {"source": "gift_card", "balance": 5.0, "amount": 2.0}
    unknown = env.call("pay", {"order_id": 1, "payment": {"source": "bitcoin", "amount": 1.0}})
    assert unknown["error"]["kind"] == "invalid_argument" and unknown["error"]["field"] == "payment.source"
    assert unknown["error"]["allowed"] == ["credit_card", "gift_card", "paypal"]
    missing = env.call("pay", {"order_id": 1, "payment": {"amount": 1.0}})
    assert missing["error"]["field"] == "payment.source"
    mixed = env.call("pay", {"order_id": 1, "payment": {"source": "gift_card", "email": "x", "amount": 1.0}})
    assert mixed["error"]["kind"] == "invalid_argument" and "email" in mixed["error"]["message"]
    card = env.call("pay_by_card", {"order_id": 1, "brand": "amex", "last_four": "0005", "amount": 1.0})
    assert card == {"source": "credit_card", "brand": "amex", "last_four": "0005", "amount": 1.0}
    with pytest.raises(payments.ScenarioError):
        payments.Environment({"default_payment": {"source": "cash", "amount": 1.0}})


def _random_payment(rng: random.Random) -> dict[str, Any]:
    amount = rng.choice([0.5, 1.0, 2.25])
    kind = rng.choice(["credit_card", "gift_card", "paypal"])
    if kind == "credit_card":
        return {"source": kind, "brand": rng.choice(["visa", "amex"]), "last_four": "1234", "amount": amount}
    if kind == "gift_card":
        return {"source": kind, "balance": rng.choice([0.0, 3.5]), "amount": amount}
    payment: dict[str, Any] = {"source": kind, "email": "p@example.com", "amount": amount}
    if rng.random() < 0.5:
        payment["note"] = "n"
    return payment


def test_seeded_union_round_trips(payments: ModuleType) -> None:
    """Random payments go in as arguments and come back from results, the state, a
    snapshot, a fork and a saved state unchanged; changes on the fork stay on the fork."""
    rng = random.Random(15)
    for round_ in range(40):
        env = payments.Environment()
        given = [_random_payment(rng) for _ in range(4)]
        for payment in given:
            env.call("pay", {"order_id": 1, "payment": payment})
        stored = json.loads(env.state_json())["orders"]["1"]["payments"][1:]
        assert stored == given, round_
        snapshot = env.snapshot()
        fork = env.fork()
        for name, args in rng.sample(
            [("refund_to_gift_cards", {}), ("ship", {"tracking": "T"}), ("pay", {"payment": given[0]})], 2
        ):
            fork.call(name, {"order_id": 1, **args})
        assert json.loads(env.state_json())["orders"]["1"]["payments"][1:] == given, round_
        env.call("refund_to_gift_cards", {"order_id": 1})
        env.restore(snapshot)
        assert json.loads(env.state_json())["orders"]["1"]["payments"][1:] == given, round_
        rebuilt = payments.Environment(fork.saved_state())
        assert rebuilt.state_json() == fork.state_json()


def test_edge_shapes_full_qc_passes() -> None:
    """Deletes through `state.` and items, a set through `state.`, an absent map[json, V]
    field (exported as [key, value] pairs) and a `get` with a fresh default."""
    spec = SPEC.parent / "edge_shapes.envspec"
    result = analyse_file(spec)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    files = lower(result.environment, spec.name)
    assert 'g.get("tags", {})' in files["environment.py"]
    checked = check_packages([Package(env=result.environment, name="edge_shapes", files=files)], dynamic=True)
    outcome = checked["edge_shapes"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings
