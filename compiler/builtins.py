"""Facts of the language every stage shares: error kinds, archetypes, the built-in
state and the audit entry record, the names of the built-in library (whose entries live
in `compiler/library/`), and the names a spec may not use."""

from __future__ import annotations

import keyword

from compiler import ir, library
from compiler import typesys as ts
from compiler.library.state import AUDIT_LOG as AUDIT_LOG
from compiler.library.state import BUILTIN_STATE as BUILTIN_STATE
from compiler.library.state import CLOCK as CLOCK
from compiler.library.state import ID_COUNTERS as ID_COUNTERS
from compiler.library.state import RANDOM_SEED as RANDOM_SEED
from compiler.library.state import RNG_STATE as RNG_STATE
from compiler.library.state import RUNTIME_KEPT as RUNTIME_KEPT

ERROR_KINDS = (
    "invalid_argument",
    "not_found",
    "already_exists",
    "invalid_state",
    "conflict",
    "unauthenticated",
    "forbidden",
    "limit_exceeded",
)

ARCHETYPES = (
    "custom",
    "transactional_workspace",
    "data_pipeline",
    "human_interaction",
    "event_triggering",
    "state_machine",
    "temporal_scheduling",
    "bilateral_matching",
    "workflow_orchestration",
    "stream_processing",
    "file_workspace",
)

RNG_KINDS = ("splitmix64", "python")
"""`rng` header values: envc's own splitmix64 (the default), or Python's `random.Random`
(Mersenne Twister) seeded with `random_seed`, for ports of Python code that uses it."""

AUDIT_ENTRY = ir.RecordDecl(
    name="AuditEntry",
    doc="One entry of the append-only audit log.",
    fields=[
        ir.Field_(name="seq", type=ts.INT),
        ir.Field_(name="at", type=ts.DATETIME),
        ir.Field_(name="tool", type=ts.STR),
        ir.Field_(name="action", type=ts.STR),
        ir.Field_(name="entity", type=ts.STR),
        ir.Field_(name="detail", type=ts.STR),
    ],
)

# The built-in functions and methods, as the registry (compiler/library/) defines them.
FUNCTIONS = tuple(library.FUNCTIONS)
EFFECTFUL_FUNCTIONS = library.effectful_functions()
"""Built-in functions that change state -> the built-in field each changes."""
METHODS_OF = library.RECEIVERS
"""Receiver kind (str, list, map, set) -> its method names."""

# Names a spec may not use for its own things: Python keywords, names the generated
# code relies on, and the built-ins above.
RESERVED = frozenset(
    set(keyword.kwlist)
    | {"match", "case", "type", "_"}  # soft keywords, fixed so every Python agrees
    | set(FUNCTIONS)
    | {
        "self",
        "cls",
        "state",
        "world",
        "call",
        "snapshot",
        "restore",
        "list",
        "dict",
        "map",
        "set",
        "bool",
        "json",
        "isinstance",
        "Any",
        "TypedDict",
        "Literal",
        "Optional",
        "Callable",
        "Final",
        "NotRequired",
        "Environment",
        "DomainError",
        "ToolError",
        "copy",
        "lambda",
        "error",
        "DEFAULT_STATE",
        "AuditEntry",
        "re",
        "dt",
        "cast",
        "WORLD",
        "SCENARIOS",
        "State",
        "World",
        "nothing",
    }
    # The language's own keywords, which cannot be names either.
    | {"let", "fail", "require", "tool", "fn", "record", "enum", "scenario", "test", "task", "expect"}
    | {"raises", "drop", "rename", "extends", "override", "reads", "writes", "environment", "world"}
)
RESERVED_TOOL_NAMES = frozenset(
    {
        "call",
        "invoke",
        "view",
        "state",
        "state_json",
        "snapshot",
        "restore",
        "fork",
        "reset",
        "tools",
        "schema",
        "close",
    }
)


def is_reserved(name: str) -> bool:
    """For names that become Python variables (parameters, locals, loop variables)."""
    return name in RESERVED or name.startswith("_")


def is_reserved_declaration(name: str) -> bool:
    """For tools, helpers, state and world fields: they become methods and dict keys, so
    they may reuse a built-in function's name (`search`, `matches`); calls in bodies
    still mean the built-in, names in tests the tool."""
    return (is_reserved(name) and name not in FUNCTIONS) or name in BLOCK_WORDS


BLOCK_WORDS = frozenset({"param"})
"""Words that start a block line of a tool or helper (`param NAME "text"`) and are not
reserved everywhere: parameters may be called `param` (the prototypes have such), but a
tool, helper, state or world field may not, since its name can start a statement."""
