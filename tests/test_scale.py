"""Scale-out (compiler/run/scale.py): rollouts and calibration on a local Ray instance the
test starts give the same results as the local run; environments reach the workers as
bundles (IR + package files), not through a shared import."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from click.testing import CliRunner
from test_rollout import SPEC, ScriptedEndpoint, config_for, ticketing_envs, ticketing_tasks

from compiler.cli import app as cli_module
from compiler.run import calibrate, rollout, scale
from compiler.synth import tasks
from compiler.synth.sample import SampleEnv

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def envs() -> dict[str, SampleEnv]:
    return ticketing_envs()


@pytest.fixture(scope="module")
def task_rows(envs: dict[str, SampleEnv]) -> list[dict[str, Any]]:
    return ticketing_tasks(envs)


@pytest.fixture(scope="module")
def endpoint(task_rows: list[dict[str, Any]]) -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint(task_rows) as server:
        yield server


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_an_unreachable_or_malformed_address_is_a_clear_error_at_once(
    envs: dict[str, SampleEnv], task_rows: list[dict[str, Any]]
) -> None:
    assert not ray.is_initialized()  # runs before the module's Ray instance starts
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{probe.getsockname()[1]}"
    for address, message in ((closed, f"cannot connect to Ray at '{closed}'"), ("nowhere", "not 'nowhere'")):
        executor = scale.RayExecutor(envs, address)
        with pytest.raises(scale.ScaleError, match=message):
            calibrate.calibrate(task_rows[:1], envs, calibrate.POLICIES["gold"], k=1, executor=executor)
    assert not ray.is_initialized()


def test_a_bundle_opens_as_the_same_environment_elsewhere(
    envs: dict[str, SampleEnv], task_rows: list[dict[str, Any]]
) -> None:
    bundle = scale.bundle(envs["ticketing"])
    assert not any(path.startswith(("tests/", "__pycache__")) for path, _ in bundle.files)
    opened = scale.open_bundles([bundle], scale.tool_graphs.GraphWeights())
    package_dir = Path(str(opened["ticketing"].package.__file__)).parent
    assert bundle.digest in str(package_dir) and package_dir != Path(str(envs["ticketing"].package.__file__)).parent
    for task in task_rows:
        here = calibrate.run_once(task, envs, calibrate.POLICIES["gold"], 0, 0)
        there = calibrate.run_once(task, opened, calibrate.POLICIES["gold"], 0, 0)
        assert here == there and here["passed"]
    assert scale.open_bundles([bundle], scale.tool_graphs.GraphWeights()) is opened  # once per process


def test_rollouts_on_ray_equal_the_local_run(
    local_ray: None, envs: dict[str, SampleEnv], task_rows: list[dict[str, Any]], endpoint: ScriptedEndpoint
) -> None:
    config = config_for(endpoint, "coin")
    local = rollout.rollout(task_rows, envs, config, 4, seed=2, executor=scale.LocalExecutor(envs, 3))
    seen: list[int] = []
    on_ray = rollout.rollout(
        task_rows, envs, config, 4, seed=2, executor=scale.RayExecutor(envs, "auto", 3), progress=seen.append
    )
    assert rollout.to_jsonl(on_ray, timings=False) == rollout.to_jsonl(local, timings=False)
    assert {r["passed"] for r in local} == {True, False} and seen[-1] == 20 and seen == sorted(seen)
    crashed = rollout.rollout(
        task_rows[:2], envs, config_for(endpoint, "crash"), 1, executor=scale.RayExecutor(envs, "auto")
    )
    assert [(r["ended"], r["scorable"]) for r in crashed] == [("endpoint_error", False)] * 2


def test_calibration_on_ray_equals_the_local_run(
    local_ray: None, envs: dict[str, SampleEnv], task_rows: list[dict[str, Any]], endpoint: ScriptedEndpoint
) -> None:
    for policy in (calibrate.POLICIES["flaky-gold"], rollout.ModelPolicy(config_for(endpoint, "coin"))):
        local = calibrate.calibrate(task_rows, envs, policy, k=8, seed=4)
        remote = calibrate.calibrate(task_rows, envs, policy, k=8, seed=4, executor=scale.RayExecutor(envs, "auto", 4))
        assert remote.to_json() == local.to_json() and local.kept


def test_envc_rollout_with_ray_writes_the_same_file(
    local_ray: None, tmp_path: Path, task_rows: list[dict[str, Any]], endpoint: ScriptedEndpoint
) -> None:
    (tmp_path / "tasks.jsonl").write_text(tasks.tasks_to_jsonl(task_rows), encoding="utf-8")
    outputs = {}
    args = [tmp_path, SPEC, "--model", "coin", "--base-url", endpoint.url, "-k", "3", "--seed", "9", "--no-timings"]
    for name, extra in (("local", ()), ("ray", ("--ray", "auto"))):
        command = ["rollout", *map(str, [*args, "-o", tmp_path / f"{name}.jsonl", *extra])]
        result = CliRunner().invoke(cli_module.cli, command, catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        outputs[name] = (tmp_path / f"{name}.jsonl").read_bytes()
    address = ray.get_runtime_context().gcs_address  # a separate driver joins the test's instance by address
    joined = subprocess.run(
        [
            sys.executable,
            "-m",
            "compiler.cli",
            "rollout",
            *map(str, args),
            "-o",
            tmp_path / "joined.jsonl",
            "--ray",
            address,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert joined.returncode == 0, joined.stderr
    outputs["joined"] = (tmp_path / "joined.jsonl").read_bytes()
    assert outputs["ray"] == outputs["local"] == outputs["joined"]
    assert len(outputs["local"].splitlines()) == 15 and ray.is_initialized()  # the test's instance stays up
    assert all(json.loads(line)["schema"] == rollout.SCHEMA for line in outputs["local"].splitlines())
