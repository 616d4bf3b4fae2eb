"""Exports of tasks for trainers (compiler/synth/export.py, `envc export`): one fixed schema,
rows that give back the task they came from, Hugging Face `datasets` loading every
export offline, VERL's multi-turn fields sufficient to run and score an episode, and the
same bytes for the same tasks."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from shipped import package_dir, spec_path

from compiler.analyse import analyse_file
from compiler.cli import app as cli_module
from compiler.synth import export, task_build, tasks
from compiler.synth.sample import SampleEnv, load_env

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parent.parent
SPECS = ("ticketing", "bfcl_ticket")


@pytest.fixture(scope="module")
def library() -> dict[str, SampleEnv]:
    envs = {}
    for name in SPECS:
        env = analyse_file(spec_path(name)).environment
        assert env is not None
        envs[env.header.name] = load_env(env, package_dir(env.header.name))
    return envs


@pytest.fixture(scope="module")
def task_set(library: dict[str, SampleEnv]) -> list[dict[str, Any]]:
    """Single-environment tasks of two specs and cross-environment ones, in one set: the
    checks' expected values and the calls' arguments differ in shape from row to row."""
    kept = []
    for seed, span, count in ((2, (1, 1), 10), (3, (2, 2), 6)):
        options = task_build.TaskOptions(tasks=count, seed=seed, envs=span)
        rows, report = tasks.synthesise(tasks.sampler_for(library, options), options)
        assert report.kept == count, report.to_json()
        kept.extend(rows)
    return kept


@pytest.fixture
def task_dir(tmp_path: Path, task_set: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "tasks.jsonl").write_text(tasks.tasks_to_jsonl(task_set), encoding="utf-8")
    return folder


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli_module.cli, [str(a) for a in args], catch_exceptions=False)


def test_the_task_set_is_heterogeneous(task_set: list[dict[str, Any]]) -> None:
    kinds = {type(c.get("expected")).__name__ for t in task_set for c in t["verifier"]["checks"]}
    assert {"dict", "str", "int"} <= kinds
    assert {len(t["envs"]) for t in task_set} == {1, 2}


# --------------------------------------------------------------------------- the datasets export


def test_a_datasets_row_gives_back_its_task(task_set: list[dict[str, Any]]) -> None:
    lines = tasks.tasks_to_jsonl(task_set).splitlines()
    for task, line in zip(task_set, lines):
        row = export.datasets_row(task)
        assert list(row) == [name for name, _ in export.DATASETS_COLUMNS]
        assert row["content_hash"] == hashlib.sha256(line.encode("utf-8")).hexdigest()
        assert export.task_from_row(row) == task
    edited = dict(export.datasets_row(task_set[0]), prompt="something else")
    with pytest.raises(ValueError, match="content hash"):
        export.task_from_row(edited)


def test_keys_outside_the_format_travel_in_extra_json(task_set: list[dict[str, Any]]) -> None:
    task = {**task_set[0], "lock": {"model": "m", "digest": "d"}}
    row = export.datasets_row(task)
    assert json.loads(row["extra_json"]) == {"lock": {"model": "m", "digest": "d"}}
    assert export.task_from_row(row) == task


def test_the_parquet_schema_does_not_depend_on_the_tasks(task_set: list[dict[str, Any]]) -> None:
    schemas = []
    for subset in (task_set[:1], task_set[-1:], task_set):
        table = pq.read_table(pa.BufferReader(export.export(subset, "datasets", parquet=True)))
        schemas.append(table.schema)
    assert schemas[0] == schemas[1] == schemas[2] == export.datasets_schema()
    assert schemas[0].metadata[b"envc.export"] == b"datasets"


# --------------------------------------------------------------------------- the VERL export


def test_verl_rows_have_the_multiturn_recipe_fields(task_set: list[dict[str, Any]]) -> None:
    table = pq.read_table(pa.BufferReader(export.export(task_set, "verl", parquet=True)))
    assert table.column_names == ["data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"]
    rows = table.to_pylist()
    for index, (task, row) in enumerate(zip(task_set, rows)):
        assert row["data_source"] == "envc/" + "+".join(task["envs"])
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert row["prompt"][1]["content"] == task["prompt"]
        assert row["reward_model"]["style"] == "rule"
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert truth["verifier"] == task["verifier"] and truth["reward"] == task["reward"]
        info = row["extra_info"]
        assert info["index"] == index and info["task_id"] == task["id"] and info["need_tools_kwargs"] is True
        assert info["content_hash"] == export.content_hash(task)
        offered = {name for name, value in info["tools_kwargs"].items() if value is not None}
        assert offered == set(export.tool_names(task))
        assert info["interaction_kwargs"] == {"name": "envc", "task_id": task["id"]}
        assert json.loads(info["tools_json"]) == task["tools"]


def _verl_episode(row: dict[str, Any], task: dict[str, Any], library: dict[str, SampleEnv]) -> dict[str, Any]:
    """What a VERL tool adapter does: each call opens (or finds) its environment's session
    from the call's create_kwargs alone; the reward is `score(ground_truth, ...)`."""
    sessions: dict[str, Any] = {}
    initial: dict[str, Any] = {}
    kwargs = row["extra_info"]["tools_kwargs"]
    for call in task["gold_calls"]:
        create = kwargs.get(call["tool"], {})["create_kwargs"]
        env = create["env"]
        if env not in sessions:
            package = library[env].package
            sessions[env], _ = package.open_environment(create["scenario"], json.loads(create["changes_json"]))
            initial[env] = sessions[env].state()
        sessions[env].call(create["tool"], call["args"])
    truth = json.loads(row["reward_model"]["ground_truth"])
    for env in truth["envs"]:  # environments gold never called still count
        if env not in sessions:
            start = truth["initial_state"][env]
            sessions[env] = library[env].package.Environment(start["scenario"])
            initial[env] = sessions[env].state()
    finals = {env: s.state() for env, s in sessions.items()}
    result: dict[str, Any] = library[truth["envs"][0]].package.score(truth, finals, initial)
    return result


def test_verl_fields_suffice_to_run_and_score_gold(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    rows = pq.read_table(pa.BufferReader(export.export(task_set, "verl", parquet=True))).to_pylist()
    for task, row in zip(task_set, rows):
        result = _verl_episode(row, task, library)
        assert result["passed"] and result["reward"] == 1.0, (task["id"], result["failure_reason"])


# --------------------------------------------------------------------------- Hugging Face datasets, offline

LOAD = textwrap.dedent(
    """
    import json, socket, sys

    def refuse(*args, **kwargs):
        raise OSError("the test allows no network")

    socket.socket.connect = refuse
    socket.create_connection = refuse
    import datasets

    out = {}
    for kind, path in json.loads(sys.argv[1]):
        ds = datasets.load_dataset(kind, data_files=path, split="train")
        out[path] = {"rows": [dict(r) for r in ds], "columns": ds.column_names}
    print(json.dumps(out))
    """
)


def _load_offline(files: list[tuple[str, Path]], home: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(home),
        "HF_DATASETS_CACHE": str(home / "datasets"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", LOAD, json.dumps([(kind, str(path)) for kind, path in files])],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_hugging_face_datasets_loads_every_export_offline(
    task_dir: Path, task_set: list[dict[str, Any]], library: dict[str, SampleEnv], tmp_path: Path
) -> None:
    pytest.importorskip("datasets")
    files = {
        "tasks": ("json", task_dir / "tasks.jsonl"),
        "jsonl": ("json", task_dir / "tasks.datasets.jsonl"),
        "parquet": ("parquet", task_dir / "tasks.datasets.parquet"),
        "verl": ("parquet", task_dir / "tasks.verl.parquet"),
    }
    assert run("export", task_dir).exit_code == 0
    assert run("export", task_dir, "-o", files["parquet"][1]).exit_code == 0
    assert run("export", task_dir, "--format", "verl").exit_code == 0
    loaded = _load_offline(list(files.values()), tmp_path / "hf")
    columns = [name for name, _ in export.DATASETS_COLUMNS]
    for key in ("jsonl", "parquet"):
        got = loaded[str(files[key][1])]
        assert got["columns"] == columns
        assert [export.task_from_row(r) for r in got["rows"]] == task_set
    # tasks.jsonl itself loads too (datasets 4.7+ stores mixed values with its Json type)
    assert loaded[str(files["tasks"][1])]["rows"] == task_set
    # VERL reads rows through datasets: tools_kwargs.get(name) and the ground truth
    verl_rows = loaded[str(files["verl"][1])]["rows"]
    assert len(verl_rows) == len(task_set)
    for task, row in zip(task_set, verl_rows):
        assert _verl_episode(row, task, library)["passed"]


# --------------------------------------------------------------------------- the command


def test_same_tasks_same_bytes_across_processes(task_dir: Path, tmp_path: Path) -> None:
    for fmt, name in (("verl", "v.parquet"), ("datasets", "d.parquet"), ("datasets", "d.jsonl")):
        outputs = []
        for attempt in range(2):
            target = tmp_path / f"{attempt}-{name}"
            done = subprocess.run(
                [sys.executable, "-m", "compiler.cli", "export", str(task_dir), "--format", fmt, "-o", str(target)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr
            outputs.append(target.read_bytes())
        assert outputs[0] == outputs[1], fmt


def test_export_defaults_and_a_file_as_source(task_dir: Path) -> None:
    result = run("export", task_dir)
    assert result.exit_code == 0, result.stderr
    assert "exported 16 tasks" in result.stderr and (task_dir / "tasks.datasets.jsonl").exists()
    result = run("export", task_dir / "tasks.jsonl", "--format", "verl")
    assert result.exit_code == 0, result.stderr
    assert (task_dir / "tasks.verl.parquet").exists()


BAD_ROWS = [
    ("not json", "not a JSON line"),
    ("[1, 2]", "a task is a JSON object, not list"),
    ('{"id": "x"}', "missing envs, initial_state"),
    ("GOOD|envs=[]", "`envs` must be a non-empty list"),
    ("GOOD|initial_state={}", "`initial_state` must have one entry per environment"),
    ("GOOD|tools=[{}]", "`tools[0]` is not a function schema"),
    ('GOOD|gold_calls=[{"env": "elsewhere", "tool": "t", "args": {}}]', "`gold_calls[0]` must be"),
    ("GOOD|max_turns=true", "`max_turns` must be a whole number"),
    ('GOOD|reward="most"', "`reward` must be `binary` or `partial`"),
    ('GOOD|verifier={"checks": []}', "`verifier.checks` must be a non-empty list"),
    ("DUPLICATE", "repeats line 1"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_ROWS)
def test_malformed_rows_are_named_by_line(
    bad: str, message: str, tmp_path: Path, task_set: list[dict[str, Any]]
) -> None:
    good = tasks.tasks_to_jsonl(task_set[:1]).strip()
    if bad == "DUPLICATE":
        line = good
    elif bad.startswith("GOOD|"):
        key, value = bad[5:].split("=", 1)
        line = json.dumps({**task_set[0], key: json.loads(value)})
    else:
        line = bad
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "tasks.jsonl").write_text(f"{good}\n\n{line}\n", encoding="utf-8")
    for fmt in ("datasets", "verl"):
        result = run("export", folder, "--format", fmt)
        assert result.exit_code == 2, result.output
        assert "tasks.jsonl:3: " in result.stderr and message in result.stderr
        assert "Traceback" not in result.stderr
        assert sorted(p.name for p in folder.iterdir()) == ["tasks.jsonl"]


def test_unreadable_empty_and_misnamed_inputs(tmp_path: Path, task_dir: Path) -> None:
    missing = run("export", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    empty = run("export", tmp_path / "empty.jsonl")
    assert empty.exit_code == 2 and "holds no tasks" in empty.stderr
    (tmp_path / "latin.jsonl").write_bytes(b"\xff\n")
    latin = run("export", tmp_path / "latin.jsonl")
    assert latin.exit_code == 2 and "not valid UTF-8" in latin.stderr
    misnamed = run("export", task_dir, "--format", "verl", "-o", tmp_path / "v.json")
    assert misnamed.exit_code == 2 and "FILE.parquet" in misnamed.stderr
    nowhere = run("export", task_dir, "-o", tmp_path / "no" / "such" / "dir.jsonl")
    assert nowhere.exit_code == 2 and "cannot write" in nowhere.stderr


def test_without_pyarrow_parquet_exits_2_and_jsonl_still_works(task_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    result = run("export", task_dir, "--format", "verl")
    assert result.exit_code == 2
    assert "needs pyarrow" in result.stderr and "envc[export]" in result.stderr
    assert not (task_dir / "tasks.verl.parquet").exists()
    assert run("export", task_dir).exit_code == 0
