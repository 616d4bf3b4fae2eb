"""Stage 5, envc's own AST rules over a generated package: what a generated file may import
and call (no I/O but its own data files, no wall clock, no unseeded randomness), that the
`Environment` class has exactly the schema's tools, that state is only ever a fresh copy,
and that each tool touches only the state fields it declares. Each `rule_*` returns the
findings for one file; tests/fixtures/ast_rules/ holds one fixture per rule."""

from __future__ import annotations

import ast
import functools

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
    "episode.py": {"__future__", "json", "collections.abc", "typing"},
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
