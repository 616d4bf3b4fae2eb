"""No lookup can crash a tool (issue 24): a map or list looked up with a key the agent
chose, which no guard of the body checks, answers `not_found` naming the map and the key;
a guarded lookup stays as written."""

from __future__ import annotations

from lowered import environment_module

from compiler.analyse import analyse_source
from compiler.lower import lower

BOOKING = '''environment booking:
    title "Booking"

record Room:
    number: int
    guest: optional[str] = None

state:
    rooms: map[int, Room] = {101: {"number": 101}, 102: {"number": 102}}
    floors: list[list[int]] = [[101, 102]]

tool book_room(room: int, guest: str) -> Room:
    """The issue's example: `require room in rooms` was removed."""
    let r = rooms[room]
    r.guest = guest
    return r

tool floor_rooms(floor: int) -> list[int]:
    return floors[floor]

tool guarded(room: int) -> int:
    require room in rooms else not_found(f"no room {room}", entity="room", field="room")
    return rooms[room].number
'''


def _lowered() -> tuple[dict[str, list[str]], str]:
    result = analyse_source(BOOKING, "booking.envspec")
    assert result.environment is not None, [d.message for d in result.diagnostics]
    errors = {tool.name: tool.errors for tool in result.environment.tools}
    return errors, lower(result.environment, "booking.envspec")["environment.py"]


def test_an_unguarded_room_is_not_found_and_changes_nothing() -> None:
    _, source = _lowered()
    env = environment_module(source, "booking_environment").Environment()
    before = env.state_json()
    result = env.call("book_room", {"room": 999, "guest": "ann"})
    assert result["error"]["kind"] == "not_found", result
    assert result["error"]["entity"] == "rooms" and result["error"]["key"] == 999
    assert result["error"]["field"] == "room"
    assert env.state_json() == before
    assert env.call("book_room", {"room": 101, "guest": "ann"}) == {"number": 101, "guest": "ann"}


def test_a_list_position_out_of_range_is_not_found() -> None:
    _, source = _lowered()
    env = environment_module(source, "booking_environment").Environment()
    assert env.call("floor_rooms", {"floor": 3})["error"]["kind"] == "not_found"
    assert env.call("floor_rooms", {"floor": -1}) == [101, 102]  # Python's positions, the last included


def test_the_guard_is_seen_and_the_errors_are_listed() -> None:
    errors, source = _lowered()
    guarded = source[source.index("def guarded") : source.index("def guarded") + 600]
    assert "_not_found" not in guarded
    assert "not_found" in errors["book_room"] and "not_found" in errors["floor_rooms"]


PLACES = """environment counters:
    title "Counters"

state:
    counts: map[str, int] = {"a": 1}
    slots: list[int] = [0, 0]

tool bump(name: str) -> int:
    counts[name] += 1
    return counts[name]

tool forget(name: str) -> None:
    del counts[name]

tool fill(slot: int, value: int) -> None:
    slots[slot] = value

tool add(name: str) -> None:
    counts[name] = 0
"""


def test_places_that_need_their_key_are_checked_before_the_change() -> None:
    result = analyse_source(PLACES, "counters.envspec")
    assert result.environment is not None, [d.message for d in result.diagnostics]
    env = environment_module(lower(result.environment, "counters.envspec")["environment.py"], "counters").Environment()
    before = env.state_json()
    for tool, args in (("bump", {"name": "zz"}), ("forget", {"name": "zz"}), ("fill", {"slot": 5, "value": 1})):
        assert env.call(tool, args)["error"]["kind"] == "not_found", tool
    assert env.state_json() == before
    assert env.call("bump", {"name": "a"}) == 2
    assert env.call("add", {"name": "zz"}) is None  # a plain assignment to a map adds the key
    assert env.call("fill", {"slot": 1, "value": 7}) is None
    assert env.state()["slots"] == [0, 7]
