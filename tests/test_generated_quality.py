"""Generated code is clean under ruff's default rules and has no dead module-level code;
tool results are turned into JSON by one converter per type.

`IDIOMS` has one tool per way the body language says something ruff's defaults would
have said otherwise in Python (nested ifs, if-return-True, a counter kept by hand,
`sorted(xs)[0]`, `x.startswith(a) or x.startswith(b)`, invisible characters in strings
and docstrings, ...). It goes through the full QC (ruff with the default rules and envc's
selection, mypy --strict, the AST rules and its generated tests), and its spec tests pin
the results, which are the results the literal lowering gave (the rewrites are exact).
`SHARED` has tools returning the same types, to show one converter serving them all.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from shipped import package_dirs

from compiler import ir
from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package, write_tree
from compiler.check.positions import to_diagnostics
from compiler.lower import lower
from compiler.lower.formatting import ruff_binary
from compiler.lower.literals import docstring, py_str

ROOT = Path(__file__).resolve().parent.parent
GENERATED = sorted(package_dirs().values())

IDIOMS = r'''environment idioms:
    title "Idioms\u200b, said the way ruff's defaults ask"
    doc """Each tool is written the way ruff's default rules would not have it in Python: envc says it their way.​"""

record Entry:
    """An entry with a score.​"""
    id: int
    name: str
    score: int = 0

record Pair:
    """Two entries."""
    low: Entry
    high: Entry

state:
    entries: map[int, Entry] = {1: {"id": 1, "name": "a", "score": 5}, 2: {"id": 2, "name": "b", "score": 5}, 3: {"id": 3, "name": "c", "score": 1}}
    names: list[str] = ["x", "y", "z"]
    hits: int = 0

tool nested(a: int, b: int) -> str:
    """Nested ifs without else become one if."""
    if a == 5:
        if b == 5 or b == 6:
            if a != b:
                return "five"
    if a > 0:
        if b > 0:
            return "both"
    if a < 0:
        require b != 0 else invalid_argument("b is zero", field="b")
    return "neither"

tool positive(a: int) -> bool:
    """If-return-True-else-False is the condition."""
    if a > 0:
        return True
    return False

tool not_positive(a: int) -> bool:
    """And its negation."""
    if a > 0:
        return False
    else:
        return True

tool label(a: int) -> str:
    """Arms that do the same are one arm."""
    if a == 1:
        return "small"
    elif a == 2:
        return "small"
    elif a == 3:
        return "three"
    return "big"

tool flags(a: int) -> bool:
    """Ternaries over booleans."""
    let pos = True if a > 0 else False
    let neg = False if a > 0 else True
    return pos and not neg

tool lookup(key: str, counts: map[str, int] = {"a": 1}) -> int:
    """Map lookups with a default."""
    let v = 0
    if key in counts:
        v = counts[key]
    else:
        v = -1
    let w = counts[key] if key in counts else 0
    return v * 10 + w

tool prefixes(s: str) -> bool:
    """Prefix and suffix tests."""
    return s.startswith("http://") or s.startswith("https://") or s.endswith(".x") or s.endswith(".y")

tool between(a: int, b: int, c: int) -> bool:
    """Chained comparisons."""
    return a < b and b <= c and c < 100

tool clamp(x: int, hi: int) -> int:
    """min and max spelled out."""
    let y = x
    if y > hi:
        y = hi
    let lo = 0
    if y < lo:
        y = lo
    let z = y if y > 1 else 1
    let u = hi if hi < z else z
    return z * 1000 + u

tool firsts() -> list[str]:
    """The first of a list made to be indexed."""
    let m = {"k": 1, "j": 2}
    let first_key = keys(m)[0]
    let first_value = values(m)[0]
    let first_name = [e.name for e in values(entries)][0]
    let last = reversed(names)[0]
    let counted = range(0, 3)
    return [first_key, str(first_value), first_name, last, str(len(counted))]

tool extremes() -> list[int]:
    """min and max of a sorted list, ties as sorted() leaves them."""
    let low = sorted(values(entries), key=lambda e: e.score)[0]
    let high = sorted(values(entries), key=lambda e: e.score)[-1]
    let top = sorted(values(entries), key=lambda e: e.score, reverse=True)[0]
    let bottom = sorted(values(entries), key=lambda e: e.score, reverse=True)[-1]
    let first = sorted(names)[0]
    let final = sorted(names)[-1]
    return [low.id, high.id, top.id, bottom.id, len(first), len(final)]

tool pair() -> Pair:
    """A record holding records."""
    return Pair(low=entries[3], high=entries[1])

tool pairs() -> list[Pair]:
    """The same record type again, in a list."""
    return [Pair(low=entries[3], high=entries[1]), Pair(low=entries[1], high=entries[2])]

tool best() -> Pair:
    """A second tool returning a Pair shares its converter."""
    return Pair(low=entries[3], high=entries[2])

tool drop_key(key: str) -> int:
    """Deleting a key that may be missing."""
    let m = {"a": 1, "b": 2}
    if key in m:
        del m[key]
    return len(m)

tool strip_prefix(s: str, p: str) -> str:
    """Removing a prefix."""
    let t = s
    if t.startswith(p):
        t = t[len(p):]
    return t

tool count_up(words: list[str]) -> list[str]:
    """Counters kept by hand."""
    let out: list[str] = []
    let n = 0
    for w in words:
        n += 1
        out.append(f"{n}:{w}")
    let i = 0
    for w in words:
        out.append(f"{i}={w}")
        i += 1
    let total = 0
    for w in words:
        total += 1
    out.append(str(total))
    for k in range(0, 2):
        pass
        out.append(str(k))
    return out

tool loops(counts: map[str, int] = {"a": 1, "b": 2}) -> list[str]:
    """Map loops that use only keys, only values, or look the value up."""
    let out: list[str] = []
    let total = 0
    for k, v in counts:
        total += v
    for k, v in counts:
        out.append(k)
    for k, v in counts:
        total += counts[k] + v
    for k in counts:
        total += counts[k]
    let copied: list[str] = []
    for name in names:
        copied.append(name)
    out.append(str(total))
    return out + copied

tool strings(a: int) -> list[str]:
    """Conversions in f-strings, static splits and joins, invisible characters."""
    let parts = "a b c".split()
    let more = "x,y".split(",")
    let joined = "-".join([str(a), "x", parts[0]])
    return [f"{str(a)}!", joined, "zero\u200bwidth", "bidi\u202eend", "tab\there", "nbsp\u00a0"] + more

tool noop() -> None:
    """Does nothing."""
    pass

fn note(a: int) -> None:
    """A helper that returns nothing, early."""
    if a > 100:
        return
    return

tool kinds(s: str, tags: set[str] = ["bb", "a"]) -> list[str]:
    """Arms that become one test of prefixes; the last of a sorted set."""
    note(a=1)
    let out: list[str] = []
    if s.startswith("a"):
        out.append("a or b")
    elif s.startswith("b"):
        out.append("a or b")
    out.append(sorted(tags)[-1])
    out.append(sorted(tags, key=lambda t: len(t))[0])
    return out

tool bump(a: int) -> None:
    """An early and a trailing return in a tool that returns nothing."""
    if a > 0:
        hits += a
        return
    hits -= 1
    return

test idioms_behave:
    expect nested(a=1, b=1) == "both"
    expect nested(a=1, b=0) == "neither"
    expect nested(a=5, b=6) == "five"
    expect nested(a=5, b=5) == "both" and nested(a=-1, b=1) == "neither"
    nested(a=-1, b=0) raises invalid_argument "b is zero"
    expect positive(a=1) and not positive(a=0)
    expect not_positive(a=0) and not not_positive(a=1)
    expect label(a=1) == "small" and label(a=2) == "small" and label(a=3) == "three" and label(a=4) == "big"
    expect flags(a=1) and not flags(a=0)
    expect lookup(key="a") == 11 and lookup(key="b") == -10
    expect prefixes(s="https://x") and prefixes(s="a.y") and not prefixes(s="ftp://x")
    expect between(a=1, b=2, c=2) and not between(a=2, b=2, c=3)
    expect clamp(x=7, hi=5) == 5005 and clamp(x=-3, hi=5) == 1001
    expect firsts() == ["k", "1", "a", "z", "3"]
    expect extremes() == [3, 2, 1, 3, 1, 1]
    expect pair().low.id == 3 and best().high.id == 2 and len(pairs()) == 2
    expect drop_key(key="a") == 1 and drop_key(key="q") == 2
    expect strip_prefix(s="prefix-rest", p="prefix-") == "rest" and strip_prefix(s="rest", p="x") == "rest"
    expect count_up(words=["p", "q"]) == ["1:p", "2:q", "0=p", "1=q", "2", "0", "1"]
    expect loops() == ["a", "b", "12", "x", "y", "z"]
    expect strings(a=3) == ["3!", "3-x-a", "zero\u200bwidth", "bidi\u202eend", "tab\there", "nbsp\u00a0", "x", "y"]
    expect kinds(s="bx") == ["a or b", "bb", "a"] and kinds(s="c") == ["bb", "a"]
    noop()
    bump(a=2)
    bump(a=0)
    expect hits == 1

task bump_once:
    request "Bump the hits once."
    solution:
        bump(a=1)
    verify hits == 1
'''

SHARED = """\
environment shared_results:
    title "Shared results"

enum Level:
    low, high

record Note:
    id: int
    text: str

record Card:
    id: int
    tags: list[str] = []
    notes: list[Note] = []

state:
    cards: map[int, Card] = {1: {"id": 1, "tags": ["a"], "notes": [{"id": 1, "text": "n"}]}}
    levels: map[str, Level] = {"x": Level.low}
    extra: json = {"k": [1, 2]}

tool get_card(card_id: int) -> Card:
    \"\"\"One card.\"\"\"
    require card_id in cards else not_found("no such card", field="card_id")
    return cards[card_id]

tool first_card() -> Card:
    \"\"\"The same type as get_card: the same converter.\"\"\"
    return cards[1]

tool all_cards() -> list[Card]:
    \"\"\"A list of them calls the card converter per item.\"\"\"
    return values(cards)

tool maybe_card(card_id: int) -> optional[Card]:
    \"\"\"Perhaps one.\"\"\"
    return cards.get(card_id)

tool note_of(card_id: int) -> Note:
    \"\"\"A flat record.\"\"\"
    return cards[card_id].notes[0]

tool level_of(name: str) -> Level:
    \"\"\"An enum is a string: no converter.\"\"\"
    return levels[name]

tool count() -> int:
    \"\"\"An int: no converter.\"\"\"
    return len(cards)

tool levels_now() -> map[str, Level]:
    \"\"\"A map of scalars.\"\"\"
    return levels

tool raw() -> json:
    \"\"\"json has the generic to_json.\"\"\"
    return extra

test cards_are_returned:
    expect get_card(card_id=1).tags == ["a"]
    expect len(all_cards()) == 1 and count() == 1 and level_of(name="x") == Level.low
"""


def lowered(text: str, name: str) -> tuple[ir.Environment, dict[str, str]]:
    analysis = analyse_source(text, str(ROOT / "specs" / f"{name}.envspec"))
    assert analysis.environment is not None, [f"{d.line}:{d.col} {d.code} {d.message}" for d in analysis.diagnostics]
    return analysis.environment, lower(analysis.environment, f"specs/{name}.envspec")


@pytest.fixture(scope="module")
def idioms() -> tuple[ir.Environment, dict[str, str]]:
    return lowered(IDIOMS, "idioms")


@pytest.fixture(scope="module")
def shared() -> tuple[ir.Environment, dict[str, str]]:
    return lowered(SHARED, "shared_results")


def import_package(files: dict[str, str], name: str, root: Path) -> ModuleType:
    write_tree(root / name, files)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


def default_ruff(folder: Path) -> list[dict[str, Any]]:
    """ruff's own default rule set: `ruff check --isolated` and nothing else."""
    run = subprocess.run(
        [ruff_binary(), "check", "--isolated", "--no-cache", "--output-format", "json", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    findings: list[dict[str, Any]] = json.loads(run.stdout or "[]")
    return findings


def dead_definitions(package: Path) -> list[str]:
    """Module-level functions, classes and constants of `environment.py` that nothing uses:
    not the module itself (annotations count), nor another file of the package by import
    or as `environment.NAME`."""
    text = (package / "environment.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    defined: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined[node.name] = node.lineno
        elif isinstance(node, ast.Assign):
            defined.update({t.id: node.lineno for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined[node.target.id] = node.lineno
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for other in package.rglob("*.py"):
        if other.name == "environment.py":
            continue
        for node in ast.walk(ast.parse(other.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("environment"):
                used.update(alias.name for alias in node.names)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "environment":
                used.add(node.attr)
    return [
        f"{package.name}/environment.py:{line}: {name}" for name, line in sorted(defined.items()) if name not in used
    ]


# --------------------------------------------------------------------------- the shipped packages


def test_shipped_packages_are_clean_under_ruffs_default_rules() -> None:
    findings = default_ruff(ROOT / "generated")
    assert findings == [], [f"{f['filename']}:{f['location']['row']} {f['code']} {f['message']}" for f in findings]


@pytest.mark.parametrize("package", GENERATED, ids=[p.name for p in GENERATED])
def test_shipped_packages_define_nothing_unused(package: Path) -> None:
    assert dead_definitions(package) == []


@pytest.mark.parametrize("package", GENERATED, ids=[p.name for p in GENERATED])
def test_shipped_packages_have_one_result_converter_per_type(package: Path) -> None:
    """No per-tool result functions; each `_json_*` converter serves every tool of its
    type, and is named after it (so no two are the same code under two names)."""
    text = (package / "environment.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert not [name for name in functions if name.endswith("_result")]
    converters = {name: node for name, node in functions.items() if name.startswith("_json_")}
    annotations = [ast.unparse(node.args.args[0].annotation or ast.Constant(None)) for node in converters.values()]
    assert len(set(annotations)) == len(annotations), "two converters for one type"
    specs = next(n for n in tree.body if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "TOOL_SPECS")
    assert isinstance(specs.value, ast.Dict)
    for call in specs.value.values:
        assert isinstance(call, ast.Call)
        result = ast.unparse(call.args[4])
        assert result in converters or result in ("None", "to_json", "dict", "list", "sorted"), result


# --------------------------------------------------------------------------- any spec


def test_every_idiom_lowers_clean_and_keeps_its_meaning(idioms: tuple[ir.Environment, dict[str, str]]) -> None:
    env, files = idioms
    result = check_packages([Package(env=env, name="idioms", files=files)], dynamic=True)["idioms"]
    assert result.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in result.findings]
    assert result.static_ok and result.dynamic_ok and result.tests_failed == 0


def test_idioms_are_said_as_ruff_asks(idioms: tuple[ir.Environment, dict[str, str]], tmp_path: Path) -> None:
    _, files = idioms
    write_tree(tmp_path / "idioms", files)
    assert default_ruff(tmp_path) == []
    assert dead_definitions(tmp_path / "idioms") == []
    code = files["environment.py"]
    for line in [
        "if a == 5 and (b == 5 or b == 6) and a != b:",  # SIM102, parenthesised
        "if a < 0 and b == 0:",  # a require inside an if
        "return a > 0",  # SIM103
        "if a == 1 or a == 2:",  # SIM114
        "pos = a > 0",  # SIM210
        "v = counts.get(key, -1)",  # SIM401
        'return s.startswith(("http://", "https://")) or s.endswith((".x", ".y"))',  # PIE810
        "return a < b <= c < 100",  # PLR1716
        "y = min(y, hi)",  # PLR1730
        "z = max(1, y)",  # FURB136
        "first_key = next(iter(m))",  # RUF015
        'first_name = next(e["name"] for e in self._count_each(state["entries"].values()))',
        'last = next(reversed(state["names"]))',
        'high = max(reversed(state["entries"].values()), key=lambda e: e["score"])',  # FURB192
        "m.pop(key, None)",  # RUF051
        "t = t.removeprefix(p)",  # FURB188
        "for n, w in enumerate(self._count_each(words), start=1):",  # SIM113
        "for i, w in enumerate(self._count_each(words)):",
        "for k in range(2):",  # PIE808 (a range of literals is not counted)
        "out.extend(counts)",  # PERF102, then PERF402
        "for v in self._count_each(counts.values()):",
        "for k_value in self._count_each(counts.values()):",  # PLC0206
        'parts = ["a", "b", "c"]',  # SIM905
        'joined = f"{a!s}-x-{parts[0]}"',  # FLY002, RUF010
        '"zero\\u200bwidth",',  # PLE2515
        '"bidi\\u202eend",',  # PLE2502
    ]:
        assert any(text.strip() == line for text in code.splitlines()), line
    assert "return None" not in code.split("class Environment:")[1]  # RET501, PLR1711
    assert "\u200b" not in code and "\u202e" not in code


def test_invisible_characters_are_escaped_and_mean_the_same() -> None:
    for text in [
        "a\u200bb",
        "x\u202ey",
        "del\x7f",
        "nbsp\xa0",
        "line\u2028",
        "\ufeff",
        "caf\u00e9 \U0001f600",
        "tab\t",
    ]:
        for quote in ('"', "'"):
            literal = py_str(text, quote)
            assert ast.literal_eval(literal) == text
            assert all(ch.isprintable() or ch == " " for ch in literal), literal
        assert ast.literal_eval(f'"""{docstring(text + " doc")}"""') == (text + " doc").strip()
    assert py_str("caf\u00e9 \U0001f600") == '"caf\u00e9 \U0001f600"'  # what shows stays as it is


def test_a_default_rule_finding_fails_qc_at_its_tool() -> None:
    """A `python` body that hides every failure: ruff's default BLE001 (not in envc's own
    selection) fails the package, reported at the tool's `python` line as the author's."""
    spec = (
        'environment blind:\n    title "Blind"\n\nstate:\n    hits: int = 0\n\n'
        'tool count() -> int:\n    """How many hits, hiding any failure."""\n    reads hits\n    writes nothing\n'
        '    python """\n    try:\n        return self._state["hits"]\n    except Exception:\n        return 0\n    """\n'
    )
    env, files = lowered(spec, "blind")
    result = check_packages([Package(env=env, name="blind", files=files)], dynamic=False)["blind"]
    assert [f.message.split()[0] for f in result.findings if f.tool == "ruff"] == ["BLE001"]
    assert not result.static_ok
    tool = env.tools[0]
    diagnostics = to_diagnostics(Package(env=env, name="blind", files=files), result)
    assert tool.escape is not None
    assert [(d.code, d.line) for d in diagnostics] == [("E6001", tool.escape.line)]
    assert "the `python` body you wrote for `count`" in diagnostics[0].hint


# --------------------------------------------------------------------------- one converter per type


def test_tools_of_one_type_share_one_converter(shared: tuple[ir.Environment, dict[str, str]]) -> None:
    _, files = shared
    tree = ast.parse(files["environment.py"])
    converters = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_json_"))
    assert converters == ["_json_Card", "_json_list_Card", "_json_optional_Card"]
    specs = next(n for n in tree.body if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "TOOL_SPECS")
    assert isinstance(specs.value, ast.Dict)
    results = {
        ast.literal_eval(k): ast.unparse(v.args[4])
        for k, v in zip(specs.value.keys, specs.value.values)
        if k and isinstance(v, ast.Call)
    }
    assert results == {
        "get_card": "_json_Card",
        "first_card": "_json_Card",
        "all_cards": "_json_list_Card",
        "maybe_card": "_json_optional_Card",
        "note_of": "dict",  # a flat record: one dict() call is the whole converter
        "level_of": "None",
        "count": "None",
        "levels_now": "dict",
        "raw": "to_json",
    }
    code = files["environment.py"]
    assert code.count("def _json_Card(") == 1 and code.count('"notes": [dict(v1) for v1 in value["notes"]]') == 1
    assert "return [_json_Card(v0) for v0 in value]" in code
    assert "return None if value is None else _json_Card(value)" in code


def test_shared_converters_give_detached_json(shared: tuple[ir.Environment, dict[str, str]], tmp_path: Path) -> None:
    package = import_package(shared[1], "shared_results_pkg", tmp_path)
    env = package.Environment()
    before = env.state_json()
    card = env.call("get_card", {"card_id": 1})
    assert card == {"id": 1, "tags": ["a"], "notes": [{"id": 1, "text": "n"}]}
    assert env.call("first_card", {}) == card and env.call("all_cards", {}) == [card]
    assert env.call("maybe_card", {"card_id": 9}) is None and env.call("maybe_card", {"card_id": 1}) == card
    for result in (card, env.call("all_cards", {})[0], env.call("maybe_card", {"card_id": 1})):
        result["tags"].append("changed")
        result["notes"][0]["text"] = "changed"
    note = env.call("note_of", {"card_id": 1})
    note["text"] = "changed"
    env.call("levels_now", {})["x"] = "high"
    env.call("raw", {})["k"].append(3)
    assert env.state_json() == before
    assert env.call("count", {}) == 1 and env.call("level_of", {"name": "x"}) == "low"
