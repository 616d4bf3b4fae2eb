"""`[tool.envc.llm]` (compiler/llm/config.py): defaults, checks, and where the key comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.llm.config import DEFAULT_BASE_URL, LLMConfig, api_key, base_url, load_config


def configure(tmp_path: Path, table: str) -> tuple[LLMConfig, list[str]]:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n[tool.envc.llm]\n{table}\n', encoding="utf-8")
    config, problems = load_config(tmp_path)
    return config, [f"{d.code}:{d.line} {d.message}" for d in problems]


def test_no_table_means_defaults_and_no_model(tmp_path: Path) -> None:
    config, problems = load_config(tmp_path)
    assert problems == [] and not config.configured and config == LLMConfig()
    assert config.sampling() == {"temperature": 0.0, "max_tokens": 4096}


def test_every_setting_is_read(tmp_path: Path) -> None:
    config, problems = configure(
        tmp_path,
        'model = "qwen"\nbase_url = "http://127.0.0.1:8080/v1"\napi_key_env = "MY_KEY"\ntemperature = 0.2\n'
        "max_tokens = 512\nseed = 3\ntimeout = 30\nretries = 5\nbackoff = 0.5\nmax_backoff = 10\n"
        "concurrency = 2\nattempts = 4\nstream = false",
    )
    assert problems == []
    assert config == LLMConfig(
        "qwen", "http://127.0.0.1:8080/v1", "MY_KEY", 0.2, 512, 3, 30.0, 5, 0.5, 10.0, 2, 4, False
    )
    assert config.sampling() == {"temperature": 0.2, "max_tokens": 512, "seed": 3}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('temperature = "hot"', "E6105:5 `temperature` must be int or float"),
        ("retries = -1", "E6105:5 `retries` must be at least 0"),
        ("stream = 1", "E6105:5 `stream` must be bool"),
        ("max_tokens = true", "E6105:5 `max_tokens` must be int"),
        ('modle = "x"', "E6105:5 unknown key `modle`"),
        ('api_key_env = "sk-abc-123"', "E6105:5 `api_key_env` is the name of an environment variable"),
    ],
)
def test_bad_settings_are_reported_at_their_line(tmp_path: Path, table: str, expected: str) -> None:
    _, problems = configure(tmp_path, table)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_a_key_written_into_pyproject_is_refused_and_not_echoed(tmp_path: Path) -> None:
    config, problems = configure(tmp_path, 'model = "m"\napi_key = "sk-live-secret"')
    assert problems and problems[0].startswith("E6105:6 `api_key` would put a secret in pyproject.toml")
    assert not any("sk-live-secret" in p for p in problems)
    assert "sk-live-secret" not in repr(config)


def test_endpoint_and_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert base_url(LLMConfig()) == DEFAULT_BASE_URL and api_key(LLMConfig()) is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    assert base_url(LLMConfig()) == "http://127.0.0.1:11434/v1"
    assert base_url(LLMConfig(base_url="http://127.0.0.1:8000/v1")) == "http://127.0.0.1:8000/v1", "the table wins"
    assert api_key(LLMConfig(api_key_env="MY_KEY")) == "sk-fallback"
    monkeypatch.setenv("MY_KEY", "sk-mine")
    assert api_key(LLMConfig(api_key_env="MY_KEY")) == "sk-mine"
