"""A real HTTP server on 127.0.0.1 that speaks the chat-completions protocol, with scripted replies.

Tests start one per test on a free port (`ChatServer()` as a context manager) and give it
the replies to send, in order: a completion (plain JSON or streamed as server-sent
events, as the client asks), an HTTP error with headers (429 with Retry-After), a body
that is not JSON, a delay before answering (a timeout), or a stream that trickles. Every
request is recorded (headers and JSON body) so tests can check what envc sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    """Sent as the body instead of a completion (malformed replies, error bodies)."""
    delay: float = 0.0
    """Seconds before anything is sent."""
    chunk_delay: float = 0.0
    """Seconds between streamed chunks."""
    pieces: int = 4
    """How many chunks a streamed content is split into."""
    model: str = "scripted-model"


def fenced(body: str) -> str:
    """A reply as a model writes it: a sentence, then the body in an envspec block."""
    return f"Here is the body.\n\n```envspec\n{body.rstrip()}\n```\n"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ChatServer:
    def __init__(self, replies: list[Reply] | Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.replies: list[Reply] = list(replies) if isinstance(replies, list) else []
        self.respond: Callable[[dict[str, Any]], Reply] | None = replies if callable(replies) else None
        self.requests: list[Recorded] = []
        self._guard = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        if self.respond is not None:
            return self.respond(body)
        with self._guard:
            if self.replies:
                return self.replies.pop(0)
        return Reply(status=500, raw=b'{"error": {"message": "no scripted reply left"}}')


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout test) breaks the pipe: that is expected."""


def _handler(owner: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with owner._guard:
                owner.requests.append(Recorded(self.path, dict(self.headers), body))
            reply = owner.next_reply(body)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.status != 200 or reply.raw is not None:
                self._send(reply.status, reply.raw or b'{"error": {"message": "scripted error"}}', reply.headers)
            elif body.get("stream"):
                self._stream(reply)
            else:
                self._send(200, json.dumps(_completion(reply)).encode(), reply.headers)

        def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: Reply) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            text = reply.content
            size = max(1, -(-len(text) // max(1, reply.pieces)))
            pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
            for piece in pieces:
                self._event(_chunk(reply, {"content": piece}, None))
                if reply.chunk_delay:
                    time.sleep(reply.chunk_delay)
            self._event(_chunk(reply, {}, "stop"))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _event(self, data: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

    return Handler


def _completion(reply: Reply) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": reply.model,
        "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chunk(reply: Reply, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": reply.model,
        "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
