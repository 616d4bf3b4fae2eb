"""Stage 5, envc's own AST rules over a generated package: what a generated file may import
and call (no I/O but its own data files, no wall clock, no unseeded randomness), that the
`Environment` class has exactly the schema's tools, that state is only ever a fresh copy,
and that each tool touches only the state fields it declares. Each `rule_*` returns the
findings for one file; tests/fixtures/ast_rules/ holds one fixture per rule."""

from __future__ import annotations

import ast
import functools
import importlib
import string
from types import ModuleType

from compiler import ir
from compiler.check.package import Finding, Package

# Imports a generated module may use: the standard library only, and per file only
# what it needs (the environment itself does no I/O; sessions save to disk).
ALLOWED_IMPORTS = {
    "environment.py": {
        "__future__",
        "json",
        "math",
        "random",  # only with `rng python`: Python's generator, seeded from state
        "re",
        "datetime",
        "collections.abc",
        "dataclasses",
        "types",
        "typing",
        "threading",  # forks: one lock per family of forked sessions
        "weakref",  # forks: a family knows when its other members are gone
        "pathlib",  # only to read the package's own data files (`rule_data_files`)
    },
    "sessions.py": {"__future__", "json", "os", "re", "tempfile", "threading", "collections.abc", "pathlib", "typing"},
    "scoring.py": {"__future__", "math", "collections.abc", "typing"},
    "episode.py": {"__future__", "json", "time", "collections.abc", "typing"},  # time: HARNESS_CLOCK
    "trl_env.py": {"__future__", "json", "collections.abc", "typing"},
    "__init__.py": {"__future__"},
    "tests/__init__.py": set(),
    "tests/test_environment.py": {"__future__", "threading", "collections.abc", "pathlib", "typing", "pytest"},
}
FORBIDDEN_CALLS = {
    "eval",
    "exec",
    "compile",
    "__import__",
    "open",
    "input",
    "breakpoint",
    "print",
    "globals",
    "locals",
    "vars",
    "setattr",
    "delattr",
    "help",  # pydoc: may start a pager
    "exit",
    "quit",
}
FORBIDDEN_ATTRIBUTES = {
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "sleep"),
    ("datetime", "now"),
    ("datetime", "today"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "environ"),
    ("random", "random"),
    ("random", "randint"),
    ("random", "choice"),
    ("uuid", "uuid4"),
}
HARNESS_CLOCK = {"episode.py": frozenset({("time", "monotonic")})}
"""The one clock a generated file may read, per file: the episode (a harness, like the
server) times each call to stop it at its limit (`call_timeout_s`); what a call returns
never depends on it, and the environment itself reads no clock."""
MODULE_NAMES: dict[str, frozenset[str] | None] = {
    "__future__": frozenset({"annotations"}),
    "json": frozenset({"dumps", "loads", "JSONDecodeError", "JSONEncoder"}),
    "math": None,
    "re": frozenset(
        {"compile", "search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer", "escape"}
        | {"error", "Pattern", "Match", "IGNORECASE", "I", "MULTILINE", "M", "DOTALL", "S", "ASCII", "A"}
    ),
    "datetime": frozenset({"datetime", "date", "time", "timedelta", "timezone", "UTC", "MINYEAR", "MAXYEAR"}),
    "random": frozenset({"Random"}),
    "collections.abc": None,
    "dataclasses": frozenset({"dataclass", "field", "fields", "replace", "asdict", "is_dataclass"}),
    "types": frozenset({"MappingProxyType", "SimpleNamespace", "TracebackType"}),
    "typing": frozenset(
        {"Any", "Final", "Literal", "NotRequired", "Required", "TypedDict", "cast", "TYPE_CHECKING", "ClassVar"}
        | {"Callable", "Iterable", "Iterator", "Mapping", "Sequence", "Optional", "Union", "Never", "NoReturn"}
        | {"Protocol", "TypeAlias", "TypeGuard", "TypeVar", "Generic"}
    ),
    "threading": frozenset({"Lock", "RLock"}),
    "weakref": frozenset({"WeakSet", "ref"}),
    "pathlib": frozenset({"Path"}),
    "time": frozenset({"monotonic"}),  # where imported at all: episode.py, HARNESS_CLOCK
}
"""What environment.py may use of each module it may import (`ALLOWED_IMPORTS`); None:
every public name that is not itself a module. An explicit list, not a deny-list: a
module's other names reach further than an environment should (`threading._os`,
`json.decoder`, `typing.get_type_hints`, which evaluates strings, `types.CodeType`,
which makes code from bytes)."""
TEMPLATE_DUNDERS = frozenset({"__name__", "__init__", "__post_init__", "__setattr__"})
"""The `.__x__` attributes envc's own template code uses (a class's name, `super().__init__`,
frozen dataclasses setting fields); any other dunder attribute reaches Python's internals
(`__dict__`, `__class__`, `__globals__`, `__subclasses__`, `__builtins__`...)."""
MODULE_DUNDERS = frozenset({"__file__", "__name__"})
"""Module-level dunder names environment.py may read (`__file__` only for its data folder)."""
FRAME_ATTRIBUTES = frozenset(
    {"gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame", "tb_next"}
    | {"f_back", "f_builtins", "f_code", "f_globals", "f_locals", "co_code", "co_consts", "co_names"}
)
"""Attributes of generators, coroutines, tracebacks, frames and code objects that lead to a
frame's globals and builtins without a dunder."""
REFLECTION_CALLS = frozenset({"getattr", "hasattr"})
"""Attribute access by a computed name: the template uses it on its own objects; a tool or
helper names its attributes."""
INFRASTRUCTURE_METHODS = {
    "call",
    "call_and_commit",
    "invoke",
    "view",
    "state",
    "saved_state",
    "state_json",
    "snapshot",
    "restore",
    "fork",
}


def ast_rules(package: Package) -> list[Finding]:
    """envc's own rules; each returns findings for one generated file."""
    findings: list[Finding] = []
    for relative, text in package.files.items():
        if not relative.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            findings.append(Finding("ast", relative, exc.lineno or 0, f"does not parse: {exc.msg}"))
            continue
        findings += rule_imports(relative, tree)
        findings += rule_no_bare_except(relative, tree)
        if relative == "environment.py":
            findings += rule_forbidden_calls(relative, tree)
            findings += rule_module_names(relative, tree)
            findings += rule_no_reflection(relative, tree, package.env)
            findings += rule_data_files(relative, tree)
            findings += rule_tool_parity(relative, tree, package.env)
            findings += rule_state_copied(relative, tree)
            findings += rule_declared_effects(relative, tree, package.env)
    return findings


@functools.lru_cache(maxsize=4)
def nodes_of(tree: ast.Module) -> tuple[ast.AST, ...]:
    """Every node of a generated file, walked once and shared by the rules that look at
    the whole file (they used to walk it once each)."""
    return tuple(ast.walk(tree))


def rule_imports(relative: str, tree: ast.Module) -> list[Finding]:
    """Only the standard-library modules this file needs; nothing of envc."""
    allowed = ALLOWED_IMPORTS.get(relative, set())
    findings = []
    for node in nodes_of(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level > 0:
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if name not in allowed:
                findings.append(Finding("ast", relative, node.lineno, f"import of `{name}` is not allowed here"))
    return findings


def rule_no_bare_except(relative: str, tree: ast.Module) -> list[Finding]:
    return [
        Finding("ast", relative, n.lineno, "bare `except:` hides errors")
        for n in nodes_of(tree)
        if isinstance(n, ast.ExceptHandler) and n.type is None
    ]


def rule_forbidden_calls(relative: str, tree: ast.Module) -> list[Finding]:
    """No I/O, no eval/exec, no wall clock, no unseeded randomness (`random.Random(seed)`
    with an explicit seed is the one use of the random module allowed)."""
    findings = []
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in nodes_of(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    clock = HARNESS_CLOCK.get(relative, frozenset())
    for node in nodes_of(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS:
            findings.append(
                Finding("ast", relative, node.lineno, f"call of `{func.id}` is forbidden in an environment")
            )
        if isinstance(func, ast.Attribute):
            module = func.value.id if isinstance(func.value, ast.Name) else ""
            owner = func.value.attr if isinstance(func.value, ast.Attribute) else module
            # A bare `random.x()` is only the module if this file imports it; otherwise it
            # is a spec's own variable that happens to share the name.
            is_module = module in imported
            risky = module in ("random", "subprocess", "socket", "time", "os") and is_module
            if module == "random" and func.attr == "Random" and len(node.args) == 1:
                risky = False  # `rng python`: a generator built from an explicit seed kept in state
            if (module, func.attr) in clock and is_module:
                continue  # the harness's own call clock
            if risky or ((owner, func.attr) in FORBIDDEN_ATTRIBUTES and (owner != module or is_module)):
                findings.append(
                    Finding(
                        "ast",
                        relative,
                        node.lineno,
                        f"call of `{owner}.{func.attr}` is forbidden (wall clock, randomness or I/O)",
                    )
                )
    return findings


def rule_module_names(relative: str, tree: ast.Module) -> list[Finding]:
    """A module reaches the environment only as `module.NAME` or `from module import NAME`
    for the names of `MODULE_NAMES`: no private or unlisted name (`threading._os`), no module
    reached through another (`json.decoder`), no module passed around as a value (dunder
    attributes are `rule_no_reflection`'s)."""
    findings = []
    aliases: dict[str, str] = {}
    for node in nodes_of(tree):
        if isinstance(node, ast.Import):
            aliases |= {alias.asname or alias.name.split(".")[0]: alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in MODULE_NAMES:
            findings += [
                Finding(
                    "ast", relative, node.lineno, f"`from {node.module} import {alias.name}`: {_unlisted(node.module)}"
                )
                for alias in node.names
                if not _may_use(node.module, alias.name)
            ]
    bases = set()
    for node in nodes_of(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            bases.add(id(node.value))
            module = aliases[node.value.id]
            if not _is_dunder(node.attr) and module in MODULE_NAMES and not _may_use(module, node.attr):
                message = f"`{node.value.id}.{node.attr}`: {_unlisted(module)}"
                findings.append(Finding("ast", relative, node.lineno, message))
    findings += [
        Finding(
            "ast",
            relative,
            n.lineno,
            f"the module `{n.id}` is used as a value: an environment names `{n.id}.NAME` only",
        )
        for n in nodes_of(tree)
        if isinstance(n, ast.Name) and n.id in aliases and isinstance(n.ctx, ast.Load) and id(n) not in bases
    ]
    return findings


def _unlisted(module: str) -> str:
    return f"not among the names an environment may use of `{module}`"


def _may_use(module: str, name: str) -> bool:
    """Whether environment.py may use `module.name` (`MODULE_NAMES`)."""
    listed = MODULE_NAMES.get(module)
    if listed is not None:
        return name in listed
    if name.startswith("_"):
        return False
    return not isinstance(getattr(importlib.import_module(module), name, None), ModuleType)


BUILTINS_WATCHED = FORBIDDEN_CALLS | REFLECTION_CALLS | {"type"}


def rule_no_reflection(relative: str, tree: ast.Module, env: ir.Environment) -> list[Finding]:
    """Nothing reaches Python's internals: no dunder attribute but the template's own
    (`TEMPLATE_DUNDERS`) and none at all in a tool or helper, no dunder name but
    `__file__`/`__name__`, no frame or code attribute, no forbidden builtin even uncalled
    (`run = eval`); and in the spec's tools and helpers, where `python` bodies go, no
    attribute by computed name (`getattr`, `hasattr`), no class made by `type(name, bases,
    ns)` and no format string that reads attributes or items (`"{0.__class__}".format(x)`)."""
    spans = [(m.lineno, m.end_lineno or m.lineno) for m in _spec_methods(tree, env)]
    called: dict[int, ast.Call] = {}
    findings = []
    for node in nodes_of(tree):
        if isinstance(node, ast.Call):
            called[id(node.func)] = node
            continue
        if not isinstance(node, (ast.Attribute, ast.Name)):
            continue
        in_spec_code = any(first <= node.lineno <= last for first, last in spans)
        if isinstance(node, ast.Attribute):
            problem = _attribute_problem(node, in_spec_code)
        elif isinstance(node.ctx, ast.Load):
            problem = _name_problem(node, called.get(id(node)), in_spec_code, tree)
        else:
            problem = ""
        if problem:
            findings.append(Finding("ast", relative, node.lineno, problem))
    for call in called.values():
        if any(first <= call.lineno <= last for first, last in spans) and _reads_through_format(call):
            message = (
                "a format string that reads attributes or items (`{0.x}`, `{0[x]}`) is forbidden in a tool or helper"
            )
            findings.append(Finding("ast", relative, call.lineno, message))
    return findings


def _attribute_problem(node: ast.Attribute, in_spec_code: bool) -> str:
    if _is_dunder(node.attr) and (in_spec_code or node.attr not in TEMPLATE_DUNDERS):
        return f"`.{node.attr}` reaches Python's internals: forbidden in an environment"
    if node.attr in FRAME_ATTRIBUTES and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
        return f"`.{node.attr}` reaches a frame or code object: forbidden in an environment"
    return ""


def _name_problem(node: ast.Name, call: ast.Call | None, in_spec_code: bool, tree: ast.Module) -> str:
    if _is_dunder(node.id):
        return (
            "" if node.id in MODULE_DUNDERS else f"`{node.id}` reaches Python's internals: forbidden in an environment"
        )
    if node.id not in BUILTINS_WATCHED:
        return ""
    if node.id == "type":
        makes_class = in_spec_code and call is not None and len(call.args) > 1
        problem = "`type(name, bases, namespace)` makes a class: forbidden in a tool or helper" if makes_class else ""
    elif call is None:
        problem = f"`{node.id}` is forbidden in an environment, called or not"
    elif node.id in REFLECTION_CALLS and in_spec_code:
        problem = f"`{node.id}` is forbidden in a tool or helper: name the attribute"
    else:
        problem = ""  # a call of the others is `rule_forbidden_calls`'s
    return problem if problem and _reads_builtin(node, _parents(tree)) else ""


def _reads_through_format(call: ast.Call) -> bool:
    """`TEXT.format(...)`/`.format_map(...)` whose text is not a literal, or whose fields
    read attributes or items of the arguments."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("format", "format_map")):
        return False
    text = func.value
    if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
        return True
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text.value) if field]
    except ValueError:
        return True
    return any("." in field or "[" in field for field in fields)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _reads_builtin(name: ast.Name, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether `name` reads Python's builtin of that name: no scope it is read in binds
    it (a parameter called `open` is the spec's, not the builtin). A function's defaults
    and annotations are read in the scope around it; a class body's names are not seen
    by its methods."""
    child: ast.AST = name
    node = parents.get(name)
    crossed_function = False
    while node is not None:
        outside = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and child is node.args
        if isinstance(node, _COMPREHENSIONS + _SCOPES + (ast.Module,)) and not outside:
            hidden = isinstance(node, ast.ClassDef) and crossed_function
            if not hidden and name.id in _bound_in(node):
                return False
            crossed_function |= isinstance(node, _SCOPES) and not isinstance(node, ast.ClassDef)
        child, node = node, parents.get(node)
    return True


@functools.lru_cache(maxsize=4096)
def _bound_in(scope: ast.AST) -> frozenset[str]:
    """The names a scope binds itself (parameters, assignments, imports, definitions,
    loop, `with` and `except` names), not those of the scopes inside it."""
    bound: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        bound |= {a.arg for a in every if a is not None}
        body: list[ast.AST] = [scope.body] if isinstance(scope, ast.Lambda) else list(scope.body)
    elif isinstance(scope, _COMPREHENSIONS):
        body = [g.target for g in scope.generators]
    else:
        body = list(getattr(scope, "body", []))
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        if isinstance(node, (*_SCOPES, *_COMPREHENSIONS)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return frozenset(bound)


def _spec_methods(tree: ast.Module, env: ir.Environment) -> list[ast.FunctionDef]:
    """The methods lowered from the spec (its tools, and its helpers as `_NAME`): where a
    `python` body is put."""
    cls = _environment_class(tree)
    if cls is None:
        return []
    names = {t.name for t in env.tools} | {f"_{fn.name}" for fn in env.fns}
    return [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in names]


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


@functools.lru_cache(maxsize=4)
def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    """Each node's parent, for the rules that look at how a name is used."""
    return {child: node for node in nodes_of(tree) for child in ast.iter_child_nodes(node)}


DATA_READER = "_read_data"
"""The one function of environment.py that reads files: the package's `data/` folder."""


def rule_data_files(relative: str, tree: ast.Module) -> list[Finding]:
    """The environment does no I/O but read its own data files once, at import: `Path`
    appears only as `Path(__file__).with_name("data")` (the package's data folder, bound
    to `_DATA`), `_DATA` only inside `_read_data`, and that function calls no I/O method
    but `read_text`."""
    findings = []
    reader = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == DATA_READER), None)
    inside = {id(node) for node in ast.walk(reader)} if reader is not None else set()
    for node in nodes_of(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_pathlib_otherwise(node):
            findings.append(
                Finding("ast", relative, node.lineno, "`pathlib` is imported as `from pathlib import Path` only")
            )
        if (
            isinstance(node, ast.Name)
            and node.id == "Path"
            and isinstance(node.ctx, ast.Load)
            and not _is_data_folder(node, tree)
        ):
            findings.append(Finding("ast", relative, node.lineno, "`Path` may only name the package's data folder"))
        if (
            isinstance(node, ast.Name)
            and node.id == "_DATA"
            and isinstance(node.ctx, ast.Load)
            and id(node) not in inside
        ):
            findings.append(Finding("ast", relative, node.lineno, f"`_DATA` is read only by `{DATA_READER}`"))
        if (
            id(node) in inside
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr not in ("read_text", "loads")
        ):
            findings.append(Finding("ast", relative, node.lineno, f"`{DATA_READER}` only reads (`.{node.func.attr}`)"))
    return findings


def _imports_pathlib_otherwise(node: ast.Import | ast.ImportFrom) -> bool:
    """`import pathlib` or `from pathlib import Path as P` (or another name): `Path` then
    reaches the disk under a name `rule_data_files` does not watch."""
    if isinstance(node, ast.Import):
        return any(alias.name == "pathlib" for alias in node.names)
    return node.module == "pathlib" and any(alias.name != "Path" or alias.asname is not None for alias in node.names)


def _is_data_folder(name: ast.Name, tree: ast.Module) -> bool:
    """Whether this `Path` is the one in `_DATA = Path(__file__).with_name("data")`."""
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if (
            isinstance(target, ast.Name)
            and target.id == "_DATA"
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "with_name"
            and isinstance(value.func.value, ast.Call)
            and value.func.value.func is name
            and [ast.dump(a) for a in value.func.value.args] == [ast.dump(ast.Name("__file__", ast.Load()))]
            and [ast.dump(a) for a in value.args] == [ast.dump(ast.Constant("data"))]
        ):
            return True
    return False


def _environment_class(tree: ast.Module) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Environment"), None)


def rule_tool_parity(relative: str, tree: ast.Module, env: ir.Environment) -> list[Finding]:
    """Every tool of the schema has a method, and every public method is a tool."""
    cls = _environment_class(tree)
    if cls is None:
        return [Finding("ast", relative, 1, "no `Environment` class")]
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    public = {name for name in methods if not name.startswith("_")} - INFRASTRUCTURE_METHODS
    tools = {t.name for t in env.tools}
    findings = [Finding("ast", relative, cls.lineno, f"tool `{name}` has no method") for name in sorted(tools - public)]
    findings += [
        Finding("ast", relative, methods[name].lineno, f"public method `{name}` is not a tool of the schema")
        for name in sorted(public - tools)
    ]
    return findings


def rule_state_copied(relative: str, tree: ast.Module) -> list[Finding]:
    """`self._state` is only ever assigned a fresh copy, so no session shares a scenario's
    or S0's data. Forks do share containers, on purpose and journaled (`_Family`); they
    fill a new dict with `update`, which this rule does not see, and the generated
    `test_forks_keep_apart` and tests/test_fork.py check them instead."""
    findings = []
    for node in nodes_of(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "_state":
                value = node.value
                ok = (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id in ("copy_state", "_scenario_state")
                )
                if not ok:
                    findings.append(
                        Finding("ast", relative, node.lineno, "`_state` must be assigned a deep copy (copy_state)")
                    )
    return findings


def rule_declared_effects(relative: str, tree: ast.Module, env: ir.Environment) -> list[Finding]:
    """A tool method touches only the state fields it reads or writes, and assigns only
    fields in its write set."""
    cls = _environment_class(tree)
    if cls is None:
        return []
    tools = {t.name: t for t in env.tools}
    findings = []
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef) or method.name not in tools:
            continue
        tool = tools[method.name]
        touched, assigned = _state_fields(method)
        for name, line in sorted(touched.items()):
            if name not in tool.reads and name not in tool.writes:
                findings.append(
                    Finding(
                        "ast",
                        relative,
                        line,
                        f"tool `{tool.name}` uses state field `{name}` outside its read and write sets",
                    )
                )
        for name, line in sorted(assigned.items()):
            if name not in tool.writes:
                findings.append(
                    Finding(
                        "ast", relative, line, f"tool `{tool.name}` changes `{name}`, which is not in its write set"
                    )
                )
    return findings


def _state_fields(method: ast.FunctionDef) -> tuple[dict[str, int], dict[str, int]]:
    touched: dict[str, int] = {}
    assigned: dict[str, int] = {}
    for node in ast.walk(method):
        if isinstance(node, ast.Subscript) and _is_state(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                touched.setdefault(key.value, node.lineno)
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                root = _root_field(target)
                if root:
                    assigned.setdefault(root, node.lineno)
    return touched, assigned


def _is_state(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "state") or (
        isinstance(node, ast.Attribute) and node.attr == "_state"
    )


def _root_field(target: ast.expr) -> str:
    while isinstance(target, ast.Subscript):
        if _is_state(target.value) and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
            return target.slice.value
        target = target.value
    return ""
