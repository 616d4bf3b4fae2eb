"""Test-suite settings shared by every test module."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import Phase, settings

# CI runs property tests with a fixed seed, so a run is repeatable, and without the shrink
# phase, so a failure is reported at once instead of minimised for many minutes.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Keep this session's temporary files out of /tmp/pytest-of-<user>: tests here start
    pytest subprocesses (generated packages' own tests), and each new session there prunes
    the older numbered folders, which would include this one's."""
    if not config.option.basetemp:
        config.option.basetemp = tempfile.mkdtemp(prefix="envc-tests-")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On several workers (`pytest -n auto --dist loadgroup`, the README's command) each
    test module runs on one worker, so its module fixtures (a library analysed, tasks
    drawn from every spec, the generated tests of all packages) are built once, not once
    per worker; a test that names an `xdist_group` of its own goes with that group."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
