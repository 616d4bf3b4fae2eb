"""The fixed library of the body language: built-in functions, methods, error kinds
and the state fields every environment has. Analysis checks calls against this table;
lowering maps each entry to Python.
"""

from __future__ import annotations

import keyword

from compiler import ir
from compiler import typesys as ts

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

# Built-in state: the append-only audit log and the virtual clock exist in every
# environment; id counters and the random state only where next_id/random_* are used.
AUDIT_LOG = "audit_log"
CLOCK = "clock"
ID_COUNTERS = "id_counters"
RNG_STATE = "rng_state"
RANDOM_SEED = "random_seed"
BUILTIN_STATE = (AUDIT_LOG, CLOCK, ID_COUNTERS, RNG_STATE, RANDOM_SEED)
RUNTIME_KEPT = (ID_COUNTERS, RNG_STATE, RANDOM_SEED)
"""Built-in fields only the runtime changes (scenarios may set them)."""
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

# Functions: name -> whether it changes state (which built-in field).
FUNCTIONS = (
    "len",
    "min",
    "max",
    "sum",
    "sorted",
    "reversed",
    "abs",
    "round",
    "str",
    "int",
    "float",
    "range",
    "any",
    "all",
    "keys",
    "values",
    "copy",
    "unique",
    "matches",
    "stable_hash",
    "type_of",
    "as_number",
    "as_text",
    "as_bool",
    "as_list",
    "as_map",
    "parse_int",
    "parse_number",
    "parse_json",
    "valid_regex",
    "search",
    "now",
    "today",
    "add_seconds",
    "add_minutes",
    "add_hours",
    "add_days",
    "seconds_between",
    "days_between",
    "date_of",
    "time_of",
    "weekday",
    "at",
    "audit",
    "next_id",
    "random_int",
    "random_choice",
    "advance_clock",
)
EFFECTFUL_FUNCTIONS = {
    "audit": AUDIT_LOG,
    "next_id": ID_COUNTERS,
    "random_int": RNG_STATE,
    "random_choice": RNG_STATE,
    "advance_clock": CLOCK,
}
CLOCK_READERS = ("now", "today")

STR_METHODS = (
    "lower",
    "upper",
    "strip",
    "title",
    "startswith",
    "endswith",
    "split",
    "join",
    "replace",
    "find",
    "count",
    "isdigit",
    "zfill",
)
LIST_METHODS = ("append", "insert", "remove", "extend", "pop", "clear", "index", "count", "copy")
MAP_METHODS = ("get", "keys", "values", "pop", "clear", "copy")
SET_METHODS = ("add", "discard", "copy")
MUTATING_METHODS = {
    "list": ("append", "insert", "remove", "extend", "pop", "clear"),
    "map": ("pop", "clear"),
    "set": ("add", "discard"),
}

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
