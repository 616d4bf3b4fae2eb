"""Loading lowered code in tests without writing a package: `environment.py` text run as
a module of its own."""

from __future__ import annotations

import sys
import types


def environment_module(source: str, name: str) -> types.ModuleType:
    """`source` (a lowered environment.py) executed as module `name`; dataclasses look
    their module up in `sys.modules` while the class bodies run, so it is there meanwhile."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(source, "environment.py", "exec"), module.__dict__)  # noqa: S102 - our own output
    finally:
        del sys.modules[name]
    return module
