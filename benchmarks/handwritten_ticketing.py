"""A hand-written ticketing environment: the baseline for benchmarks/call_overhead.py.

This is what a competent engineer would write by hand for the same behaviour as
specs/it_operations/ticketing.envspec (which extends specs/prototypes/transactional_workspace.envspec),
in the style of the BFCL executable classes: the state is a dict, every tool is a method
that returns a dict, arguments get basic checks, and `call(name, args)` dispatches with
`getattr(self, name)(**args)`, turning refusals into the same
`{"error": {"kind": ..., "message": ..., ...}}` convention as the generated code.

Same rules, same error kinds and details as the spec. What it deliberately does the
cheap way (as people do by hand):

- atomicity comes from checking everything before the first write, not from a journal;
- results are detached with a shallow `dict(ticket)` (a ticket holds only scalars, so
  that is a complete copy), not with a generic deep copy;
- argument checks are inline `isinstance`/range tests; unknown or missing arguments
  surface as the `TypeError` that `**args` raises.
- a new ticket's id is the counter; the prototype's `issue_id()` also scans the
  existing ids (so that a seeded state cannot collide), which gives the same ids for
  every state the counter is kept right in, as in the benchmark's scenario.

Not generated, not shipped: it only exists to be measured against. The benchmark checks
that it returns the same JSON as the generated environment over its whole call mix.
"""

from __future__ import annotations

import copy
from typing import Any

USERS = {
    "alice": "alice-pass",
    "bob": "bob-pass",
    "carol": "carol-pass",
    "dmitri": "dmitri-pass",
    "marta": "marta-pass",
    "martin": "martin-pass",
    "sofia": "sofia-pass",
    "yusuf": "yusuf-pass",
}
AGENTS = ["alice", "bob", "dmitri"]
STATUSES = ("open", "in_progress", "resolved", "closed")
CATEGORIES = ("hardware", "software", "network", "access", "other")
RANK = {"open": 0, "in_progress": 1, "resolved": 2, "closed": 3}
TOOLS = frozenset(
    {
        "login",
        "logout",
        "whoami",
        "create_ticket",
        "get_ticket",
        "update_ticket",
        "assign_ticket",
        "set_status",
        "resolve_ticket",
        "close_ticket",
        "list_tickets",
        "categorize_ticket",
        "queue_by_category",
    }
)
INTERNAL = "The tool failed because of an internal problem; nothing was changed."


class ToolError(Exception):
    def __init__(self, kind: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"kind": self.kind, "message": self.message, **self.details}}


def _bad(name: str, what: str) -> ToolError:
    return ToolError("invalid_argument", f"`{name}` must be {what}", field=name)


def _check_str(name: str, value: Any, min_length: int = 0, max_length: int | None = None) -> None:
    if not isinstance(value, str):
        raise _bad(name, "a string")
    if len(value) < min_length or (max_length is not None and len(value) > max_length):
        raise _bad(name, f"between {min_length} and {max_length} characters")


def _check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> None:
    if type(value) is not int:
        raise _bad(name, "an integer")
    if (low is not None and value < low) or (high is not None and value > high):
        raise _bad(name, f"between {low} and {high}")


def _check_enum(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ToolError(
            "invalid_argument", f"`{name}` must be one of {', '.join(allowed)}", field=name, allowed=list(allowed)
        )


class TicketingAPI:
    """Support ticketing workspace, written by hand."""

    def __init__(self, scenario: dict[str, Any] | None = None) -> None:
        self.state: dict[str, Any] = {
            "tickets": {},
            "next_ticket_id": 1,
            "current_user": None,
            "audit_log": [],
            "clock": "2025-01-01T09:00:00",
        }
        if scenario:
            self.state.update(copy.deepcopy(scenario))

    # ------------------------------------------------------------------ dispatch

    def call(self, name: str, args: dict[str, Any] | None = None) -> Any:
        if name not in TOOLS:
            return {"error": {"kind": "not_found", "message": f"there is no tool `{name}`", "allowed": sorted(TOOLS)}}
        try:
            return getattr(self, name)(**(args or {}))
        except ToolError as error:
            return error.to_dict()
        except TypeError as error:  # unknown or missing arguments
            return {"error": {"kind": "invalid_argument", "message": str(error)}}
        except Exception:
            return {"error": {"kind": "internal", "message": INTERNAL}}

    # ------------------------------------------------------------------ helpers

    def _user(self) -> str:
        user = self.state["current_user"]
        if user is None:
            raise ToolError("unauthenticated", "no user is logged in; call login first")
        return user

    def _ticket(self, ticket_id: Any) -> dict[str, Any]:
        _check_int("ticket_id", ticket_id)
        tickets = self.state["tickets"]
        if ticket_id not in tickets:
            raise ToolError(
                "not_found",
                f"ticket {ticket_id} does not exist",
                entity="ticket",
                field="ticket_id",
                allowed=sorted(tickets),
            )
        return tickets[ticket_id]

    def _open_ticket(self, ticket_id: Any) -> dict[str, Any]:
        ticket = self._ticket(ticket_id)
        if ticket["status"] == "closed":
            raise ToolError(
                "invalid_state", f"ticket {ticket_id} is closed", entity="ticket", field="status", current="closed"
            )
        return ticket

    def _audit(self, tool: str, action: str, entity: str, detail: str = "") -> None:
        log = self.state["audit_log"]
        log.append(
            {
                "seq": len(log) + 1,
                "at": self.state["clock"],
                "tool": tool,
                "action": action,
                "entity": entity,
                "detail": detail,
            }
        )

    # ------------------------------------------------------------------ tools

    def login(self, username: str, password: str) -> bool:
        _check_str("username", username, 1)
        _check_str("password", password, 1)
        if username not in USERS:
            raise ToolError(
                "not_found", f"unknown user {username}", entity="user", field="username", allowed=sorted(USERS)
            )
        if USERS[username] != password:
            raise ToolError("unauthenticated", "wrong password", field="password")
        self.state["current_user"] = username
        self._audit("login", "login", username)
        return True

    def logout(self) -> bool:
        user = self._user()
        self.state["current_user"] = None
        self._audit("logout", "logout", user)
        return True

    def whoami(self) -> str | None:
        return self.state["current_user"]

    def create_ticket(self, title: str, description: str = "", priority: int = 3) -> dict[str, Any]:
        _check_str("title", title, 1, 120)
        _check_str("description", description)
        _check_int("priority", priority, 1, 5)
        user = self._user()
        state = self.state
        ticket = {
            "id": state["next_ticket_id"],
            "title": title,
            "description": description,
            "category": "other",
            "priority": priority,
            "status": "open",
            "created_by": user,
            "assignee": None,
            "resolution": None,
            "created_at": state["clock"],
            "updated_at": state["clock"],
        }
        state["tickets"][ticket["id"]] = ticket
        state["next_ticket_id"] += 1
        self._audit("create_ticket", "create", f"ticket {ticket['id']}")
        return dict(ticket)

    def get_ticket(self, ticket_id: int) -> dict[str, Any]:
        self._user()
        return dict(self._ticket(ticket_id))

    def update_ticket(
        self, ticket_id: int, title: str | None = None, description: str | None = None, priority: int | None = None
    ) -> dict[str, Any]:
        if title is not None:
            _check_str("title", title)
        if description is not None:
            _check_str("description", description)
        if priority is not None:
            _check_int("priority", priority, 1, 5)
        self._user()
        ticket = self._open_ticket(ticket_id)
        if title is None and description is None and priority is None:
            raise ToolError(
                "invalid_argument", "give at least one field to update", allowed=["title", "description", "priority"]
            )
        if title is not None and not title:
            raise ToolError("invalid_argument", "title must not be empty", field="title")
        if title is not None:
            ticket["title"] = title
        if description is not None:
            ticket["description"] = description
        if priority is not None:
            ticket["priority"] = priority
        ticket["updated_at"] = self.state["clock"]
        self._audit("update_ticket", "update", f"ticket {ticket_id}")
        return dict(ticket)

    def assign_ticket(self, ticket_id: int, assignee: str) -> dict[str, Any]:
        _check_str("assignee", assignee)
        self._user()
        ticket = self._ticket(ticket_id)
        if assignee not in AGENTS:
            raise ToolError(
                "not_found", f"{assignee} is not an agent", entity="agent", field="assignee", allowed=list(AGENTS)
            )
        if RANK[ticket["status"]] >= 2:
            raise ToolError(
                "invalid_state",
                f"ticket {ticket_id} is already {ticket['status']}",
                entity="ticket",
                field="status",
                current=ticket["status"],
            )
        ticket["assignee"] = assignee
        ticket["updated_at"] = self.state["clock"]
        self._audit("assign_ticket", "assign", f"ticket {ticket_id}", assignee)
        return dict(ticket)

    def set_status(self, ticket_id: int, status: str) -> dict[str, Any]:
        _check_enum("status", status, STATUSES)
        self._user()
        ticket = self._ticket(ticket_id)
        current = ticket["status"]
        if current == "closed":
            raise ToolError(
                "invalid_state",
                f"ticket {ticket_id} is already closed",
                entity="ticket",
                field="status",
                current=current,
            )
        if status == "resolved":
            raise ToolError(
                "invalid_argument", "use resolve_ticket to resolve; it records the resolution", field="status"
            )
        if RANK[status] <= RANK[current]:
            raise ToolError(
                "invalid_state",
                f"ticket {ticket_id} cannot move from {current} back to {status}",
                entity="ticket",
                field="status",
                current=current,
                allowed=[s for s in ("in_progress", "closed") if RANK[s] > RANK[current]],
            )
        ticket["status"] = status
        ticket["updated_at"] = self.state["clock"]
        self._audit("set_status", "status", f"ticket {ticket_id}", status)
        return dict(ticket)

    def resolve_ticket(self, ticket_id: int, resolution: str) -> dict[str, Any]:
        _check_str("resolution", resolution, 1)
        self._user()
        ticket = self._ticket(ticket_id)
        if RANK[ticket["status"]] >= 2:
            raise ToolError(
                "invalid_state",
                f"ticket {ticket_id} is already {ticket['status']}",
                entity="ticket",
                field="status",
                current=ticket["status"],
            )
        ticket["status"] = "resolved"
        ticket["resolution"] = resolution
        ticket["updated_at"] = self.state["clock"]
        self._audit("resolve_ticket", "resolve", f"ticket {ticket_id}")
        return dict(ticket)

    def close_ticket(self, ticket_id: int) -> dict[str, Any]:
        self._user()
        ticket = self._ticket(ticket_id)
        if ticket["status"] == "closed":
            raise ToolError(
                "invalid_state",
                f"ticket {ticket_id} is already closed",
                entity="ticket",
                field="status",
                current="closed",
            )
        ticket["status"] = "closed"
        ticket["updated_at"] = self.state["clock"]
        self._audit("close_ticket", "close", f"ticket {ticket_id}")
        return dict(ticket)

    def list_tickets(self, status: str | None = None, mine_only: bool = False, limit: int = 50) -> list[dict[str, Any]]:
        if status is not None:
            _check_enum("status", status, STATUSES)
        if type(mine_only) is not bool:
            raise _bad("mine_only", "true or false")
        _check_int("limit", limit, 1, 500)
        user = self._user()
        found = [
            t
            for t in self.state["tickets"].values()
            if (status is None or t["status"] == status) and (not mine_only or t["created_by"] == user)
        ]
        found.sort(key=lambda t: t["id"])
        return [dict(t) for t in found[:limit]]

    def categorize_ticket(self, ticket_id: int, category: str) -> dict[str, Any]:
        _check_enum("category", category, CATEGORIES)
        self._user()
        ticket = self._open_ticket(ticket_id)
        ticket["category"] = category
        ticket["updated_at"] = self.state["clock"]
        self._audit("categorize_ticket", "categorize", f"ticket {ticket_id}", category)
        return dict(ticket)

    def queue_by_category(self) -> dict[str, int]:
        self._user()
        counts: dict[str, int] = {}
        for ticket in self.state["tickets"].values():
            if ticket["status"] != "closed":
                counts[ticket["category"]] = counts.get(ticket["category"], 0) + 1
        return counts
