"""The chat-completions provider: one request in, the model's text out, or a `ProviderError`.

Why the `openai` client: OpenAI, vLLM, Ollama and llama.cpp's server all speak its
protocol, so one client reaches all of them (`base_url`). envc does its own retries
instead of the client's, so that the policy is documented and tested here: 429, 408,
409, 5xx, timeouts and dropped connections are retried up to `retries` times, waiting
what `Retry-After` says when the server says it, else `backoff` seconds doubled per try
(capped at `max_backoff`; a server asking for longer is given up on). A whole request,
streamed reply included, has `timeout` seconds: a watchdog closes a stream that is
still trickling at the deadline, which a per-read timeout would never do.

Nothing but the configured endpoint is contacted: the HTTP client ignores proxy and
netrc settings from the environment (`trust_env=False`). The key is passed to the client
and nowhere else; every message that leaves this module goes through `redact`.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from compiler.llm.config import LLMConfig
from compiler.llm.config import api_key as configured_key
from compiler.llm.config import base_url as configured_base_url

if TYPE_CHECKING:
    import openai

ErrorKind = Literal["timeout", "rate_limited", "server", "http", "connection", "malformed", "config"]
RETRYABLE_STATUS = frozenset({408, 409, 429})
PLACEHOLDER_KEY = "no-key"
"""Sent when no key is set: local servers want none, and the openai client wants one."""


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """Everything that decides the reply: the lock keys fills by `sha()` of this."""

    model: str
    messages: tuple[Message, ...]
    sampling: tuple[tuple[str, Any], ...]
    """Sorted (name, value) pairs: temperature, max_tokens, seed (`LLMConfig.sampling`)."""
    attempt: int = 1
    """The repair attempt, from 1: hashed too, so a retry of the same prompt is another request."""

    def payload(self) -> dict[str, Any]:
        """The JSON body sent to the endpoint (without transport options like `stream`)."""
        return {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            **dict(self.sampling),
        }

    def sha(self) -> str:
        """sha256 of the canonical JSON of the payload and the attempt index."""
        canonical = json.dumps(
            {**self.payload(), "attempt": self.attempt}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def make_request(config: LLMConfig, messages: Sequence[Message], attempt: int = 1) -> ChatRequest:
    return ChatRequest(config.model, tuple(messages), tuple(sorted(config.sampling().items())), attempt)


@dataclass(frozen=True)
class Completion:
    """The reply, and what the server said about it (kept as provenance in the lock)."""

    text: str
    model: str = ""
    finish_reason: str = ""
    system_fingerprint: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    tries: int = 1


class ProviderError(Exception):
    """A request that failed for good (after its retries), with a redacted message."""

    def __init__(self, kind: ErrorKind, message: str, retry_after: float | None = None, tries: int = 1) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.retry_after = retry_after
        self.tries = tries

    @property
    def retryable(self) -> bool:
        return self.kind in ("timeout", "rate_limited", "server", "connection")


class Provider(Protocol):
    def complete(self, request: ChatRequest) -> Completion: ...


def redact(text: str, secret: str | None) -> str:
    """`text` with the key (if any) replaced, for every message that may be shown or logged."""
    return text.replace(secret, "[redacted]") if secret else text


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a `Retry-After` header: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if seconds == seconds else None


def retry_delay(config: LLMConfig, failed_tries: int, retry_after: float | None) -> float | None:
    """How long to wait before the next try, or None to give up (the server wants longer
    than `max_backoff`)."""
    if retry_after is not None:
        return retry_after if retry_after <= config.max_backoff else None
    return float(min(config.max_backoff, config.backoff * 2 ** (failed_tries - 1)))


class OpenAIProvider:
    """The `openai` client against `base_url`, created on first use (importing it costs
    time a build from the lock never spends)."""

    def __init__(
        self,
        config: LLMConfig,
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.sleep = sleep
        self.log = log or (lambda _message: None)
        self._key = configured_key(config)
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    def complete(self, request: ChatRequest) -> Completion:
        failed = 0
        while True:
            try:
                completion = self._once(request)
            except ProviderError as exc:
                failed += 1
                delay = retry_delay(self.config, failed, exc.retry_after) if exc.retryable else None
                if delay is None or failed > self.config.retries:
                    if exc.retryable and delay is None:
                        message = f"{exc} (the server asks to wait {exc.retry_after:g} s, more than max_backoff)"
                    else:
                        message = str(exc) + (f" (after {failed} tries)" if failed > 1 else "")
                    raise ProviderError(exc.kind, message, exc.retry_after, failed) from None
                self.log(f"{exc}; retrying in {delay:g} s")
                self.sleep(delay)
                continue
            return Completion(
                completion.text,
                completion.model,
                completion.finish_reason,
                completion.system_fingerprint,
                completion.usage,
                failed + 1,
            )

    def _client_once(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                import openai

                # The SDK's own HTTP client factory (`DefaultHttpxClient` before openai 3), so
                # envc needs no import of the HTTP library the SDK happens to use.
                http_client = getattr(openai, "DefaultHttpx2Client", None) or openai.DefaultHttpxClient
                self._client = openai.OpenAI(
                    api_key=self._key or PLACEHOLDER_KEY,
                    base_url=configured_base_url(self.config),
                    timeout=self.config.timeout,
                    max_retries=0,
                    http_client=http_client(trust_env=False, timeout=self.config.timeout),
                )
            return self._client

    @contextlib.contextmanager
    def openai_errors(self, timeout: float) -> Iterator[None]:
        """The openai client's exceptions as ProviderError (redacted), one rule for every
        request made through this provider (fills, drafts, rollouts)."""
        import openai

        try:
            yield
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except openai.APITimeoutError:
            raise ProviderError("timeout", f"no reply within {timeout:.3g} s") from None
        except openai.APIConnectionError as exc:
            raise ProviderError("connection", self._say(f"cannot reach the endpoint: {exc}")) from None
        except (openai.OpenAIError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ProviderError("malformed", self._say(f"unreadable reply: {type(exc).__name__}: {exc}")) from None

    def _once(self, request: ChatRequest) -> Completion:
        client = self._client_once()
        payload = request.payload()
        with self.openai_errors(self.config.timeout):
            if self.config.stream:
                return self._streamed(client, payload)
            response = client.chat.completions.create(**payload)
            if not response.choices:
                raise ProviderError("malformed", "the reply holds no choices: is this a chat-completions endpoint?")
            choice = response.choices[0]
            usage = response.usage.model_dump() if response.usage is not None else {}
            return Completion(
                choice.message.content or "",
                response.model or "",
                choice.finish_reason or "",
                response.system_fingerprint or "",
                {k: int(v) for k, v in usage.items() if isinstance(v, int)},
            )

    def _streamed(self, client: openai.OpenAI, payload: dict[str, Any]) -> Completion:
        """Read a streamed reply; past the deadline a watchdog closes the stream."""
        import openai

        expired = threading.Event()
        stream = client.chat.completions.create(**payload, stream=True)

        def expire() -> None:
            expired.set()
            stream.close()

        watchdog = threading.Timer(self.config.timeout, expire)
        watchdog.daemon = True
        watchdog.start()
        pieces: list[str] = []
        model = finish = fingerprint = ""
        chunks = 0
        try:
            for chunk in stream:
                chunks += 1
                model = chunk.model or model
                fingerprint = chunk.system_fingerprint or fingerprint
                for choice in chunk.choices or []:
                    if choice.delta is not None and choice.delta.content:
                        pieces.append(choice.delta.content)
                    finish = choice.finish_reason or finish
        except (openai.OpenAIError, OSError, ValueError) as exc:
            if expired.is_set():
                raise ProviderError("timeout", f"the reply did not finish within {self.config.timeout:g} s") from None
            raise ProviderError("connection", self._say(f"the stream broke off: {exc}")) from None
        finally:
            watchdog.cancel()
            stream.close()
        if expired.is_set():
            raise ProviderError("timeout", f"the reply did not finish within {self.config.timeout:g} s")
        if not chunks:
            raise ProviderError("malformed", "the reply is not a stream of completion chunks")
        return Completion("".join(pieces), model, finish, fingerprint)

    def _status_error(self, exc: openai.APIStatusError) -> ProviderError:
        status = exc.status_code
        retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
        body = self._say(exc.response.text[:300]) if exc.response is not None else ""
        if status == 429:
            return ProviderError("rate_limited", f"rate limited (HTTP 429): {body}", retry_after)
        if status >= 500 or status in RETRYABLE_STATUS:
            return ProviderError("server", f"server error (HTTP {status}): {body}", retry_after)
        if status in (401, 403):
            name = self.config.api_key_env
            return ProviderError("http", f"not authorised (HTTP {status}): is ${name} set to a valid key? {body}")
        return ProviderError("http", f"request refused (HTTP {status}): {body}")

    def _say(self, text: str) -> str:
        return redact(text, self._key)
