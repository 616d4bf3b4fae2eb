"""Sets, maps keyed by json values, `rng python` and `str.zfill`: analysis, lowering, the
generated runtime and the generated package's own QC.

`SPEC` holds one tool per behaviour; it is analysed and lowered once per module, imported
as a package of its own, and once goes through ruff, mypy --strict, envc's AST rules and
its generated tests. `PLAIN` is a spec on the default generator (splitmix64), to show
that `rng python` changes nothing for specs that do not ask for it. The property tests
compare the generated code with Python itself: `set` for add/discard, a dict with str and
int keys for `map[json, V]`, and `random.Random(seed)` for `random_int` / `random_choice`.

The tests after "bugs found while writing this file" pin compiler bugs that file found
(json keys unchecked at run time, key order after a rolled-back `del`, record set
defaults, repeated set-literal items, `invoke` sharing a set, `sorted` of enum sets).
"""

from __future__ import annotations

import ast
import importlib
import json
import random
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import ir
from compiler.analyse import AnalysisResult, analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package, write_tree
from compiler.front.fmt import format_source
from compiler.ir import typesys as ts
from compiler.lower import lower

SPEC_PATH = "specs/coll_rng.envspec"  # never written: the text is analysed as if it were there
SEED = 4242

SPEC = r'''
environment coll_rng:
    title "Collections and Python randomness"
    doc "Sets, maps keyed by str or int values, Python's random generator and zfill."
    seed 4242
    rng python

enum Color:
    red, green, blue

record Box:
    """A named box of labels."""
    name: str
    labels: set[str]

state:
    tags: set[str] = ["b", "a"]
    ids: set[int]
    colors: set[Color]
    boxes: map[str, Box] = {}
    groups: map[str, set[int]] = {}
    notes: map[json, list[str]]
    counts: map[json, int] = {}
    drawn: list[int] = []

world:
    allowed: set[str] = ["c", "a", "b"]

tool add_tag(tag: str) -> list[str]:
    """Add a tag; the tags, sorted."""
    tags.add(tag)
    return sorted(tags)

tool drop_tag(tag: str) -> list[str]:
    """Discard a tag (a missing tag is fine); the tags, sorted."""
    tags.discard(tag)
    return sorted(tags)

tool add_then_fail(tag: str) -> int:
    """Change sets in several places, then fail: nothing may stay changed."""
    tags.add(tag)
    tags.discard("a")
    ids.add(len(tag))
    groups[tag] = [1, 2]
    groups[tag].discard(1)
    if "g" in groups:
        groups["g"].add(99)
    fail conflict("always fails", field="tag")

tool has_tag(tag: str) -> bool:
    """Membership, both ways round."""
    return tag in tags and not (tag not in tags)

tool tag_count() -> int:
    """How many tags."""
    return len(tags)

tool walk_tags() -> list[str]:
    """The tags in iteration order."""
    let out: list[str] = []
    for t in tags:
        out.append(t)
    return out

tool tag_set() -> set[str]:
    """The set itself as the result."""
    return tags

tool tags_are_ab() -> bool:
    """Set equality with a literal."""
    return tags == ["a", "b"]

tool copy_tags(extra: str) -> list[str]:
    """A copy changes apart from the state."""
    let c = tags.copy()
    c.add(extra)
    return sorted(c)

tool local_set(items: list[int]) -> list[int]:
    """Local sets from literals and adds."""
    let s: set[int] = []
    for i in items:
        s.add(i)
    let t: set[int] = [3, 1, 2]
    t.discard(2)
    return sorted(s) + sorted(t)

tool take_set(xs: set[int]) -> list[int]:
    """A set parameter, listed back in order."""
    return sorted(xs)

tool paint(color: Color) -> list[Color]:
    """A set of enum members, listed in iteration order."""
    colors.add(color)
    let out: list[Color] = []
    for c in colors:
        out.append(c)
    return out

tool box(name: str, label: str) -> Box:
    """A set inside a record inside a map."""
    if name not in boxes:
        boxes[name] = Box(name=name, labels=[])
    boxes[name].labels.add(label)
    return boxes[name]

tool group_add(name: str, n: int) -> list[int]:
    """A set inside a map."""
    if name not in groups:
        groups[name] = []
    groups[name].add(n)
    return sorted(groups[name])

tool allowed_tag(tag: str) -> bool:
    """A set in world data."""
    return tag in allowed

tool note_int(key: int, text: str) -> int:
    """Note under an int key."""
    if key not in notes:
        notes[key] = []
    notes[key].append(text)
    return len(notes)

tool note_str(key: str, text: str) -> int:
    """Note under a str key."""
    if key not in notes:
        notes[key] = []
    notes[key].append(text)
    return len(notes)

tool notes_of_int(key: int) -> list[str]:
    """Notes under an int key."""
    require key in notes else not_found(f"no notes under {key}", field="key")
    return notes[key]

tool notes_of_str(key: str) -> list[str]:
    """Notes under a str key."""
    require key in notes else not_found(f"no notes under {key}", field="key")
    return notes[key]

tool merge(extra: map[json, int]) -> map[json, int]:
    """Add counts under the keys given, as given."""
    for k, v in extra:
        counts[k] = counts.get(k, 0) + v
    return counts

tool roll(low: int, high: int) -> int:
    """random_int(low, high), remembered."""
    require low <= high else invalid_argument("low is above high", field="low")
    let n = random_int(low, high)
    drawn.append(n)
    return n

tool pick(items: list[str]) -> str:
    """random_choice(items)."""
    require len(items) > 0 else invalid_argument("nothing to pick from", field="items")
    return random_choice(items)

tool roll_then_fail(low: int, high: int) -> int:
    """Draw, then fail: the draw is rolled back."""
    require low <= high else invalid_argument("low is above high", field="low")
    let n = random_int(low, high)
    drawn.append(n)
    fail conflict(f"drew {n}", field="low")

tool pad(text: str, width: int) -> str:
    """text.zfill(width)."""
    return text.zfill(width)

scenario lucky:
    random_seed = 5

scenario mixed:
    tags = ["z"]
    notes = {1: ["int"], "1": ["str"]}

test sets_work:
    expect add_tag(tag="c") == ["a", "b", "c"]
    expect drop_tag(tag="a") == ["b", "c"]
    expect has_tag(tag="b")
    expect tag_count() == 2
    expect walk_tags() == ["b", "c"]
    add_then_fail(tag="z") raises conflict "always"
    expect len(tags) == 2
    expect local_set(items=[2, 2, 1]) == [1, 2, 1, 3]

test json_keys_work:
    note_int(key=1, text="int")
    note_str(key="1", text="str")
    expect len(notes) == 2
    expect notes_of_int(key=1) == ["int"]
    expect notes_of_str(key="1") == ["str"]
    let key = parse_json("1")
    expect key is not None and notes[key] == ["int"] and notes["1"] == ["str"]
    expect matches(notes["1"][0], "^s.r$")

test zfill_works:
    expect pad(text="42", width=5) == "00042"
    expect pad(text="-42", width=5) == "-0042"
'''

PLAIN = '''
environment plain_dice:
    title "Dice"
    seed 7

tool roll() -> int:
    """Roll one die."""
    return random_int(1, 6)
'''

BUGS = '''
environment coll_bugs:
    title "Known problems"

enum Color:
    red, green

record Tagged:
    """A record whose set field has a default."""
    name: str
    labels: set[str] = []

state:
    notes: map[json, int] = {}
    colors: set[Color]

tool put(key: json) -> int:
    """Store under a key that arrives as json."""
    notes[key] = 1
    return len(notes)

tool drop_then_fail(key: int) -> int:
    """Delete a key, then fail."""
    del notes[key]
    fail conflict("always fails", field="key")

tool make(name: str, label: str) -> Tagged:
    """A record whose set field takes its default."""
    let t = Tagged(name=name)
    t.labels.add(label)
    return t

tool dedupe() -> list[int]:
    """A set literal that repeats an item."""
    let s: set[int] = [3, 1, 3]
    return sorted(s)
'''


def analyse(text: str, path: str = SPEC_PATH) -> ir.Environment:
    analysis = analyse_source(text, path)
    assert analysis.environment is not None, [f"{d.line}:{d.col} {d.code} {d.message}" for d in analysis.diagnostics]
    assert analysis.diagnostics == []
    return analysis.environment


def import_package(files: dict[str, str], name: str, factory: pytest.TempPathFactory) -> ModuleType:
    """A lowered package, imported under a name of its own."""
    root = factory.mktemp(name)
    write_tree(root / name, files)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="module")
def environment() -> ir.Environment:
    return analyse(SPEC)


@pytest.fixture(scope="module")
def files(environment: ir.Environment) -> dict[str, str]:
    return lower(environment, SPEC_PATH)


@pytest.fixture(scope="module")
def plain_environment() -> ir.Environment:
    return analyse(PLAIN, "specs/plain_dice.envspec")


@pytest.fixture(scope="module")
def plain_files(plain_environment: ir.Environment) -> dict[str, str]:
    return lower(plain_environment, "specs/plain_dice.envspec")


@pytest.fixture(scope="module")
def pkg(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return import_package(files, "envc_test_coll_rng", tmp_path_factory)


@pytest.fixture(scope="module")
def plain(plain_files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return import_package(plain_files, "envc_test_plain_dice", tmp_path_factory)


@pytest.fixture(scope="module")
def bugs_files() -> dict[str, str]:
    return lower(analyse(BUGS, "specs/coll_bugs.envspec"), "specs/coll_bugs.envspec")


@pytest.fixture(scope="module")
def bugs(bugs_files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return import_package(bugs_files, "envc_test_coll_bugs", tmp_path_factory)


def error_of(result: Any) -> dict[str, Any]:
    assert isinstance(result, dict) and "error" in result, result
    error: dict[str, Any] = result["error"]
    return error


# --------------------------------------------------------------------------- the whole package


def test_generated_code_passes_ruff_mypy_strict_and_its_tests(
    environment: ir.Environment,
    files: dict[str, str],
    plain_environment: ir.Environment,
    plain_files: dict[str, str],
) -> None:
    packages = [
        Package(env=environment, name="coll_rng", files=files),
        Package(env=plain_environment, name="plain_dice", files=plain_files),
    ]
    results = check_packages(packages, dynamic=True)
    for name, result in results.items():
        assert result.findings == [], [f"{name}: {f.tool} {f.file}:{f.line} {f.message}" for f in result.findings]
        assert result.static_ok and result.dynamic_ok, name
        assert result.tests_failed == 0, name
    assert results["coll_rng"].tests_passed >= 150
    assert results["plain_dice"].tests_passed >= 5


# --------------------------------------------------------------------------- analysis


def test_state_types_and_defaults(environment: ir.Environment) -> None:
    types = {f.name: ts.show(f.type) for f in environment.state}
    assert types["tags"] == "set[str]"
    assert types["colors"] == "set[Color]"
    assert types["groups"] == "map[str, set[int]]"
    assert types["notes"] == "map[json, list[str]]"
    assert (types["random_seed"], types["rng_state"]) == ("int", "int")
    defaults = environment.state_defaults
    # The IR keeps a set as its JSON form: the sorted list of its items.
    assert defaults["tags"] == ["a", "b"]
    assert defaults["ids"] == [] and defaults["colors"] == []
    assert defaults["notes"] == {} and defaults["counts"] == {}
    assert (defaults["random_seed"], defaults["rng_state"]) == (SEED, 0)
    assert environment.header.rng == "python"
    assert environment.world_values["allowed"] == ["a", "b", "c"]
    assert environment.scenario_values["lucky"] == {"random_seed": 5}
    notes = environment.scenario_values["mixed"]["notes"]
    assert notes == {1: ["int"], "1": ["str"]} and [type(k) for k in notes] == [int, str]


def test_random_tools_read_the_seed_and_write_the_counter(environment: ir.Environment) -> None:
    tools = {t.name: t for t in environment.tools}
    assert tools["roll"].writes == ["drawn", "rng_state"]
    assert "random_seed" in tools["roll"].reads and "rng_state" in tools["roll"].reads
    assert tools["pick"].writes == ["rng_state"]
    assert "random_seed" not in tools["pick"].writes
    assert tools["add_tag"].writes == ["tags"]
    assert tools["add_then_fail"].writes == ["groups", "ids", "tags"]
    assert tools["has_tag"].writes == [] and tools["walk_tags"].writes == []


def test_default_generator_has_no_random_seed(plain_environment: ir.Environment) -> None:
    assert plain_environment.header.rng == "splitmix64"
    fields = [f.name for f in plain_environment.state]
    assert "rng_state" in fields and "random_seed" not in fields
    assert plain_environment.state_defaults["rng_state"] == 7  # splitmix64 starts from the seed


HEAD = """environment probe_an:
    title "Probe"
    rng python

enum Color:
    red, green

record Box:
    name: str

state:
    tags: set[str] = ["b", "a"]
    notes: map[json, int] = {}
    colors: set[Color]

"""


def found(extra: str) -> list[tuple[str, int, int]]:
    """(code, line, col) of every diagnostic, lines relative to the added text (1-based)."""
    offset = HEAD.count("\n")
    return [(d.code, d.line - offset, d.col) for d in analyse_source(HEAD + extra, "probe.envspec").diagnostics]


REFUSED = [
    # sets have no JSON form, so they cannot become json
    ("tool t() -> json:\n    let j: json = tags\n    return j\n", [("E3001", 2, 19)]),
    ("tool t() -> json:\n    return tags\n", [("E3001", 2, 12)]),
    ("tool t() -> json:\n    let l: list[set[str]] = [tags]\n    return l\n", [("E3001", 3, 12)]),
    # set items are str, int or an enum
    ("tool t(x: set[float]) -> int:\n    return len(x)\n", [("E3003", 1, 15)]),
    ("tool t(x: set[list[int]]) -> int:\n    return len(x)\n", [("E3003", 1, 15)]),
    ("tool t(x: set[bool]) -> int:\n    return len(x)\n", [("E3003", 1, 15)]),
    ("tool t(x: set[Box]) -> int:\n    return len(x)\n", [("E3003", 1, 15)]),
    ("tool t(x: set[optional[str]]) -> int:\n    return len(x)\n", [("E3003", 1, 15)]),
    ("tool t(x: set[json]) -> int:\n    return len(x)\n", [("E3003", 1, 15)]),
    ("tool t(x: set[str, int]) -> int:\n    return len(x)\n", [("E3002", 1, 11)]),
    # keys of a map[json, V] are str or int
    ("tool t() -> int:\n    notes[1.5] = 1\n    return 1\n", [("E3003", 2, 11)]),
    ("tool t() -> int:\n    notes[True] = 1\n    return 1\n", [("E3003", 2, 11)]),
    ("tool t() -> bool:\n    return 1.5 in notes\n", [("E3003", 2, 12)]),
    ("tool t() -> list[json]:\n    return sorted(keys(notes))\n", [("E3004", 2, 12)]),
    # what a set is not
    ('tool t() -> str:\n    return f"{tags}"\n', [("E3001", 2, 15)]),
    ("tool t() -> str:\n    return str(tags)\n", [("E3004", 2, 12)]),
    ("tool t() -> int:\n    tags.add(1)\n    return 1\n", [("E3001", 2, 14)]),
    ("tool t() -> list[str]:\n    return tags\n", [("E3001", 2, 12)]),
    ("tool t(xs: list[str]) -> set[str]:\n    return xs\n", [("E3001", 2, 12)]),
    ("tool t() -> str:\n    return tags[0]\n", [("E3004", 2, 12)]),
    ('tool t() -> int:\n    tags.append("x")\n    return 1\n', [("E3016", 2, 5)]),
    ("tool t() -> int:\n    for a, b in tags:\n        return 1\n    return 0\n", [("E3006", 2, 17)]),
    ("tool t() -> int:\n    let x = tags + tags\n    return 1\n", [("E3004", 2, 13)]),
    # the generator's state is the runtime's
    ("tool t() -> int:\n    random_seed = 3\n    return random_int(1, 2)\n", [("E4009", 2, 5)]),
    ("tool t() -> int:\n    random_seed += 1\n    return random_int(1, 2)\n", [("E4009", 2, 5)]),
    ("tool t() -> int:\n    rng_state = 3\n    return random_int(1, 2)\n", [("E4009", 2, 5)]),
    # zfill takes an int and belongs to str
    ('tool t() -> str:\n    return "1".zfill("3")\n', [("E3001", 2, 22)]),
    ("tool t() -> str:\n    return (1).zfill(3)\n", [("E3016", 2, 12)]),
]


@pytest.mark.parametrize(("extra", "expected"), REFUSED, ids=[f"refused{i}" for i in range(len(REFUSED))])
def test_misuse_is_reported(extra: str, expected: list[tuple[str, int, int]]) -> None:
    assert found(extra) == expected


ACCEPTED = [
    "tool t() -> int:\n    let n = random_int(1, 2)\n    return random_seed + rng_state + n\n",
    'tool t() -> int:\n    let m: map[json, int] = {"a": 1, 2: 3}\n    return len(m)\n',
    'tool t() -> bool:\n    return tags == ["a"]\n',
    'tool t() -> bool:\n    let s: set[str] = ["a"]\n    return tags == s and "a" in s\n',
    "tool t(d: datetime) -> int:\n    notes[d] = 1\n    return 1\n",
    'tool t(k: str, n: int) -> int:\n    notes[k] = 1\n    notes[n] = 2\n    del notes["x"]\n    return notes.get(3, 0)\n',
    "tool t() -> list[str]:\n    return sorted(tags, reverse=True)\n",
    "tool t(c: Color) -> int:\n    colors.add(c)\n    colors.discard(Color.red)\n    return len(colors)\n",
    'tool t() -> str:\n    return "7".zfill(3) + "x".zfill(-1)\n',
]


@pytest.mark.parametrize("extra", ACCEPTED, ids=[f"accepted{i}" for i in range(len(ACCEPTED))])
def test_correct_use_is_accepted(extra: str) -> None:
    assert found(extra) == []


def test_random_seed_exists_only_with_python_rng() -> None:
    body = "tool t() -> int:\n    let n = random_int(1, 2)\n    return random_seed + n\n"
    assert found(body) == []
    splitmix = HEAD.replace("    rng python\n", "")
    codes = [d.code for d in analyse_source(splitmix + body, "probe.envspec").diagnostics]
    assert codes == ["E2002"]


@pytest.mark.parametrize(
    ("rng", "codes"), [("python", []), ("splitmix64", []), ("Python", ["E2022"]), ("mt", ["E2022"])]
)
def test_rng_header_values(rng: str, codes: list[str]) -> None:
    result = analyse_source(f'environment dice:\n    title "Dice"\n    rng {rng}\n', "dice.envspec")
    assert [d.code for d in result.diagnostics] == codes
    if not codes:
        assert result.environment is not None and result.environment.header.rng == rng


def test_scenario_sets_and_keys_are_checked() -> None:
    text = 'environment s_env:\n    title "S"\n\nstate:\n    tags: set[str] = {default}\n\nscenario s:\n    tags = {value}\n'

    def codes(default: str, value: str) -> list[tuple[str, int]]:
        result = analyse_source(text.format(default=default, value=value), "s.envspec")
        return [(d.code, d.line) for d in result.diagnostics]

    assert codes('["b", "a"]', '["y"]') == []
    assert codes('["a", "a"]', "[]") == [("E3001", 5)]
    assert codes("[]", '["x", "x"]') == [("E3001", 8)]
    assert codes("[]", "[1]") == [("E3001", 8)]


def test_prototype_rng_is_inherited(tmp_path: Path) -> None:
    (tmp_path / "proto.envspec").write_text(
        'environment dice_proto:\n    title "Proto"\n    seed 11\n    rng python\n\n'
        'tool roll() -> int:\n    """Roll."""\n    return random_int(1, 6)\n',
        encoding="utf-8",
    )
    (tmp_path / "child.envspec").write_text(
        'environment dice_child:\n    title "Child"\n    extends "proto.envspec"\n', encoding="utf-8"
    )
    result: AnalysisResult = analyse_file(tmp_path / "child.envspec")
    assert result.diagnostics == []
    assert result.environment is not None
    assert result.environment.header.rng == "python"
    assert result.environment.state_defaults["random_seed"] == 11
    assert result.environment.state_defaults["rng_state"] == 0


# --------------------------------------------------------------------------- fmt


def test_fmt_keeps_rng_python() -> None:
    formatted = format_source(SPEC, SPEC_PATH)
    assert formatted.diagnostics == [] and formatted.text is not None
    assert "\n    rng python\n" in formatted.text
    assert "set[str]" in formatted.text and "map[json, list[str]]" in formatted.text
    assert format_source(formatted.text, SPEC_PATH).text == formatted.text
    again = analyse(formatted.text)
    assert again.header.rng == "python"
    assert again.state_defaults == analyse(SPEC).state_defaults


def test_fmt_leaves_the_default_generator_unwritten() -> None:
    formatted = format_source(PLAIN, "plain.envspec").text
    assert formatted is not None and "rng" not in formatted
    explicit = format_source(PLAIN.replace("    seed 7\n", "    seed 7\n    rng splitmix64\n"), "plain.envspec").text
    assert explicit is not None
    assert analyse(explicit, "plain.envspec").header.rng == "splitmix64"


# --------------------------------------------------------------------------- lowering


def module_constant(text: str, name: str) -> Any:
    """The value of a module-level `NAME: Final[...] = <literal>` in generated code."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            assert node.value is not None
            return ast.literal_eval(node.value)
    raise AssertionError(f"no {name} in the module")


def test_sets_lower_to_python_sets(files: dict[str, str]) -> None:
    text = files["environment.py"]
    assert re.search(r"^    tags: set\[str\]$", text, re.MULTILINE)
    assert re.search(r"^    colors: set\[Color\]$", text, re.MULTILINE)
    assert re.search(r"^    groups: dict\[str, set\[int\]\]$", text, re.MULTILINE)
    assert re.search(r"^    notes: dict\[Any, list\[str\]\]$", text, re.MULTILINE)
    default = module_constant(text, "DEFAULT_STATE")
    assert default["tags"] == {"a", "b"} and isinstance(default["tags"], set)
    assert default["ids"] == set() and isinstance(default["ids"], set)
    assert (default["random_seed"], default["rng_state"]) == (SEED, 0)
    assert module_constant(text, "WORLD")["allowed"] == {"a", "b", "c"}


def test_set_changes_are_journaled_and_loops_are_sorted(files: dict[str, str]) -> None:
    text = files["environment.py"]
    assert re.search(r'undo_log\.save_member\(state\["tags"\], tag\)\n\s+state\["tags"\]\.add\(tag\)', text)
    assert re.search(r'undo_log\.save_member\(state\["tags"\], "a"\)\n\s+state\["tags"\]\.discard\("a"\)', text)
    # the copying loops of walk_tags and paint lower to one extend (ruff's PERF402), still sorted
    assert 'out.extend(sorted(state["tags"]))' in text
    assert 'out.extend(sorted(state["colors"]))' in text
    assert "s: set[int] = set()" in text and "t: set[int] = {3, 1, 2}" in text
    # local sets are not journaled
    assert "save_member(s," not in text and "save_member(t," not in text and "save_member(c," not in text


def test_python_rng_imports_random_and_splitmix_does_not(files: dict[str, str], plain_files: dict[str, str]) -> None:
    text, plain_text = files["environment.py"], plain_files["environment.py"]
    assert re.search(r"^import random$", text, re.MULTILINE)
    assert "random.Random(seed)" in text
    assert not re.search(r"^import random$", plain_text, re.MULTILINE)
    assert "random_seed" not in plain_text and "_random_bits" not in plain_text
    assert "random_seed" not in module_constant(plain_text, "DEFAULT_STATE")


def test_schemas(files: dict[str, str]) -> None:
    tools = {t["name"]: t for t in json.loads(files["tools.json"])["tools"]}
    unique_ints = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert tools["take_set"]["parameters"]["properties"]["xs"] == unique_ints
    assert tools["tag_set"]["returns"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert tools["box"]["returns"]["properties"]["labels"]["uniqueItems"] is True
    assert "uniqueItems" not in tools["paint"]["returns"]  # sorted(...) of a set is a list
    extra = tools["merge"]["parameters"]["properties"]["extra"]
    assert extra["anyOf"][0] == {"type": "object", "additionalProperties": {"type": "integer"}}
    pair = extra["anyOf"][1]["items"]
    assert pair["prefixItems"][0] == {"type": ["string", "integer"]}
    assert (pair["minItems"], pair["maxItems"]) == (2, 2)
    assert set(tools["roll"]["state_fields_affected"]) == {"drawn", "rng_state"}


# --------------------------------------------------------------------------- sets at run time


def test_set_state_is_a_set_and_exports_sorted(pkg: ModuleType) -> None:
    env = pkg.Environment()
    assert env.view()["tags"] == {"a", "b"} and isinstance(env.view()["tags"], set)
    assert env.call("add_tag", {"tag": "0"}) == ["0", "a", "b"]
    state = env.state()
    assert state["tags"] == ["0", "a", "b"] and state["ids"] == [] and state["colors"] == []
    assert json.loads(env.state_json())["tags"] == ["0", "a", "b"]
    assert env.call("tag_set") == ["0", "a", "b"]
    assert env.call("drop_tag", {"tag": "missing"}) == ["0", "a", "b"]
    assert env.call("drop_tag", {"tag": "a"}) == ["0", "b"]
    assert env.call("walk_tags") == ["0", "b"]
    assert env.call("tags_are_ab") is False
    assert pkg.Environment().call("tags_are_ab") is True
    assert pkg.DEFAULT_STATE["tags"] == {"a", "b"}, "the default state must not be shared"


def test_set_operations_on_locals_copies_params_and_world(pkg: ModuleType) -> None:
    env = pkg.Environment()
    assert env.call("local_set", {"items": [5, 2, 2, 5]}) == [2, 5, 1, 3]
    assert env.call("copy_tags", {"extra": "zz"}) == ["a", "b", "zz"]
    assert env.view()["tags"] == {"a", "b"}
    assert env.call("take_set", {"xs": [3, 1, 2]}) == [1, 2, 3]
    assert (env.call("allowed_tag", {"tag": "c"}), env.call("allowed_tag", {"tag": "z"})) == (True, False)
    assert env.call("has_tag", {"tag": "a"}) is True and env.call("has_tag", {"tag": "z"}) is False
    assert env.call("tag_count") == 2


@pytest.mark.parametrize(
    ("xs", "field", "text"),
    [([1, 1], "xs", "twice"), ("1", "xs", "distinct"), ([1, "a"], "xs[1]", "integer"), ([1, True], "xs[1]", "")],
)
def test_set_parameters_are_checked(pkg: ModuleType, xs: Any, field: str, text: str) -> None:
    error = error_of(pkg.Environment().call("take_set", {"xs": xs}))
    assert (error["kind"], error["field"]) == ("invalid_argument", field)
    assert text in error["message"]


def test_sets_of_enum_members_iterate_in_sorted_order(pkg: ModuleType) -> None:
    env = pkg.Environment()
    env.call("paint", {"color": "red"})
    env.call("paint", {"color": "blue"})
    assert env.call("paint", {"color": "green"}) == ["blue", "green", "red"]
    assert env.call("paint", {"color": "red"}) == ["blue", "green", "red"]
    assert env.state()["colors"] == ["blue", "green", "red"]
    assert error_of(env.call("paint", {"color": "pink"}))["kind"] == "invalid_argument"


def test_sets_nested_in_records_and_maps(pkg: ModuleType) -> None:
    env = pkg.Environment()
    env.call("box", {"name": "k", "label": "y"})
    assert env.call("box", {"name": "k", "label": "x"}) == {"name": "k", "labels": ["x", "y"]}
    assert env.call("box", {"name": "k", "label": "x"}) == {"name": "k", "labels": ["x", "y"]}
    assert env.view()["boxes"]["k"]["labels"] == {"x", "y"}
    assert env.call("group_add", {"name": "g", "n": 3}) == [3]
    assert env.call("group_add", {"name": "g", "n": -1}) == [-1, 3]
    state = env.state()
    assert state["boxes"] == {"k": {"name": "k", "labels": ["x", "y"]}}
    assert state["groups"] == {"g": [-1, 3]}
    rebuilt = pkg.Environment(state)
    assert rebuilt.view() == env.view()
    assert isinstance(rebuilt.view()["boxes"]["k"]["labels"], set)
    assert isinstance(rebuilt.view()["groups"]["g"], set)


def test_failed_call_leaves_every_set_unchanged(pkg: ModuleType) -> None:
    env = pkg.Environment()
    env.call("group_add", {"name": "g", "n": 1})
    env.call("add_tag", {"tag": "c"})
    before, view_before = env.state_json(), env.snapshot()
    error = error_of(env.call("add_then_fail", {"tag": "new"}))
    assert (error["kind"], error["field"]) == ("conflict", "tag")
    assert env.state_json() == before
    assert env.view() == view_before
    error = error_of(env.call("add_then_fail", {"tag": "g"}))  # replaces a set, then fails
    assert error["kind"] == "conflict"
    assert env.view()["groups"] == {"g": {1}} and env.view()["tags"] == {"a", "b", "c"}


def test_snapshot_fork_and_restore_copy_sets(pkg: ModuleType) -> None:
    env = pkg.Environment()
    env.call("box", {"name": "k", "label": "x"})
    env.call("group_add", {"name": "g", "n": 1})
    snapshot = env.snapshot()
    fork = env.fork()
    fork.call("add_tag", {"tag": "forked"})
    fork.call("box", {"name": "k", "label": "forked"})
    fork.call("group_add", {"name": "g", "n": 2})
    assert env.view()["tags"] == {"a", "b"}
    assert env.view()["boxes"]["k"]["labels"] == {"x"} and env.view()["groups"]["g"] == {1}
    snapshot["tags"].add("in snapshot")
    snapshot["groups"]["g"].add(7)
    assert env.view()["tags"] == {"a", "b"} and env.view()["groups"]["g"] == {1}
    env.restore(snapshot)
    snapshot["tags"].add("after restore")
    assert env.view()["tags"] == {"a", "b", "in snapshot"}
    assert env.view()["groups"]["g"] == {1, 7}


@pytest.mark.parametrize(
    ("mapping", "text"),
    [
        ({"tags": ["x", "x"]}, "lists an item twice"),
        ({"ids": [1, 2, 1]}, "lists an item twice"),
        ({"tags": "x"}, "tags"),
        ({"tags": {"x": 1}}, "tags"),
        ({"tags": [1]}, "tags[0]"),
        ({"colors": ["red", "pink"]}, "colors[1]"),
        ({"groups": {"g": [1, 1]}}, "lists an item twice"),
        ({"boxes": {"k": {"name": "k", "labels": ["a", "a"]}}}, "lists an item twice"),
    ],
)
def test_loading_sets_refuses_bad_lists(pkg: ModuleType, mapping: dict[str, Any], text: str) -> None:
    with pytest.raises(pkg.ScenarioError, match=re.escape(text)):
        pkg.Environment(mapping)


def test_loading_sets_from_lists(pkg: ModuleType) -> None:
    env = pkg.Environment({"tags": ["y", "x"], "ids": [3, -1], "colors": ["green"]})
    assert env.view()["tags"] == {"x", "y"} and env.view()["ids"] == {-1, 3}
    assert env.state()["tags"] == ["x", "y"] and env.state()["ids"] == [-1, 3]
    assert env.call("walk_tags") == ["x", "y"]
    assert pkg.Environment("mixed").view()["tags"] == {"z"}


SET_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "drop", "fail", "copy", "has"]), st.sampled_from(["a", "b", "c", "é", "", "a b"])
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ops=SET_OPS)
def test_add_and_discard_behave_like_a_python_set(pkg: ModuleType, ops: list[tuple[str, str]]) -> None:
    env = pkg.Environment()
    model = {"a", "b"}
    for op, tag in ops:
        if op == "add":
            model.add(tag)
            assert env.call("add_tag", {"tag": tag}) == sorted(model)
        elif op == "drop":
            model.discard(tag)
            assert env.call("drop_tag", {"tag": tag}) == sorted(model)
        elif op == "fail":
            before = env.state_json()
            assert error_of(env.call("add_then_fail", {"tag": tag}))["kind"] == "conflict"
            assert env.state_json() == before
        elif op == "copy":
            assert env.call("copy_tags", {"extra": tag}) == sorted(model | {tag})
        else:
            assert env.call("has_tag", {"tag": tag}) is (tag in model)
    assert env.view()["tags"] == model
    assert env.state()["tags"] == sorted(model)
    assert env.call("walk_tags") == sorted(model)
    assert env.call("tag_count") == len(model)
    assert pkg.Environment(env.state()).view()["tags"] == model


# --------------------------------------------------------------------------- map[json, V] at run time


def test_str_and_int_keys_stay_apart(pkg: ModuleType) -> None:
    env = pkg.Environment()
    assert env.call("note_int", {"key": 1, "text": "int"}) == 1
    assert env.call("note_str", {"key": "1", "text": "str"}) == 2
    assert env.call("note_int", {"key": 1, "text": "again"}) == 2
    assert env.view()["notes"] == {1: ["int", "again"], "1": ["str"]}
    assert env.call("notes_of_int", {"key": 1}) == ["int", "again"]
    assert env.call("notes_of_str", {"key": "1"}) == ["str"]
    assert error_of(env.call("notes_of_int", {"key": 2}))["kind"] == "not_found"
    state = env.state()
    assert state["notes"] == [[1, ["int", "again"]], ["1", ["str"]]]
    assert json.loads(env.state_json())["notes"] == [[1, ["int", "again"]], ["1", ["str"]]]
    for source in (state, json.loads(env.state_json())):
        rebuilt = pkg.Environment(source)
        assert rebuilt.view() == env.view()
        assert [type(k) for k in rebuilt.view()["notes"]] == [int, str]
        assert rebuilt.state_json() == env.state_json()


def test_object_keys_stay_strings(pkg: ModuleType) -> None:
    env = pkg.Environment({"notes": {"1": ["x"], "2": []}})
    assert env.view()["notes"] == {"1": ["x"], "2": []}
    assert env.call("notes_of_str", {"key": "1"}) == ["x"]
    assert error_of(env.call("notes_of_int", {"key": 1}))["kind"] == "not_found"
    assert env.state()["notes"] == [["1", ["x"]], ["2", []]]


def test_scenario_keeps_key_types(pkg: ModuleType) -> None:
    env = pkg.Environment("mixed")
    assert env.view()["notes"] == {1: ["int"], "1": ["str"]}
    assert [type(k) for k in env.view()["notes"]] == [int, str]
    assert env.state()["notes"] == [[1, ["int"]], ["1", ["str"]]]
    assert env.call("notes_of_int", {"key": 1}) == ["int"]


def test_map_json_parameters_and_results(pkg: ModuleType) -> None:
    env = pkg.Environment()
    assert env.call("merge", {"extra": {"1": 2}}) == [["1", 2]]
    assert env.call("merge", {"extra": [[1, 5], ["1", 1]]}) == [[1, 5], ["1", 3]]  # int keys first
    assert env.call("merge", {"extra": []}) == [[1, 5], ["1", 3]]
    assert env.view()["counts"] == {"1": 3, 1: 5}
    assert env.invoke("merge", {"extra": {}}) == {"1": 3, 1: 5}
    before = env.state_json()
    for bad in ([[1, 5], [1, 1]], [[1.5, 1]], [[True, 1]], [[None, 1]], [["a"]], [["a", 1, 2]], [["a", "x"]], "x"):
        error = error_of(env.call("merge", {"extra": bad}))
        assert error["kind"] == "invalid_argument", bad
    assert env.state_json() == before


@pytest.mark.parametrize(
    ("notes", "text"),
    [
        ([["a", []], ["a", []]], "twice"),
        ([[1, []], [1, []]], "twice"),
        ([[1.5, []]], "string or an integer"),
        ([[True, []]], "string or an integer"),
        ([[None, []]], "string or an integer"),
        ([[[1], []]], "string or an integer"),
        ([["a"]], "pair"),
        ([["a", [], 3]], "pair"),
        ([{"a": []}], "pair"),
        ([["a", "not a list"]], "notes"),
        ("x", "notes"),
    ],
)
def test_loading_a_json_keyed_map_refuses_bad_pairs(pkg: ModuleType, notes: Any, text: str) -> None:
    with pytest.raises(pkg.ScenarioError, match=re.escape(text)):
        pkg.Environment({"notes": notes})


NOTE_OPS = st.lists(
    st.tuples(st.booleans(), st.integers(-3, 3), st.sampled_from(["x", "y", "é", ""])),
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(ops=NOTE_OPS)
def test_json_keyed_map_matches_a_dict_and_round_trips(pkg: ModuleType, ops: list[tuple[bool, int, str]]) -> None:
    env = pkg.Environment()
    model: dict[str | int, list[str]] = {}
    for as_int, number, text in ops:
        key: str | int = number if as_int else str(number)
        model.setdefault(key, []).append(text)
        tool, arg = ("note_int", number) if as_int else ("note_str", str(number))
        assert env.call(tool, {"key": arg, "text": text}) == len(model)
    assert env.view()["notes"] == model
    assert [(k, type(k)) for k in env.view()["notes"]] == [(k, type(k)) for k in model]
    in_json_order = sorted(model.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))
    assert env.state()["notes"] == [[k, v] for k, v in in_json_order]
    for source in (env.state(), json.loads(env.state_json())):
        rebuilt = pkg.Environment(source)
        assert rebuilt.view() == env.view()
        assert sorted((type(k).__name__, k) for k in rebuilt.view()["notes"]) == sorted(
            (type(k).__name__, k) for k in model
        )
        assert rebuilt.state_json() == env.state_json()
    for key, texts in model.items():
        tool = "notes_of_int" if isinstance(key, int) else "notes_of_str"
        assert env.call(tool, {"key": key}) == texts


# --------------------------------------------------------------------------- rng python at run time


def draws(env: Any, count: int, low: int = 1, high: int = 1000) -> list[int]:
    return [env.call("roll", {"low": low, "high": high}) for _ in range(count)]


def python_draws(seed: int, count: int, low: int = 1, high: int = 1000, skip: int = 0) -> list[int]:
    generator = random.Random(seed)
    values = [generator.randint(low, high) for _ in range(skip + count)]
    return values[skip:]


def words_drawn(seed: int, generator: random.Random) -> int:
    """How many 32-bit words `generator`, seeded with `seed`, has drawn (a short search)."""
    replay = random.Random(seed)
    for words in range(200):
        if replay.getstate() == generator.getstate():
            return words
        replay.getrandbits(32)
    raise AssertionError("the generator is further on than the search goes")


def test_initial_generator_state(pkg: ModuleType) -> None:
    state = pkg.Environment().state()
    assert (state["random_seed"], state["rng_state"]) == (SEED, 0)
    assert pkg.Environment("lucky").state()["random_seed"] == 5


def test_draws_reproduce_python_random(pkg: ModuleType) -> None:
    env = pkg.Environment()
    assert draws(env, 10) == python_draws(SEED, 10)
    generator = random.Random(SEED)
    [generator.randint(1, 1000) for _ in range(10)]
    assert env.state()["rng_state"] == words_drawn(SEED, generator)
    assert env.state()["drawn"] == python_draws(SEED, 10)
    assert draws(pkg.Environment("lucky"), 5) == python_draws(5, 5)
    assert draws(pkg.Environment({"random_seed": 123}), 5) == python_draws(123, 5)
    generator = random.Random(SEED)
    items = ["x", "y", "z", "w"]
    mixed = pkg.Environment()
    for _ in range(5):
        assert mixed.call("pick", {"items": items}) == generator.choice(items)
        assert mixed.call("roll", {"low": -5, "high": 5}) == generator.randint(-5, 5)


def test_snapshot_restore_fork_and_reload_continue_the_sequence(pkg: ModuleType) -> None:
    expected = python_draws(SEED, 9)
    env = pkg.Environment()
    assert draws(env, 3) == expected[:3]
    snapshot, fork, saved = env.snapshot(), env.fork(), env.state()
    text = env.state_json()
    assert draws(env, 3) == expected[3:6]
    assert draws(fork, 3) == expected[3:6]
    assert draws(pkg.Environment(saved), 3) == expected[3:6]
    assert draws(pkg.Environment(json.loads(text)), 3) == expected[3:6]
    env.restore(snapshot)
    assert draws(env, 6) == expected[3:9]
    env.restore(snapshot)  # restoring again after the generator moved on
    assert draws(env, 1) == expected[3:4]


def test_a_rolled_back_call_does_not_consume_draws(pkg: ModuleType) -> None:
    expected = python_draws(SEED, 3, 1, 100)
    env = pkg.Environment()
    before = env.state_json()
    error = error_of(env.call("roll_then_fail", {"low": 1, "high": 100}))
    assert (error["kind"], error["message"]) == ("conflict", f"drew {expected[0]}")
    assert env.state_json() == before
    assert draws(env, 1, 1, 100) == expected[:1]
    error = error_of(env.call("roll_then_fail", {"low": 1, "high": 100}))
    assert error["message"] == f"drew {expected[1]}"
    assert draws(env, 2, 1, 100) == expected[1:3]
    generator = random.Random(SEED)
    [generator.randint(1, 100) for _ in range(3)]
    words = words_drawn(SEED, generator)
    assert env.state()["rng_state"] == words
    # a refusal before the draw consumes nothing either
    assert error_of(env.call("roll", {"low": 2, "high": 1}))["kind"] == "invalid_argument"
    assert env.state()["rng_state"] == words


@pytest.mark.parametrize("mapping", [{"random_seed": True}, {"random_seed": "5"}, {"random_seed": 1.0}])
def test_random_seed_must_be_an_int(pkg: ModuleType, mapping: dict[str, Any]) -> None:
    with pytest.raises(pkg.ScenarioError, match="random_seed"):
        pkg.Environment(mapping)


def test_sessions_save_and_load_all_three_features(pkg: ModuleType, tmp_path: Path) -> None:
    store = pkg.SessionStore()
    store.open("s")
    store.call("s", "add_tag", {"tag": "c"})
    store.call("s", "note_int", {"key": 1, "text": "int"})
    store.call("s", "note_str", {"key": "1", "text": "str"})
    store.call("s", "roll", {"low": 1, "high": 6})
    store.fork("s", "t")
    store.save(tmp_path)
    loaded = pkg.SessionStore()
    loaded.load(tmp_path)
    assert loaded.ids() == store.ids()
    for session in store.ids():
        assert loaded.state(session) == store.state(session)
        roll = {"low": 1, "high": 10**12}
        assert loaded.call(session, "roll", roll) == store.call(session, "roll", roll)
        assert loaded.call(session, "notes_of_str", {"key": "1"}) == ["str"]


ROLL = st.tuples(
    st.just("int"),
    st.integers(-(2**70), 2**70),
    st.one_of(
        st.integers(0, 6),
        st.integers(0, 2**31),
        st.integers(2**32 - 2, 2**32 + 2),
        st.integers(0, 2**64),
        st.integers(2**64, 2**100),
    ),
)
PICK = st.tuples(
    st.just("choice"), st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=7), st.none()
)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(-(2**80), 2**80), steps=st.lists(st.one_of(ROLL, PICK), max_size=12))
def test_random_calls_match_python_random(pkg: ModuleType, seed: int, steps: list[tuple[Any, Any, Any]]) -> None:
    env = pkg.Environment({"random_seed": seed})
    generator = random.Random(seed)
    rolled = []
    for kind, first, second in steps:
        if kind == "int":
            expected = generator.randint(first, first + second)
            assert env.call("roll", {"low": first, "high": first + second}) == expected
            rolled.append(expected)
        else:
            assert env.call("pick", {"items": first}) == generator.choice(first)
    state = env.state()
    assert state["drawn"] == rolled
    # rng_state counts the 32-bit words drawn: skipping that many lands where Python is.
    replay = random.Random(seed)
    if state["rng_state"]:
        replay.getrandbits(32 * state["rng_state"])
    assert replay.getstate() == generator.getstate()
    assert draws(pkg.Environment(state), 2) == [generator.randint(1, 1000) for _ in range(2)]


# --------------------------------------------------------------------------- zfill and splitmix64


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.characters(exclude_categories=["Cs"]), max_size=8), width=st.integers(-3, 20))
def test_zfill_is_pythons(pkg: ModuleType, text: str, width: int) -> None:
    assert pkg.Environment().call("pad", {"text": text, "width": width}) == text.zfill(width)


@pytest.mark.parametrize(("text", "width", "padded"), [("42", 5, "00042"), ("-42", 5, "-0042"), ("+7", 4, "+007")])
def test_zfill_examples(pkg: ModuleType, text: str, width: int, padded: str) -> None:
    assert pkg.Environment().call("pad", {"text": text, "width": width}) == padded


def test_splitmix_generator_is_unchanged(plain: ModuleType) -> None:
    env = plain.Environment()
    assert env.state()["rng_state"] == 7 and "random_seed" not in env.state()
    rolls = [env.call("roll") for _ in range(20)]
    assert all(1 <= r <= 6 for r in rolls) and len(set(rolls)) > 1
    assert [plain.Environment().call("roll") for _ in range(1)] == rolls[:1]
    assert env.state()["rng_state"] != 7
    with pytest.raises(plain.ScenarioError):
        plain.Environment({"random_seed": 5})


# --------------------------------------------------------------------------- bugs found while writing this file


@pytest.mark.parametrize("key", [1.5, True, None, {}, [1]])
def test_json_key_that_is_not_str_or_int_is_refused_at_run_time(bugs: ModuleType, key: Any) -> None:
    env = bugs.Environment({"notes": [[1, 7]]})
    before = env.state_json()
    error = error_of(env.call("put", {"key": key}))
    assert error["kind"] == "invalid_argument"
    assert env.state_json() == before


def test_json_parameter_keys_that_are_str_or_int_work(bugs: ModuleType) -> None:
    env = bugs.Environment()
    assert env.call("put", {"key": 1}) == 1
    assert env.call("put", {"key": "1"}) == 2
    assert env.state()["notes"] == [[1, 1], ["1", 1]]


@pytest.mark.parametrize("literal", ["[1]", '{"a": 1}'])
def test_container_literal_key_is_refused(literal: str) -> None:
    assert [code for code, _, _ in found(f"tool t() -> int:\n    notes[{literal}] = 1\n    return 1\n")] == ["E3003"]


def test_rolled_back_del_keeps_the_key_order(bugs: ModuleType) -> None:
    env = bugs.Environment({"notes": [[1, 1], ["1", 2]]})
    before = env.state_json()
    assert error_of(env.call("drop_then_fail", {"key": 1}))["kind"] == "conflict"
    assert env.state_json() == before


def test_record_set_field_default_is_a_set(bugs: ModuleType) -> None:
    assert bugs.Environment().call("make", {"name": "n", "label": "x"}) == {"name": "n", "labels": ["x"]}


def test_set_literal_repeats_no_item(bugs_files: dict[str, str]) -> None:
    for node in ast.walk(ast.parse(bugs_files["environment.py"])):
        if isinstance(node, ast.Set):
            items = [ast.dump(item) for item in node.elts]
            assert len(items) == len(set(items)), ast.unparse(node)


def test_set_literal_with_a_repeated_item_still_dedupes(bugs: ModuleType) -> None:
    assert bugs.Environment().call("dedupe") == [1, 3]


def test_invoke_returns_a_detached_set(pkg: ModuleType) -> None:
    env = pkg.Environment()
    result = env.invoke("tag_set")
    assert result is not env.view()["tags"]
    result.add("leaked")
    assert env.view()["tags"] == {"a", "b"}


def test_sorted_set_of_enum_members() -> None:
    assert found("tool t() -> list[Color]:\n    return sorted(colors)\n") == []
