"""Read deadlines of `envc serve`: a client that sends a request slowly, or half of one,
is cut off instead of holding a connection (and its memory) for ever.

uvicorn bounds neither: its keep-alive timer (`timeout_keep_alive`, 5 s) runs only
between requests and stops at a request's first byte, and a new connection has none,
so a client that opens a connection and trickles header bytes (slowloris) or a body is
held as long as it likes. Two deadlines close that:

- **headers** (`header_protocol`): uvicorn's h11 protocol with a timer from the moment
  a connection opens or a request's first byte arrives until its headers are complete;
  past it the connection gets a 408 with a JSON error and is closed. (Header size is
  bounded by h11: 16 KiB, `h11_max_incomplete_event_size`.)
- **body** (`BodyDeadline`): an ASGI middleware that reads a request's whole body
  before the app sees it, within a deadline and a size limit: 408 `request_timeout`
  past the one, 413 `too_large` past the other, both JSON errors, for every route
  including the mounted MCP app. The app then reads the body from memory.

docs/serving.md#threat-model lists the defaults.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:  # uvicorn is imported when a server starts, not when `envc` does
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0
"""Seconds from a connection's opening (or a request's first byte) to its complete headers."""
BODY_TIMEOUT = 30.0
"""Seconds to receive a whole request body once its headers are in."""


def _json_response(status: int, reason: str, kind: str, message: str) -> bytes:
    """A whole HTTP/1.1 response that closes the connection, as raw bytes."""
    body = json.dumps({"error": {"kind": kind, "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def header_protocol(seconds: float | None) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request headers are not
    complete `seconds` after it opened or after the request's first byte (None: never)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                if self._deadline is None:  # the first bytes of a request: its headers have `seconds`
                    self._arm()
            else:  # headers complete (a body, an upgrade or the next cycle follow): not ours to time
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._disarm()  # idle between requests: uvicorn's keep-alive timeout decides

        def _arm(self) -> None:
            if seconds is not None:
                self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            if self.conn.our_state is h11.IDLE:  # nothing of a response sent on this cycle
                message = f"the request headers did not arrive within {seconds} s"
                self.transport.write(_json_response(408, "Request Timeout", "request_timeout", message))
            self.transport.close()

    return HeaderDeadline


class _BodyTooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


class BodyDeadline:
    """Reads each HTTP request's body, at most `max_bytes` within `seconds`, before the
    app runs; the app receives it whole (and later messages, a disconnect, as sent)."""

    def __init__(self, app: ASGIApp, seconds: float | None, max_bytes: int) -> None:
        self.app = app
        self.seconds = seconds
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            async with asyncio.timeout(self.seconds):
                body = await self._read(receive)
        except TimeoutError:
            message = f"the request body did not arrive within {self.seconds} s"
            await send_error(send, 408, "request_timeout", message)
            return
        except _BodyTooLarge:
            await send_error(send, 413, "too_large", f"the body is larger than {self.max_bytes} bytes")
            return
        except _Disconnected:
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise _BodyTooLarge()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` giving the body read already, then what the client sends later."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def send_error(send: Send, status: int, kind: str, message: str) -> None:
    body = json.dumps({"error": {"kind": kind, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def server_config(app: ASGIApp, *, header_timeout: float | None = HEADER_TIMEOUT, **options: Any) -> uvicorn.Config:
    """uvicorn's config for `envc serve`'s app (the command and the tests start the same
    server): the header deadline's protocol, and `options` as uvicorn takes them."""
    import uvicorn

    return uvicorn.Config(app, http=header_protocol(header_timeout), **options)
