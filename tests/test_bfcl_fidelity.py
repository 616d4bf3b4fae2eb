"""The generated ports of BFCL classes replay BFCL's multi-turn ground truth exactly.

Every task of multi_turn_base and multi_turn_long_context that involves a ported class
(`bfcl_replay.PORTED`) is replayed by benchmarks/bfcl_replay.py in a pure-BFCL world and
in a hybrid world (ported classes generated): every result string and every public state
field must match. The harness is checked too: its executor must give what BFCL's own
executor gives, a port that is BFCL's class behind the generated interface must replay
clean, and a deliberately broken port must be reported.

Nothing is skipped: a missing generated package fails the tests that need it, naming it.
Needs bfcl-eval (pip install --no-deps bfcl-eval mpmath); no network.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

import bfcl_replay as replay  # noqa: E402

CLASSES = tuple(replay.PORTED)


def port(class_name: str) -> ModuleType:
    """The generated package, or a failure naming the missing package (never a skip)."""
    try:
        return replay.load_port(class_name)
    except replay.MissingPort as error:
        pytest.fail(str(error), pytrace=False)


def tasks_of(class_name: str, category: str) -> list[replay.Task]:
    tasks = [task for task in replay.load_tasks(category) if class_name in task.ported]
    assert tasks, f"no {category} task involves {class_name}"
    return tasks


def listed(mismatches: list[replay.Mismatch], limit: int = 10) -> str:
    shown = "\n".join(mismatch.describe() for mismatch in mismatches[:limit])
    return f"{len(mismatches)} mismatches; the first ones:\n{shown}"


def replay_class(class_name: str, category: str, ports: dict[str, Any]) -> list[replay.TaskReport]:
    return [replay.replay_task(task, ports) for task in tasks_of(class_name, category)]


# --------------------------------------------------------------------------- fidelity


@pytest.mark.parametrize("category", replay.CATEGORIES)
@pytest.mark.parametrize("class_name", CLASSES)
def test_the_port_replays_the_ground_truth_without_a_mismatch(class_name: str, category: str) -> None:
    tasks = tasks_of(class_name, category)
    ports = {name: port(name) for task in tasks for name in task.ported}
    reports = [replay.replay_task(task, ports) for task in tasks]
    assert sum(report.calls[class_name] for report in reports) > 0, "the replay made no call to the port"
    mismatches = [mismatch for report in reports for mismatch in report.mismatches]
    assert not mismatches, listed(mismatches)


@pytest.mark.parametrize("category", replay.CATEGORIES)
def test_the_harness_executes_calls_as_bfcl_does(category: str) -> None:
    """bfcl_replay's executor against BFCL's execute_multi_turn_func_call on BFCL's classes:
    the same result string for every call of every task, the same states after every turn."""
    reports = replay.self_check(category)
    differing = [
        f"{report.task_id}: {(report.result_differences + report.state_differences)[0]}"
        for report in reports
        if report.result_differences or report.state_differences
    ]
    assert not differing, "\n".join(differing[:10])
    ported_calls = sum(sum(report.calls.values()) for report in reports)
    assert 0 < ported_calls < sum(report.all_calls for report in reports)


def test_the_registry_names_bfcl_classes() -> None:
    for class_name in CLASSES:
        assert replay.bfcl_class(class_name).__name__ == class_name


# --------------------------------------------------------------------------- the harness itself


@dataclass(frozen=True)
class Param:
    name: str


def bfcl_behind_the_generated_interface(class_name: str) -> Any:
    """BFCL's own class dressed as a generated package (`Environment(mapping)`, `call`,
    `view`, `TOOL_SPECS[...].params`): a port faithful by construction."""
    cls = replay.bfcl_class(class_name)

    class Environment:
        def __init__(self, mapping: dict[str, Any], long_context: bool = False) -> None:
            self.instance = cls()
            self.instance._load_scenario(mapping, long_context=long_context)

        def call(self, tool: str, args: dict[str, Any]) -> Any:
            try:
                return getattr(self.instance, tool)(**args)
            except Exception as error:
                return replay.error_result(error)

        def view(self) -> dict[str, Any]:
            return replay.public_attributes(self.instance)

    specs = {
        name: SimpleNamespace(
            params=tuple(Param(p) for p in list(inspect.signature(getattr(cls, name)).parameters)[1:])
        )
        for name in replay.BfclBackend(cls()).tool_names()
    }
    return SimpleNamespace(Environment=Environment, TOOL_SPECS=specs)


@pytest.mark.parametrize("category", replay.CATEGORIES)
def test_a_faithful_port_replays_clean(category: str) -> None:
    """So a mismatch the fidelity tests report is the port's, not the harness's (world
    building, positional arguments, formatting, the state comparison)."""
    ports = {name: bfcl_behind_the_generated_interface(name) for name in CLASSES}
    reports = replay.replay(category, ports)
    assert len(reports) == len(replay.load_tasks(category))
    mismatches = [mismatch for report in reports for mismatch in report.mismatches]
    assert not mismatches, listed(mismatches)


def first_task_calling(class_name: str) -> tuple[replay.Task, int]:
    """The first base task that calls the class, with its number of calls to it."""
    for task in tasks_of(class_name, "base"):
        report = replay.replay_task(task, {name: bfcl_behind_the_generated_interface(name) for name in task.ported})
        if report.calls[class_name]:
            return task, report.calls[class_name]
    raise AssertionError(f"no base task calls {class_name}")


def broken(package: Any, change: Callable[[type], type]) -> Any:
    """The package with its Environment replaced by a subclass that `change` makes."""
    return SimpleNamespace(Environment=change(package.Environment), TOOL_SPECS=package.TOOL_SPECS)


def wrong_results(base: type) -> type:
    class WrongResults(base):  # type: ignore[misc, valid-type]
        def call(self, tool: str, args: Any = None) -> Any:
            return {"altered": super().call(tool, args)}

    return WrongResults


def first_public_attribute(class_name: str, task: replay.Task) -> str:
    instance = replay.new_bfcl_instance(class_name, task.initial_config, task.long_context)
    return next(iter(replay.public_attributes(instance)))


def wrong_field(attribute: str) -> Callable[[type], type]:
    def change(base: type) -> type:
        class WrongField(base):  # type: ignore[misc, valid-type]
            def view(self) -> Any:
                return {**super().view(), attribute: "altered"}

        return WrongField

    return change


def without_field(attribute: str) -> Callable[[type], type]:
    def change(base: type) -> type:
        class WithoutField(base):  # type: ignore[misc, valid-type]
            def view(self) -> Any:
                return {key: value for key, value in super().view().items() if key != attribute}

        return WithoutField

    return change


@pytest.mark.parametrize("class_name", CLASSES)
def test_a_wrong_result_is_reported(class_name: str) -> None:
    package = port(class_name)
    task, calls = first_task_calling(class_name)
    report = replay.replay_task(task, {class_name: broken(package, wrong_results)})
    results = [mismatch for mismatch in report.mismatches if mismatch.kind == "result"]
    assert len(results) == calls
    assert all(mismatch.class_name == class_name and "altered" in mismatch.generated for mismatch in results)
    assert all(mismatch.bfcl != mismatch.generated for mismatch in results)


@pytest.mark.parametrize("class_name", CLASSES)
def test_a_wrong_state_field_is_reported_after_loading_and_every_turn(class_name: str) -> None:
    package = port(class_name)
    task, _ = first_task_calling(class_name)
    attribute = first_public_attribute(class_name, task)
    report = replay.replay_task(task, {class_name: broken(package, wrong_field(attribute))})
    states = [mismatch for mismatch in report.mismatches if mismatch.subject == attribute]
    assert [mismatch.turn for mismatch in states] == [replay.LOADING, *range(len(task.turns))]
    assert all(mismatch.kind == "state" and mismatch.generated == "altered" for mismatch in states)
    assert attribute in states[0].describe()


@pytest.mark.parametrize("class_name", CLASSES)
def test_a_missing_state_field_is_reported(class_name: str) -> None:
    package = port(class_name)
    task, _ = first_task_calling(class_name)
    attribute = first_public_attribute(class_name, task)
    report = replay.replay_task(task, {class_name: broken(package, without_field(attribute))})
    missing = [mismatch for mismatch in report.mismatches if mismatch.subject == attribute]
    assert [mismatch.turn for mismatch in missing] == [replay.LOADING, *range(len(task.turns))]
    assert all(mismatch.generated is replay.MISSING for mismatch in missing)
    assert "missing from env.view()" in missing[0].describe()


def test_a_refused_initial_config_is_reported() -> None:
    def refusing(base: type) -> type:
        class Refusing(base):  # type: ignore[misc, valid-type]
            def __init__(self, mapping: Any, long_context: bool = False) -> None:
                raise ValueError("refused on purpose")

        return Refusing

    task, _ = first_task_calling("TicketAPI")
    report = replay.replay_task(task, {"TicketAPI": broken(bfcl_behind_the_generated_interface("TicketAPI"), refusing)})
    assert [mismatch.subject for mismatch in report.mismatches] == [replay.INITIAL_CONFIG]
    assert "refused on purpose" in report.mismatches[0].describe()


def test_the_comparison_is_bfcls_inequality() -> None:
    assert not replay.differs({1: ["a"]}, {1: ["a"]})
    assert replay.differs({1: ["a"]}, {"1": ["a"]})  # int and str keys differ, as in BFCL
    assert replay.differs({7}, [7])  # a set is not a list
    assert "[0]['status']" in replay.first_difference([{"status": "Open"}], [{"status": "open"}], "")


def test_a_missing_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(replay.PORTED, "NoSuchAPI", "bfcl_no_such_package")  # type: ignore[index]
    with pytest.raises(replay.MissingPort, match="'bfcl_no_such_package' .the port of BFCL's NoSuchAPI. is missing"):
        replay.load_port("NoSuchAPI")


def test_positional_arguments_are_named_in_declaration_order() -> None:
    params = (Param("user_id"), Param("note"))
    assert replay.keyword_arguments(params, "t", ("USR001",), {"note": "x"}) == {"user_id": "USR001", "note": "x"}
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3"):
        replay.keyword_arguments(params, "t", (1, 2, 3), {})
    with pytest.raises(TypeError, match="multiple values for argument 'user_id'"):
        replay.keyword_arguments(params, "t", (1,), {"user_id": 2})


# --------------------------------------------------------------------------- the tools themselves


FUNC_DOC_FILES = {"TicketAPI": "ticket_api.json", "TwitterAPI": "posting_api.json", "MessageAPI": "message_api.json"}
JSON_TYPES = {"string": "string", "integer": "integer", "boolean": "boolean", "array": "array", "dict": "object"}
"""BFCL's function-doc type names, and the JSON Schema type the port's tools.json gives."""


def bfcl_function_docs(class_name: str) -> dict[str, dict[str, Any]]:
    path = replay.BFCL_DATA / "multi_turn_func_doc" / FUNC_DOC_FILES[class_name]
    docs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {doc["name"]: doc for doc in docs}


def port_tools(class_name: str) -> dict[str, dict[str, Any]]:
    tools_json = Path(port(class_name).__file__).parent / "tools.json"
    return {tool["name"]: tool for tool in json.loads(tools_json.read_text(encoding="utf-8"))["tools"]}


@pytest.mark.parametrize("class_name", CLASSES)
def test_the_port_has_bfcls_tools_with_bfcls_parameters(class_name: str) -> None:
    """Same tool names; per tool the same parameters in the same order, the same required
    ones and the same defaults as the BFCL method's signature."""
    cls = replay.bfcl_class(class_name)
    methods = {name: member for name, member in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}
    specs = port(class_name).TOOL_SPECS
    assert sorted(specs) == sorted(methods)
    tools = port_tools(class_name)
    for name, method in methods.items():
        parameters = list(inspect.signature(method).parameters.values())[1:]  # without self
        assert [p.name for p in specs[name].params] == [p.name for p in parameters], name
        for param, spec in zip(parameters, specs[name].params):
            has_default = param.default is not inspect.Parameter.empty
            assert spec.required == (not has_default), f"{name}({param.name})"
            schema = tools[name]["parameters"]["properties"][param.name]
            if has_default:
                assert schema.get("default") == param.default, f"{name}({param.name})"


@pytest.mark.parametrize("class_name", CLASSES)
def test_the_port_matches_bfcls_function_docs(class_name: str) -> None:
    """What a model is shown: BFCL's function docs (multi_turn_func_doc) against the
    port's tools.json: the same tools, parameter names, descriptions, required lists and
    JSON types, except `ticket_id`, which is any JSON value in the port because BFCL
    compares ids as given and its own ground truth passes string ids (docs/fidelity.md)."""
    docs = bfcl_function_docs(class_name)
    tools = port_tools(class_name)
    assert sorted(tools) == sorted(docs)
    for name, doc in docs.items():
        properties = tools[name]["parameters"]["properties"]
        assert list(properties) == list(doc["parameters"]["properties"]), name
        assert sorted(tools[name]["parameters"]["required"]) == sorted(doc["parameters"]["required"]), name
        for param, described in doc["parameters"]["properties"].items():
            assert properties[param].get("description") == described["description"], f"{name}({param})"
            if param == "ticket_id":
                assert set(properties[param]) == {"description"}, f"{name}({param}) is any JSON value"
                continue
            schema = properties[param]
            types = {schema.get("type")} | {option.get("type") for option in schema.get("anyOf", [])}
            assert JSON_TYPES[described["type"]] in types, f"{name}({param})"  # optional ones also take null
        assert doc["description"].endswith(tools[name]["description"].split("\n")[0]), name
