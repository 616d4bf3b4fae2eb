"""The multi-criteria bilateral matching archetype (paper archetype 7), tested on the
generated `job_matching` package, the domain built on
`specs/prototypes/bilateral_matching.envspec` (supply = applicants, demand = openings).

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`. Every rule of the contract has a test:
pools with a weighted criteria vector (attribute -> float weight) and a top-K cap;
supply and demand candidates with typed attribute dictionaries; per-type scoring
(numeric proximity by absolute distance, text equality with a partial-match fallback
constant, list overlap as a Jaccard ratio) combined into a weighted sum normalised to
0-100; results sorted descending and truncated to top K, materialised as persistent
match records that move pending -> accepted | rejected only by an explicit accept or
reject; re-ranking by score, supply or demand; filtered listing; pools isolate their
contexts. A reference implementation of the scoring formula checks random pairs.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shipped import package_dir, put_on_path

ROOT = Path(__file__).resolve().parents[2]
put_on_path()

from job_matching import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402
from job_matching.environment import WORLD  # noqa: E402

TOOLS_JSON = json.loads((package_dir("job_matching") / "tools.json").read_text())
PARTIAL = WORLD["partial_match_score"]


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


def pool(criteria: dict[str, float], top_k: int = 5) -> Environment:
    env = Environment()
    ok(env, "create_pool", {"pool_id": "p", "name": "Pool", "criteria": criteria, "top_k": top_k})
    return env


def fit(env: Environment, supply: str, demand: str, pool_id: str = "p") -> dict[str, Any]:
    result: dict[str, Any] = ok(env, "score_fit", {"pool_id": pool_id, "supply_id": supply, "demand_id": demand})
    return result


def pair_score(supply_attrs: dict[str, Any], demand_attrs: dict[str, Any]) -> float:
    """One criterion `x`, weight 1: the pair's score is 100 x the similarity."""
    env = pool({"x": 1.0})
    ok(env, "add_applicant", {"pool_id": "p", "candidate_id": "s", "name": "S", "attributes": supply_attrs})
    ok(env, "add_opening", {"pool_id": "p", "candidate_id": "d", "name": "D", "attributes": demand_attrs})
    return float(fit(env, "s", "d")["score"])


# --------------------------------------------------------------------------- reference


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def reference_similarity(a: Any, b: Any) -> float:
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        scale = max(abs(na), abs(nb))
        return 1.0 if scale == 0 else max(0.0, 1.0 - abs(na - nb) / scale)
    if isinstance(a, str) and isinstance(b, str):
        x, y = a.strip().lower(), b.strip().lower()
        if x == y:
            return 1.0
        return PARTIAL if x and y and (x in y or y in x) else 0.0
    if isinstance(a, list) and isinstance(b, list):
        key = lambda i: i.strip().lower() if isinstance(i, str) else i  # noqa: E731
        xs, ys = [], []
        for item in a:
            if key(item) not in xs:
                xs.append(key(item))
        for item in b:
            if key(item) not in ys:
                ys.append(key(item))
        if not xs and not ys:
            return 1.0
        common = len([x for x in xs if x in ys])
        return common / (len(xs) + len(ys) - common)
    if isinstance(a, bool) and isinstance(b, bool):
        return 1.0 if a == b else 0.0
    return 0.0


def reference_score(criteria: dict[str, float], supply: dict[str, Any], demand: dict[str, Any]) -> float:
    total = sum(criteria.values())
    weighted = sum(
        w * (reference_similarity(supply[k], demand[k]) if k in supply and k in demand else 0.0)
        for k, w in criteria.items()
    )
    return round(100.0 * weighted / total, 2)


# --------------------------------------------------------------------------- pools and candidates


def test_pools_have_weighted_criteria_and_a_top_k_cap() -> None:
    env = pool({"skills": 3.0, "years": 1.5}, top_k=2)
    p = ok(env, "get_pool", {"pool_id": "p"})
    assert p["criteria"] == {"skills": 3.0, "years": 1.5} and p["top_k"] == 2
    assert p["supply"] == {} and p["demand"] == {}
    refused(env, "create_pool", {"pool_id": "p", "name": "x", "criteria": {"a": 1.0}}, "already_exists")
    refused(
        env, "create_pool", {"pool_id": "q", "name": "x", "criteria": {"a": 0.0}}, "invalid_argument", "positive weight"
    )
    refused(
        env,
        "create_pool",
        {"pool_id": "q", "name": "x", "criteria": {"a": 1.0, "b": -2.0}},
        "invalid_argument",
        "positive weight",
    )
    refused(env, "create_pool", {"pool_id": "q", "name": "x", "criteria": {}}, "invalid_argument")
    refused(env, "create_pool", {"pool_id": "q", "name": "x", "criteria": {"a": 1.0}, "top_k": 0}, "invalid_argument")
    assert ok(env, "create_pool", {"pool_id": "q", "name": "x", "criteria": {"a": 1}})["top_k"] == 5


def test_candidates_carry_typed_attributes() -> None:
    env = pool({"x": 1.0})
    member = ok(
        env,
        "add_applicant",
        {
            "pool_id": "p",
            "candidate_id": "s1",
            "name": "S",
            "attributes": {"n": 2, "t": "x", "b": True, "l": ["a", 1, False]},
        },
    )
    assert member["side"] == "supply" and member["attributes"]["l"] == ["a", 1, False]
    assert (
        ok(env, "add_opening", {"pool_id": "p", "candidate_id": "s1", "name": "same id, other side"})["side"]
        == "demand"
    )
    refused(
        env,
        "add_applicant",
        {"pool_id": "p", "candidate_id": "s1", "name": "again"},
        "already_exists",
        "applicant s1 is already in pool p",
    )
    refused(
        env,
        "add_applicant",
        {"pool_id": "p", "candidate_id": "s2", "name": "S", "attributes": {"n": None}},
        "invalid_argument",
        "not null",
    )
    refused(
        env,
        "add_applicant",
        {"pool_id": "p", "candidate_id": "s2", "name": "S", "attributes": {"m": {"a": 1}}},
        "invalid_argument",
        "not map",
    )
    refused(
        env,
        "add_applicant",
        {"pool_id": "p", "candidate_id": "s2", "name": "S", "attributes": {"l": [[1]]}},
        "invalid_argument",
        "non-scalar",
    )
    refused(env, "add_opening", {"pool_id": "zz", "candidate_id": "d", "name": "D"}, "not_found", "pool zz")
    assert [(m["side"], m["id"]) for m in ok(env, "list_pool_members", {"pool_id": "p"})] == [
        ("supply", "s1"),
        ("demand", "s1"),
    ]


# --------------------------------------------------------------------------- scoring


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [(100, 80, 80.0), (80, 100, 80.0), (0, 0, 100.0), (5, 5.0, 100.0), (-5, 5, 0.0), (0, 5, 0.0), (10, 1000, 1.0)],
)
def test_numbers_score_by_absolute_distance(a: float, b: float, score: float) -> None:
    assert pair_score({"x": a}, {"x": b}) == score


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        ("Berlin", "berlin ", 100.0),
        ("New York", "York", PARTIAL * 100),
        ("York", "New York", PARTIAL * 100),
        ("Berlin", "Paris", 0.0),
        ("Berlin", "", 0.0),
    ],
)
def test_texts_score_by_equality_with_a_partial_fallback(a: str, b: str, score: float) -> None:
    assert pair_score({"x": a}, {"x": b}) == score


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        (["a", "B", "c", "c"], ["b", "c", "d"], 50.0),
        (["a"], [], 0.0),
        ([], [], 100.0),
        (["go", "aws"], ["AWS", "go"], 100.0),
        ([1, 2], ["1", "2"], 0.0),
        (["a", "b", "c"], ["c"], 33.33),
    ],
)
def test_lists_score_by_jaccard_overlap(a: list[Any], b: list[Any], score: float) -> None:
    assert pair_score({"x": a}, {"x": b}) == score


def test_booleans_mismatches_and_missing_values() -> None:
    assert pair_score({"x": True}, {"x": True}) == 100.0
    assert pair_score({"x": True}, {"x": False}) == 0.0
    assert pair_score({"x": "10"}, {"x": 10}) == 0.0
    assert pair_score({"x": True}, {"x": 1}) == 0.0
    assert pair_score({}, {"x": 1}) == 0.0
    env = pool({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0})
    ok(
        env,
        "add_applicant",
        {
            "pool_id": "p",
            "candidate_id": "s",
            "name": "S",
            "attributes": {"a": 1, "b": "x", "c": ["q"], "d": True, "e": "1"},
        },
    )
    ok(
        env,
        "add_opening",
        {"pool_id": "p", "candidate_id": "d", "name": "D", "attributes": {"a": 2, "b": "x", "c": ["q"], "e": 1}},
    )
    kinds = [(s["attribute"], s["kind"]) for s in fit(env, "s", "d")["breakdown"]]
    assert kinds == [("a", "numeric"), ("b", "text"), ("c", "list"), ("d", "missing"), ("e", "type_mismatch")]


def test_weighted_sum_is_normalised_to_0_100() -> None:
    env = pool({"a": 3.0, "b": 1.0})
    ok(env, "add_applicant", {"pool_id": "p", "candidate_id": "s", "name": "S", "attributes": {"a": "x", "b": "y"}})
    for demand, attrs, expected in [
        ("d1", {"a": "x", "b": "z"}, 75.0),
        ("d2", {"a": "q", "b": "y"}, 25.0),
        ("d3", {"a": "x", "b": "yy"}, 87.5),
        ("d4", {"a": "x", "b": "y"}, 100.0),
        ("d5", {}, 0.0),
    ]:
        ok(env, "add_opening", {"pool_id": "p", "candidate_id": demand, "name": demand, "attributes": attrs})
        result = fit(env, "s", demand)
        assert result["score"] == expected, demand
        assert 0.0 <= result["score"] <= 100.0


def test_scores_match_the_reference_formula_on_random_pairs() -> None:
    rng = random.Random(7)
    words = ["go", "Go", "python", "aws", "berlin", "Berlin", "new york", "york", ""]

    def value() -> Any:
        kind = rng.choice(["int", "float", "text", "list", "bool", "absent"])
        if kind == "int":
            return rng.randint(-5, 100)
        if kind == "float":
            return round(rng.uniform(-10, 100), 2)
        if kind == "text":
            return rng.choice(words)
        if kind == "list":
            return [rng.choice(words + [1, 2]) for _ in range(rng.randint(0, 4))]
        if kind == "bool":
            return rng.random() < 0.5
        return None

    criteria = {"a": 1.0, "b": 2.5, "c": 0.5, "d": 4.0}
    env = pool(criteria)
    for i in range(12):
        for role, tool in (("s", "add_applicant"), ("d", "add_opening")):
            attrs = {k: v for k in criteria if (v := value()) is not None}
            ok(env, tool, {"pool_id": "p", "candidate_id": f"{role}{i}", "name": f"{role}{i}", "attributes": attrs})
    members = ok(env, "get_pool", {"pool_id": "p"})
    for s_id, supply in members["supply"].items():
        for d_id, demand in members["demand"].items():
            assert fit(env, s_id, d_id)["score"] == reference_score(
                criteria, supply["attributes"], demand["attributes"]
            )


# --------------------------------------------------------------------------- matching


def test_matching_sorts_descending_truncates_to_top_k_and_materialises() -> None:
    env = Environment("spring_hiring")
    before = len(env.state()["match_records"])
    top = ok(env, "run_shortlist", {"pool_id": "engineering"})
    assert before == 0 and len(top) == 3
    assert [(m["supply_id"], m["demand_id"], m["score"]) for m in top] == [
        ("r-ana", "j-backend", 84.17),
        ("r-fox", "j-data", 73.2),
        ("r-chen", "j-data", 62.95),
    ]
    assert all(m["status"] == "pending" and m["decided_by"] is None for m in top)
    records = env.state()["match_records"]
    assert sorted(records) == ["1", "2", "3"]
    # every pair the pool did not keep scores at most the K-th kept one
    pool_state = env.state()["pools"]["engineering"]
    kept = {(m["supply_id"], m["demand_id"]) for m in top}
    for s in pool_state["supply"]:
        for d in pool_state["demand"]:
            if (s, d) not in kept:
                assert fit(env, s, d, "engineering")["score"] <= top[-1]["score"]


def test_rerunning_reuses_existing_records() -> None:
    env = Environment("spring_hiring")
    ok(env, "run_shortlist", {"pool_id": "engineering"})
    ok(env, "reject_match", {"match_id": 1, "on_behalf_of": "supply"})
    again = ok(env, "run_shortlist", {"pool_id": "engineering"})
    assert [m["id"] for m in again] == [1, 2, 3] and again[0]["status"] == "rejected"
    backend = ok(env, "run_shortlist", {"pool_id": "engineering", "demand_id": "j-backend"})
    assert [(m["id"], m["supply_id"]) for m in backend] == [(1, "r-ana"), (4, "r-fox"), (5, "r-chen")]
    assert len(ok(env, "run_shortlist", {"pool_id": "engineering", "demand_id": "j-data", "supply_id": "r-ben"})) == 1
    refused(env, "run_shortlist", {"pool_id": "engineering", "demand_id": "j-sre"}, "not_found", "no opening j-sre")
    ok(env, "create_pool", {"pool_id": "empty", "name": "Empty", "criteria": {"x": 1.0}})
    refused(env, "run_shortlist", {"pool_id": "empty"}, "invalid_state", "needs supply and demand")


def test_ties_are_broken_by_supply_then_demand_id() -> None:
    env = pool({"x": 1.0}, top_k=3)
    for s in ("s2", "s1"):
        ok(env, "add_applicant", {"pool_id": "p", "candidate_id": s, "name": s, "attributes": {"x": 1}})
    for d in ("d2", "d1"):
        ok(env, "add_opening", {"pool_id": "p", "candidate_id": d, "name": d, "attributes": {"x": 1}})
    top = ok(env, "run_shortlist", {"pool_id": "p"})
    assert [(m["supply_id"], m["demand_id"]) for m in top] == [("s1", "d1"), ("s1", "d2"), ("s2", "d1")]


def test_two_phase_lifecycle_pending_to_accepted_or_rejected() -> None:
    env = Environment("two_pools")
    accepted = ok(env, "accept_match", {"match_id": 1, "on_behalf_of": "demand", "note": "offer sent"})
    assert (accepted["status"], accepted["decided_by"], accepted["note"]) == ("accepted", "demand", "offer sent")
    assert accepted["decided_at"] == "2025-05-12T09:30:00"
    for tool in ("accept_match", "reject_match"):
        refused(env, tool, {"match_id": 1, "on_behalf_of": "supply"}, "invalid_state", "already accepted")
        refused(env, tool, {"match_id": 2, "on_behalf_of": "supply"}, "invalid_state", "only a pending match")
    refused(env, "accept_match", {"match_id": 77, "on_behalf_of": "demand"}, "not_found", "match 77")
    refused(env, "accept_match", {"match_id": 1, "on_behalf_of": "employer"}, "invalid_argument")
    ok(env, "run_shortlist", {"pool_id": "design"})
    rejected = ok(env, "reject_match", {"match_id": 3, "on_behalf_of": "supply"})
    assert rejected["status"] == "rejected" and rejected["decided_by"] == "supply"
    refused(env, "accept_match", {"match_id": 3, "on_behalf_of": "demand"}, "invalid_state", "already rejected")


def test_rerank_by_score_supply_and_demand() -> None:
    env = Environment("spring_hiring")
    ok(env, "run_shortlist", {"pool_id": "engineering"})
    ok(env, "run_shortlist", {"pool_id": "engineering", "demand_id": "j-backend"})
    ids = lambda args: [m["id"] for m in ok(env, "rerank_matches", {"pool_id": "engineering", **args})]  # noqa: E731
    by_score = ok(env, "rerank_matches", {"pool_id": "engineering"})
    assert [m["score"] for m in by_score] == sorted((m["score"] for m in by_score), reverse=True)
    assert ids({}) == [1, 2, 3, 4, 5]
    assert ids({"by": "supply"}) == [1, 3, 5, 2, 4]
    assert ids({"by": "demand"}) == [1, 4, 5, 2, 3]
    ok(env, "accept_match", {"match_id": 2, "on_behalf_of": "demand"})
    assert ids({"by": "demand", "status": "pending"}) == [1, 4, 5, 3]
    assert ids({"status": "accepted"}) == [2]
    refused(env, "rerank_matches", {"pool_id": "nope"}, "not_found")
    refused(env, "rerank_matches", {"pool_id": "engineering", "by": "salary"}, "invalid_argument")


def test_filtered_listing() -> None:
    env = Environment("two_pools")
    ok(env, "run_shortlist", {"pool_id": "design"})
    ids = lambda args: [m["id"] for m in ok(env, "list_matches", args)]  # noqa: E731
    assert ids({}) == [1, 2, 3]
    assert ids({"pool_id": "design"}) == [2, 3]
    assert ids({"status": "accepted"}) == [2]
    assert ids({"supply_id": "r-ana"}) == [1, 3]
    assert ids({"demand_id": "j-design", "min_score": 50.0}) == [2]
    refused(env, "list_matches", {"pool_id": "ghost"}, "not_found")
    refused(env, "list_matches", {"min_score": 101.0}, "invalid_argument")


def test_pools_isolate_matching_contexts() -> None:
    env = Environment("two_pools")
    design = ok(env, "run_shortlist", {"pool_id": "design"})
    engineering = ok(env, "run_shortlist", {"pool_id": "engineering"})
    assert {m["pool_id"] for m in design} == {"design"} and {m["pool_id"] for m in engineering} == {"engineering"}
    # the same applicant id in two pools is two candidates with their own attributes and scores
    ana_design = fit(env, "r-ana", "j-design", "design")["score"]
    ana_engineering = fit(env, "r-ana", "j-backend", "engineering")["score"]
    assert (ana_design, ana_engineering) == (38.25, 84.17)
    refused(
        env,
        "score_fit",
        {"pool_id": "design", "supply_id": "r-chen", "demand_id": "j-design"},
        "not_found",
        "no applicant r-chen",
    )
    # adding to one pool leaves the other untouched
    before = env.state()["pools"]["engineering"]
    ok(env, "import_resume", {"pool_id": "design", "resume_id": "r-ben"})
    assert env.state()["pools"]["engineering"] == before


# --------------------------------------------------------------------------- domain and package


def test_domain_imports_resumes_and_postings() -> None:
    env = pool({"skills": 1.0})
    applicant = ok(env, "import_resume", {"pool_id": "p", "resume_id": "r-dia"})
    assert applicant["attributes"] == {
        "skills": ["go", "kubernetes", "aws", "terraform"],
        "years": 9,
        "location": "Remote",
        "salary": 95000,
        "remote": True,
        "seniority": "staff",
    }
    opening = ok(env, "post_opening", {"pool_id": "p", "job_code": "j-sre"})
    assert opening["name"] == "Site Reliability Engineer" and opening["side"] == "demand"
    assert fit(env, "r-dia", "j-sre")["score"] == 100.0
    refused(env, "import_resume", {"pool_id": "p", "resume_id": "r-zoe"}, "not_found", "no resume r-zoe")
    refused(env, "post_opening", {"pool_id": "p", "job_code": "j-ceo"}, "not_found", "no job j-ceo")


def test_read_and_write_tools_are_classified() -> None:
    kinds = {t["name"]: t["modifies_state"] for t in TOOLS_JSON["tools"]}
    for name in (
        "create_pool",
        "add_applicant",
        "add_opening",
        "run_shortlist",
        "accept_match",
        "reject_match",
        "import_resume",
        "post_opening",
    ):
        assert kinds[name], name
    for name in ("score_fit", "rerank_matches", "list_matches", "list_pool_members", "get_pool", "list_pools"):
        assert not kinds[name], name
    assert set(kinds) == set(TOOL_SPECS)
    assert set(SCENARIOS) == {"spring_hiring", "two_pools", "offers_week"}


# --------------------------------------------------------------------------- the prototype itself


def test_prototype_compiles_and_its_own_tests_pass(tmp_path: Path) -> None:
    """The prototype on its own (generic names, its own scenarios): it compiles, and the
    package it generates passes its tests, which state every rule of the contract."""
    spec = ROOT / "specs" / "prototypes" / "bilateral_matching.envspec"
    compiled = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", "--no-qc", "-o", str(tmp_path), str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    package = tmp_path / "prototypes" / "bilateral_matching"  # the output mirrors specs/prototypes/
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(package),
            str(package / "tests"),
        ],
        cwd=package.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
