"""What a registry entry may ask of the type checker and of the Python emitter.

The built-in registry sits below both stages that use it: analysis
(`compiler/analyse/`) reads its type rules and effects, lowering (`compiler/lower/`)
its lowerings. So its entries cannot name the checker or the emitter classes; they are
typed against these protocols instead, which say exactly what a type rule or a
lowering uses. `TypeChecker` and `Emitter` satisfy them structurally: mypy checks it
where they pass themselves to an entry (`builtin.check(self, ...)`,
`entry.lower(self, ...)`), and a use here of anything they lack is a type error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from compiler import ir


class Checker(Protocol):
    """The type checker of the body being checked, as a type rule sees it."""

    @property
    def records(self) -> Mapping[str, ir.RecordDecl]:
        """The spec's records (and unions), by name."""
        ...

    def error(self, code: str, message: str, node: ir.Node | None, hint: str = "") -> None: ...

    def expr(self, expr: ir.Expr, expected: ir.TypeRef | None) -> ir.TypeRef:
        """Check an argument (`expected`: the type it should have, which a literal takes)."""
        ...

    def expect_assignable(self, src: ir.TypeRef, dst: ir.TypeRef, node: ir.Node) -> None: ...

    def positional(self, expr: ir.Call, name: str, params: list[ir.TypeRef], required: int) -> list[ir.TypeRef]:
        """Check positional arguments against parameter types; their types."""
        ...

    def one_arg(self, expr: ir.Call, name: str, expected: ir.TypeRef | None = None) -> ir.TypeRef:
        """Check the one argument of a call; its type, not None."""
        ...

    def key_lambda(self, expr: ir.Call, item: ir.TypeRef) -> None:
        """Check `key=lambda x: ...` and `reverse=` of an ordering over `item` values."""
        ...

    def looped_over(self, expr: ir.Expr) -> bool:
        """Whether `expr` is what the loop or comprehension being checked goes over."""
        ...


class EmitScope(Protocol):
    """The callable whose body is being written, as a lowering sees it."""

    @property
    def kind(self) -> str:
        """One of `tool`, `fn`, `test` (generated tests import less than the module does)."""
        ...

    @property
    def state_var(self) -> str: ...

    @property
    def module_prefix(self) -> str:
        """How module-level runtime helpers are reached ("environment." in tests)."""
        ...

    @property
    def helpers(self) -> set[str]:
        """Runtime helpers the body uses (a lowering adds the ones it calls)."""
        ...


class TypeSpelling(Protocol):
    def py(self, ty: ir.TypeRef) -> str:
        """How a type is written in the generated module."""
        ...


class Emitter(Protocol):
    """The Python emitter of the body being written, as a lowering sees it."""

    @property
    def scope(self) -> EmitScope: ...

    @property
    def types(self) -> TypeSpelling: ...

    def expr(self, e: ir.Expr) -> str: ...

    def operand(self, e: ir.Expr, level: str, tighter: bool = False) -> str:
        """`e` as an operand at a precedence level, parenthesised when it binds more loosely."""
        ...

    def args(self, e: ir.Call) -> str:
        """The arguments of a call, positional and named."""
        ...

    def string(self, text: str) -> str:
        """A string literal in the quotes of the code being written."""
        ...

    def copy_of(self, e: ir.Expr, ty: ir.TypeRef) -> str: ...

    def is_view_call(self, e: ir.Expr) -> bool: ...

    def iter_builtin(self, e: ir.Call) -> str: ...
