"""How long a call may run in the server: the clocks `Environment.call` reads.

A call first runs on the event loop for `INLINE_SLICE`; past it the package rolls the
call back (`MoveToWorker` passes through `Environment.call`) and it runs again on a
worker thread, under the session's time limit (`expiry`). A generated body stops itself
at the limit; `CALL_GRACE` is how long a body that counts no steps is waited for past it
(docs/serving.md, "Limits, vanished clients, time limits").
"""

from __future__ import annotations

import time
from collections.abc import Callable

INLINE_SLICE = 0.002
"""Seconds a call runs on the event loop before it moves to a worker thread (rolled back
and run again there): a cheap call costs no thread hop, a long one stalls no session."""
CALL_GRACE = 1.0
"""Seconds a call is waited for past its time limit before its session is given up. A
generated body stops itself at the limit (the domain error `timeout`: loops, comprehensions,
recursion and the pattern matcher count their steps); only a python body, which counts
none, or one step of C work on huge data can run on past it (docs/serving.md)."""


class MoveToWorker(BaseException):
    """A call on the event loop took its slice: the package rolls it back (a BaseException
    passes through `Environment.call`), and it runs again on a worker thread."""


def inline_clock(deadline: float) -> Callable[[], bool]:
    def expired() -> bool:
        if time.monotonic() > deadline:
            raise MoveToWorker
        return False

    return expired


def expiry(limit: float | None) -> Callable[[], bool] | None:
    """The clock a package's `Environment.call` reads (`expired`): true from `limit`
    seconds after now on; None for no limit."""
    if limit is None:
        return None
    deadline = time.monotonic() + limit
    return lambda: time.monotonic() > deadline
