"""Facts of the language every stage shares: error kinds, archetypes, the built-in
state and the audit entry record, the names of the built-in library (whose entries live
in `compiler/library/`), and the names a spec may not use."""

from __future__ import annotations

import functools
import keyword
import re
from typing import Final

from compiler import ir, library
from compiler.ir import typesys as ts
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

WHILE_LIMIT = 10_000
"""The rounds a `while` without `max` may run; one more is `limit_exceeded` (§13)."""
WHILE_LIMIT_MAX = 10_000_000
"""The largest `max N` of a `while`, the most items a call may build (`s * n`) too."""

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

# --------------------------------------------------------------------------- reserved names
# Which names a spec may not give its own declarations. Two sources, nothing else:
#
# - what the generated package already defines, derived from the templates by
#   compiler/lower/namespace.py (the block between `# BEGIN derived names` and
#   `# END derived names` below; tests/test_reserved_names.py fails when it is stale);
# - facts of the languages, which no generated code shows: Python's keywords and soft
#   keywords, envspec's own words, and the built-in function names of the body language.
#
# `reserved_reason(name, role)` applies them per kind of declaration and says why.

PYTHON_SOFT_KEYWORDS = frozenset({"match", "case", "type", "_"})
"""Fixed rather than `keyword.softkwlist`, so every Python envc runs on agrees."""
LANGUAGE_WORDS = frozenset(
    {"let", "fail", "require", "tool", "fn", "record", "enum", "scenario", "test", "task", "expect"}
    | {"raises", "drop", "rename", "extends", "override", "reads", "writes", "environment", "world"}
    | {"state", "nothing"}
)
"""Words of envspec that start a declaration, statement or step, or that bodies give a
meaning (`state.f`, `reads nothing`)."""
BLOCK_WORDS = frozenset({"param"})
"""Words that start a block line of a tool or helper (`param NAME "text"`) and are not
reserved everywhere: parameters may be called `param` (the prototypes have such), but a
tool, helper, state or world field may not, since its name can start a statement."""
TYPE_NAMES = frozenset({*ts.PRIMITIVES, "list", "map", "set", "optional", "any", "None"})
"""Types of the language, which a record or enum cannot be called either."""
ROLES = ("record", "enum", "tool", "helper", "state", "world", "variable", "test", "task", "family")
"""Kinds of declaration `reserved_reason` knows: `variable` is a parameter, `let` name,
loop or comprehension variable (of a tool, helper or test); `state`/`world` a field."""

_KINDS = {
    "module": "a module imported by",
    "import": "a name imported by",
    "class": "a class of",
    "function": "a function of",
    "constant": "a constant of",
}
_TEMPORARY = re.compile(r"(.+)_[0-9]+")
"""Lowering numbers its temporaries (`key_1`, `key_2`, ...): one derived name stands for all."""


PRIVATE_NAME = re.compile(r"_[A-Za-z][A-Za-z0-9_]*")
"""A private state field or record field (`_seen`): saved and restored with the state,
but left out of the public view `state()` that checkers compare. Not `__x` (Python would
mangle it in a class body) and not `_` alone."""


def is_private(name: str) -> bool:
    return PRIVATE_NAME.fullmatch(name) is not None


@functools.cache
def reserved_reason(name: str, role: str) -> str | None:
    """Why a declaration of this kind (`ROLES`) may not be called `name`, or None when it
    may. The reason says what the name already is in the generated code."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLES)}")
    if role in ("test", "task", "family"):
        return _landing_reason(name, role)  # test functions: any name, unless it lands on one
    if name.startswith("_") and not (role == "state" and is_private(name)):  # private state: `_seen`
        # Which is why no template name starting with `_` can collide with a spec's name,
        # only with one envc makes up from it (`_NAME` of a helper): see `_landing_reason`.
        return f"`{name}`: names starting with `_` are left to the generated code"
    if keyword.iskeyword(name):
        return f"`{name}` is a Python keyword"
    if name in PYTHON_SOFT_KEYWORDS:
        return f"`{name}` is a Python soft keyword"
    if name in LANGUAGE_WORDS:
        return f"`{name}` is a word of the envspec language"
    if name in BLOCK_WORDS and role in ("tool", "helper", "state", "world"):
        return f"`{name}` starts a block line of tools and helpers"
    if name in TYPE_NAMES and role in ("record", "enum"):
        return f"`{name}` is a type name of the language"
    if role == "helper" and name in FUNCTIONS:  # it shadows the built-in (E2042), under another method name
        return _helper_landing_reason(name)
    if role == "variable":
        return _variable_reason(name)
    return _landing_reason(name, role)


SHADOWING_ROLES = frozenset({"record", "helper"})
"""Declarations a body calls by name. One named like a built-in function takes its place
in every body of the spec, with a warning (E2042), so that adding a built-in to the
language never breaks a spec that already used the name. An enum, a `let` or a parameter
so named is a value, not a call: calls still reach the built-in, without a warning."""


def shadows_builtin(name: str, role: str) -> bool:
    """Whether a declaration of this kind (`ROLES`) called `name` hides a built-in function."""
    return name in FUNCTIONS and role in SHADOWING_ROLES


def helper_method(name: str) -> str:
    """The method of `Environment` a helper becomes: `_NAME`, or `_fn_NAME` when it shadows a
    built-in function, whose `_NAME` may be the built-in's own (`_uniform`, `_audit`)."""
    return f"_fn_{name}" if name in FUNCTIONS else f"_{name}"


def _helper_landing_reason(name: str) -> str | None:
    python = helper_method(name)
    why = _taken(python, "class")
    return None if why is None else f"a helper `{name}` becomes `{python}`, and {why}"


BODY_WORDS = frozenset(
    {"if", "elif", "else", "for", "while", "in", "not", "and", "or", "is", "lambda", "True", "False", "None"}
    | {"return", "del", "pass", "break", "continue", "let", "require", "fail"}
)
"""The words bodies give a meaning (statements, operators, constants): a parameter so
named could not be written in its own body."""


def parameter_reason(name: str) -> str | None:
    """Why a tool or helper parameter may not be called `name`, or None. A parameter's
    name reaches tools.json, so only what a body could not write is refused: the body
    words and `_` names (left to the generated code). Python keywords, envspec's
    declaration words (`state`, `world`), built-in functions and the generated code's own
    names are free; the Python code calls such a parameter `python_name(name, ...)`."""
    if name.startswith("_"):
        return f"`{name}`: names starting with `_` are left to the generated code"
    if name in BODY_WORDS:
        return f"`{name}` is a word of envspec bodies, which could not then name the parameter"
    return None


FIELD_NAMES_TAKEN = frozenset({"error"})
"""Record fields no record may have: a result with an `error` key reads as a failed call."""
EXPRESSION_WORDS = frozenset({"not", "lambda", "True", "False", "None"})
"""Body words that start an expression, so `Record(None=1)` could not name a field."""


def field_reason(name: str) -> str | None:
    """Why a record field may not be called `name`, or None. Fields become JSON keys the
    agent sees and dict keys in Python, so any name is fine but `error`, the words that
    start an expression and `_` names other than private ones (`_note`, kept in results)."""
    if name.startswith("_") and not is_private(name):
        return f"`{name}`: names starting with `_` are left to the generated code"
    if name in EXPRESSION_WORDS:
        return f"`{name}` starts an expression, so `Record({name}=...)` could not name the field"
    if name in FIELD_NAMES_TAKEN:
        return f"`{name}` cannot be a record field: a result with an `{name}` key reads as a failed call"
    return None


def python_name(name: str, taken: frozenset[str] | set[str] = frozenset()) -> str:
    """The Python name of a parameter called `name`: itself when Python and the generated
    code leave it free, else `name_` (more `_` until it is free and not in `taken`, the
    other names of the callable)."""
    if reserved_reason(name, "variable") is None:
        return name
    alias = name + "_"
    while alias in taken or reserved_reason(alias, "variable") is not None:
        alias += "_"
    return alias


def _variable_reason(name: str) -> str | None:
    """A parameter or local lives in a generated method or test function, beside the names
    that code uses; a python body may use any public name of the module besides."""
    temporary = _TEMPORARY.fullmatch(name)
    if name in BODY_NAMES or (temporary is not None and temporary[1] in _TEMPORARY_STEMS):
        return f"`{name}` is a name the code generated for tool, helper and test bodies uses"
    if name in MODULE_NAMES:
        return _module_reason(name) + "; a parameter or local would hide it from the body"
    return None


def _landing_reason(name: str, role: str, only: tuple[str, ...] = ()) -> str | None:
    """A declaration becomes Python names (`PATTERNS`): each must be free where it lands
    (in the namespaces `only`, if given)."""
    for namespace, pattern in sorted(PATTERNS.get(role, ()), key=lambda where: where[1] != "{}"):  # itself first
        if only and namespace not in only:
            continue
        python = pattern.format(name)
        why = _taken(python, namespace)
        if why is None:
            continue
        if python == name:
            return why
        return f"{_ARTICLE[role]} `{name}` becomes `{python}`, and {why}"
    return None


_ARTICLE = {
    "record": "a record",
    "enum": "an enum",
    "tool": "a tool",
    "helper": "a helper",
    "test": "a test",
    "task": "a task",
    "family": "a family",
}


def _taken(python: str, namespace: str) -> str | None:
    if namespace == "module":
        if python in MODULE_NAMES:
            return _module_reason(python)
        if python in MODULE_BUILTINS:
            return f"`{python}` is a Python built-in the generated environment module uses"
    elif namespace == "class":
        if python in MEMBERS:
            return _member_reason(python)
        if python in CLASS_SCOPE:
            return f"`{python}` is used in the method signatures of the generated Environment, which a method of that name would hide"
        if python in SUBCLASS_MEMBERS:
            return f"`{python}` is an attribute of the generated tests' Recorder, a subclass of Environment"
    elif namespace == "annotations":
        if python in MEMBERS:
            return _member_reason(python) + ", where it would hide a type of that name in method signatures"
    elif namespace == "tests" and python in TEST_MODULE_NAMES:
        return f"`{python}` is already a name of every generated test module"
    return None


def _module_reason(name: str) -> str:
    where = (
        "every generated environment module" if name in MODULE_ALWAYS else "generated environment modules that need it"
    )
    return f"`{name}` is {_KINDS[MODULE_NAMES[name]]} {where}"


def _member_reason(name: str) -> str:
    what = "a method" if name in _METHODS else "an attribute"
    where = (
        "every generated Environment" if name in MEMBERS_ALWAYS else "the generated Environment where a spec needs it"
    )
    return f"`{name}` is {what} of {where}"


def is_reserved(name: str, role: str | None = None) -> bool:
    """Whether `name` is refused for a declaration of `role` (`reserved_reason`).

    Without a role, for what the analyser asks about this way: records, enums, helpers
    and variables (parameters, `let` names, loop and comprehension variables). That is
    every name a variable may not take, and every name a record or enum may not take for
    clashing with the module (`Param`, `isinstance`; the analyser refuses type names such
    as `date` for records and enums itself). Not the rules that concern one kind only and
    would refuse good names of the others: a record or enum named like an `Environment`
    method (`view`), a helper whose `_NAME` is a member of `Environment` (`run`, `undo`),
    a helper `param`; `let view`, `let run` and `date: date` are fine. Those need the
    role: `reserved_reason(name, role)`."""
    if role is not None:
        return reserved_reason(name, role) is not None
    if reserved_reason(name, "variable") is not None:
        return True
    return any(_landing_reason(name, r, only=("module",)) is not None for r in ("record", "enum"))


def is_reserved_declaration(name: str, role: str | None = None) -> bool:
    """Whether `name` is refused for a declaration of `role` (`reserved_reason`).

    Without a role, for tools, state and world fields, which become methods and dict
    keys, so they may reuse a built-in function's name (`search`, `matches`): calls in
    bodies still mean the built-in, names in tests the tool. The names only a tool may not
    take because they are methods of `Environment` (`view`) or kept for its harness API
    are `RESERVED_TOOL_NAMES`, which the analyser checks for tools on their own; a state
    field may be called `view`."""
    if role is not None:
        return reserved_reason(name, role) is not None
    if any(reserved_reason(name, r) is not None for r in ("state", "world")):
        return True
    return name not in RESERVED_TOOL_NAMES and reserved_reason(name, "tool") is not None


def _by_kind(groups: dict[str, str]) -> dict[str, str]:
    """`{kind: "name name ..."}` as name -> kind: how the derived block spells its maps."""
    return {name: kind for kind, names in groups.items() for name in names.split()}


# BEGIN derived names: written by `python -m compiler.lower.namespace --write`; do not edit.
# What each constant holds: the field of the same name of compiler.lower.namespace.Derived.
MODULE_NAMES: Final = _by_kind(
    {
        "class": (
            "AuditEntry DomainError Environment Family FamilyFailed Param ScenarioError State ToolSpec World "
            "_Family _Member _PrivateStateNeeded _RecordingLog _Regex _UndoLog"
        ),
        "constant": (
            "DEFAULT_STATE FAMILIES INTERNAL_ERROR Kind LOAD_OPTIONS MAX_DEPTH MAX_INT RECORD_FIELDS "
            "SCENARIOS SCENARIO_STATES STATE_ALIASES STATE_KINDS STEPS_COUNTED TIMEOUT_MESSAGE TOOL_SPECS "
            "UNION_TAGS UNSET UNWRITABLE_RESULT WORLD _ABSENT_FIELD _DATA _INT_KEY _Item _MAX_DRAWS "
            "_MEMBER_CLASSES _MISSING _REGEX_CACHE _REGEX_ESCAPES _REGEX_MAX_CACHED _REGEX_MAX_PROGRAM "
            "_REGEX_MAX_REPEAT _REGEX_MAX_STATES _RESULT_JSON _Record _SCALARS _SURROGATE _TEMPORAL_SHAPES "
            "_TICKS _TYPE_NAMES"
        ),
        "function": (
            "_add_days _add_hours _add_minutes _add_seconds _as_bool _as_float _as_list _as_map _as_number "
            "_as_session _as_text _call_0 _call_1 _call_2 _call_3 _call_4 _call_5 _check_limits _checked_out "
            "_conform_key _conform_pairs _conform_record _conform_union _copy_AuditEntry _days_between "
            "_format_datetime _format_like _from_data _invalid _join _json_key _keep_open _matches "
            "_member_class _moment _not_found _old _pair_order _parse_datetime _parse_int _parse_json "
            "_parse_number _plan_0 _read_data _redo_entry _refuse _refuse_constant _regex _regex_alternation "
            "_regex_atom _regex_class _regex_closure _regex_emit _regex_emit_repeat _regex_escape "
            "_regex_group _regex_holds _regex_program _regex_refuse_set_operations _regex_repeats _regex_run "
            "_regex_sequence _regex_settle _regex_step _remove_first _repr _restore_draws _scenario_state "
            "_search _seconds_between _seed_draws _show _solution_call _solve_0 _stable_hash _text _type_of "
            "_undo_entry _valid_moment _valid_regex _weekday _with_new_value check_arguments check_json "
            "check_load_options conform copy_json copy_state result_text state_to_json to_json"
        ),
        "import": (
            "Any Callable Collection Final Iterable Iterator Literal Mapping NoReturn NotRequired Path "
            "TypeVar TypedDict _field annotations cast dataclass"
        ),
        "module": "dt json math random re threading weakref",
    }
)
MODULE_ALWAYS: Final = frozenset(
    "Any AuditEntry Callable DEFAULT_STATE DomainError Environment FAMILIES Family FamilyFailed Final "
    "INTERNAL_ERROR Kind LOAD_OPTIONS MAX_DEPTH MAX_INT Mapping Param RECORD_FIELDS SCENARIOS "
    "SCENARIO_STATES STATE_KINDS STEPS_COUNTED ScenarioError State TIMEOUT_MESSAGE TOOL_SPECS ToolSpec "
    "TypedDict UNWRITABLE_RESULT _Family _INT_KEY _MEMBER_CLASSES _MISSING _Member _PrivateStateNeeded "
    "_RESULT_JSON _Record _RecordingLog _SCALARS _SURROGATE _TEMPORAL_SHAPES _TICKS _TYPE_NAMES _UndoLog "
    "_check_limits _checked_out _conform_key _conform_pairs _conform_record _copy_AuditEntry _field _invalid "
    "_join _keep_open _member_class _old _redo_entry _refuse _scenario_state _show _text _undo_entry "
    "_valid_moment _with_new_value annotations cast check_arguments check_json check_load_options conform "
    "copy_json copy_state dataclass dt json math re result_text state_to_json threading to_json weakref".split()
)
MODULE_BUILTINS: Final = frozenset(
    "AssertionError BaseException Exception IndexError OverflowError RecursionError RuntimeError TypeError "
    "ValueError abs all any bool chr dict enumerate float frozenset getattr int isinstance len list map max "
    "min next object ord range repr reversed round set sorted str sum super tuple type zip".split()
)
MEMBERS: Final = _by_kind(
    {
        "attribute": "_call_clock _rng _rng_at _state _steps_left _undo",
        "method": (
            "__init__ _advance_clock _audit _call_with_clock _count_each _count_each_one _count_steps "
            "_load_scenario _next_id _on_load _random_below _random_choice _random_float _random_int _run "
            "_uniform call call_and_commit fork invoke restore saved_state snapshot state state_json view"
        ),
    }
)
MEMBERS_ALWAYS: Final = frozenset(
    "__init__ _call_clock _call_with_clock _count_steps _load_scenario _run _state _steps_left _undo call "
    "call_and_commit fork invoke restore saved_state snapshot state state_json view".split()
)
CLASS_SCOPE: Final = frozenset(
    "Any Callable Collection Environment Iterable Iterator Mapping State ToolSpec UNSET _Item _TICKS "
    "_call_clock _steps_left bool dict float int list set str tuple".split()
)
SUBCLASS_MEMBERS: Final = frozenset("trace".split())
BODY_NAMES: Final = frozenset(
    "Any BaseException DomainError Recorder RuntimeError UNSET WORLD _add_days _add_hours _add_minutes "
    "_add_seconds _as_bool _as_float _as_list _as_map _as_number _as_text _days_between _depth "
    "_format_datetime _json_key _matches _not_found _parse_datetime _parse_int _parse_json _parse_number "
    "_remove_first _repr _search _seconds_between _stable_hash _type_of _valid_regex _weekday abs all any "
    "bool cast chr dict env environment expect_error float int json key_1 len list max min ord range "
    "reversed round self set sorted state str sum undo_log zip".split()
)
TEST_MODULE_NAMES: Final = frozenset(
    "Any BAD_ARGUMENTS Callable DomainError Environment FAMILIES FamilyFailed INTERNAL_ERROR MISSING_KEYS "
    "Mapping Path Recorder SAMPLE_ARGUMENTS SCENARIOS SCENARIO_NAMES SPEC_RUNS SessionStore TOOL_SPECS "
    "WRITE_CALLS _Fault _Journal _arm _traces annotations cast copy_json environment expect_error pytest "
    "test_a_failure_at_any_point_of_a_call_changes_nothing test_bad_arguments_are_refused "
    "test_calls_keep_to_their_effects test_forks_keep_apart test_missing_keys_are_domain_errors "
    "test_one_store_serves_many_threads test_same_calls_give_the_same_trace "
    "test_scenario_loads_and_round_trips test_session_store_keeps_sessions_apart "
    "test_sessions_on_threads_do_not_interfere test_snapshot_and_restore test_unknown_tool_is_refused "
    "threading to_json".split()
)
OTHER_MODULE_NAMES: Final = frozenset(
    "Any DEFAULT_STATE DomainError Environment Episode EpisodeError FAMILIES Family FamilyFailed Mapping "
    "Path SCENARIOS SESSION_ID STEPS_COUNTED ScenarioError SessionError SessionStore State TOOL_SPECS "
    "__all__ _check_id _write_atomically annotations json open_environment os re score tempfile threading".split()
)
PATTERNS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "record": (
        ("annotations", "{}"),
        ("module", "_copy_{}"),
        ("module", "_json_optional_{}"),
        ("module", "_json_{}"),
        ("module", "{}"),
    ),
    "enum": (("annotations", "{}"), ("module", "{}")),
    "tool": (("class", "{}"),),
    "helper": (("class", "_{}"),),
    "test": (("tests", "run_{}"), ("tests", "test_{}")),
    "task": (("tests", "test_task_{}"),),
    "family": (("tests", "test_family_{}"),),
}
# END derived names

_METHODS = frozenset(name for name, kind in MEMBERS.items() if kind == "method")
_TEMPORARY_STEMS = frozenset(match[1] for name in BODY_NAMES if (match := _TEMPORARY.fullmatch(name)))

RESERVED = frozenset(
    name
    for name in (
        *keyword.kwlist,
        *PYTHON_SOFT_KEYWORDS,
        *LANGUAGE_WORDS,
        *FUNCTIONS,
        *MODULE_NAMES,
        *MODULE_BUILTINS,
        *MEMBERS,
        *BODY_NAMES,
    )
    if not name.startswith("_") and is_reserved(name)
)
"""The names `is_reserved` refuses without a role, besides every name starting with `_` and
the lowering's other numbered temporaries (`key_2`, ...)."""
RESERVED_TOOL_NAMES = frozenset(name for name in _METHODS if not name.startswith("_"))
"""The public methods of every generated `Environment`, which a tool would replace. The
harness APIs (`Episode`, `TrlEnvironment`, `SessionStore`, envc's servers and adapters)
are classes of their own, so a tool may be called `reset`, `step`, `score` or `close`."""
