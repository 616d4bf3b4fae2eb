"""The Claw-style file workspace archetype, tested on the generated `claw_workspace`
package, the domain built on `specs/prototypes/file_workspace.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`; every rule of the contract has a test:
the state is the tree; list (optionally recursive), read, search (names and content),
write, append, move and delete; no path can leave the workspace (`..`, absolute paths,
empty segments, odd names, over-long paths are refused naming the path and the rule,
and change nothing); moving onto an existing file and deleting a missing one are
refused; the seeded workspace admits exactly one correct answer for its task, which the
verifier checks in the written output file.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from shipped import package_dir, put_on_path, spec_path

ROOT = Path(__file__).resolve().parents[2]
put_on_path()

from claw_workspace import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402
from claw_workspace.environment import WORLD  # noqa: E402

TOOLS_JSON = json.loads((package_dir("claw_workspace") / "tools.json").read_text())
SPEC = (spec_path("claw_workspace")).read_text()
LIMITS = WORLD["limits"]
REPORT = "reports/scores_2025-03.csv"
EXPECTED_ROWS = [
    "employee_id,score",
    "E1001,435",
    "E1002,389",
    "E1004,97",
    "E1006,252",
    "E1009,115",
    "E1011,0",
    "E1012,0",
]
"""The verifier's answer for the March report (specs/claw/spreadsheets/claw_workspace.envspec, task march_scores_report)."""


def ok(env: Environment, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = env.call(tool, args or {})
    assert not (isinstance(result, dict) and isinstance(result.get("error"), dict)), result
    return result


def refused(env: Environment, tool: str, args: dict[str, Any], kind: str, text: str = "") -> dict[str, Any]:
    """The call fails with this kind of domain error, naming `text`, and changes nothing."""
    before = env.state_json()
    result = env.call(tool, args)
    assert isinstance(result, dict) and isinstance(result.get("error"), dict), result
    error: dict[str, Any] = result["error"]
    assert error["kind"] == kind, error
    assert text in error["message"], error
    assert env.state_json() == before, f"refused {tool} changed the state"
    return error


def files(env: Environment) -> dict[str, dict[str, Any]]:
    return dict(env.state()["files"])


# --------------------------------------------------------------------------- hostile paths

HOSTILE: list[tuple[str, str]] = [
    ("../etc/passwd", "parent segment"),
    ("..", "parent segment"),
    ("reports/..", "parent segment"),
    ("reports/../../outside.txt", "parent segment"),
    ("hr/../../../root/.ssh/id_rsa", "parent segment"),
    ("/etc/passwd", "absolute"),
    ("/", "absolute"),
    ("//server/share/x", "absolute"),
    ("~/notes.txt", "absolute"),
    ("~", "absolute"),
    ("C:/Windows/win.ini", "absolute"),
    ("c:secret.txt", "absolute"),
    ("reports//scores.csv", "empty segment"),
    ("reports/", "empty segment"),
    ("reports/scores.csv/", "empty segment"),
    (".", "dot segment"),
    ("./README.md", "dot segment"),
    ("reports/./scores.csv", "dot segment"),
    ("...", "dot name"),
    ("reports/....", "dot name"),
    ("reports\\..\\..\\outside.txt", "reserved character"),
    ("..\\outside.txt", "reserved character"),
    ("reports/what?.csv", "reserved character"),
    ("reports/a*b.csv", "reserved character"),
    ("reports/a|b.csv", "reserved character"),
    ('reports/"quoted".csv', "reserved character"),
    ("reports/<x>.csv", "reserved character"),
    ("reports/scores\x00.csv", "control character"),
    ("reports/scores.csv\n", "control character"),
    ("reports/line\nbreak.csv", "control character"),
    ("reports/tab\there.csv", "control character"),
    ("reports/bell\x07.csv", "control character"),
    ("reports/del\x7f.csv", "control character"),
    ("reports/c1\x85.csv", "control character"),
    ("reports/\u202etxt.exe", "control character"),
    ("reports/zero\u200bwidth.csv", "control character"),
    ("reports/bom\ufeff.csv", "control character"),
    (" reports/scores.csv", "surrounding whitespace"),
    ("reports/scores.csv ", "surrounding whitespace"),
    ("reports/ /scores.csv", "surrounding whitespace"),
    ("reports/CON", "reserved name"),
    ("nul.txt", "reserved name"),
    ("reports/com1.csv", "reserved name"),
    ("Lpt9", "reserved name"),
    ("a/b/c/d/e/f/g/h/i.txt", "too deep"),
    ("reports/" + "s" * (LIMITS["max_name_length"] + 1), "name too long"),
    ("/".join(["abcdefghij"] * 20) + "/x.txt", "too long"),
    ("x" * (LIMITS["max_path_length"] + 1), "too long"),
    ("../" * 200, "too long"),
]


def _path_calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    """Every way a path reaches the workspace: each tool and each path parameter."""
    return [
        ("ls", {"path": path}),
        ("ls", {"path": path, "recursive": True}),
        ("read", {"path": path}),
        ("search", {"query": "a", "path": path}),
        ("find", {"path": path}),
        ("csv_preview", {"path": path}),
        ("write", {"path": path, "content": "pwned"}),
        ("write", {"path": path, "content": "pwned", "create_only": True}),
        ("append", {"path": path, "content": "pwned"}),
        ("move", {"source": path, "destination": "reports/moved.csv"}),
        ("move", {"source": "README.md", "destination": path}),
        ("delete", {"path": path}),
        ("delete", {"path": path, "recursive": True}),
    ]


@pytest.mark.parametrize(("path", "rule"), HOSTILE, ids=[repr(p)[:40] for p, _ in HOSTILE])
def test_hostile_paths_are_refused_everywhere_naming_path_and_rule(path: str, rule: str) -> None:
    env = Environment("march_close")
    for tool, args in _path_calls(path):
        error = refused(env, tool, args, "invalid_argument", f"({rule})")
        assert error["rule"] == rule, (tool, error)
        assert error["current"] == path, (tool, error)
        assert f'path "{path}"' in error["message"], (tool, error)
        assert error["field"] in ("path", "source", "destination"), error
    assert len(env.state()["audit_log"]) == 0


def test_the_empty_path_is_the_root_only_where_a_folder_is_meant() -> None:
    env = Environment("march_close")
    assert ok(env, "ls", {"path": ""}) == ok(env, "ls", {})
    assert ok(env, "search", {"query": "E1001", "path": ""})["total"] > 0
    for tool, args in [
        ("read", {"path": ""}),
        ("write", {"path": "", "content": "x"}),
        ("append", {"path": "", "content": "x"}),
        ("delete", {"path": "", "recursive": True}),
        ("move", {"source": "", "destination": "x"}),
        ("move", {"source": "README.md", "destination": ""}),
    ]:
        error = refused(env, tool, args, "invalid_argument", "(empty)")
        assert error["rule"] == "empty"


@pytest.mark.parametrize(
    "path",
    [
        "notes/.hidden",
        "notes/a b.txt",
        "notes/résumé.md",
        "notes/%2e%2e",
        "notes/..x",
        "notes/x..",
        "notes/console.txt",
    ],
)
def test_unusual_but_ordinary_names_stay_inside_the_workspace(path: str) -> None:
    env = Environment("march_close")
    ok(env, "write", {"path": path, "content": "fine"})
    assert files(env)[path]["content"] == "fine"
    assert ok(env, "read", {"path": path})["content"] == "fine"
    ok(env, "delete", {"path": path})
    assert path not in files(env)


def test_limits_are_exact() -> None:
    env = Environment("march_close")
    name = "n" * LIMITS["max_name_length"]
    ok(env, "write", {"path": f"notes/{name}", "content": ""})
    deep = "/".join(["d"] * (LIMITS["max_depth"] - 1)) + "/f.txt"
    ok(env, "write", {"path": deep, "content": ""})
    longest = "/".join(["p" * 40] * 4) + "/" + "q" * (LIMITS["max_path_length"] - 164)
    assert len(longest) == LIMITS["max_path_length"]
    ok(env, "write", {"path": longest, "content": ""})
    refused(env, "write", {"path": longest + "x", "content": ""}, "invalid_argument", "(too long)")
    ok(env, "write", {"path": "notes/big.txt", "content": "x" * LIMITS["max_file_size"]})
    refused(env, "append", {"path": "notes/big.txt", "content": "x"}, "limit_exceeded", "at most")
    refused(
        env, "write", {"path": "notes/bigger.txt", "content": "x" * (LIMITS["max_file_size"] + 1)}, "limit_exceeded"
    )


def test_the_number_of_files_is_limited() -> None:
    env = Environment("march_close")
    for n in range(LIMITS["max_files"] - len(files(env))):
        ok(env, "write", {"path": f"bulk/f{n}.txt", "content": ""})
    assert len(files(env)) == LIMITS["max_files"]
    refused(env, "write", {"path": "bulk/one-more.txt", "content": ""}, "limit_exceeded", "at most")
    ok(env, "write", {"path": "bulk/f0.txt", "content": "replacing is fine"})


# --------------------------------------------------------------------------- the tree: list and read


def test_the_state_is_the_tree() -> None:
    env = Environment()
    tree = files(env)
    assert set(tree) == {
        "README.md",
        "hr/employee_roster.csv",
        "hr/export_notes.txt",
        "notes/meeting_2025-03-28.md",
        "ops/ledger/README.md",
        "ops/ledger/output_2025-02.csv",
        "ops/ledger/output_2025-03.csv",
        "ops/plant_config.json",
        "policy/remote_work.md",
        "policy/scoring_rules.md",
        "policy/scoring_rules_2024.md",
        "reports/scores_2025-02.csv",
    }
    assert all(set(f) == {"content", "version", "modified_at"} for f in tree.values())
    listed = [e["path"] for e in ok(env, "ls", {"recursive": True}) if e["kind"] == "file"]
    assert listed == sorted(tree)


def test_listing_is_one_level_unless_recursive() -> None:
    env = Environment("march_close")
    top = ok(env, "ls", {})
    assert [(e["path"], e["kind"]) for e in top] == [
        ("README.md", "file"),
        ("hr", "directory"),
        ("notes", "directory"),
        ("ops", "directory"),
        ("policy", "directory"),
        ("reports", "directory"),
    ]
    ops = {e["path"]: e for e in ok(env, "ls", {"path": "ops"})}
    assert set(ops) == {"ops/ledger", "ops/plant_config.json"}
    assert ops["ops/ledger"]["size"] == 3 and ops["ops/ledger"]["file_type"] is None
    assert ops["ops/plant_config.json"]["file_type"] == "json"
    deep = [e["path"] for e in ok(env, "ls", {"path": "ops", "recursive": True})]
    assert deep == sorted(deep) and "ops/ledger/output_2025-03.csv" in deep and "ops/ledger" in deep
    refused(env, "ls", {"path": "README.md"}, "invalid_state", "is a file")
    error = refused(env, "ls", {"path": "ops/archive"}, "not_found", "ops/archive")
    assert error["allowed"] == ["ops/ledger", "ops/plant_config.json"]
    refused(env, "ls", {"path": "OPS"}, "not_found")


def test_reading_returns_exact_content_or_a_line_range() -> None:
    env = Environment("march_close")
    tree = files(env)
    roster = ok(env, "read", {"path": "hr/employee_roster.csv"})
    assert roster["content"] == tree["hr/employee_roster.csv"]["content"]
    assert roster["file_type"] == "csv" and roster["total_lines"] == 14 and roster["version"] == 1
    part = ok(env, "read", {"path": "hr/employee_roster.csv", "start_line": 2, "max_lines": 2})
    assert part["content"].split("\n") == tree["hr/employee_roster.csv"]["content"].split("\n")[1:3]
    assert (part["start_line"], part["end_line"]) == (2, 3)
    tail = ok(env, "read", {"path": "hr/employee_roster.csv", "start_line": 14})
    assert tail["content"].startswith("E1012") and tail["end_line"] == 14
    refused(env, "read", {"path": "hr/employee_roster.csv", "start_line": 15}, "invalid_argument", "past the end")
    refused(env, "read", {"path": "hr"}, "invalid_state", "is a directory")
    error = refused(env, "read", {"path": "hr/roster.csv"}, "not_found", "hr/roster.csv")
    assert error["allowed"] == ["hr/employee_roster.csv", "hr/export_notes.txt"]
    assert [
        ok(env, "read", {"path": p})["file_type"] for p in ["README.md", "hr/export_notes.txt", "ops/plant_config.json"]
    ] == [
        "markdown",
        "text",
        "json",
    ]


def test_search_covers_names_and_content() -> None:
    env = Environment("march_close")
    names = ok(env, "search", {"query": "scoring", "target": "names"})
    assert [h["path"] for h in names["hits"]] == ["policy/scoring_rules.md", "policy/scoring_rules_2024.md"]
    assert all(h["line"] == 0 for h in names["hits"])
    content = ok(env, "search", {"query": "E1003", "target": "content"})
    assert {(h["path"], h["line"]) for h in content["hits"]} == {
        ("hr/employee_roster.csv", 4),
        ("hr/employee_roster.csv", 12),
        ("ops/ledger/output_2025-02.csv", 4),
        ("ops/ledger/output_2025-03.csv", 4),
        ("reports/scores_2025-02.csv", 4),
    }
    both = ok(env, "search", {"query": "ledger"})
    assert any(h["line"] == 0 for h in both["hits"]) and any(h["line"] > 0 for h in both["hits"])
    assert ok(env, "search", {"query": "superseded"})["total"] == 1
    assert ok(env, "search", {"query": "superseded", "case_sensitive": True})["total"] == 0
    assert ok(env, "search", {"query": "E1003", "path": "hr/employee_roster.csv"})["total"] == 2
    voids = ok(env, "search", {"query": ",void$", "regex": True})
    assert [(h["path"], h["line"]) for h in voids["hits"]] == [("ops/ledger/output_2025-03.csv", 10)]
    capped = ok(env, "search", {"query": "E10", "max_results": 3})
    assert len(capped["hits"]) == 3 and capped["truncated"] and capped["total"] > 3
    refused(env, "search", {"query": "[oops", "regex": True}, "invalid_argument", "not a valid regular expression")
    refused(env, "search", {"query": "x", "path": "archive"}, "not_found")
    refused(env, "search", {"query": ""}, "invalid_argument")


def test_csv_preview_shows_the_noisy_records() -> None:
    env = Environment("march_close")
    preview = ok(env, "csv_preview", {"path": "ops/ledger/output_2025-03.csv", "max_rows": 100})
    assert preview["columns"] == ["date", "employee_id", "units", "defects", "status"]
    assert preview["total_rows"] == 20 and preview["rows_with_blanks"] == [7] and preview["ragged_rows"] == []
    refused(env, "csv_preview", {"path": "README.md"}, "invalid_argument", "not CSV")


def test_find_lists_files_and_folders_by_name_glob() -> None:
    """`find` comes from the file_workspace prototype: a glob over last names, ignoring case."""
    env = Environment("march_close")
    assert ok(env, "find", {"name": "SCORING_RULES*"}) == ["policy/scoring_rules.md", "policy/scoring_rules_2024.md"]
    assert ok(env, "find", {"path": "ops", "name": "ledger", "kind": "directory"}) == ["ops/ledger"]
    assert ok(env, "find", {"path": "policy", "name": "*.csv"}) == []
    refused(env, "find", {"path": "README.md"}, "invalid_state", "is a file")
    refused(env, "find", {"path": "nowhere"}, "not_found", "nowhere")


# --------------------------------------------------------------------------- the tree: changes


def test_write_creates_and_replaces_with_versions() -> None:
    env = Environment("march_close")
    made = ok(env, "write", {"path": "reports/drafts/a.md", "content": "# A\n"})
    assert made == {
        "path": "reports/drafts/a.md",
        "file_type": "markdown",
        "size": 4,
        "lines": 1,
        "version": 1,
        "created": True,
    }
    replaced = ok(env, "write", {"path": "reports/drafts/a.md", "content": "# B\nmore\n"})
    assert replaced["version"] == 2 and not replaced["created"] and replaced["lines"] == 2
    assert files(env)["reports/drafts/a.md"]["modified_at"] == env.state()["clock"]
    refused(env, "write", {"path": "reports/drafts/a.md", "content": "x", "create_only": True}, "already_exists")
    refused(env, "write", {"path": "reports", "content": "x"}, "invalid_state", "is a directory")
    refused(env, "write", {"path": "README.md/child.txt", "content": "x"}, "invalid_state", '"README.md" is a file')
    assert [a["action"] for a in env.state()["audit_log"]] == ["write", "write"]


def test_append_adds_to_existing_files_exactly() -> None:
    env = Environment("march_close")
    before = files(env)["ops/ledger/output_2025-03.csv"]["content"]
    result = ok(env, "append", {"path": "ops/ledger/output_2025-03.csv", "content": "2025-03-31,E1009,45,0,ok\n"})
    assert files(env)["ops/ledger/output_2025-03.csv"]["content"] == before + "2025-03-31,E1009,45,0,ok\n"
    assert result["version"] == 2 and result["lines"] == 22
    refused(env, "append", {"path": "ops/ledger/output_2025-04.csv", "content": "x"}, "not_found", "output_2025-04.csv")
    refused(env, "append", {"path": "ops/ledger", "content": "x"}, "invalid_state", "is a directory")
    refused(env, "append", {"path": "README.md", "content": ""}, "invalid_argument")


def test_move_renames_files_and_folders_but_never_overwrites() -> None:
    env = Environment("handover_cleanup")
    draft = files(env)["drafts/scores_2025-03_draft.csv"]
    moved = ok(env, "move", {"source": "drafts/scores_2025-03_draft.csv", "destination": "archive/bruno/draft.csv"})
    assert moved == [{"source": "drafts/scores_2025-03_draft.csv", "destination": "archive/bruno/draft.csv"}]
    assert files(env)["archive/bruno/draft.csv"] == draft and "drafts/scores_2025-03_draft.csv" not in files(env)
    tree = ok(env, "move", {"source": "tmp", "destination": "old/tmp"})
    assert [m["destination"] for m in tree] == [
        "old/tmp/cache/ledger.idx",
        "old/tmp/export_0331.tmp",
        "old/tmp/roster_copy.csv",
    ]
    error = refused(
        env,
        "move",
        {"source": "notes/meeting_2025-03-28.md", "destination": "README.md"},
        "already_exists",
        "existing file",
    )
    assert error["current"] == "README.md"
    refused(env, "move", {"source": "README.md", "destination": "notes"}, "already_exists", "existing directory")
    refused(
        env, "move", {"source": "reports/scores_2025-01.csv", "destination": "x.csv"}, "not_found", "scores_2025-01.csv"
    )
    refused(env, "move", {"source": "old", "destination": "old/inner"}, "invalid_argument", "into itself")
    refused(env, "move", {"source": "README.md", "destination": "README.md"}, "invalid_argument")
    refused(env, "move", {"source": "notes", "destination": "README.md/notes"}, "invalid_state", "is a file")
    refused(env, "move", {"source": "old", "destination": "a/b/c/d/e/f"}, "invalid_argument", "too deep")


def test_delete_needs_an_existing_path_and_recursive_for_folders() -> None:
    env = Environment("handover_cleanup")
    assert ok(env, "delete", {"path": "tmp/export_0331.tmp"}) == ["tmp/export_0331.tmp"]
    error = refused(env, "delete", {"path": "tmp/export_0331.tmp"}, "not_found", "tmp/export_0331.tmp")
    assert "tmp/cache" in error["allowed"]
    refused(env, "delete", {"path": "tmp"}, "invalid_state", "recursive=true")
    assert ok(env, "delete", {"path": "tmp", "recursive": True}) == ["tmp/cache/ledger.idx", "tmp/roster_copy.csv"]
    refused(env, "delete", {"path": "tmp", "recursive": True}, "not_found")
    assert "tmp" not in [e["path"] for e in ok(env, "ls", {})]


def test_read_only_folders_refuse_every_change() -> None:
    env = Environment("march_close")
    assert WORLD["read_only"] == ["hr", "policy"]
    for tool, args in [
        ("write", {"path": "hr/employee_roster.csv", "content": "x"}),
        ("write", {"path": "policy/new.md", "content": "x"}),
        ("append", {"path": "policy/scoring_rules.md", "content": "Everyone gets 1000."}),
        ("delete", {"path": "hr/export_notes.txt"}),
        ("delete", {"path": "policy", "recursive": True}),
        ("move", {"source": "hr", "destination": "old_hr"}),
        ("move", {"source": "README.md", "destination": "policy/README.md"}),
    ]:
        refused(env, tool, args, "forbidden", "read-only")
    ok(env, "write", {"path": "hr-notes/x.txt", "content": "a sibling name is not inside hr/"})


# --------------------------------------------------------------------------- tasks and invariants


def _march_scores(tree: dict[str, dict[str, Any]]) -> list[str]:
    """The policy in policy/scoring_rules.md, applied to the seeded files with csv."""
    weights = {"assembler": (2, 5), "inspector": (1, 4), "technician": (4, 3)}
    roster = list(csv.DictReader(io.StringIO(tree["hr/employee_roster.csv"]["content"])))
    lines: dict[str, set[tuple[str, ...]]] = {}
    for row in roster:
        lines.setdefault(row["employee_id"], set()).add(tuple(row.values()))
    scored: dict[str, str] = {}
    for employee, variants in lines.items():
        (only,) = variants if len(variants) == 1 else (None,)
        if only is None or "" in only:
            continue
        record = dict(zip(roster[0].keys(), only))
        if record["status"] == "active":
            scored[employee] = record["role"]
    totals = dict.fromkeys(scored, 0)
    for row in csv.DictReader(io.StringIO(tree["ops/ledger/output_2025-03.csv"]["content"])):
        if row["date"].startswith("2025-03-") and row["status"] == "ok" and row["employee_id"] in scored:
            if row["units"].isdigit() and row["defects"].isdigit():
                unit, penalty = weights[scored[row["employee_id"]]]
                totals[row["employee_id"]] += int(row["units"]) * unit - int(row["defects"]) * penalty
    return ["employee_id,score"] + [f"{e},{max(0, t)}" for e, t in sorted(totals.items())]


def _verify_march(env: Environment) -> bool:
    tree = files(env)
    if REPORT not in tree:
        return False
    rows = [line.replace(" ", "").strip() for line in tree[REPORT]["content"].strip().split("\n") if line.strip()]
    return rows == EXPECTED_ROWS


def test_the_march_task_has_one_answer_derived_from_the_workspace() -> None:
    env = Environment("march_close")
    assert _march_scores(files(env)) == EXPECTED_ROWS
    assert not _verify_march(env)
    ok(env, "write", {"path": REPORT, "content": "\n".join(EXPECTED_ROWS) + "\n"})
    assert _verify_march(env)
    assert files(env)["ops/ledger/output_2025-03.csv"]["version"] == 1


@pytest.mark.parametrize(
    "wrong",
    [
        "employee_id,score\nE1001,435\n",  # missing employees
        "\n".join(EXPECTED_ROWS[:1] + ["E1003,296"] + EXPECTED_ROWS[1:]),  # the inconsistent record
        "\n".join(EXPECTED_ROWS).replace("E1001,435", "E1001,835"),  # superseded weights
        "\n".join(EXPECTED_ROWS).replace("E1002,389", "E1002,579"),  # counted a void row
    ],
)
def test_the_march_verifier_rejects_plausible_mistakes(wrong: str) -> None:
    env = Environment("march_close")
    ok(env, "write", {"path": REPORT, "content": wrong})
    assert not _verify_march(env)
    other = Environment("march_close")
    ok(other, "write", {"path": "reports/scores_march.csv", "content": "\n".join(EXPECTED_ROWS)})
    assert not _verify_march(other)  # the right answer at another path does not count


def test_requests_name_the_verified_paths_and_hide_the_answers() -> None:
    requests = dict(re.findall(r'task (\w+):\n(?:    .*\n)*?    request "([^"]*)"', SPEC))
    assert set(requests) == {"march_scores_report", "bruno_handover", "add_missing_ledger_row"}
    march = requests["march_scores_report"]
    assert REPORT in march
    assert not any(row.split(",")[1] in march.split() for row in EXPECTED_ROWS[1:])
    assert not any(word in march for word in ("assembler", "void", "weight", "E1003", "terminated"))
    assert (
        "drafts/scores_2025-03_draft.csv" in requests["bruno_handover"]
        and "archive/bruno/" in requests["bruno_handover"]
    )
    assert set(SCENARIOS) >= {"march_close", "handover_cleanup", "empty_workspace", "project_docs"}


def test_tool_schema_separates_read_and_write_tools() -> None:
    by_name = {t["name"]: t for t in TOOLS_JSON["tools"]}
    assert (
        set(by_name)
        == set(TOOL_SPECS)
        == {"ls", "read", "search", "find", "csv_preview", "write", "append", "move", "delete"}
    )
    for name in ("ls", "read", "search", "find", "csv_preview"):
        assert by_name[name]["modifies_state"] is False, name
    for name in ("write", "append", "move", "delete"):
        assert by_name[name]["modifies_state"] is True and "files" in by_name[name]["state_fields_affected"], name
