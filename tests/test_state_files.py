"""State defaults and scenarios read from JSON files (`from "FILE"`, docs/language.md
§8.2 and §10), checked like literals, and shipped in the generated package's `data/`
folder, which the environment module reads when it is imported."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from compiler.analyse import analyse_file
from compiler.check.package import write_tree
from compiler.check.rules import rule_data_files, rule_imports
from compiler.cli import app as cli_module
from compiler.diagnostics import Diagnostic
from compiler.lower import lower

SPEC = '''\
environment {name}:
    title "Shop"

record User:
    name: str
    tags: set[str] = []

state:
    users: map[int, User] from "data/users.json"
    notes: map[json, list[str]] from "data/notes.json"
    served: int = 0

scenario big from "data/big.json"

scenario small:
    served = 2

scenario mixed:
    served = 7
    users = from "data/few_users.json"

tool add_tag(user_id: int, label: str) -> int:
    """Tag a user; the number of their tags."""
    let user = users.get(user_id)
    require user is not None else not_found(f"user {{user_id}} does not exist", entity="user", field="user_id")
    user.tags.add(label)
    served += 1
    return len(user.tags)

tool count() -> int:
    """How many users there are."""
    return len(users)
'''
USERS = '{"1": {"name": "Ann", "tags": ["b", "a"]}, "2": {"name": "Bé"}}'
NOTES = '[["1", ["as text"]], [1, ["as a number"]]]'
BIG = '{"served": 5, "users": {"3": {"name": "Cy", "tags": ["x"]}}}'


def write_project(folder: Path, name: str = "shop", users: str = USERS, big: str = BIG) -> Path:
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "data" / "users.json").write_text(users, encoding="utf-8")
    (folder / "data" / "notes.json").write_text(NOTES, encoding="utf-8")
    (folder / "data" / "big.json").write_text(big, encoding="utf-8")
    (folder / "data" / "few_users.json").write_text('{"9": {"name": "Di"}}', encoding="utf-8")
    spec = folder / f"{name}.envspec"
    spec.write_text(SPEC.format(name=name), encoding="utf-8")
    return spec


def errors(spec: Path) -> list[Diagnostic]:
    return [d for d in analyse_file(spec).diagnostics if d.severity == "error"]


def lowered(spec: Path) -> dict[str, str]:
    result = analyse_file(spec)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    return lower(result.environment, spec.name)


@pytest.fixture
def package(tmp_path: Path) -> Iterator[ModuleType]:
    """The generated package of SPEC, written to disk (its data files with it) and imported."""
    spec = write_project(tmp_path / "src", "shop_files")
    root = tmp_path / "out"
    write_tree(root / "shop_files", lowered(spec))
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("shop_files.environment")
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == "shop_files" or m.startswith("shop_files.")]:
            del sys.modules[module]


# --------------------------------------------------------------------------- checking


def test_a_state_default_and_a_scenario_come_from_their_files(tmp_path: Path) -> None:
    result = analyse_file(write_project(tmp_path))
    env = result.environment
    assert env is not None, [d.message for d in result.diagnostics]
    assert env.state_defaults["users"] == {1: {"name": "Ann", "tags": ["a", "b"]}, 2: {"name": "Bé", "tags": []}}
    assert env.state_defaults["notes"] == {"1": ["as text"], 1: ["as a number"]}
    assert env.scenario_values == {
        "big": {"served": 5, "users": {3: {"name": "Cy", "tags": ["x"]}}},
        "small": {"served": 2},
        "mixed": {"served": 7, "users": {9: {"name": "Di", "tags": []}}},
    }
    files = ("big.json", "few_users.json", "notes.json", "users.json")
    assert env.inputs == sorted(str(tmp_path / "data" / f) for f in files)


def test_a_wrong_value_in_a_state_file_says_where_in_the_file(tmp_path: Path) -> None:
    spec = write_project(tmp_path, users='{"1": {"name": 4}, "x": {"name": "Bo", "extra": 1}}')
    found = [(d.code, d.line, d.col, d.message) for d in errors(spec)]
    assert found == [
        ("E3001", 9, 5, "in state file `data/users.json`: users['1'].name: int 4 where str is expected"),
        ("E3001", 9, 5, "in state file `data/users.json`: users: key 'x' is not an int"),
        ("E3001", 9, 5, "in state file `data/users.json`: users['x']: record User has no field 'extra'"),
    ]


def test_a_scenario_file_is_checked_like_a_scenario_block(tmp_path: Path) -> None:
    spec = write_project(tmp_path, big='{"served": "many", "servd": 1, "users": {"3": {"tags": []}}}')
    found = [(d.code, d.line, d.message, d.hint) for d in errors(spec)]
    assert found == [
        ("E2006", 13, "`servd` in scenario file `data/big.json` is not a state field", "did you mean `served`?"),
        ("E3001", 13, "in scenario file `data/big.json`: served: str 'many' where int is expected", found[1][3]),
        ("E3001", 13, "in scenario file `data/big.json`: users['3']: record User needs field 'name'", found[2][3]),
    ]


@pytest.mark.parametrize("big", ["[1, 2]", '"served"', "3", "null"])
def test_a_scenario_file_holds_an_object(tmp_path: Path, big: str) -> None:
    [error] = errors(write_project(tmp_path, big=big))
    assert (error.code, error.line) == ("E3001", 13)
    assert "scenario file `data/big.json` must hold a JSON object of state fields, not " in error.message


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("data/gone.json", "cannot read state file `data/gone.json`"),
        ("../outside.json", "state file `../outside.json` must be a path inside the spec's folder"),
        ("/etc/hostname", "state file `/etc/hostname` must be a path inside the spec's folder"),
        ("data/broken.json", "state file `data/broken.json` is not valid JSON"),
    ],
)
def test_a_state_file_that_cannot_be_read_is_E0003(tmp_path: Path, source: str, fragment: str) -> None:
    spec = write_project(tmp_path / "inner")
    (tmp_path / "outside.json").write_text("{}", encoding="utf-8")
    (tmp_path / "inner" / "data" / "broken.json").write_text('{"1": ', encoding="utf-8")
    spec.write_text(spec.read_text().replace("data/users.json", source), encoding="utf-8")
    [error] = errors(spec)
    assert (error.code, error.line, error.col) == ("E0003", 9, 5)
    assert fragment in error.message


def test_a_missing_scenario_file_is_E0003(tmp_path: Path) -> None:
    spec = write_project(tmp_path)
    (tmp_path / "data" / "big.json").unlink()
    [error] = errors(spec)
    assert (error.code, error.line, error.col) == ("E0003", 13, 1)
    assert "cannot read scenario file `data/big.json`" in error.message


def test_a_scenario_field_from_a_file_is_checked_on_its_line(tmp_path: Path) -> None:
    spec = write_project(tmp_path)
    (tmp_path / "data" / "few_users.json").write_text('{"9": {"name": ["Di"]}}', encoding="utf-8")
    [error] = errors(spec)
    assert (error.code, error.line, error.col) == ("E3001", 20, 5)
    assert error.message == "in scenario file `data/few_users.json`: users['9'].name: list ['Di'] where str is expected"
    spec.write_text(spec.read_text().replace("data/few_users.json", "data/none.json"), encoding="utf-8")
    [error] = errors(spec)
    assert (error.code, error.line) == ("E0003", 20)
    assert "cannot read scenario file `data/none.json`" in error.message


def test_fmt_prints_a_scenario_field_from_a_file() -> None:
    from compiler.front.fmt import format_source

    text = SPEC.format(name="shop")
    formatted = format_source(text.replace('users = from "data', 'users   =  from   "data'), "shop.envspec").text
    assert formatted is not None and '\n    users = from "data/few_users.json"\n' in formatted
    assert formatted == format_source(text, "shop.envspec").text


# --------------------------------------------------------------------------- the generated package


def test_the_package_ships_the_data_as_json_files(tmp_path: Path) -> None:
    files = lowered(write_project(tmp_path))
    assert files["data/state/users.json"] == ('{"1":{"name":"Ann","tags":["a","b"]},"2":{"name":"Bé","tags":[]}}\n'), (
        "one line, fixed separators, map order kept, non-ASCII as it is"
    )
    assert files["data/state/notes.json"] == '[["1",["as text"]],[1,["as a number"]]]\n', "map[json, V] as pairs"
    assert files["data/scenarios/big.json"] == '{"served":5,"users":{"3":{"name":"Cy","tags":["x"]}}}\n'
    assert "data/state/served.json" not in files and "data/scenarios/small.json" not in files
    source = files["environment.py"]
    assert '"users": _from_data(_read_data("state/users.json"), STATE_KINDS["users"], "users"),' in source
    assert '"big": _read_data("scenarios/big.json"),' in source
    assert '"small": {"served": 2},' in source
    assert '"mixed": {"served": 7, "users": _read_data("scenarios/mixed/users.json")},' in source
    assert files["data/scenarios/mixed/users.json"] == '{"9":{"name":"Di","tags":[]}}\n'
    assert "Ann" not in source, "the data is not inlined"


def test_output_is_reproducible(tmp_path: Path) -> None:
    first = lowered(write_project(tmp_path / "a"))
    second = lowered(write_project(tmp_path / "b"))
    assert first == second


def test_the_package_reads_its_data_files(package: ModuleType) -> None:
    env = package.Environment()
    assert env.state()["users"] == {"1": {"name": "Ann", "tags": ["a", "b"]}, "2": {"name": "Bé", "tags": []}}
    assert env.view()["users"][1]["tags"] == {"a", "b"}, "conformed to the state's Python values: a set"
    assert env.view()["notes"] == {"1": ["as text"], 1: ["as a number"]}
    big = package.Environment("big")
    assert big.state()["served"] == 5 and list(big.view()["users"]) == [3]
    assert package.Environment("small").view()["users"] == env.view()["users"]
    for name in ("users", "notes"):  # converted without a second check: what checking would give
        raw = json.loads(
            (Path(package.__file__).parent / "data" / "state" / f"{name}.json").read_text(encoding="utf-8")
        )
        assert package.DEFAULT_STATE[name] == package.conform(raw, package.STATE_KINDS[name], name)
    mixed = package.Environment("mixed")
    assert mixed.view()["served"] == 7 and mixed.view()["users"] == {9: {"name": "Di", "tags": set()}}


def test_environments_do_not_share_the_data(package: ModuleType) -> None:
    first, second = package.Environment(), package.Environment()
    assert first.call("add_tag", {"user_id": 1, "label": "c"}) == 3
    assert second.view()["users"][1]["tags"] == {"a", "b"}
    assert package.DEFAULT_STATE["users"][1]["tags"] == {"a", "b"}
    third = package.Environment("big")
    third.call("add_tag", {"user_id": 3, "label": "y"})
    assert package.Environment("big").view()["users"][3]["tags"] == {"x"}


def test_snapshot_restore_fork_and_scenarios_still_hold(package: ModuleType) -> None:
    env = package.Environment()
    saved = env.snapshot()
    env.call("add_tag", {"user_id": 2, "label": "new"})
    fork = env.fork()
    fork.call("add_tag", {"user_id": 2, "label": "forked"})
    assert env.view()["users"][2]["tags"] == {"new"}
    assert fork.view()["users"][2]["tags"] == {"new", "forked"}
    env.restore(saved)
    assert env.view()["users"][2]["tags"] == set() and env.view()["served"] == 0
    big = package.Environment("big")
    before = big.snapshot()
    big.call("add_tag", {"user_id": 3, "label": "y"})
    big.restore(before)
    assert big.state()["users"] == {"3": {"name": "Cy", "tags": ["x"]}}
    assert package.Environment(big.saved_state()).state() == big.state()


def test_the_ast_rules_pass_the_reader_and_refuse_other_file_access(tmp_path: Path) -> None:
    files = lowered(write_project(tmp_path))
    tree = ast.parse(files["environment.py"])
    assert rule_data_files("environment.py", tree) == []
    assert rule_imports("environment.py", tree) == []
    bad = (
        files["environment.py"].replace(
            'return json.loads((_DATA / name).read_text(encoding="utf-8"))',
            '(_DATA / name).write_text("")\n    return json.loads((_DATA / name).read_text(encoding="utf-8"))',
        )
        + '\n\nELSEWHERE = Path("/etc")\nAGAIN = _DATA\n'
    )
    found = sorted(f.message for f in rule_data_files("environment.py", ast.parse(bad)))
    assert found == [
        "`Path` may only name the package's data folder",
        "`_DATA` is read only by `_read_data`",
        "`_read_data` only reads (`.write_text`)",
    ]


# --------------------------------------------------------------------------- envc compile


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.envc]\noutput = "out"\n')
    write_project(tmp_path / "specs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def envc(*args: str) -> Any:
    return CliRunner().invoke(cli_module.cli, ["compile", *args], catch_exceptions=False)


def test_the_manifest_lists_the_data_files_and_a_changed_one_makes_the_package_stale(project: Path) -> None:
    assert envc("--no-qc").exit_code == 0
    manifest = json.loads((project / "out" / "shop" / ".envc-manifest.json").read_text())
    assert "specs/data/users.json" in manifest["inputs"] and "specs/data/big.json" in manifest["inputs"]
    assert {"data/state/users.json", "data/state/notes.json", "data/scenarios/big.json"} <= set(manifest["files"])
    assert envc("--check").exit_code == 0
    users = project / "specs" / "data" / "users.json"
    users.write_text(USERS.replace("Ann", "Anna"), encoding="utf-8")
    result = envc("--check")
    assert result.exit_code == 1, result.output
    assert "stale: out/shop/data/state/users.json" in result.stderr
    assert "stale: out/shop/environment.py" not in result.stderr, "the module reads the file; it does not change"
    assert envc("--no-qc").exit_code == 0
    assert '"Anna"' in (project / "out" / "shop" / "data" / "state" / "users.json").read_text(encoding="utf-8")


def test_a_served_package_digest_covers_its_data_files(tmp_path: Path) -> None:
    """`envc serve` journals record the package digest: other data is another build."""
    from compiler.build.packages import package_digest

    folder = tmp_path / "shop"
    write_tree(folder, lowered(write_project(tmp_path / "src")))
    before = package_digest(folder)
    users = folder / "data" / "state" / "users.json"
    users.write_text(users.read_text(encoding="utf-8").replace("Ann", "Anna"), encoding="utf-8")
    assert package_digest(folder) != before


def test_a_prototype_reads_its_files_beside_itself(tmp_path: Path) -> None:
    """Paths are relative to the spec that declares the field or scenario, as for world files."""
    (tmp_path / "protos" / "data").mkdir(parents=True)
    (tmp_path / "protos" / "data" / "seed.json").write_text('{"a": 1}', encoding="utf-8")
    (tmp_path / "protos" / "data" / "busy.json").write_text('{"counts": {"b": 2}}', encoding="utf-8")
    (tmp_path / "protos" / "base.envspec").write_text(
        'environment base:\n    title "Base"\n\nstate:\n    counts: map[str, int] from "data/seed.json"\n\n'
        'scenario busy from "data/busy.json"\n',
        encoding="utf-8",
    )
    spec = tmp_path / "child.envspec"
    spec.write_text(
        'environment child:\n    title "Child"\n    extends "protos/base.envspec"\n\n'
        'tool total() -> int:\n    """All counts."""\n    return sum(values(counts))\n',
        encoding="utf-8",
    )
    result = analyse_file(spec)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    assert result.environment.state_defaults["counts"] == {"a": 1}
    assert result.environment.scenario_values["busy"] == {"counts": {"b": 2}}
    assert result.environment.inputs == [str(tmp_path / "protos" / "data" / n) for n in ("busy.json", "seed.json")]


def test_a_renamed_state_field_is_found_under_its_old_key_in_a_prototypes_scenario_file(tmp_path: Path) -> None:
    """The file keeps the prototype's names; each rename, through a chain of prototypes,
    is followed to the field's name now, which is what the package ships."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "busy.json").write_text('{"counts": {"b": 2}, "served": 3}', encoding="utf-8")
    (tmp_path / "base.envspec").write_text(
        'environment base:\n    title "Base"\n\nstate:\n    counts: map[str, int] = {}\n    served: int = 0\n\n'
        'scenario busy from "data/busy.json"\n',
        encoding="utf-8",
    )
    (tmp_path / "middle.envspec").write_text(
        'environment middle:\n    title "Middle"\n    extends "base.envspec"\n\nrename state counts as tallies\n',
        encoding="utf-8",
    )
    spec = tmp_path / "child.envspec"
    spec.write_text(
        'environment child:\n    title "Child"\n    extends "middle.envspec"\n\nrename state tallies as scores\n'
        "rename state served as visits\n",
        encoding="utf-8",
    )
    result = analyse_file(spec)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    assert result.environment.scenario_values["busy"] == {"scores": {"b": 2}, "visits": 3}
    shipped = lower(result.environment, spec.name)["data/scenarios/busy.json"]
    assert json.loads(shipped) == {"scores": {"b": 2}, "visits": 3}
    direct = analyse_file(tmp_path / "middle.envspec")
    assert direct.environment is not None and direct.environment.scenario_values["busy"]["tallies"] == {"b": 2}
