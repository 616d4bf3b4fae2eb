"""The cross-tool data pipeline archetype (paper archetype 2), tested on the generated
`media_monitoring` package, the domain built on `specs/prototypes/data_pipeline.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`; every rule of the contract has a test:
source registration; format-specific parsing into one intermediate form; the derived
job type; the processor dispatch table and processing status; aggregation over completed
jobs with a declared dedup key and configurable normalisation; rendering to markdown,
bullets, JSON and a DOT graph. Refused calls must change nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shipped import put_on_path

put_on_path()

from media_monitoring import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402
from media_monitoring.environment import WORLD  # noqa: E402

DEFAULT_STEPS = ["lowercase", "strip", "collapse_whitespace"]
LOOSE_STEPS = ["lowercase", "strip_punctuation", "collapse_whitespace"]


def ok(env: Environment, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = env.call(tool, args or {})
    assert not (isinstance(result, dict) and isinstance(result.get("error"), dict)), result
    return result


def refused(env: Environment, tool: str, args: dict[str, Any], kind: str, text: str = "") -> dict[str, Any]:
    """The call fails with this kind of domain error, naming `text`, and changes nothing."""
    before = env.state()
    result = env.call(tool, args)
    assert isinstance(result, dict) and isinstance(result.get("error"), dict), result
    error: dict[str, Any] = result["error"]
    assert error["kind"] == kind, error
    assert text in error["message"], error
    assert env.state() == before, f"refused {tool} changed the state"
    return error


def sweep() -> Environment:
    env = Environment("morning_sweep")
    ok(env, "process_queue")
    return env


# --------------------------------------------------------------------------- phase 0: sources


def test_sources_are_registered_with_a_format() -> None:
    env = Environment()
    ids = [f["id"] for f in ok(env, "list_feeds")]
    assert (
        len(ids) == 30 and ids == sorted(ids) and {"newswire", "radio_fm", "social_export", "tv_evening"} <= set(ids)
    )  # the seeded feeds
    feed = ok(
        env,
        "register_feed",
        {"feed_id": "podcast", "name": "Aviation podcast", "format": "audio", "tags": ["pod", "pod"]},
    )
    assert feed == {
        "id": "podcast",
        "name": "Aviation podcast",
        "format": "audio",
        "tags": ["pod"],
        "registered_at": "2025-03-10T07:00:00",
        "jobs_ingested": 0,
    }
    audio = ["podcast", "podcasts", "radio_business", "radio_fm", "radio_fm104", "radio_regional", "radio_talk"]
    assert [f["id"] for f in ok(env, "list_feeds", {"format": "audio"})] == audio
    error = refused(env, "register_feed", {"feed_id": "podcast", "name": "x", "format": "text"}, "already_exists")
    assert error["current"] == "audio" and error["field"] == "feed_id"
    refused(env, "register_feed", {"feed_id": "Bad Id", "name": "x", "format": "text"}, "invalid_argument", "pattern")
    refused(env, "register_feed", {"feed_id": "blog", "name": "x", "format": "pdf"}, "invalid_argument")
    assert env.state()["audit_log"][-1]["action"] == "register_source"


# --------------------------------------------------------------------------- phase 1: ingestion


@pytest.mark.parametrize(
    ("feed", "payload", "job_type"),
    [
        ("newswire", "Northwind strike", "search"),
        ("newswire", {"query": "https://dailyledger.example/fare-war"}, "fetch"),
        ("radio_fm", {"uri": "radio://1", "duration_s": 10}, "transcribe"),
        ("tv_evening", {"uri": "tv://1", "duration_s": 10, "frames": ["logo"]}, "transcribe"),
        ("social_export", "a,b\n1,2", "parse"),
    ],
)
def test_job_type_is_derived_from_the_input(feed: str, payload: Any, job_type: str) -> None:
    env = Environment()
    job = ok(env, "ingest", {"feed_id": feed, "payload": payload})
    assert job["job_type"] == job_type
    assert job["status"] == "queued"
    assert job["results"] == [] and job["processor"] is None
    assert env.state()["feeds"][feed]["jobs_ingested"] == 1


def test_every_format_becomes_the_same_intermediate_form() -> None:
    env = Environment()
    text = ok(env, "ingest", {"feed_id": "newswire", "payload": "  Northwind \t strike "})["parsed"]
    audio = ok(
        env,
        "ingest",
        {
            "feed_id": "radio_fm",
            "payload": {
                "uri": "radio://1",
                "duration_s": 30,
                "title": "Bulletin",
                "speech": [
                    "[00:05] Host: Crew  strike.",
                    {"text": "Fair pay", "at": "00:09", "speaker": "Rep"},
                    "Ms Ann Lee Smith: many words",
                ],
            },
        },
    )["parsed"]
    video = ok(
        env,
        "ingest",
        {
            "feed_id": "tv_evening",
            "payload": {
                "uri": "tv://1",
                "duration_s": 9.5,
                "speech": ["hi"],
                "frames": ["Logo", {"caption": "Jet", "at": "00:03"}],
            },
        },
    )["parsed"]
    table = ok(
        env,
        "ingest",
        {
            "feed_id": "social_export",
            "payload": {"columns": ["title", "n"], "rows": [["A", 1], ["B", 2.5], [True, None]]},
        },
    )["parsed"]
    for parsed in (text, audio, video, table):
        assert set(parsed) == {"format", "uri", "title", "duration_s", "columns", "units"}
        for unit in parsed["units"]:
            assert set(unit) == {"index", "text", "attrs"}
            assert all(isinstance(v, str) for v in unit["attrs"].values())
    assert text["units"] == [{"index": 0, "text": "Northwind strike", "attrs": {"query": "Northwind strike"}}]
    assert audio["duration_s"] == 30.0 and audio["title"] == "Bulletin"
    assert audio["units"][0] == {
        "index": 0,
        "text": "Crew strike.",
        "attrs": {"channel": "speech", "at": "00:05", "speaker": "Host"},
    }
    assert audio["units"][1]["attrs"] == {"channel": "speech", "at": "00:09", "speaker": "Rep"}
    assert "speaker" not in audio["units"][2]["attrs"]  # four words before ": " are not a speaker
    assert [u["attrs"]["channel"] for u in video["units"]] == ["speech", "visual", "visual"]
    assert video["units"][2]["attrs"]["at"] == "00:03"
    assert table["columns"] == ["title", "n"]
    assert [u["attrs"] for u in table["units"]] == [
        {"title": "A", "n": "1"},
        {"title": "B", "n": "2.5"},
        {"title": "true", "n": ""},
    ]
    assert table["units"][0]["text"] == "A | 1"


def test_table_shapes() -> None:
    env = Environment()
    csv = ok(env, "ingest", {"feed_id": "social_export", "payload": "title, reach\nPort, 10\n\nBudget,  5\n"})["parsed"]
    assert csv["columns"] == ["title", "reach"]
    assert [u["attrs"] for u in csv["units"]] == [{"title": "Port", "reach": "10"}, {"title": "Budget", "reach": "5"}]
    rows = ok(env, "ingest", {"feed_id": "social_export", "payload": [{"a": 1}, {"b": "x", "a": 2}]})["parsed"]
    assert rows["columns"] == ["a", "b"]
    assert rows["units"][0]["attrs"] == {"a": "1", "b": ""}


@pytest.mark.parametrize(
    ("feed", "payload", "field", "text"),
    [
        ("newswire", "   ", "payload", "query is empty"),
        ("newswire", 42, "payload", "must be an object, got int"),
        ("newswire", {"q": "x"}, "payload.query", "needs a `query`"),
        ("newswire", {"query": ["x"]}, "payload.query", "must be a string, got list"),
        ("radio_fm", {"duration_s": 3}, "payload.uri", "needs a `uri`"),
        ("radio_fm", {"uri": " ", "duration_s": 3}, "payload.uri", "uri is empty"),
        ("radio_fm", {"uri": "r"}, "payload.duration_s", "needs `duration_s`"),
        ("radio_fm", {"uri": "r", "duration_s": "long"}, "payload.duration_s", "must be a number, got str"),
        ("radio_fm", {"uri": "r", "duration_s": True}, "payload.duration_s", "must be a number, got bool"),
        ("radio_fm", {"uri": "r", "duration_s": -1}, "payload.duration_s", "negative"),
        ("radio_fm", {"uri": "r", "duration_s": 3, "frames": []}, "payload.frames", "no frames"),
        ("radio_fm", {"uri": "r", "duration_s": 3, "speech": "hi"}, "payload.speech", "must be a list"),
        (
            "radio_fm",
            {"uri": "r", "duration_s": 3, "speech": [{"at": "00:01"}]},
            "payload.speech[0].text",
            "needs a `text`",
        ),
        ("tv_evening", {"uri": "v", "duration_s": 3, "frames": [7]}, "payload.frames[0]", "must be a string"),
        ("social_export", "a,b\n1,2,3", "payload", "CSV line 2 has 3 cells"),
        ("social_export", "\n \n", "payload", "CSV text is empty"),
        ("social_export", "a,a\n1,2", "payload", "unique"),
        ("social_export", {"columns": ["a"], "rows": [[1, 2]]}, "payload.rows[0]", "row 0 has 2 cells"),
        ("social_export", {"columns": ["a"], "rows": [[[1]]]}, "payload.rows[0][0]", "scalar cell, got list"),
        ("social_export", {"columns": [], "rows": []}, "payload.columns", "at least one column"),
        ("social_export", {"columns": ["a"]}, "payload", "needs `columns` and `rows`"),
        ("social_export", [{"a": {"b": 1}}], "payload[0].a", "scalar cell, got map"),
    ],
)
def test_parsers_refuse_malformed_input(feed: str, payload: Any, field: str, text: str) -> None:
    env = Environment()
    error = refused(env, "ingest", {"feed_id": feed, "payload": payload}, "invalid_argument", text)
    assert error["field"] == field
    assert env.state()["next_job_id"] == 1


def test_ingest_needs_a_registered_source() -> None:
    error = refused(Environment(), "ingest", {"feed_id": "blog", "payload": "x"}, "not_found", "not registered")
    assert len(error["allowed"]) == 30 and {"newswire", "radio_fm", "social_export", "tv_evening"} <= set(
        error["allowed"]
    )
    assert error["field"] == "feed_id" and error["message"] == "feed blog is not registered"  # the domain's words


# --------------------------------------------------------------------------- phase 2: processing


def test_dispatch_table_picks_one_simulator_per_job_type() -> None:
    env = Environment("morning_sweep")
    ran = ok(env, "process_queue")
    by_type = {job["job_type"]: job["processor"] for job in ran}
    assert by_type == dict(WORLD["processors"])
    assert [job["status"] for job in ran] == ["completed"] * 5
    assert all(job["processed_at"] == "2025-03-10T07:00:00" for job in ran)
    jobs = env.state()["jobs"]
    assert [r["fields"]["url"] for r in jobs["1"]["results"]] == [
        "https://dailyledger.example/northwind-strike",
        "https://metrowire.example/2025/03/09/northwind-air-strike",
        "https://citypost.example/northwind-cancellations",
    ]
    assert jobs["2"]["results"][0]["fields"] == {
        "text": "Cabin crew at Northwind Air say they will strike on Friday.",
        "uri": "radio://fm101/2025-03-10T06:30",
        "title": "Northwind Air cabin crew announce strike",
        "channel": "speech",
        "at": "00:00",
        "speaker": "Presenter",
    }
    assert jobs["4"]["results"][2]["fields"] == {
        "title": "Northwind  Air cabin crew announce strike",
        "platform": "facebook",
        "shares": "830",
    }
    assert jobs["5"]["results"][0]["fields"]["outlet"] == "Daily Ledger"
    assert [r["seq"] for r in jobs["4"]["results"]] == [1, 2, 3]


def reference_search(query: str) -> list[str]:
    """The search contract, independently: every non-stop-word term must occur among the
    words of title, body and entities; rank by total occurrences, ties in corpus order."""
    punctuation = set(WORLD["punctuation"])

    def words(text: str) -> list[str]:
        return "".join(c for c in text.lower() if c not in punctuation).split()

    terms = list(dict.fromkeys(w for w in words(query) if w not in WORLD["stopwords"]))
    scored = []
    for doc in WORLD["corpus"]:
        text = words(" ".join([doc["title"], doc["body"], " ".join(doc["entities"])]))
        if all(t in text for t in terms):
            scored.append((sum(text.count(t) for t in terms), doc["url"]))
    ranked = sorted(scored, key=lambda pair: -pair[0])
    return [url for _, url in ranked[: WORLD["search_limit"]]]


def test_search_ranks_by_term_occurrences_and_respects_the_limit() -> None:
    env = Environment()
    ok(env, "ingest", {"feed_id": "newswire", "payload": "Northwind Air"})
    results = ok(env, "process_job", {"job_id": 1})["results"]
    assert len(results) == WORLD["search_limit"] == 5
    assert [r["fields"]["url"] for r in results] == reference_search("Northwind Air")
    ok(env, "ingest", {"feed_id": "newswire", "payload": "the of and"})
    failed = ok(env, "process_job", {"job_id": 2})
    assert failed["status"] == "failed" and failed["failure"] == "the query has no search terms besides stop words"
    ok(env, "ingest", {"feed_id": "newswire", "payload": "submarine"})
    assert ok(env, "process_job", {"job_id": 3})["status"] == "completed"  # no hits is not a failure


@pytest.mark.parametrize(
    ("feed", "payload", "failure"),
    [
        ("newswire", "https://nowhere.example/x", "no document at https://nowhere.example/x"),
        ("radio_fm", {"uri": "r", "duration_s": 0, "speech": ["hello"]}, "the recording is empty (duration 0)"),
        ("tv_evening", {"uri": "v", "duration_s": 5, "speech": ["  "]}, "no speech detected"),
        ("social_export", [], "table has no rows"),
    ],
)
def test_processors_fail_jobs_not_calls(feed: str, payload: Any, failure: str) -> None:
    env = Environment()
    ok(env, "ingest", {"feed_id": feed, "payload": payload})
    job = ok(env, "process_job", {"job_id": 1})
    assert job["status"] == "failed" and job["failure"] == failure and job["results"] == []
    refused(env, "process_job", {"job_id": 1}, "invalid_state", "already failed")


def test_only_queued_jobs_are_processed() -> None:
    env = sweep()
    error = refused(env, "process_job", {"job_id": 3}, "invalid_state", "already completed")
    assert error["current"] == "completed" and error["allowed"] == ["queued"]
    refused(env, "process_job", {"job_id": 42}, "not_found", "job 42")
    refused(env, "process_queue", {}, "invalid_state", "no queued jobs")
    refused(env, "process_queue", {"feed_id": "blog"}, "not_found")
    env = Environment("morning_sweep")
    assert [j["id"] for j in ok(env, "process_queue", {"feed_id": "newswire"})] == [1, 5]
    assert [j["id"] for j in ok(env, "list_jobs", {"status": "queued"})] == [2, 3, 4]
    assert [j["id"] for j in ok(env, "list_jobs", {"job_type": "transcribe"})] == [2, 3]


# --------------------------------------------------------------------------- phase 3: aggregation


def test_aggregation_merges_normalised_duplicates_across_feeds() -> None:
    env = sweep()
    digest = ok(env, "build_digest", {"dedup_keys": ["title"], "normalization": LOOSE_STEPS})
    assert digest["job_ids"] == [1, 2, 3, 4, 5]
    assert (digest["input_count"], digest["duplicates_removed"], digest["unkeyed"]) == (11, 6, 0)
    first = digest["items"][0]
    assert first["key"] == "northwind air cabin crew announce strike"
    assert first["mentions"] == 6
    assert first["sources"] == ["newswire", "radio_fm", "social_export"]
    assert first["jobs"] == [1, 2, 4]
    # the first item's fields win; duplicates only add the fields it lacks
    assert first["fields"]["title"] == "Northwind Air cabin crew announce strike"
    assert first["fields"]["outlet"] == "Daily Ledger" and first["fields"]["shares"] == "1520"
    assert len(digest["items"]) == 5


def test_default_normalisation_and_each_step() -> None:
    env = Environment("one_feed_per_format")
    titles = ["  A  b ", "A  b", "a B", "Hi, (you)!", "hi you", "\\Hi you/"]
    ok(env, "ingest", {"feed_id": "sheet", "payload": {"columns": ["title"], "rows": [[t] for t in titles]}})
    ok(env, "process_job", {"job_id": 1})

    def keys(steps: list[str] | None) -> list[str]:
        args: dict[str, Any] = {"dedup_keys": ["title"]}
        if steps is not None:
            args["normalization"] = steps
        return [entry["key"] for entry in ok(env, "build_digest", args)["items"]]

    assert ok(env, "build_digest", {"dedup_keys": ["title"]})["normalization"] == DEFAULT_STEPS
    assert keys(None) == ["a b", "hi, (you)!", "hi you", "\\hi you/"]
    assert keys([]) == titles
    assert keys(["strip"]) == ["A  b", "a B", "Hi, (you)!", "hi you", "\\Hi you/"]
    assert keys(["lowercase"]) == ["  a  b ", "a  b", "a b", "hi, (you)!", "hi you", "\\hi you/"]
    assert keys(["collapse_whitespace"]) == ["A b", "a B", "Hi, (you)!", "hi you", "\\Hi you/"]
    assert keys(["strip_punctuation", "lowercase"]) == ["  a  b ", "a  b", "a b", "hi you"]


def test_composite_keys_unkeyed_items_and_chosen_jobs() -> None:
    env = Environment("overlapping_results")
    pair = ok(env, "build_digest", {"dedup_keys": ["title", "outlet", "title"]})
    assert pair["dedup_keys"] == ["title", "outlet"]
    assert pair["items"][0]["key"] == "port expands + daily"
    assert pair["unkeyed"] == 3  # items lacking either field stay, each on its own
    assert [e["key"] for e in pair["items"] if e["key"].startswith("#")] == ["#2.1", "#2.2", "#3.1"]
    by_url = ok(env, "build_digest", {"dedup_keys": ["url"]})
    assert (by_url["duplicates_removed"], by_url["unkeyed"]) == (1, 2)
    chosen = ok(env, "build_digest", {"dedup_keys": ["title"], "job_ids": [3, 1, 3]})
    assert chosen["job_ids"] == [1, 3] and chosen["input_count"] == 3


def test_aggregation_uses_completed_jobs_only() -> None:
    refused(Environment(), "build_digest", {"dedup_keys": ["title"]}, "invalid_state", "no completed jobs")
    env = Environment("overlapping_results")
    error = refused(
        env, "build_digest", {"dedup_keys": ["title"], "job_ids": [1, 4]}, "invalid_state", "job 4 is failed"
    )
    assert error["current"] == "failed" and error["allowed"] == ["completed"]
    refused(env, "build_digest", {"dedup_keys": ["title"], "job_ids": [5]}, "invalid_state", "job 5 is queued")
    refused(env, "build_digest", {"dedup_keys": ["title"], "job_ids": [77]}, "not_found", "job 77")
    refused(env, "build_digest", {"dedup_keys": ["title"], "job_ids": []}, "invalid_argument", "job_ids is empty")
    refused(env, "build_digest", {"dedup_keys": []}, "invalid_argument")
    refused(env, "build_digest", {"dedup_keys": [" "]}, "invalid_argument", "must not be empty")
    refused(env, "build_digest", {"dedup_keys": ["title"], "normalization": ["upper"]}, "invalid_argument")
    assert ok(env, "build_digest", {"dedup_keys": ["title"]})["job_ids"] == [1, 2, 3]


# --------------------------------------------------------------------------- phase 4: rendering


def test_markdown_and_bullets() -> None:
    env = Environment("digest_ready")
    md = ok(env, "publish", {"digest_id": 1, "format": "markdown", "title": "Weekend"})["content"]
    assert md.splitlines()[:4] == ["# Weekend", "", "_2 items from 2 jobs; 1 duplicate merged on title_", ""]
    assert "## 1. Skylark and Northwind Air in fare war" in md
    assert "- _sources_: newswire, social_export (2 mentions)" in md
    assert "- _sources_: social_export (1 mention)" in md
    first_entry = md.split("## 1. ")[1].split("## 2. ")[0]
    names = [line.split("**")[1] for line in first_entry.splitlines() if line.startswith("- **")]
    assert names == ["entities", "outlet", "platform", "published", "shares", "snippet", "title", "url"]  # all, by name
    bullets = ok(env, "publish", {"digest_id": 1, "format": "bullets", "fields": ["platform", "shares"]})["content"]
    assert bullets.splitlines() == [
        "Pipeline report:",
        "• Skylark and Northwind Air in fare war — platform: x; shares: 940 [2x: newswire, social_export]",
        "• Northwind Air posts record quarterly profit — platform: linkedin; shares: 120 [1x: social_export]",
    ]


def test_json_rendering_is_valid_json() -> None:
    env = sweep()
    ok(env, "build_digest", {"dedup_keys": ["title"], "normalization": LOOSE_STEPS})
    brief = ok(env, "publish", {"digest_id": 1, "format": "json", "title": 'Say "hi"\\\n\x01'})
    data = json.loads(brief["content"])
    assert data["title"] == 'Say "hi"\\\n\x01'
    assert data["aggregate_id"] == 1 and data["dedup_keys"] == ["title"]
    assert len(data["items"]) == 5
    assert data["items"][0]["mentions"] == 6 and data["items"][0]["jobs"] == [1, 2, 4]
    assert data["items"][0]["label"] == "Northwind Air cabin crew announce strike"
    assert data["items"][0]["fields"] == env.state()["digests"]["1"]["items"][0]["fields"]


def test_graph_rendering_is_a_dot_digraph() -> None:
    env = sweep()
    ok(env, "build_digest", {"dedup_keys": ["title"], "normalization": LOOSE_STEPS})
    dot = ok(env, "publish", {"digest_id": 1, "format": "graph", "title": "Map"})["content"]
    lines = dot.splitlines()
    assert lines[0] == 'digraph "Map" {' and lines[-1] == "}"
    sources = re.findall(r'"source:([^"]+)" \[shape=box', dot)
    assert sources == ["newswire", "radio_fm", "social_export", "tv_evening"]
    assert len(re.findall(r'"item:\d+" \[label=', dot)) == 5
    edges = re.findall(r'"source:([^"]+)" -> "item:(\d+)";', dot)
    assert edges[:3] == [("newswire", "1"), ("radio_fm", "1"), ("social_export", "1")]
    assert len(edges) == 7  # one edge per (entry, source) pair


def test_render_guards_and_storage() -> None:
    env = Environment("digest_ready")
    refused(env, "publish", {"digest_id": 2, "format": "json"}, "not_found", "digest 2")
    refused(env, "publish", {"digest_id": 1, "format": "pdf"}, "invalid_argument")
    refused(env, "publish", {"digest_id": 1, "format": "json", "title": ""}, "invalid_argument")
    brief = ok(env, "publish", {"digest_id": 1, "format": "graph"})
    assert ok(env, "get_brief", {"brief_id": brief["id"]}) == brief
    refused(env, "get_brief", {"brief_id": 9}, "not_found")


# --------------------------------------------------------------------------- the domain's own additions


def test_share_of_voice_and_watchlist() -> None:
    env = Environment("digest_ready")
    shares = ok(env, "share_of_voice", {"digest_id": 1})
    assert shares == [
        {"brand": "Northwind Air", "entries": 2, "mentions": 3, "share_percent": 60.0},
        {"brand": "Skylark", "entries": 1, "mentions": 2, "share_percent": 40.0},
    ]
    assert ok(env, "watch_brand", {"brand": " Metro  Wire "}) == ["Northwind Air", "Skylark", "Metro Wire"]
    refused(env, "watch_brand", {"brand": "SKYLARK"}, "already_exists", "already watched")
    refused(env, "share_of_voice", {"digest_id": 3}, "not_found")


def test_tool_schema_marks_reads_and_writes() -> None:
    writes = {name for name, spec in TOOL_SPECS.items() if spec.writes}
    assert writes == {
        "register_feed",
        "ingest",
        "process_job",
        "process_queue",
        "build_digest",
        "publish",
        "watch_brand",
    }
    assert set(SCENARIOS) == {
        "one_feed_per_format",
        "overlapping_results",
        "morning_sweep",
        "digest_ready",
        "busy_monday",
    }


def test_same_calls_same_state() -> None:
    def run() -> str:
        env = sweep()
        ok(env, "build_digest", {"dedup_keys": ["title"], "normalization": LOOSE_STEPS})
        ok(env, "publish", {"digest_id": 1, "format": "json"})
        return env.state_json()

    assert run() == run()


# --------------------------------------------------------------------------- the prototype on its own


def test_prototype_compiles_and_its_own_tests_pass(tmp_path: Path) -> None:
    """The prototype spec is a complete environment too: compiled on its own, its static
    and dynamic checks (its own tests, two scenarios, the generic invariants) pass."""
    root = Path(__file__).resolve().parents[2]
    spec = root / "specs" / "prototypes" / "data_pipeline.envspec"
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", str(spec), "-o", str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "data_pipeline.envspec" in line)
    columns = row.split()
    static, dynamic = columns[columns.index("pass")], columns[columns.index("pass") + 1]
    assert (static, dynamic) == ("pass", "pass") and "failed" not in row, row
