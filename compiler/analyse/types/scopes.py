"""The state of one body's type check that every part of the checker shares: the
analysis and the body checked, diagnostics, and the locals in scope with what narrowing
has shown of them (a narrower type, a field present, a union member ruled out), which
helper calls and `del` forget again."""

from __future__ import annotations

from dataclasses import dataclass

from compiler import ir
from compiler.analyse import shapes
from compiler.analyse.context import Analysis
from compiler.analyse.effects import BodyEffects
from compiler.diagnostics import Diagnostic
from compiler.ir import typesys as ts
from compiler.ir.tree import calls_in
from compiler.library import builtins as bi


@dataclass(slots=True)
class Local:
    """A local's type where it is used (narrowed) and how it was bound."""

    type: ir.TypeRef
    kind: str  # "local", "param", "loop"; "present" or "unknown" for a `x.field` key (below)


EXCLUDED = "excluded"
"""The kind of a scope entry keyed `x!Member`: local `x`, of a union, is not that member
(its tag was tested and found different)."""


PRESENT = "present"
"""The kind of a scope entry keyed `x.field`: the field of local `x`, which may be absent
(`field?: T`), was shown present (`"field" in x`); an entry of kind "unknown" under the
same key forgets that again (`del`, or `x` rebound)."""


_NONE_DELETED: frozenset[str] = frozenset()
"""What a helper the deletion table does not know deletes (`_forget_deleted_by`)."""


class BodyScopes:
    """One body's check: where it is, what it reports, and the locals it can see."""

    def __init__(
        self,
        analysis: Analysis,
        callable_: ir.ToolDecl | None,
        is_helper: bool,
        file: str = "",
        allow_tools: bool = True,
        effects: BodyEffects | None = None,
    ) -> None:
        self.a = analysis
        self.fx = effects
        """The effects pass's hooks, called as the body is walked (`types.run`); None for
        tests and tasks, which `tests_tasks` walks with `effects.EffectWalker`."""
        self.callable = callable_
        self.is_helper = is_helper
        self.in_test = callable_ is None
        self.allow_tools = allow_tools and self.in_test
        self.file = callable_.file if callable_ else file
        self.scopes: list[dict[str, Local]] = [{}]
        self.declared: dict[str, ir.TypeRef] = {}
        self.loop_depth = 0
        self.loop_iter: ir.Expr | None = None
        """What the loop or comprehension being checked goes over, while it is checked:
        the one place a `zip(...)` may stand (`looped_over`)."""
        self.shared: set[int] = set()
        """Operands of the comparison chain being checked (by id): each is checked once,
        though two links of the chain look at it."""
        self.assigning: ir.Attr | None = None
        """The field an `=` statement sets, which it may do though the field is absent."""
        self.family_part = ""
        """`plan` or `verify` while a task family's part is checked (compiler/analyse/families.py):
        a plan may write state and leave out a `require`'s `else`; neither calls tools."""

    def error(self, code: str, message: str, node: ir.Node | None, hint: str = "") -> None:
        self.a.error(code, message, node, self.file, hint)

    def warning(self, code: str, message: str, node: ir.Node, hint: str = "") -> None:
        """A diagnostic that does not stop the spec from compiling."""
        where = (node.line, node.col, node.end_line, node.end_col)
        self.a.diags.append(Diagnostic(code, message, self.file, *where, hint=hint, severity="warning"))

    @property
    def records(self) -> dict[str, ir.RecordDecl]:
        return self.a.records

    # ------------------------------------------------------------------ scopes
    def lookup(self, name: str) -> Local | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, name: str, ty: ir.TypeRef, kind: str, node: ir.Node) -> None:
        # A parameter's name reaches tools.json: only what a body could not write is refused
        # (the Python code renames the rest); a `let` or loop name must be free in Python.
        reason = bi.parameter_reason(name) if kind == "param" else bi.reserved_reason(name, "variable")
        if reason is not None:
            where = node if kind == "param" else self.a.name_span(node, name, self.file)
            self.error("E2014", reason, where, hint="choose another name")
        if name in self.a.fns or name in self.a.tools or name in self.a.records or name in self.a.enums:
            self.error(
                "E2001",
                f"`{name}` is already a {'helper' if name in self.a.fns else 'tool' if name in self.a.tools else 'type'}",
                node,
            )
        visible = self.lookup(name)
        if visible is not None and kind != "narrow":
            self.error(
                "E2001", f"`{name}` is already declared here", node, hint=f"assign with `{name} = ...` instead of `let`"
            )
        elif (
            name in self.declared
            and not ts.same(self.declared[name], ty)
            and ty.name != "any"
            and self.declared[name].name != "any"
        ):
            self.error(
                "E2001",
                f"`{name}` was declared earlier in this body as {ts.show(self.declared[name])}, now {ts.show(ty)}",
                node,
                hint="use another name",
            )
        self.declared.setdefault(name, ty)
        self.scopes[-1][name] = Local(ty, kind)

    def push(self, narrowed: dict[str, ir.TypeRef] | None = None) -> None:
        frame: dict[str, Local] = {}
        if not narrowed:  # (most scopes narrow nothing)
            self.scopes.append(frame)
            return
        for name, ty in narrowed.items():
            local = self._narrowed(name, ty)
            if local is not None:
                frame[name] = local
        self.scopes.append(frame)

    def pop(self) -> None:
        self.scopes.pop()

    def narrow_here(self, narrowed: dict[str, ir.TypeRef]) -> None:
        for name, ty in narrowed.items():
            local = self._narrowed(name, ty)
            if local is not None:
                self.scopes[-1][name] = local

    def _narrowed(self, name: str, ty: ir.TypeRef) -> Local | None:
        """The scope entry of a narrowing: a local's new type, or (`x.field`) the field of
        a local shown present."""
        if "." in name:
            return Local(ty, PRESENT) if self.lookup(name.split(".", 1)[0]) is not None else None
        if "!" in name:
            return Local(ty, EXCLUDED) if self.lookup(name.split("!", 1)[0]) is not None else None
        local = self.lookup(name)
        return None if local is None else Local(ty, local.kind)

    def is_present(self, obj: ir.Expr, field_name: str) -> bool:
        """Whether the field of `obj`, whose key may be absent, was shown present here."""
        if not isinstance(obj, ir.Name):
            return False
        entry = self.lookup(f"{obj.id}.{field_name}")
        return entry is not None and entry.kind == PRESENT

    def is_excluded(self, local: str, member: str) -> bool:
        """Whether local `local`, of a union, was shown not to be `member` here."""
        entry = self.lookup(f"{local}!{member}")
        return entry is not None and entry.kind == EXCLUDED

    def forget_presence(self, local: str | None = None, field_name: str | None = None) -> None:
        """Presence facts no longer true: of the fields of `local` (rebound), or of
        `field_name` on every local (deleted through some value, perhaps an alias; "*":
        every field); a rebound local forgets which union members it was shown not to be, too."""
        for scope in self.scopes:
            for key in list(scope):
                base, dot, name = key.partition(".")
                if dot and (base == local or name == field_name or field_name == "*"):
                    self.scopes[-1][key] = Local(ts.ANY, "unknown")
                if local is not None and key.startswith(f"{local}!"):
                    self.scopes[-1][key] = Local(ts.ANY, "unknown")

    # ------------------------------------------------------------------ fields helpers may delete
    def helper_deletes(self) -> dict[str, set[str] | None]:
        """`shapes.fields_deleted` of the helpers, computed once per analysis when first
        needed (the helpers' bodies and calls do not change while they are checked)."""
        if self.a.deleted_fields is None:
            self.a.deleted_fields = shapes.fields_deleted(self.a)
        return self.a.deleted_fields

    def may_delete_fields(self, expr: ir.Expr) -> bool:
        """Whether evaluating `expr` calls a tool or a helper that may `del` a field."""
        helper_deletes = self.helper_deletes()
        for node in calls_in(expr):
            if isinstance(node.func, ir.Name):
                if node.func.ref == "tool" or (node.func.ref == "fn" and helper_deletes.get(node.func.id) != set()):
                    return True
        return False

    def _forget_deleted_by(self, helper: str) -> None:
        """A helper that may `del` a field (or whose body envc cannot see) ends the
        presence tests of that field: it may hold the same record."""
        deleted = self.helper_deletes().get(helper, _NONE_DELETED)
        if deleted is None:
            self.forget_presence(field_name="*")
        for name in deleted or ():
            self.forget_presence(field_name=name)
