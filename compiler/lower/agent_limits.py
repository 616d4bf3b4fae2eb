"""The limits of the JSON an agent may send a generated package: written into every
environment.py (`MAX_DEPTH`, `MAX_INT`), where `check_json` refuses what passes them as
`invalid_argument` before a tool runs (docs/generated-package.md#agent-json-limits)."""

from __future__ import annotations

from compiler.ir.recursion import DEPTH_LIMIT

MAX_DEPTH = DEPTH_LIMIT
"""Lists and objects nested in one argument, at most: the bound of a value holding a
recursive record (compiler/ir/recursion.py), so every value a state field may hold can
also be passed as an argument, and nothing deeper reaches a tool."""
MAX_INT_DIGITS = 300
"""Integer arguments have at most this many digits (about a float's range): room for a
tool's arithmetic, where an integer of thousands of digits soon passes the 4,300 digits
Python writes as text, and the call could not be answered."""
MAX_INT = 10**MAX_INT_DIGITS - 1
CALL_TIMEOUT_S = 10.0
"""Seconds one tool call may run before the package stops it (the domain error `timeout`,
nothing changed): the default of every harness, `envc serve --call-timeout`, `envc
rollout --call-timeout`, the in-process episodes and the TRL and VERL adapters, so an
endless loop in a body ends the same way wherever the call runs."""


def context() -> dict[str, str]:
    """The limits as the template writes them."""
    return {"max_depth": str(MAX_DEPTH), "max_int": f"10**{MAX_INT_DIGITS} - 1", "call_timeout_s": repr(CALL_TIMEOUT_S)}
