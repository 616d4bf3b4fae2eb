"""The built-in library of the body language, one entry per function and method.

Each entry says everything envc knows about a built-in: how a call is type-checked,
what it does to state (reads the clock, changes a built-in field, draws randomness),
how it lowers to Python, and which runtime helpers the generated module then needs.
Analysis (`compiler/analyse/types/`, `effects.py`) and lowering
(`compiler/lower/pycode.py`) both read these tables, so adding a built-in is one entry
in one of the family modules below (see docs/pipeline.md, "Adding a built-in").
"""

from __future__ import annotations

from compiler.library.entry import Effect, Function, Method
from compiler.library.functions import FUNCTIONS
from compiler.library.methods import METHODS, RECEIVERS

__all__ = ["FUNCTIONS", "METHODS", "RECEIVERS", "Effect", "Function", "Method", "method", "effectful_functions"]


def method(receiver: str, name: str) -> Method | None:
    """The method `name` of a receiver kind (`str`, `list`, `map`, `set`), if there is one."""
    return METHODS.get((receiver, name))


def effectful_functions() -> dict[str, str]:
    """Built-in functions that change state, with the built-in state field each changes."""
    return {name: f.effect.writes for name, f in FUNCTIONS.items() if f.effect.writes}
