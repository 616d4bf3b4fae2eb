"""`envc serve` finds the library's packages by name at any depth below `--packages-dir`
(generated/<domain>/<package>/), on a real server on loopback."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
from shipped import GENERATED, package_dir, spec_path

from .conftest import make_tasks, spawn_serve


def test_the_shipped_packages_are_a_domain_folder_deep() -> None:
    assert package_dir("team_calendar").relative_to(GENERATED).parts == ("productivity", "team_calendar")


def test_serve_finds_nested_packages_by_name(tmp_path: Path) -> None:
    """Tasks name environments; `--packages-dir generated` finds them a folder deeper."""
    tasks = make_tasks(tmp_path / "tasks", str(spec_path("calendar")), "-n", "2")
    server = spawn_serve(str(tasks), "--packages-dir", str(GENERATED), "--data-dir", str(tmp_path / "data"))
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            task = json.loads((tasks / "tasks.jsonl").read_text(encoding="utf-8").splitlines()[0])
            opened = client.post("/sessions", json={"task_id": task["id"], "episode_id": "e1"})
            assert opened.status_code == 201, opened.text
            assert opened.json()["info"]["envs"] == ["team_calendar"]
    finally:
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=10)
