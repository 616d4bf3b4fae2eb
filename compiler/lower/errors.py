"""The lowering stage's one error, in a module of its own so that every part of the stage
(the driver, the splice, the formatter) raises it without importing the driver."""

from __future__ import annotations


class LoweringError(Exception):
    """Lowering produced code that does not parse: a compiler bug, reported as E6001."""
