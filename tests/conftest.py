"""Test-suite settings shared by every test module."""

from __future__ import annotations

import os

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
