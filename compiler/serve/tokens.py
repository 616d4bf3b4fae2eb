"""Who may call a server: a bearer token, compared in constant time, and whether a host
is reachable from this machine only (off loopback a server needs a token). `envc serve`
guards the trainer's routes with it, `envc mcp --transport http` every request
(docs/serving.md#threat-model)."""

from __future__ import annotations

import hmac
import ipaddress
import os

from starlette.types import ASGIApp, Receive, Scope, Send

from compiler.serve.deadlines import send_error


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (a name other than localhost
    may resolve anywhere, so it counts as reachable from others)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_from(variable: str | None) -> str | None:
    """The token in environment variable `variable` (None: no token asked for).
    ValueError when the variable is unset or empty: a typo must not leave a server open."""
    if variable is None:
        return None
    token = os.environ.get(variable, "")
    if not token:
        raise ValueError(f"${variable} is not set (or empty)")
    return token


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an `Authorization` header carries `Bearer <token>` (constant time)."""
    return hmac.compare_digest((authorization or "").encode(), f"Bearer {token}".encode())


class BearerToken:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`,
    else 401 with a JSON error (and nothing of the app runs); lifespan passes through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers", [])).get(b"authorization", b"").decode("latin-1")
            if not bearer_matches(given, self.token):
                await send_error(send, 401, "unauthorized", "this server needs `Authorization: Bearer <token>`")
                return
        await self.app(scope, receive, send)
