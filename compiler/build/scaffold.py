"""`envc new`: a starting spec for a domain, extending a prototype or standing alone.

The scaffold is rendered from `templates/new_spec.envspec.jinja` and must compile as it
stands (a test compiles one per archetype), so a user starts from something green.
"""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

from compiler.front.load import prototypes_dir
from compiler.library import builtins as bi
from compiler.lower import jinja_environment

NAME = re.compile(r"[a-z][a-z0-9_]*")


def available_archetypes() -> list[str]:
    """`custom` plus every prototype shipped under specs/prototypes/."""
    shipped = sorted(p.stem for p in prototypes_dir().glob("*.envspec"))
    return ["custom", *(a for a in bi.ARCHETYPES if a in shipped)]


def problem_with(name: str, archetype: str, target: Path) -> str:
    """Why the scaffold cannot be written, or an empty string."""
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        return f"`{name}` is not a valid environment name (lower_snake_case)"
    if name in sys.stdlib_module_names:
        return f"`{name}` would shadow the standard-library module; try `{name}_env`"
    if archetype not in available_archetypes():
        return f"unknown archetype `{archetype}`; choose one of: {', '.join(available_archetypes())}"
    if target.exists():
        return f"{target} already exists; nothing was written"
    return ""


def render(name: str, archetype: str) -> str:
    title = name.replace("_", " ").capitalize()
    context = {
        "name": name,
        "title": title,
        "archetype": archetype,
        "prototype": archetype != "custom",
        "domain": title.lower(),
    }
    return jinja_environment().get_template("new_spec.envspec.jinja").render(**context)
