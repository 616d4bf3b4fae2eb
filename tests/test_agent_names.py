"""Names the agent sees are free (issue 14): a fixture spec whose tool parameters and
record fields are Python keywords, envspec words and the generated code's own names
compiles with full QC; tools.json, `call` and results keep the real names, the Python
renames them (`state_`)."""

from __future__ import annotations

import importlib
import inspect
import json
import types
from pathlib import Path

import pytest
from lowered import environment_module, lowered_files

from compiler.analyse import analyse_file
from compiler.build.packages import import_package
from compiler.check import check_packages
from compiler.check.package import Package, write_tree

SPEC = Path(__file__).resolve().parent / "fixtures" / "agent_names" / "agent_names.envspec"
PARAMS = ["state", "from", "class", "json", "env", "key_1", "self", "max"]


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return lowered_files(SPEC)


@pytest.fixture(scope="module")
def module(files: dict[str, str]) -> types.ModuleType:
    return environment_module(files["environment.py"], "agent_names_environment")


def test_full_qc_passes(files: dict[str, str]) -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="agent_names", files=files)], dynamic=True)
    outcome = checked["agent_names"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings


def test_tools_json_has_the_real_names(files: dict[str, str]) -> None:
    [tool] = json.loads(files["tools.json"])["tools"]
    assert list(tool["parameters"]["properties"]) == PARAMS
    assert list(tool["returns"]["properties"]) == ["type", "self", "items", "from", "str"]


def test_python_renames_only_inside(files: dict[str, str]) -> None:
    source = files["environment.py"]
    assert "state_: str," in source and "from_: str," in source and "max_: int = 3" in source
    assert 'Param("state", ("str",), True, (), "state_")' in source
    assert 'Address = TypedDict(\n    "Address",' in source  # `from` cannot be a class-body field


def test_calls_take_the_real_names(module: types.ModuleType) -> None:
    env = module.Environment()
    args = {"state": "CA", "from": "x", "class": 2, "json": "j", "env": "e", "key_1": 1, "max": 5}
    assert env.call("add_address", args) == {"type": "j", "self": "CA:0", "items": [], "from": "x", "str": "e"}
    assert env.call("add_address", {**args, "self": ["a", "b"]})["self"] == "CA:2"
    refused = env.call("add_address", {**args, "class": -1})
    assert refused["error"]["field"] == "class"
    wrong = env.call("add_address", {"state_": "CA"})
    assert wrong["error"]["field"] == "state_" and "state" in wrong["error"]["allowed"]
    assert len(env.state()["addresses"]) == 2


def test_trl_signatures_take_python_names_and_pass_the_real_ones(files: dict[str, str], tmp_path: Path) -> None:
    """TRL derives schemas from signatures: a keyword (or `self`) parameter shows as `NAME_`
    there, and the adapter hands it to the environment under its real name."""
    folder = tmp_path / "agent_names"
    write_tree(folder, files)
    import_package(folder, "_agent_names_trl")
    env = importlib.import_module("_agent_names_trl.trl_env").TrlEnvironment()
    task = {
        "id": "add-one-address",
        "envs": ["agent_names"],
        "initial_state": {"agent_names": {"scenario": None, "changes": {}}},
        "prompt": "Add an address.",
        "verifier": {
            "checks": [{"env": "agent_names", "path": "/addresses", "op": "length", "expected": 1, "weight": 1.0}],
            "collateral": {"allowed": {"agent_names": ["/addresses"]}},
        },
        "reward": "binary",
    }
    assert env.reset(**task) is None
    parameters = list(inspect.signature(env.add_address).parameters)
    assert parameters == ["state", "from_", "class_", "json", "env", "key_1", "self_", "max"]
    args = {"state": "CA", "from_": "x", "class_": 2, "json": "j", "env": "e", "key_1": 1}
    assert json.loads(env.add_address(**args)) == {"type": "j", "self": "CA:0", "items": [], "from": "x", "str": "e"}
    assert env.get_reward() == 1.0
