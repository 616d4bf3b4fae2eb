"""The load step (issue 14): `on load:` blocks, `load options:` and state field aliases.

Each construct from parse to generated behaviour: the IR both parser paths build, the
type and effect rules (an `on load:` body is checked like a helper returning None and
is the only place that reads load options), the prototype merge (`override on load:`),
the lowered code (keyword-only options, `_on_load`, `STATE_ALIASES`), and what the
generated package does with the fixture tests/fixtures/on_load/loading_port.envspec:
aliases and options at run time, a refusing load step, restore and fork not loading
again, `open_environment` and `Episode.reset` passing options through.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from lowered import imported_package, lowered_files

from compiler import ir
from compiler.analyse import analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.front.fmt import format_source, strip_positions
from compiler.front.lark_builders import Collector
from compiler.front.lark_parser import main_parser
from compiler.front.parse import parse_source
from compiler.lower import lower

SPEC = Path(__file__).resolve().parent / "fixtures" / "on_load" / "loading_port.envspec"
HEADER = 'environment load_rules:\n    title "Load rules"\n\n'
STATE = "state:\n    items: list[str] = []\n    total: int = 0\n\n"


def diagnostics(body: str) -> list[tuple[str, int, int]]:
    result = analyse_source(HEADER + body, "l.envspec")
    return [(d.code, d.line, d.col) for d in result.diagnostics if d.severity == "error"]


def codes(body: str) -> list[str]:
    return [code for code, _, _ in diagnostics(body)]


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return lowered_files(SPEC)


@pytest.fixture(scope="module")
def package(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with imported_package(files, tmp_path_factory.mktemp("on_load"), "loading_port") as imported:
        yield imported


# --------------------------------------------------------------------------- parse


def test_the_constructs_parse_to_their_ir() -> None:
    source = (
        HEADER
        + 'state:\n    user_count: int = 0 alias "userCount"\n    names: list[str] alias "nameList"\n\n'
        + 'load options:\n    "Doc."\n    long_context: bool = False\n\n'
        + 'on load:\n    "Recount."\n    user_count = len(names)\n'
    )
    module = parse_source(source, "l.envspec").module
    assert module is not None
    fields = module.state[0].fields
    assert [(f.name, f.alias) for f in fields] == [("user_count", "userCount"), ("names", "nameList")]
    assert fields[1].default is None
    (options,) = module.load_options
    assert options.doc == "Doc." and [(f.name, f.type.name) for f in options.fields] == [("long_context", "bool")]
    (block,) = module.on_load
    assert block.doc == "Recount." and not block.override and (block.line, block.col) == (12, 1)
    assert isinstance(block.body[0], ir.Assign)


def test_override_on_load_parses_with_its_flag() -> None:
    module = parse_source(HEADER + "override on load:\n    pass\n", "l.envspec").module
    assert module is not None and module.on_load[0].override


def test_both_parser_paths_build_the_same_ir() -> None:
    """The inline LALR builder and `ToIR` over Lark's tree agree on the new rules."""
    text = SPEC.read_text(encoding="utf-8")
    built = []
    for way in (main_parser().parse, main_parser().parse_tree_first):
        collector = Collector("spec.envspec")
        built.append([decl.model_dump_json() for decl in way(text, "start", collector)])
        assert collector.errors == []
    assert built[0] == built[1]


def test_the_new_words_still_name_fields_parameters_and_locals() -> None:
    body = (
        "state:\n    load: int = 0\n    options: list[str] = []\n    on: bool = False\n\n"
        "tool keep(alias: str) -> int:\n    let n = load\n    options.append(alias)\n    on = True\n    return n\n"
    )
    assert codes(body) == []


def test_a_python_body_is_refused_with_its_position() -> None:
    assert diagnostics(STATE + 'on load:\n    python "pass"\n') == [("E2032", 9, 5)]


# --------------------------------------------------------------------------- types and names


def test_on_load_reads_state_world_and_options_and_calls_helpers() -> None:
    body = (
        STATE
        + "world:\n    extra: int = 1\n\nload options:\n    bonus: int = 0\n    tag: optional[str] = None\n\n"
        + "fn size() -> int:\n    return len(items)\n\n"
        + "on load:\n    total = size() + extra + bonus\n    if tag is not None:\n        items.append(tag)\n"
    )
    assert codes(body) == []


def test_a_load_option_is_read_only_in_on_load() -> None:
    body = "load options:\n    strict: bool = False\n\ntool is_strict() -> bool:\n    return strict\n"
    result = analyse_source(HEADER + body, "l.envspec")
    (error,) = [d for d in result.diagnostics if d.severity == "error"]
    assert (error.code, error.line) == ("E2002", 8)
    assert "load option" in error.hint and "on load:" in error.hint


def test_on_load_calls_no_tool_and_returns_nothing() -> None:
    tool = "tool count() -> int:\n    return total\n\n"
    assert diagnostics(STATE + tool + "on load:\n    total = count()\n") == [("E3005", 12, 13)]
    assert codes(STATE + "on load:\n    return total\n") == ["E3001"]
    assert codes(STATE + "on load:\n    return\n") == []


def test_on_load_bodies_are_type_checked() -> None:
    assert codes(STATE + 'on load:\n    total = "many"\n') == ["E3001"]
    assert codes(STATE + "on load:\n    totl = 1\n") == ["E2002"]
    assert codes(STATE + 'on load:\n    fail no_such_kind("x")\n') == ["E2013"]


def test_one_on_load_block_per_spec() -> None:
    assert diagnostics(STATE + "on load:\n    pass\n\non load:\n    pass\n") == [("E2001", 11, 1)]


@pytest.mark.parametrize(
    ("option", "code"),
    [
        ("names: list[str] = []", "E2031"),
        ("flag: bool", "E2031"),
        ("total: int = 0", None),  # a state field's name: in `on load:` the field is `state.total`
        ('scenario: str = ""', "E2031"),  # the loader's own parameter
        ("isinstance: bool = False", "E2031"),  # a built-in the loader calls
        ("copy_state: bool = False", "E2031"),  # a function of the module
        ("_hidden: bool = False", "E2031"),
        ('flag: bool = False alias "f"', "E2031"),
        ('flag: bool = "yes"', "E3001"),
        ("level: optional[int] = None", None),
        ("level: optional = None", "E3002"),  # reported once, by the type's own check
        ("level: Nope = 1", "E2003"),
        ("level: optional[list[int]] = None", "E2031"),
        ("ratio: float = 0.5", None),
    ],
)
def test_load_option_rules(option: str, code: str | None) -> None:
    found = codes(STATE + f"load options:\n    {option}\n")
    assert found == ([code] if code else [])


def test_a_load_option_declared_twice() -> None:
    assert codes("load options:\n    a: int = 0\n\nload options:\n    a: int = 1\n") == ["E2005"]


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ('    a: int = 0 alias "b"\n    b: int = 0\n', (5, 5)),  # another field's name
        ('    a: int = 0 alias "x"\n    b: int = 0 alias "x"\n', (6, 5)),  # another field's alias
        ('    a: int = 0 alias "a"\n', (5, 5)),  # itself
    ],
)
def test_alias_clashes_are_reported_where_they_are(fields: str, where: tuple[int, int]) -> None:
    assert diagnostics("state:\n" + fields) == [("E2030", *where)]


def test_records_have_no_aliases() -> None:
    assert codes('record R:\n    a: int alias "A"\n\nstate:\n    rs: list[R] = []\n') == ["E2030"]


# --------------------------------------------------------------------------- effects


def test_on_load_effects_are_inferred_like_a_helpers() -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None and result.environment.on_load is not None
    on_load = result.environment.on_load
    assert on_load.reads == ["by_id", "inbox", "threads", "user_count"]  # what is only set is not read
    assert on_load.writes == ["by_id", "limit", "message_count", "mode"]
    assert on_load.errors == ["invalid_argument"]
    assert [p.name for p in on_load.params] == ["long_context", "padding", "label"]


def test_on_load_may_not_change_world_data() -> None:
    assert codes('world:\n    names: list[str] = ["a"]\n\non load:\n    names.append("b")\n') == ["E4006"]


def test_random_numbers_drawn_on_load_give_the_random_state() -> None:
    result = analyse_source(HEADER + STATE + "on load:\n    total = random_int(1, 6)\n", "l.envspec")
    assert result.environment is not None
    assert "rng_state" in {f.name for f in result.environment.state}
    assert result.environment.on_load is not None and "rng_state" in result.environment.on_load.writes


# --------------------------------------------------------------------------- prototypes


def prototype_pair(tmp_path: Path, child_body: str) -> list[tuple[str, str]]:
    (tmp_path / "base.envspec").write_text(
        'environment base:\n    title "Base"\n\n' + STATE + "load options:\n    bonus: int = 0\n\n"
        "on load:\n    total = len(items) + bonus\n",
        encoding="utf-8",
    )
    child = tmp_path / "child.envspec"
    child.write_text('environment child:\n    title "Child"\n    extends "base.envspec"\n\n' + child_body, "utf-8")
    result = analyse_file(child)
    return [(d.code, Path(d.path).name) for d in result.diagnostics if d.severity == "error"]


def test_a_prototypes_load_step_and_options_are_inherited(tmp_path: Path) -> None:
    assert prototype_pair(tmp_path, "") == []
    result = analyse_file(tmp_path / "child.envspec")
    assert result.environment is not None and result.environment.on_load is not None
    assert [o.name for o in result.environment.load_options] == ["bonus"]
    assert result.environment.on_load.writes == ["total"]


def test_a_child_replaces_the_load_step_only_with_override(tmp_path: Path) -> None:
    assert prototype_pair(tmp_path, "on load:\n    total = 0\n") == [("E2011", "child.envspec")]
    assert prototype_pair(tmp_path, "override on load:\n    total = bonus\n") == []
    result = analyse_file(tmp_path / "child.envspec")
    assert result.environment is not None and result.environment.on_load is not None
    assert result.environment.on_load.reads == []


def test_a_renamed_state_field_is_renamed_in_the_load_step(tmp_path: Path) -> None:
    assert prototype_pair(tmp_path, "rename state total as item_total\n") == []
    result = analyse_file(tmp_path / "child.envspec")
    assert result.environment is not None and result.environment.on_load is not None
    assert result.environment.on_load.writes == ["item_total"]


# --------------------------------------------------------------------------- lowering


def test_full_qc_passes(files: dict[str, str]) -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="loading_port", files=files)], dynamic=True)
    outcome = checked["loading_port"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings


def test_the_loader_takes_the_options_as_keywords(files: dict[str, str]) -> None:
    source = files["environment.py"]
    options = "*, long_context: bool = False, padding: int = 2, label: str | None = None"
    assert f"scenario: str | Mapping[str, Any] | None = None, {options}" in " ".join(source.split())
    assert 'STATE_ALIASES: Final[dict[str, str]] = {"userCount": "user_count", "contextMode": "mode"}' in source
    assert "def _on_load(self, long_context: bool, padding: int, label: str | None) -> None:" in source
    assert "Reads by_id, inbox, threads, user_count; writes by_id, limit, message_count, mode." in source


def test_the_readme_tells_how_loading_works(files: dict[str, str]) -> None:
    readme = files["README.md"]
    assert "| `long_context` | `bool` | `False` |" in readme and "| `label` | `optional[str]` | `None` |" in readme
    assert "`userCount` for `user_count`, `contextMode` for `mode`" in readme
    assert "It reads `by_id`, `inbox`, `threads`, `user_count` and writes" in readme


def test_a_spec_without_a_load_step_keeps_the_plain_loader() -> None:
    result = analyse_source(HEADER + STATE, "l.envspec")
    assert result.environment is not None
    source = lower(result.environment, "l.envspec")["environment.py"]
    assert "def __init__(self, scenario: str | Mapping[str, Any] | None = None) -> None:" in source
    assert "_on_load" not in source and "STATE_ALIASES" not in source
    assert "LOAD_OPTIONS: Final[dict[str, tuple[Kind, Any]]] = {}" in source
    assert "## Loading" not in lower(result.environment, "l.envspec")["README.md"]


# --------------------------------------------------------------------------- generated behaviour


def test_loading_runs_the_step_for_named_scenarios_mappings_and_s0(package: ModuleType) -> None:
    env = package.Environment("busy")
    assert env.state()["message_count"] == 2 and env.view()["by_id"] == {7: ["a", "b"]}
    assert env.call("thread", {"thread_id": 7}) == ["a", "b"]
    mapped = package.Environment({"inbox": [{"a": 1}], "threads": {"12": ["x"], "x1": ["y"]}})
    assert mapped.state()["message_count"] == 1 and mapped.view()["by_id"] == {12: ["x"]}
    assert mapped.view()["threads"] == {"12": ["x"], "x1": ["y"]}  # loaded keys stay as given
    assert package.Environment().state()["message_count"] == 0


def test_an_alias_names_a_field_and_both_names_are_refused(package: ModuleType) -> None:
    env = package.Environment({"userCount": 3, "contextMode": "wide"})
    assert env.state()["user_count"] == 3 and env.state()["mode"] == "wide"
    assert "userCount" not in env.state()
    with pytest.raises(package.ScenarioError, match="'user_count' twice: by its name and as 'userCount'"):
        package.Environment({"userCount": 3, "user_count": 4})
    with pytest.raises(package.ScenarioError, match="unknown state field 'usercount'"):
        package.Environment({"usercount": 3})


def test_options_reach_the_load_step(package: ModuleType) -> None:
    assert package.Environment("busy").state()["limit"] == 100
    env = package.Environment("busy", long_context=True, padding=5)
    assert (env.state()["mode"], env.state()["limit"]) == ("long", 105)
    assert package.Environment(label="custom").state()["mode"] == "custom"
    env._load_scenario({"inbox": []}, long_context=True)  # as BFCL's harness calls a class
    assert (env.state()["mode"], env.state()["limit"], env.state()["message_count"]) == ("long", 102, 0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"long_context": "yes"}, "load option `long_context` must be true or false"),
        ({"padding": 2.5}, "load option `padding` must be an integer"),
        ({"label": 3}, "load option `label` must be a string"),
    ],
)
def test_ill_typed_options_are_scenario_errors(package: ModuleType, options: dict[str, Any], message: str) -> None:
    with pytest.raises(package.ScenarioError, match=message):
        package.Environment("busy", **options)
    with pytest.raises(package.ScenarioError, match=message):
        package.open_environment("busy", options=options)


def test_unknown_options_are_scenario_errors_for_harnesses(package: ModuleType) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'long'"):
        package.Environment("busy", long=True)  # a Python caller gets Python's own error
    with pytest.raises(package.ScenarioError, match="unknown load option 'long'; the options are long_context"):
        package.open_environment("busy", options={"long": True})
    assert package.environment.check_load_options(None) == {"long_context": False, "padding": 2, "label": None}


def test_a_refusing_load_step_is_a_scenario_error_and_keeps_the_state(package: ModuleType) -> None:
    with pytest.raises(package.ScenarioError, match="^on load: userCount must not be negative, got -1$"):
        package.Environment({"userCount": -1})
    env = package.Environment("busy")
    env.call("send", {"text": "kept"})
    before = env.state()
    with pytest.raises(package.ScenarioError):
        env._load_scenario({"user_count": -2})
    assert env.state() == before
    assert env.call("count", {}) == 3  # and the session still works


def test_restore_and_fork_do_not_load_again(package: ModuleType) -> None:
    env = package.Environment("busy")
    snapshot = env.snapshot()
    snapshot["message_count"] = 99  # a recount would undo this
    env.restore(snapshot)
    assert env.state()["message_count"] == 99
    fork = env.fork()
    assert fork.state()["message_count"] == 99 and env.state()["message_count"] == 99


def test_a_fork_loading_a_scenario_takes_the_options(package: ModuleType) -> None:
    env = package.Environment("busy")
    fork = env.fork()
    fork._load_scenario("busy", long_context=True)
    assert fork.state()["limit"] == 102 and env.state()["limit"] == 100


def test_loading_a_loaded_state_again_changes_nothing(package: ModuleType) -> None:
    for env in (package.Environment("busy"), package.Environment("busy", long_context=True, label="x")):
        assert package.Environment(env.saved_state()).state_json() == env.state_json()


def test_open_environment_and_reset_pass_options_through(package: ModuleType) -> None:
    env, _ = package.open_environment("busy", {"inbox": [{"x": 1}]}, None, {"long_context": True})
    # loaded with the option, then the changes reloaded with the defaults: recounted, limit kept
    assert (env.state()["limit"], env.state()["message_count"]) == (102, 1)
    again, _ = package.open_environment("busy", {"limit": 5}, None, {"long_context": True, "padding": 9})
    assert again.state()["limit"] == 5  # a change is applied after the load step, not undone by it
    episode = package.Episode()
    episode.reset(scenario="busy", options={"long_context": True, "padding": 7})
    assert episode.state()["limit"] == 107
    episode.reset(scenario="busy")
    assert episode.state()["limit"] == 100


# --------------------------------------------------------------------------- fmt


def test_fmt_prints_the_constructs_and_is_stable() -> None:
    text = SPEC.read_text(encoding="utf-8")
    out = format_source(text, "l.envspec").text
    assert out is not None
    assert 'user_count: int = 0 alias "userCount"' in out and "\nload options:\n" in out and "\non load:\n" in out
    assert out == text  # the fixture is written in the canonical style, so fmt leaves it as it is
    before, after = parse_source(text, "l.envspec").module, parse_source(out, "l.envspec").module
    assert before is not None and after is not None
    assert strip_positions(before) == strip_positions(after)
    overridden = format_source(HEADER + 'override on load:\n    "Doc."\n    pass\n', "l.envspec").text
    assert overridden is not None and 'override on load:\n    "Doc."\n    pass\n' in overridden
