"""The dynamic human-agent interaction archetype (paper archetype 3), tested on the
generated `support_triage` package, the domain built on
`specs/prototypes/human_interaction.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`. Every rule of the contract has a test: the
hidden persona (intent, confidence, mood valence and trend, confirmed and outstanding
items) that no tool reveals; the three state layers; keyword analysis raising confidence
on confirmation and lowering it on clarification; items confirmed on resolution
language; the patience threshold forcing escalation; replies chosen from a mood bank by
a stable hash of message and turn; history, manual context overrides and summaries.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shipped import put_on_path

put_on_path()

from support_triage import TOOL_SPECS, Environment  # noqa: E402
from support_triage.environment import WORLD  # noqa: E402

TUNING = WORLD["tuning"]
CHAT = "c-1042"


def ok(env: Environment, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = env.call(tool, args or {})
    assert not (isinstance(result, dict) and isinstance(result.get("error"), dict)), result
    return result


def refused(env: Environment, tool: str, args: dict[str, Any], kind: str, text: str = "") -> dict[str, Any]:
    before = env.state()
    result = env.call(tool, args)
    assert isinstance(result, dict) and isinstance(result.get("error"), dict), result
    error: dict[str, Any] = result["error"]
    assert error["kind"] == kind and text in error["message"], error
    assert env.state() == before, f"refused {tool} changed the state"
    return error


def say(env: Environment, text: str, chat: str = CHAT) -> dict[str, Any]:
    reply: dict[str, Any] = ok(env, "reply_to_customer", {"conversation_id": chat, "text": text})
    return reply


def fnv1a(text: str) -> int:
    """FNV-1a, 32 bit, written out independently of the generated code."""
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x01000193) % 2**32
    return value


def mood_of(valence: float) -> str:
    if valence >= 0.5:
        return "delighted"
    if valence >= 0.15:
        return "content"
    if valence > -0.15:
        return "neutral"
    if valence > -0.5:
        return "annoyed"
    return "angry"


# --------------------------------------------------------------------------- persona and layers


def test_start_builds_three_layers_and_a_hidden_persona() -> None:
    env = Environment()
    conversation = ok(env, "open_conversation", {"conversation_id": "c-7", "customer": "Ana", "profile": "late_parcel"})
    assert set(conversation) == {
        "id", "customer", "status", "turns", "started_at", "updated_at",
        "last_customer_message", "escalation_reason", "closing_note",
    }  # fmt: skip
    assert conversation["turns"] == 0 and conversation["status"] == "active"
    state = env.state()
    assert state["transcripts"]["c-7"] == [
        {"turn": 0, "role": "customer", "text": "Where is my parcel?", "at": "2025-04-14T10:00:00", "mood": "annoyed"}
    ]
    assert state["case_fields"]["c-7"] == {
        "intent_status": "unknown", "mood": "annoyed", "trend": "stable", "escalation_risk": "low", "open_items": "2",
    }  # fmt: skip
    persona = state["personas"]["c-7"]
    assert persona["intent"] == "delivery status"
    assert persona["outstanding"] == ["tracking number", "new delivery date"] and persona["confirmed"] == []
    assert isinstance(persona["confidence"], float) and persona["confidence"] == 0.35
    assert persona["valence"] == -0.2 and persona["trend"] == "stable" and persona["patience"] == 2
    assert state["trajectories"]["c-7"][0]["turn"] == 0


def test_explicit_fields_and_overrides() -> None:
    env = Environment()
    ok(
        env,
        "open_conversation",
        {
            "conversation_id": "x",
            "customer": "B",
            "intent": "Upgrade",
            "items": ["plan", " PLAN ", "", "invoice"],
            "confidence": 0.5,
        },
    )
    persona = env.state()["personas"]["x"]
    assert persona["intent_keywords"] == ["upgrade"] and persona["outstanding"] == ["plan", "invoice"]
    ok(
        env,
        "open_conversation",
        {"conversation_id": "y", "customer": "C", "profile": "damaged_item", "patience": 0, "valence": 0.9},
    )
    persona = env.state()["personas"]["y"]
    assert persona["intent"] == "refund" and persona["patience"] == 0 and persona["valence"] == 0.9
    taken = refused(
        env, "open_conversation", {"conversation_id": "x", "customer": "B", "profile": "locked_out"}, "already_exists"
    )
    assert taken["field"] == "conversation_id" and taken["message"] == "conversation x already exists"
    refused(
        env, "open_conversation", {"conversation_id": "z", "customer": "B"}, "invalid_argument", "give a preset profile"
    )
    refused(env, "open_conversation", {"conversation_id": "z", "customer": "B", "intent": "x"}, "invalid_argument")
    error = refused(env, "open_conversation", {"conversation_id": "z", "customer": "B", "profile": "vip"}, "not_found")
    assert error["allowed"] == ["damaged_item", "double_charge", "late_parcel", "locked_out"]
    refused(
        env,
        "open_conversation",
        {"conversation_id": "z", "customer": "B", "intent": "x", "items": [" "]},
        "invalid_argument",
        "at least one",
    )
    refused(
        env,
        "open_conversation",
        {"conversation_id": "z", "customer": "B", "profile": "locked_out", "confidence": 1.2},
        "invalid_argument",
    )


def test_no_tool_reveals_the_hidden_persona() -> None:
    env = Environment("kettle_refund")
    secrets = ["return label", "money back", "the kettle arrived cracked"]
    outputs = [
        ok(env, "get_transcript", {"conversation_id": CHAT}),
        ok(env, "get_case_fields", {"conversation_id": CHAT}),
        ok(env, "list_conversations"),
        say(env, "Hello, how are you today?"),
    ]
    summary = ok(env, "summarize_conversation", {"conversation_id": CHAT})
    assert "outstanding" not in summary and summary["outstanding_count"] == 2
    for output in [*outputs, summary]:
        text = repr(output)
        assert not any(secret in text for secret in secrets), text
    assert "personas" not in repr(outputs) and "intent_keywords" not in repr(outputs)


# --------------------------------------------------------------------------- the analysis pipeline


@pytest.mark.parametrize(
    ("text", "signals", "confidence", "valence"),
    [
        ("Just to confirm, you need help with an order?", ["confirmation"], 0.3 + TUNING["confirm_step"], -0.1),
        ("Let me look at your refund.", ["intent"], 0.3 + TUNING["intent_step"], -0.1),
        (
            "Could you clarify what happened?",
            ["clarification", "no_progress"],
            0.3 - TUNING["clarify_step"],
            -0.1 - TUNING["clarify_drop"] - TUNING["idle_drop"],
        ),
        (
            "I'm so sorry about that.",
            ["empathy", "no_progress"],
            0.3,
            -0.1 + TUNING["empathy_lift"] - TUNING["idle_drop"],
        ),
        ("That is our policy.", ["negative", "no_progress"], 0.3, -0.1 - TUNING["negative_drop"] - TUNING["idle_drop"]),
        ("One moment.", ["no_progress"], 0.3, -0.1 - TUNING["idle_drop"]),
        (
            "So you want your MONEY BACK, is that right?",
            ["confirmation", "intent"],
            0.3 + TUNING["confirm_step"] + TUNING["intent_step"],
            -0.1,
        ),
    ],
)
def test_keyword_analysis_moves_confidence_and_mood(
    text: str, signals: list[str], confidence: float, valence: float
) -> None:
    env = Environment("kettle_refund")
    exchange = say(env, text)
    delta = exchange["delta"]
    assert delta["signals"] == signals
    assert delta["confidence_before"] == 0.3 and delta["confidence_after"] == round(confidence, 2)
    assert delta["valence_before"] == -0.1 and delta["valence_after"] == round(valence, 2)
    expected_trend = (
        "improving" if delta["valence_after"] > -0.1 else "deteriorating" if delta["valence_after"] < -0.1 else "stable"
    )
    assert delta["trend"] == expected_trend
    assert delta["mood"] == mood_of(delta["valence_after"])
    persona = env.state()["personas"][CHAT]
    assert (persona["confidence"], persona["valence"], persona["trend"]) == (
        delta["confidence_after"],
        delta["valence_after"],
        delta["trend"],
    )


def test_confidence_and_valence_are_clamped() -> None:
    env = Environment("kettle_refund")
    for _ in range(5):
        say(env, "So you want a refund, is that right? I'm sorry.")
    persona = env.state()["personas"][CHAT]
    assert persona["confidence"] == 1.0
    env = Environment("kettle_refund")
    valences = [say(env, "Calm down, that is our policy.")["delta"]["valence_after"] for _ in range(4)]
    assert valences == [-0.4, -0.7, -1.0, -1.0]  # -0.3 a turn, floored at -1
    # at the floor the mood still counts as deteriorating, so patience (3) runs out
    assert env.state()["personas"][CHAT]["trend"] == "deteriorating"
    assert env.state()["conversations"][CHAT]["status"] == "escalated"


def test_resolution_language_moves_named_items_to_confirmed() -> None:
    env = Environment("kettle_refund")
    assert (
        say(env, "The refund and the return label are coming.")["delta"]["newly_confirmed"] == []
    )  # no resolution word
    assert say(env, "Everything has been processed.")["delta"]["newly_confirmed"] == []  # no item named
    exchange = say(env, "Your REFUND has been issued.")
    assert exchange["delta"]["newly_confirmed"] == ["refund"]
    persona = env.state()["personas"][CHAT]
    assert persona["confirmed"] == ["refund"] and persona["outstanding"] == ["return label"]
    assert (
        exchange["delta"]["changed"]["last_resolved"] == "refund" and exchange["delta"]["changed"]["open_items"] == "1"
    )
    assert exchange["delta"]["valence_after"] > exchange["delta"]["valence_before"]


def test_session_resolves_only_with_nothing_outstanding_and_enough_confidence() -> None:
    env = Environment("kettle_refund")
    first = say(env, "Your refund is processed and the return label sent.")
    assert first["delta"]["newly_confirmed"] == ["refund", "return label"]
    assert first["status"] == "active"  # confidence 0.4 < threshold
    assert first["delta"]["confidence_after"] < TUNING["resolve_threshold"]
    assert first["reply"] in WORLD["unsure_replies"]
    second = say(env, "So you want a refund, is that right?")
    assert second["status"] == "active"
    third = say(env, "To confirm: your money back is on its way.")
    assert third["status"] == "resolved" and third["delta"]["confidence_after"] >= TUNING["resolve_threshold"]
    assert third["reply"] in WORLD["resolved_replies"]
    assert third["delta"]["changed"]["intent_status"] == "confirmed"
    refused(env, "reply_to_customer", {"conversation_id": CHAT, "text": "Anything else?"}, "invalid_state", "resolved")


def test_patience_threshold_forces_escalation() -> None:
    env = Environment("kettle_refund")
    patience = env.state()["personas"][CHAT]["patience"]
    for turn in range(1, patience + 1):
        exchange = say(env, "Please hold.")
        assert exchange["delta"]["trend"] == "deteriorating" and exchange["status"] == "active"
        assert env.state()["personas"][CHAT]["strikes"] == turn
    assert exchange["reply"].startswith(("Last chance", "One more runaround"))  # convergence pressure
    assert env.state()["case_fields"][CHAT]["escalation_risk"] == "high"
    final = say(env, "Please hold.")
    assert final["status"] == "escalated" and final["reply"] in WORLD["escalated_replies"]
    conversation = env.state()["conversations"][CHAT]
    assert (
        conversation["escalation_reason"]
        == f"patience exhausted: the mood deteriorated on {patience + 1} turns (patience {patience})"
    )
    refused(env, "reply_to_customer", {"conversation_id": CHAT, "text": "Sorry!"}, "invalid_state", "escalated")


def test_improving_turns_do_not_count_against_patience() -> None:
    env = Environment("impatient_gold_customer")
    say(env, "Sorry, let me check your password.", "c-2001")
    say(env, "Thanks for waiting.", "c-2001")
    persona = env.state()["personas"]["c-2001"]
    assert persona["strikes"] == 0 and env.state()["conversations"]["c-2001"]["status"] == "active"


# --------------------------------------------------------------------------- deterministic replies


def expected_reply(env: Environment, text: str) -> str:
    """Replay the reply rule on a copy of the session: bank by outcome and mood, template
    index = FNV-1a("<text>#<turn>") mod bank size, placeholders filled."""
    probe = Environment(env.state())
    exchange = say(probe, text)
    persona = probe.state()["personas"][CHAT]
    status, signals = exchange["status"], exchange["delta"]["signals"]
    if status == "escalated":
        bank = WORLD["escalated_replies"]
    elif status == "resolved":
        bank = WORLD["resolved_replies"]
    elif persona["strikes"] == persona["patience"] and persona["trend"] == "deteriorating":
        bank = WORLD["last_chance_replies"]
    elif "clarification" in signals:
        bank = WORLD["clarify_replies"]
    elif not persona["outstanding"]:
        bank = WORLD["unsure_replies"]
    else:
        bank = WORLD["replies"][mood_of(persona["valence"])]
    template = bank[fnv1a(f"{text}#{exchange['turn']}") % len(bank)]
    item = persona["outstanding"][0] if persona["outstanding"] else "request"
    return template.replace("{item}", item).replace("{hint}", persona["hint"])


@pytest.mark.parametrize(
    "texts",
    [
        ["One moment please.", "One moment please.", "Still checking."],
        ["Could you clarify?", "What exactly is broken?"],
        ["Sorry! So you want a refund?", "Your refund is issued.", "The return label is sent."],
    ],
)
def test_replies_come_from_the_mood_bank_by_stable_hash(texts: list[str]) -> None:
    env = Environment("kettle_refund")
    for text in texts:
        expected = expected_reply(env, text)
        assert say(env, text)["reply"] == expected


def test_same_message_same_turn_same_reply_across_sessions() -> None:
    env = Environment()
    for chat in ("a", "b"):
        ok(env, "open_conversation", {"conversation_id": chat, "customer": chat, "profile": "damaged_item"})
    assert say(env, "Hold on.", "a") == {**say(env, "Hold on.", "b"), "session_id": "a"}  # a record field: not renamed
    assert (
        WORLD["replies"]["annoyed"][fnv1a("Hold on.#1") % 2].replace("{item}", "refund")
        == env.state()["conversations"]["a"]["last_customer_message"]
    )


# --------------------------------------------------------------------------- history, context, summary


def test_history_retrieval() -> None:
    env = Environment("kettle_refund")
    say(env, "Hello Dana.")
    say(env, "Let me check.")
    history = ok(env, "get_transcript", {"conversation_id": CHAT})
    assert [(m["turn"], m["role"]) for m in history] == [
        (0, "customer"),
        (1, "agent"),
        (1, "customer"),
        (2, "agent"),
        (2, "customer"),
    ]
    assert [m["text"] for m in ok(env, "get_transcript", {"conversation_id": CHAT, "role": "agent"})] == [
        "Hello Dana.",
        "Let me check.",
    ]
    assert ok(env, "get_transcript", {"conversation_id": CHAT, "last": 1})[0]["role"] == "customer"
    assert all(m["mood"] is None for m in history if m["role"] == "agent")
    refused(env, "get_transcript", {"conversation_id": "c-0"}, "not_found")
    refused(env, "get_transcript", {"conversation_id": CHAT, "last": 0}, "invalid_argument")


def test_manual_context_overrides() -> None:
    env = Environment("kettle_refund")
    change = ok(env, "set_case_field", {"conversation_id": CHAT, "key": "tier", "value": "gold"})
    assert (
        change["previous"] is None and change["context"]["tier"] == "gold" and change["context"]["order_id"] == "A-1042"
    )
    assert (
        ok(env, "set_case_field", {"conversation_id": CHAT, "key": "mood", "value": "delighted"})["previous"]
        == "neutral"
    )
    exchange = say(env, "Please hold.")
    assert exchange["delta"]["changed"] == {"mood": "annoyed", "trend": "deteriorating"}  # derived keys are re-derived
    fields = ok(env, "get_case_fields", {"conversation_id": CHAT})
    assert fields["tier"] == "gold" and fields["mood"] == "annoyed"
    removed = ok(env, "set_case_field", {"conversation_id": CHAT, "key": "tier"})
    assert removed["previous"] == "gold" and removed["value"] is None and "tier" not in removed["context"]
    refused(env, "set_case_field", {"conversation_id": CHAT, "key": "tier"}, "not_found", "no context variable tier")
    refused(env, "set_case_field", {"conversation_id": CHAT, "key": "Bad Key", "value": "x"}, "invalid_argument")
    system = ok(env, "get_transcript", {"conversation_id": CHAT, "role": "system"})
    assert [m["text"] for m in system] == [
        "context tier set by hand",
        "context mood set by hand",
        "context tier removed by hand",
    ]


def test_summary_with_trajectory_analysis() -> None:
    env = Environment("kettle_refund")
    texts = [
        "Could you clarify what happened?",
        "I'm sorry. So you want a refund, is that right?",
        "Your refund has been processed.",
    ]
    deltas = [say(env, text)["delta"] for text in texts]
    summary = ok(env, "summarize_conversation", {"conversation_id": CHAT})
    assert summary["confidence_path"] == [0.3] + [d["confidence_after"] for d in deltas]
    assert summary["mood_path"] == ["neutral"] + [d["mood"] for d in deltas]
    assert summary["improving_turns"] == sum(d["trend"] == "improving" for d in deltas)
    assert summary["deteriorating_turns"] == sum(d["trend"] == "deteriorating" for d in deltas)
    valences = [-0.1] + [d["valence_after"] for d in deltas]
    assert summary["lowest_valence"] == min(valences) and summary["lowest_turn"] == valences.index(min(valences))
    assert summary["overall_trend"] == "improving" and summary["outcome"] == "in progress"
    assert summary["confirmed"] == ["refund"] and summary["outstanding_count"] == 1
    assert summary["analysis"].startswith("in progress after 3 turns; confidence 0.3 -> 0.55;")


def test_escalate_and_close_by_hand() -> None:
    env = Environment("kettle_refund")
    assert (
        ok(env, "escalate_to_tier2", {"conversation_id": CHAT, "reason": "asks for a supervisor"})["status"]
        == "escalated"
    )
    refused(env, "escalate_to_tier2", {"conversation_id": CHAT, "reason": "again"}, "invalid_state")
    ok(env, "set_case_field", {"conversation_id": CHAT, "key": "handover", "value": "tier 2"})  # allowed until closed
    assert (
        ok(env, "close_conversation", {"conversation_id": CHAT, "note": "handed over"})["closing_note"] == "handed over"
    )
    refused(env, "close_conversation", {"conversation_id": CHAT}, "invalid_state", "already closed")
    refused(env, "set_case_field", {"conversation_id": CHAT, "key": "x", "value": "y"}, "invalid_state", "closed")
    assert ok(env, "summarize_conversation", {"conversation_id": CHAT})["outcome"] == "closed with items outstanding"


# --------------------------------------------------------------------------- the domain's own additions


def test_refunds_are_guarded_and_noted_in_the_layers() -> None:
    env = Environment("kettle_refund")
    refused(
        env,
        "issue_refund",
        {"conversation_id": CHAT, "order_id": "C-3301", "amount": 5.0},
        "forbidden",
        "belongs to Lee Park",
    )
    refused(
        env,
        "issue_refund",
        {"conversation_id": CHAT, "order_id": "A-1042", "amount": 50.0},
        "invalid_argument",
        "exceeds",
    )
    refused(env, "issue_refund", {"conversation_id": CHAT, "order_id": "A-1042", "amount": 0}, "invalid_argument")
    refund = ok(env, "issue_refund", {"conversation_id": CHAT, "order_id": "A-1042", "amount": 49.99})
    assert refund == {
        "id": 1,
        "order_id": "A-1042",
        "conversation_id": CHAT,
        "amount": 49.99,
        "at": "2025-04-14T10:00:00",
    }
    state = env.state()
    assert state["orders"]["A-1042"]["status"] == "refunded" and state["case_fields"][CHAT]["refund_id"] == "1"
    assert state["transcripts"][CHAT][-1]["role"] == "system"
    refused(
        env,
        "issue_refund",
        {"conversation_id": CHAT, "order_id": "A-1042", "amount": 1.0},
        "invalid_state",
        "already refunded",
    )
    refused(
        Environment("impatient_gold_customer"),
        "issue_refund",
        {"conversation_id": "c-0990", "order_id": "C-3301", "amount": 1.0},
        "invalid_state",
        "closed",
    )


def test_task_solution_reaches_the_verified_state() -> None:
    env = Environment("kettle_refund")
    ok(env, "issue_refund", {"conversation_id": CHAT, "order_id": "A-1042", "amount": 49.99})
    say(env, "So you want a refund, is that right? It has been refunded in full and a return label sent.")
    final = say(env, "To confirm, your money back is on its way.")
    assert final["status"] == "resolved"
    assert env.state()["personas"][CHAT]["confirmed"] == ["refund", "return label"]
    writes = {name for name, spec in TOOL_SPECS.items() if spec.writes}
    assert writes == {
        "open_conversation", "reply_to_customer", "set_case_field", "escalate_to_tier2", "close_conversation", "issue_refund",
    }  # fmt: skip


# --------------------------------------------------------------------------- the prototype on its own


def test_prototype_compiles_and_its_own_tests_pass(tmp_path: Path) -> None:
    """The prototype spec is a complete environment too: compiled on its own, its static
    and dynamic checks (its own tests, two scenarios, the generic invariants) pass."""
    root = Path(__file__).resolve().parents[2]
    spec = root / "specs" / "prototypes" / "human_interaction.envspec"
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", str(spec), "-o", str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "human_interaction.envspec" in line)
    columns = row.split()
    static, dynamic = columns[columns.index("pass")], columns[columns.index("pass") + 1]
    assert (static, dynamic) == ("pass", "pass") and "failed" not in row, row
