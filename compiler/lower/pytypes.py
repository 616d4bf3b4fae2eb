"""How IR types are spelled in the generated module's annotations, for the emitter and the
JSON converters alike."""

from __future__ import annotations

from dataclasses import dataclass

from compiler import ir


@dataclass
class TypeNames:
    """How IR types are spelled in the generated module."""

    enums: dict[str, ir.EnumDecl]
    records: dict[str, ir.RecordDecl]

    def py(self, ty: ir.TypeRef) -> str:
        name = ty.name
        simple = {
            "str": "str",
            "int": "int",
            "float": "float",
            "number": "float",  # PEP 484: `float` accepts an int too, which a number keeps as is
            "bool": "bool",
            "datetime": "str",
            "date": "str",
            "time": "str",
            "json": "Any",
            "any": "Any",
            "None": "None",
        }
        if name in simple:
            return simple[name]
        if name == "list":
            return f"list[{self.py(ty.args[0])}]"
        if name == "map":
            return f"dict[{self.py(ty.args[0])}, {self.py(ty.args[1])}]"
        if name == "set":
            return f"set[{self.py(ty.args[0])}]"
        if name == "optional":
            return f"{self.py(ty.args[0])} | None"
        return name
