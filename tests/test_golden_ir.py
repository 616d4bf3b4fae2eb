"""Golden IR: what the parser and the analyser make of specs, in files a reviewer reads.

- `tests/golden/ir/NAME.json`: the analysed IR of the small dedicated specs in
  `tests/fixtures/golden/` (one area each), in full;
- `tests/golden/digest/SPEC.json`: a position-free summary of every shipped spec
  (every spec below specs/, the prototypes included): types, effects, errors, names.

A difference means the parser or the analyser changed what later stages see. If the
change is intended, run `python tests/refresh_golden.py` and review the diff.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from refresh_golden import (
    FIXTURES,
    GOLDEN,
    IR_SPECS,
    POSITION_FIELDS,
    ROOT,
    SPECS,
    WITH_POSITIONS,
    analysed_environment,
    digest,
    dump,
    environment_name,
    goldens,
    ir_specs,
    kinds,
    main,
    shipped_specs,
    stale_files,
)
from shipped import library_specs, package_dir

REFRESH = "run `python tests/refresh_golden.py` if the change is intended"
GOLDENS = goldens()
IR_GOLDENS = [(name, produce) for name, produce in GOLDENS if name.startswith("ir/")]
DIGESTS = [(name, produce) for name, produce in GOLDENS if name.startswith("digest/")]
MAX_BYTES = 40_000
"""Each golden file stays small enough to read in review."""


def keys_of(data: Any) -> Iterator[str]:
    """Every key of every object in a JSON document."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield from item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def leaves(data: Any) -> Iterator[Any]:
    """Every value of a JSON document that is not an object or an array."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            yield item


def test_golden_kinds() -> None:
    assert kinds(GOLDENS) == {"ir", "digest"}
    assert len(GOLDENS) == len(IR_GOLDENS) + len(DIGESTS)


def test_every_dedicated_spec_has_a_golden_ir() -> None:
    assert [name for name, _ in IR_GOLDENS] == [f"ir/{name}.json" for name in IR_SPECS]
    assert all(spec.is_file() for spec in ir_specs())
    assert WITH_POSITIONS and WITH_POSITIONS <= set(IR_SPECS)
    assert {"plain", "extends", "world", "effects"} <= set(IR_SPECS)


def test_every_shipped_spec_has_a_digest() -> None:
    specs = shipped_specs()
    assert [name for name, _ in DIGESTS] == [
        f"digest/{spec.relative_to(SPECS).with_suffix('.json').as_posix()}" for spec in specs
    ]
    assert len(library_specs()) >= 2 and len(list(SPECS.glob("prototypes/*.envspec"))) >= 2


@pytest.mark.parametrize(("name", "produce"), GOLDENS, ids=[name for name, _ in GOLDENS])
def test_golden(name: str, produce: Callable[[], str]) -> None:
    path = GOLDEN / name
    assert path.is_file(), f"tests/golden/{name} is missing; {REFRESH}"
    expected = path.read_text(encoding="utf-8")
    actual = produce()
    if actual != expected:
        # Compare parsed JSON first for a readable pytest diff, then the exact text.
        assert json.loads(actual) == json.loads(expected), REFRESH
        assert actual == expected, f"formatting of tests/golden/{name} changed; {REFRESH}"


def present(pairs: list[tuple[str, Callable[[], str]]]) -> list[Path]:
    return [GOLDEN / name for name, _ in pairs if (GOLDEN / name).is_file()]  # missing: see test_golden


def test_golden_files_are_small_and_hold_no_absolute_path() -> None:
    for path in present(GOLDENS):
        text = path.read_text(encoding="utf-8")
        assert len(text.encode("utf-8")) <= MAX_BYTES, f"{path.relative_to(ROOT)} is over {MAX_BYTES} bytes"
        assert str(ROOT) not in text, f"{path} holds an absolute path; {REFRESH}"
        assert text.endswith("}\n") and "\r" not in text


def test_no_orphaned_golden_files() -> None:
    assert stale_files(GOLDENS) == [], REFRESH
    assert not (GOLDEN / "packages").exists(), "generated/ is the golden copy of every package"


AT = re.compile(r'"at": "\d+:\d+-\d+:\d+"')
"""A node's position in an IR golden."""


def test_positions_only_where_kept() -> None:
    for path in present(IR_GOLDENS):
        text = path.read_text(encoding="utf-8")
        keys = set(keys_of(json.loads(text)))
        assert not keys & set(POSITION_FIELDS), f"{path.name}: positions are written as one `at` key"
        if path.stem in WITH_POSITIONS:
            assert AT.search(text) and "item_places" in keys, f"{path.name} keeps positions"
        else:
            assert not AT.search(text) and "item_places" not in keys, f"{path.name} is position-free"


def test_digests_have_no_positions() -> None:
    """A digest holds names, types and effects (its keys include record field names,
    which may well be `line` or `at`): no number but the seed, nothing like a span."""
    span = re.compile(r"\d+:\d+-\d+:\d+")
    for path in present(DIGESTS):
        data = json.loads(path.read_text(encoding="utf-8"))
        values = list(leaves(data))
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        assert numbers == [data["environment"]["seed"]], path.name
        assert not [v for v in values if isinstance(v, str) and span.fullmatch(v)], path.name
        assert "item_places" not in set(keys_of(data)), path.name


def test_the_plain_golden_positions_point_at_the_spec() -> None:
    """The `at` of the plain spec's tools is where `tool NAME` is written."""
    ir = json.loads((GOLDEN / "ir" / "plain.json").read_text(encoding="utf-8"))
    lines = (FIXTURES / "plain.envspec").read_text(encoding="utf-8").splitlines()
    assert ir["tools"]
    for tool in ir["tools"]:
        line, col = (int(n) for n in tool["at"].split("-")[0].split(":"))
        assert lines[line - 1][col - 1 :].startswith(f"tool {tool['name']}("), tool["name"]


def test_dedicated_specs_cover_their_areas() -> None:
    """Each dedicated spec still shows what it is there for."""
    docs = {name: json.loads((GOLDEN / "ir" / f"{name}.json").read_text(encoding="utf-8")) for name in IR_SPECS}
    plain = docs["plain"]
    assert plain["enums"] and plain["records"] and plain["state"] and plain["world"] and plain["scenarios"]
    assert plain["tests"] and plain["tasks"] and {bool(t["writes"]) for t in plain["tools"]} == {True, False}
    extends = docs["extends"]
    files = {decl["file"] for decl in extends["tools"]}
    assert files == {"tests/fixtures/golden/extends.envspec", "tests/fixtures/golden/prototypes/desk.envspec"}
    assert [t["name"] for t in extends["tools"]] == ["add_parcel", "relabel"]
    assert extends["world_values"]["noun"] == "parcel" and extends["header"]["seed"] == 5
    world = docs["world"]
    assert sorted(world["inputs"]) == [
        "tests/fixtures/golden/data/hours.json",
        "tests/fixtures/golden/data/shelves.json",
    ]
    assert world["world_values"]["shelves"]["1"]["name"] == "Front"
    effects = {t["name"]: t for t in docs["effects"]["tools"] + docs["effects"]["fns"]}
    assert effects["tag_box"]["writes"] == ["boxes", "log"] and effects["tag"]["writes"] == []
    assert effects["preview"]["reads"] == ["boxes"] and effects["preview"]["writes"] == []


@pytest.mark.parametrize("spec", library_specs(), ids=lambda spec: spec.stem)
def test_digest_agrees_with_the_generated_tools_json(spec: Path) -> None:
    """The digest says what the shipped package tells the agent."""
    summary = digest(analysed_environment(spec), spec.relative_to(ROOT).as_posix())
    tools = json.loads((package_dir(environment_name(spec)) / "tools.json").read_text(encoding="utf-8"))
    assert [t["name"] for t in tools["tools"]] == list(summary["tools"])
    for tool in tools["tools"]:
        entry = summary["tools"][tool["name"]]
        assert list(tool["parameters"]["properties"]) == list(entry["params"]), tool["name"]
        assert tool["reads"] == entry["reads"] and tool["errors"] == entry["errors"], tool["name"]
        assert tool["state_fields_affected"] == entry["writes"], tool["name"]
        assert tool["side_effect"] == entry["side_effect"], tool["name"]


def test_dump_is_json_with_short_lists_on_one_line() -> None:
    data = {"a": ["x", "y"], "b": {"c": 1}, "d": [{"e": []}], "f": ["z" * 120], "g": {}, "h": {"i": 1, "j": 2}}
    text = dump(data)
    assert json.loads(text) == data
    numbered: dict[Any, Any] = {1: {"x": [1, 2], "y": None}, False: 0, None: 1, 2.5: 2}
    assert json.loads(dump(numbered)) == json.loads(json.dumps(numbered)), "keys as json.dumps writes them"
    assert '  "a": ["x", "y"],\n  "b": {"c": 1},\n' in text
    assert '  "f": [\n    "' in text and '  "g": {},\n' in text and '  "h": {\n    "i": 1,\n    "j": 2\n  }' in text


def test_refresh_check_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    """`python tests/refresh_golden.py --check` passes on the committed files."""
    assert main(["--check"]) == 0, capsys.readouterr().out
