"""Python names of parameters: a tool parameter keeps the name the agent sees in
tools.json, `call` and results (`state`, `from`, `json`), and in the generated Python is
renamed where Python or the generated code keeps the name (`state_`)."""

from __future__ import annotations

from compiler import ir
from compiler.ir.tree import walk
from compiler.library import builtins as bi


def python_names(tool: ir.ToolDecl) -> dict[str, str]:
    """Parameter name -> its name in the generated Python (`bi.python_name`): a name the
    generated code or Python keeps (`state`, `from`, `json`) gets a `_`, free of the
    callable's other names. tools.json, `call` and the results keep the real name."""
    taken = names_of(tool)
    names: dict[str, str] = {}
    for param in tool.params:
        names[param.name] = bi.python_name(param.name, frozenset(taken))
        taken.add(names[param.name])
    return names


def _renamed(tool: ir.ToolDecl, python: dict[str, str]) -> ir.ToolDecl:
    """The callable with its parameters renamed to their Python names in signature and
    body (a copy; the analysed declaration keeps the names the agent sees)."""
    names = {old: new for old, new in python.items() if old != new}
    if not names:
        return tool
    renamed = tool.model_copy(deep=True)
    for param in renamed.params:
        param.name = names.get(param.name, param.name)
    for node in walk(renamed.body):
        if isinstance(node, ir.Name) and node.ref == "param" and node.id in names:
            node.id = names[node.id]
    return renamed


class PythonNames:
    """`python_names` and the callables renamed to them, for one environment, each worked
    out once: lowering asks for them many times per callable (its signature, its schema,
    its body, each call of a helper), and each walks the whole body. Keyed by identity,
    for one lowering (the declarations are not changed meanwhile, and are kept alive)."""

    def __init__(self) -> None:
        self._names: dict[int, tuple[ir.ToolDecl, dict[str, str]]] = {}
        self._renamed: dict[int, tuple[ir.ToolDecl, ir.ToolDecl]] = {}

    def names(self, tool: ir.ToolDecl) -> dict[str, str]:
        known = self._names.get(id(tool))
        if known is None:
            known = self._names[id(tool)] = (tool, python_names(tool))
        return known[1]

    def renamed(self, tool: ir.ToolDecl) -> ir.ToolDecl:
        known = self._renamed.get(id(tool))
        if known is None:
            known = self._renamed[id(tool)] = (tool, _renamed(tool, self.names(tool)))
        return known[1]


def names_of(tool: ir.ToolDecl) -> set[str]:
    """Every name a tool or helper uses: its parameters, locals, loop and lambda names."""
    return {param.name for param in tool.params} | names_in(tool.body)


def names_in(body: list[ir.Stmt]) -> set[str]:
    """Every name a body uses: the names it reads, its locals, loop and lambda names."""
    names: set[str] = set()
    for node in walk(body):
        if isinstance(node, ir.Name):
            names.add(node.id)
        elif isinstance(node, ir.Let):
            names.add(node.name)
        elif isinstance(node, (ir.For, ir.Comprehension)):
            names.update(node.targets)
        elif isinstance(node, ir.Lambda):
            names.update(node.params)
    return names
