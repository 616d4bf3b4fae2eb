"""The shape of a registry entry: a built-in function or method of the body language."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from compiler import ir
from compiler.library.ports import Checker, Emitter

TypeRule = Callable[[Checker, ir.Call, "ir.TypeRef | None"], ir.TypeRef]
"""Checks a call's arguments (reporting through the checker) and returns its type."""

Lowering = Callable[[Emitter, ir.Call], tuple[str, str]]
"""Python source of a call and its precedence level (a key of `pycode.PREC`)."""

Signature = Callable[[ir.TypeRef, int], tuple[list[ir.TypeRef], ir.TypeRef, int]]
"""For a receiver type and the number of arguments given: parameter types, result type
and how many parameters are required."""

MethodLowering = Callable[[Emitter, ir.Call, ir.Attr, str, list[str]], str]
"""Python source of a method call, given the receiver's source and the arguments' sources."""


@dataclass(frozen=True)
class Effect:
    """Built-in state fields a call reads and changes (fields the spec does not have, such
    as `random_seed` under the default generator, are skipped)."""

    reads: tuple[str, ...] = ()
    writes: str = ""


PURE = Effect()


@dataclass(frozen=True)
class Function:
    name: str
    example: str
    """A call that type-checks in a spec with `xs: list[int]`, `m: map[str, int]`,
    `s: str`, `d: date`, `t: datetime`, `j: json` in scope (tests lower every example)."""
    check: TypeRule
    lower: Lowering
    effect: Effect = PURE
    runtime: tuple[str, ...] = ()
    """Module-level helpers of `compiler/library/runtime.py` the lowering calls (without `_`)."""
    methods: tuple[str, ...] = ()
    """Methods of the generated Environment class the lowering calls (the template emits them)."""
    shares_argument: bool = False
    """The result may be an argument, or a part of one, itself rather than a new value
    (`as_map(j)` is `j`): changing the result changes what the argument is part of."""


@dataclass(frozen=True)
class Method:
    receiver: str
    name: str
    signature: Signature
    mutates: bool = False
    """Changes the receiver in place (so it is a write to the state it belongs to)."""
    key_argument: bool = False
    """The first argument is a map key (checked as one, converted for map[json, V])."""
    lower: MethodLowering | None = None
    """None: `receiver.name(args)` as in Python."""
    runtime: tuple[str, ...] = ()
