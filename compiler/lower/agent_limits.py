"""The limits of the JSON an agent may send a generated package: written into every
environment.py (`MAX_DEPTH`, `MAX_INT`), where `check_json` and `conform` refuse what
passes them as `invalid_argument` before a tool runs (docs/generated-package.md)."""

from __future__ import annotations

MAX_DEPTH = 64
"""Lists and objects nested in one `json` value of an argument, at most."""
MAX_INT = 2**63 - 1
"""The largest magnitude of an integer argument: what a 64-bit peer reads back."""


def context() -> dict[str, str]:
    """The limits as the template writes them."""
    return {"max_depth": str(MAX_DEPTH), "max_int": "2**63 - 1" if MAX_INT == 2**63 - 1 else str(MAX_INT)}
