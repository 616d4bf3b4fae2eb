"""How the checker finds its method for a node: by the node's class, in a table built
once per checker class (`calls`, `statements`)."""

from __future__ import annotations

from typing import Any

from compiler import ir


def methods_by_class(cls: type, prefix: str) -> dict[type, Any]:
    """The checker's method per IR class of a statement or expression kind (`stmt_let`,
    `expr_call`, …), looked up once rather than by `getattr` on every node (by class:
    the IR's statement and expression classes have no subclasses)."""
    methods = {name.removeprefix(prefix): getattr(cls, name) for name in dir(cls) if name.startswith(prefix)}
    classes = [node for node in vars(ir).values() if isinstance(node, type) and issubclass(node, ir.Node)]
    kinds = {node: node.model_fields["kind"].default for node in classes if "kind" in node.model_fields}
    return {node: methods[kind] for node, kind in kinds.items() if kind in methods}
