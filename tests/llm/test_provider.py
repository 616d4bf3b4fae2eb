"""The provider against a real loopback HTTP server (compiler/llm/provider.py).

Each case ends in a documented state: a completion, or a `ProviderError` of a stated
kind after a stated number of tries, having waited what the server asked.
"""

from __future__ import annotations

import time

import pytest

from compiler.llm.config import LLMConfig
from compiler.llm.provider import (
    ChatRequest,
    Message,
    OpenAIProvider,
    ProviderError,
    make_request,
    parse_retry_after,
    retry_delay,
)

from .chat_server import ChatServer, Reply

MESSAGES = [Message("system", "You write bodies."), Message("user", "Count the books.")]


def provider(url: str, sleeps: list[float] | None = None, **settings: object) -> OpenAIProvider:
    values: dict[str, object] = {"model": "scripted-model", "base_url": url, "timeout": 2.0, "retries": 2}
    values.update(settings)
    config = LLMConfig(**values)  # type: ignore[arg-type]
    record = sleeps.append if sleeps is not None else (lambda _seconds: None)
    return OpenAIProvider(config, sleep=record)


def ask(p: OpenAIProvider) -> str:
    return p.complete(make_request(p.config, MESSAGES)).text


@pytest.mark.parametrize("stream", [True, False])
def test_a_completion_comes_back_with_what_was_sent(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with ChatServer([Reply("return len(books)")]) as server:
        p = provider(server.url, stream=stream, temperature=0.25, max_tokens=99, seed=7)
        completion = p.complete(make_request(p.config, MESSAGES))
    assert completion.text == "return len(books)"
    assert completion.model == "scripted-model" and completion.finish_reason == "stop"
    assert completion.system_fingerprint == "fp_scripted" and completion.tries == 1
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-loopback"
    assert request.body["model"] == "scripted-model"
    assert request.body["messages"] == [{"role": m.role, "content": m.content} for m in MESSAGES]
    assert (request.body["temperature"], request.body["max_tokens"], request.body["seed"]) == (0.25, 99, 7)
    assert bool(request.body.get("stream")) is stream


def test_429_waits_what_retry_after_says_then_succeeds() -> None:
    sleeps: list[float] = []
    replies = [Reply(status=429, headers={"Retry-After": "3"}), Reply("return 1")]
    with ChatServer(replies) as server:
        p = provider(server.url, sleeps)
        completion = p.complete(make_request(p.config, MESSAGES))
    assert completion.text == "return 1" and completion.tries == 2
    assert sleeps == [3.0], "Retry-After wins over the exponential backoff"
    assert len(server.requests) == 2


def test_retry_after_beyond_max_backoff_gives_up_instead_of_waiting() -> None:
    sleeps: list[float] = []
    with ChatServer([Reply(status=429, headers={"Retry-After": "3600"})]) as server:
        with pytest.raises(ProviderError) as caught:
            ask(provider(server.url, sleeps, max_backoff=60))
    assert caught.value.kind == "rate_limited" and "3600" in str(caught.value)
    assert sleeps == [] and len(server.requests) == 1


def test_500_is_retried_with_backoff_then_reported() -> None:
    sleeps: list[float] = []
    with ChatServer([Reply(status=500)] * 5) as server:
        with pytest.raises(ProviderError) as caught:
            ask(provider(server.url, sleeps, retries=2, backoff=0.5))
    assert caught.value.kind == "server" and caught.value.tries == 3
    assert "HTTP 500" in str(caught.value) and "after 3 tries" in str(caught.value)
    assert sleeps == [0.5, 1.0], "doubled per try"
    assert len(server.requests) == 3


def test_a_refused_request_is_not_retried() -> None:
    with ChatServer([Reply(status=400, raw=b'{"error": {"message": "bad model"}}')]) as server:
        with pytest.raises(ProviderError) as caught:
            ask(provider(server.url))
    assert caught.value.kind == "http" and "HTTP 400" in str(caught.value) and "bad model" in str(caught.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [True, False])
def test_a_server_that_does_not_answer_times_out(stream: bool) -> None:
    started = time.monotonic()
    with ChatServer([Reply("late", delay=3.0)]) as server:
        with pytest.raises(ProviderError) as caught:
            ask(provider(server.url, retries=0, timeout=0.5, stream=stream))
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 2.9


def test_a_stream_that_trickles_past_the_deadline_is_cut_off() -> None:
    """Every chunk comes within the read timeout, but the whole reply would not."""
    trickle = Reply("return len(books) + 0 + 0", pieces=10, chunk_delay=0.3)
    started = time.monotonic()
    with ChatServer([trickle]) as server:
        with pytest.raises(ProviderError) as caught:
            ask(provider(server.url, retries=0, timeout=1.0))
    assert caught.value.kind == "timeout" and "did not finish" in str(caught.value)
    assert time.monotonic() - started < 2.5, "cut off at the deadline, not after the whole stream"


def test_a_slow_stream_within_the_deadline_is_read_whole() -> None:
    with ChatServer([Reply("return len(books)", pieces=5, chunk_delay=0.05)]) as server:
        assert ask(provider(server.url, timeout=3.0)) == "return len(books)"


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("raw", [b"not json at all", b"{}"])
def test_a_malformed_http_reply_is_an_error_not_an_empty_body(stream: bool, raw: bytes) -> None:
    with ChatServer([Reply(raw=raw)]) as server:
        with pytest.raises(ProviderError) as caught:
            ask(provider(server.url, stream=stream))
    assert caught.value.kind == "malformed"


def test_an_endpoint_nobody_listens_on_is_a_connection_error() -> None:
    with ChatServer() as server:
        url = server.url
    with pytest.raises(ProviderError) as caught:
        ask(provider(url, retries=1, backoff=0))
    assert caught.value.kind == "connection" and caught.value.tries == 2


def test_proxy_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the configured endpoint is contacted: a proxy from the environment would be another host."""
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    with ChatServer([Reply("return 1")]) as server:
        assert ask(provider(server.url, retries=0)) == "return 1"


def test_the_request_hash_covers_model_messages_sampling_and_attempt() -> None:
    config = LLMConfig(model="m", temperature=0.0, max_tokens=10)
    base = make_request(config, MESSAGES)
    variants = [
        make_request(LLMConfig(model="other", temperature=0.0, max_tokens=10), MESSAGES),
        make_request(config, [*MESSAGES, Message("user", "again")]),
        make_request(LLMConfig(model="m", temperature=0.5, max_tokens=10), MESSAGES),
        make_request(LLMConfig(model="m", temperature=0.0, max_tokens=11), MESSAGES),
        make_request(LLMConfig(model="m", temperature=0.0, max_tokens=10, seed=1), MESSAGES),
        make_request(config, MESSAGES, attempt=2),
    ]
    shas = {base.sha(), *(v.sha() for v in variants)}
    assert len(shas) == len(variants) + 1
    assert base.sha() == make_request(config, list(MESSAGES)).sha(), "and nothing else"
    assert isinstance(base, ChatRequest) and "attempt" not in base.payload()


def test_retry_after_takes_seconds_or_an_http_date() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    config = LLMConfig(backoff=1.0, max_backoff=5.0)
    assert [retry_delay(config, n, None) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert retry_delay(config, 1, 4.0) == 4.0 and retry_delay(config, 1, 6.0) is None
