"""Replay BFCL's multi-turn ground truth on the generated ports of BFCL classes.

    python benchmarks/bfcl_replay.py                          # base, long_context, miss_func, miss_param
    python benchmarks/bfcl_replay.py --category base --verbose
    python benchmarks/bfcl_replay.py --self-check             # the harness against BFCL's own executor
    python benchmarks/bfcl_replay.py --generated /tmp/out     # ports built somewhere else

Three classes of the Berkeley Function Calling Leaderboard's multi-turn suite are ported
to envspec (`PORTED`: BFCL class name -> generated package). For every task of the
category that involves a ported class, the ground-truth calls run turn by turn in two
worlds built exactly as BFCL builds them (`execute_multi_turn_func_call` in bfcl_eval's
multi_turn_utils.py):

- pure BFCL: every involved class is a BFCL instance;
- hybrid: each ported class is the generated `Environment`, the others BFCL instances.

Calls are executed by this script, not by BFCL's `eval`: each call string is parsed with
`ast`, its arguments read with `ast.literal_eval`, the method found by name (a later class
of `involved_classes` wins a clash, as in BFCL), and the result formatted as BFCL formats
it (a str stays, a dict becomes json.dumps (or str), anything else str(); an exception
becomes "Error during execution: ..."). `--self-check` shows this executor gives the same
result strings (and states) as BFCL's own executor on the pure world.

Compared, for calls to ported classes: the result string of every call; and after loading
and after every turn, each public attribute of the BFCL instance (BFCL's state checker
compares exactly those, with `!=`) against the key of that name in `env.view()` (a
missing key is a mismatch; extra keys such as `audit_log` are ignored).

Prints, per ported class: tasks, turns, calls, state mismatches, result mismatches;
`--verbose` adds every mismatch. Exit status 1 on any mismatch, 2 if a generated package
is missing.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import inspect
import itertools
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, Protocol

try:
    import bfcl_eval
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
except ImportError as error:  # pragma: no cover - an environment problem, said plainly
    raise ImportError(
        "bfcl_replay needs the Berkeley Function Calling Leaderboard package: pip install --no-deps bfcl-eval mpmath"
    ) from error

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GENERATED = ROOT / "generated"
BFCL_DATA = Path(bfcl_eval.__file__).resolve().parent / "data"

PORTED: Mapping[str, str] = {
    "TicketAPI": "bfcl_ticket",
    "TwitterAPI": "bfcl_twitter",
    "MessageAPI": "bfcl_message",
}
"""The registry of ported BFCL classes: class name -> generated package under generated/."""

CATEGORIES = ("base", "long_context", "miss_func", "miss_param")
"""The multi-turn categories with ground truth: the issue asks for base and long_context;
miss_func and miss_param reuse the same environments with a function or a parameter
hidden from the model, so their ground truth exercises the ports the same way."""
FORBIDDEN = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
"""Method names BFCL's executor refuses before evaluating a call."""


class MissingPort(ImportError):
    """A ported class's generated package cannot be imported."""


class RefusedConfig(Exception):
    """A port's `Environment` refused BFCL's initial config (a ScenarioError)."""

    def __init__(self, class_name: str, error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.class_name = class_name


# --------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """One BFCL multi-turn entry with its ground truth."""

    id: str
    category: str
    involved_classes: tuple[str, ...]
    initial_config: Mapping[str, Any]
    turns: tuple[tuple[str, ...], ...]

    @property
    def long_context(self) -> bool:
        """As BFCL decides it: from the category part of the id."""
        category = self.id.rsplit("_", 1)[0]
        return "long_context" in category or "composite" in category

    @property
    def ported(self) -> tuple[str, ...]:
        return tuple(name for name in self.involved_classes if name in PORTED)


def data_file(category: str, answers: bool = False) -> Path:
    """The category's JSON-lines file (any BFCL_v* version), or its ground truth."""
    folder = BFCL_DATA / "possible_answer" if answers else BFCL_DATA
    found = sorted(folder.glob(f"BFCL_v*_multi_turn_{category}.json"))
    if not found:
        raise FileNotFoundError(f"no BFCL_v*_multi_turn_{category}.json under {folder}")
    return found[-1]


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@cache
def load_tasks(category: str) -> tuple[Task, ...]:
    """Every task of the category that involves a ported class, in file order."""
    answers = {row["id"]: row["ground_truth"] for row in read_json_lines(data_file(category, answers=True))}
    tasks = []
    for row in read_json_lines(data_file(category)):
        task = Task(
            id=row["id"],
            category=category,
            involved_classes=tuple(row["involved_classes"]),
            initial_config=row["initial_config"],
            turns=tuple(tuple(turn) for turn in answers[row["id"]]),
        )
        if task.ported:
            tasks.append(task)
    return tuple(tasks)


def categories(choice: str) -> tuple[str, ...]:
    return CATEGORIES if choice == "all" else (choice,)


# --------------------------------------------------------------------------- calls


@dataclass(frozen=True)
class Call:
    """A parsed ground-truth call: `name(*args, **kwargs)` with literal arguments."""

    text: str
    name: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]


@cache
def parse_call(text: str) -> Call:
    """Parse "name(a, key=value)"; arguments must be literals (all of BFCL's ground truth is)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    if any(keyword.arg is None for keyword in node.keywords):
        raise ValueError(f"**kwargs in a call: {text!r}")
    args = tuple(ast.literal_eval(arg) for arg in node.args)
    kwargs = {str(keyword.arg): ast.literal_eval(keyword.value) for keyword in node.keywords}
    return Call(text, node.func.id, args, kwargs)


def format_result(value: Any) -> str:
    """BFCL's formatting of a call's result, to the letter (`type(...) ==`, bare except)."""
    if type(value) == str:  # noqa: E721 - BFCL compares types exactly
        return value
    if type(value) == dict:  # noqa: E721
        try:
            return json.dumps(value)
        except Exception:
            return str(value)
    return str(value)


def error_result(error: BaseException) -> str:
    return f"Error during execution: {error}"


# --------------------------------------------------------------------------- backends


class Backend(Protocol):
    """One class of a world: a BFCL instance or a generated environment."""

    def tool_names(self) -> list[str]: ...

    def invoke(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...

    def public_state(self) -> Mapping[str, Any]: ...


def reset_shared_defaults() -> None:
    """Give BFCL's `TwitterAPI.post_tweet(tags=[], mentions=[])` fresh default lists.

    Those defaults are shared by the whole process: a tweet posted without tags or
    mentions stores the default list itself, and `mention` extends it in place, so every
    later tweet posted without mentions, in any task, starts with those names. Called
    before each world runs a task, so tasks are as independent as in a fresh process;
    within one task the sharing stays, and a port must behave the same.
    """
    module = importlib.import_module(CLASS_FILE_PATH_MAPPING["TwitterAPI"])
    module.TwitterAPI.post_tweet.__defaults__ = ([], [])


def bfcl_class(class_name: str) -> type:
    return getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)  # type: ignore[no-any-return]


def new_bfcl_instance(class_name: str, initial_config: Mapping[str, Any], long_context: bool) -> Any:
    """As BFCL builds it: a fresh instance loaded from a deep copy of its initial config."""
    instance = bfcl_class(class_name)()
    if class_name not in STATELESS_CLASSES:
        instance._load_scenario(copy.deepcopy(initial_config.get(class_name, {})), long_context=long_context)
    return instance


def public_attributes(instance: Any) -> dict[str, Any]:
    """What BFCL's state checker compares: instance attributes not starting with `_`."""
    return {name: value for name, value in vars(instance).items() if not name.startswith("_")}


class BfclBackend:
    def __init__(self, instance: Any) -> None:
        self.instance = instance

    def tool_names(self) -> list[str]:
        """BFCL's rule: every bound method of the instance whose name does not start with `_`."""
        members = inspect.getmembers(self.instance, predicate=inspect.ismethod)
        return [name for name, _ in members if not name.startswith("_")]

    def invoke(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return getattr(self.instance, name)(*args, **kwargs)

    def public_state(self) -> Mapping[str, Any]:
        return public_attributes(self.instance)


def keyword_arguments(
    params: Sequence[Any], tool: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Name positional arguments by the tool's declared parameter order (`TOOL_SPECS[...].params`)."""
    if not args:
        return kwargs
    names = [param.name for param in params]
    if len(args) > len(names):
        raise TypeError(f"{tool}() takes {len(names)} positional arguments but {len(args)} were given")
    named = dict(zip(names, args))
    twice = [name for name in names if name in named and name in kwargs]
    if twice:
        raise TypeError(f"{tool}() got multiple values for argument '{twice[0]}'")
    return {**named, **kwargs}


class GeneratedBackend:
    def __init__(self, package: Any, initial_config: Mapping[str, Any], long_context: bool = False) -> None:
        self.package = package
        self.env = package.Environment(initial_config, long_context=long_context)  # the port's load option

    def tool_names(self) -> list[str]:
        return list(self.package.TOOL_SPECS)

    def invoke(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        spec = self.package.TOOL_SPECS.get(name)
        if spec is not None:
            kwargs = keyword_arguments(spec.params, name, args, kwargs)
        return self.env.call(name, kwargs)

    def public_state(self) -> Mapping[str, Any]:
        return self.env.view()  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- worlds


@dataclass
class World:
    """The involved classes of one task and which class answers each method name."""

    backends: dict[str, Backend]
    owners: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for class_name, backend in self.backends.items():  # insertion order: a later class wins
            for name in backend.tool_names():
                self.owners[name] = class_name


def _port_folder(generated: Path, package: str) -> Path:
    """Where a port's package is: `generated/<package>`, or one folder deeper
    (`generated/ports/<package>`, as `envc compile` mirrors specs/ports/)."""
    nested = sorted(path.parent for path in generated.glob(f"*/{package}/__init__.py"))
    return nested[0] if nested and not (generated / package).is_dir() else generated / package


def load_port(class_name: str, generated: Path = GENERATED) -> ModuleType:
    """Import the generated package of a ported class, or say plainly that it is missing."""
    package = PORTED[class_name]
    folder = str(_port_folder(generated, package).parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as error:
        if error.name != package:
            raise
        raise MissingPort(
            f"generated package {package!r} (the port of BFCL's {class_name}) is missing from {generated}; "
            f"compile its spec with `envc compile`"
        ) from error


def load_ports(class_names: Iterable[str], generated: Path = GENERATED) -> dict[str, ModuleType]:
    return {name: load_port(name, generated) for name in class_names}


def pure_world(task: Task) -> World:
    return World(
        {
            name: BfclBackend(new_bfcl_instance(name, task.initial_config, task.long_context))
            for name in task.involved_classes
        }
    )


def hybrid_world(task: Task, ports: Mapping[str, Any]) -> World:
    """Ported classes as generated environments, loaded with the task's long_context as
    their `long_context` load option (they ignore it, as the BFCL originals do), every
    other class as a BFCL instance."""
    backends: dict[str, Backend] = {}
    for name in task.involved_classes:
        if name in ports:
            try:
                config = copy.deepcopy(task.initial_config.get(name, {}))
                backends[name] = GeneratedBackend(ports[name], config, task.long_context)
            except ValueError as error:  # ScenarioError is a ValueError
                raise RefusedConfig(name, error) from error
        else:
            backends[name] = BfclBackend(new_bfcl_instance(name, task.initial_config, task.long_context))
    return World(backends)


def execute(world: World, call: Call) -> tuple[str | None, str]:
    """Run one call as BFCL would: (the class that answered it or None, the result string)."""
    owner = world.owners.get(call.name)
    try:
        if call.name in FORBIDDEN:
            raise Exception(f"Function call {call.name} is not allowed.")
        if owner is None:
            raise NameError(f"name '{call.name}' is not defined")
        # Fresh argument objects per call, as BFCL's eval makes: a method may keep them in state.
        value = world.backends[owner].invoke(call.name, copy.deepcopy(call.args), copy.deepcopy(dict(call.kwargs)))
        return owner, format_result(value)
    except Exception as error:
        return owner, error_result(error)


# --------------------------------------------------------------------------- traces


@dataclass(frozen=True)
class CallRecord:
    turn: int
    text: str
    owner: str | None
    result: str


@dataclass(frozen=True)
class Trace:
    """What one world did with one task: every call's result, and the watched classes'
    public state after loading (`states[0]`) and after each turn (`states[turn + 1]`)."""

    calls: tuple[CallRecord, ...]
    states: tuple[Mapping[str, Mapping[str, Any]], ...]


def snapshot(world: World, watched: Iterable[str]) -> dict[str, dict[str, Any]]:
    return {name: copy.deepcopy(dict(world.backends[name].public_state())) for name in watched}


def run_world(task: Task, world: World, watched: Iterable[str]) -> Trace:
    """Execute the task's ground truth turn by turn in one world."""
    watched = tuple(watched)
    calls: list[CallRecord] = []
    states = [snapshot(world, watched)]
    for turn, texts in enumerate(task.turns):
        for text in texts:
            owner, result = execute(world, parse_call(text))
            calls.append(CallRecord(turn, text, owner, result))
        states.append(snapshot(world, watched))
    return Trace(tuple(calls), tuple(states))


# --------------------------------------------------------------------------- comparison

Kind = Literal["state", "result"]
LOADING = -1
"""The turn number of a comparison made after loading the initial config, before turn 0."""
INITIAL_CONFIG = "<initial config>"
"""The attribute of the state mismatch reported when a port refuses the initial config."""


@dataclass(frozen=True)
class Mismatch:
    task_id: str
    class_name: str
    kind: Kind
    turn: int
    subject: str
    """The call, for a result mismatch; the attribute, for a state mismatch."""
    bfcl: Any
    generated: Any

    def describe(self, width: int = 400) -> str:
        when = "after loading" if self.turn == LOADING else f"turn {self.turn}"
        if self.kind == "result":
            head = f"{self.task_id} {self.class_name} {when}: result of {self.subject}"
            return (
                f"{head}\n    bfcl:      {shorten(self.bfcl, width)}\n    generated: {shorten(self.generated, width)}"
            )
        if self.subject == INITIAL_CONFIG:
            return f"{self.task_id} {self.class_name}: the port refuses BFCL's initial config: {self.generated}"
        where = first_difference(self.bfcl, self.generated, self.subject)
        return f"{self.task_id} {self.class_name} {when}: state {where}"


@dataclass(frozen=True)
class TaskReport:
    """One task replayed in both worlds; counts are of the pure-BFCL world (the reference)."""

    task_id: str
    category: str
    classes: tuple[str, ...]
    turns: int
    calls: Mapping[str, int]
    mismatches: tuple[Mismatch, ...]


@dataclass
class ClassSummary:
    tasks: int = 0
    turns: int = 0
    calls: int = 0
    state_mismatches: int = 0
    result_mismatches: int = 0


MISSING = object()


def differs(bfcl: Any, generated: Any) -> bool:
    """BFCL's state check, `!=` with the BFCL value on the left."""
    return bool(bfcl != generated)


def shorten(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def first_difference(bfcl: Any, generated: Any, path: str, width: int = 300) -> str:
    """Where two values first differ, as `path[key]: bfcl X, generated Y`."""
    if generated is MISSING:
        return f"{path}: missing from env.view() (bfcl {shorten(bfcl, width)})"
    if type(bfcl) is dict and type(generated) is dict:
        for key in bfcl.keys() | generated.keys():
            if key not in generated or key not in bfcl:
                return f"{path}: key {key!r} only in {'bfcl' if key in bfcl else 'generated'}"
        for key in bfcl:
            if differs(bfcl[key], generated[key]):
                return first_difference(bfcl[key], generated[key], f"{path}[{key!r}]", width)
    if type(bfcl) is list and type(generated) is list and len(bfcl) == len(generated):
        for index, (a, b) in enumerate(zip(bfcl, generated)):
            if differs(a, b):
                return first_difference(a, b, f"{path}[{index}]", width)
    return f"{path}: bfcl {shorten(bfcl, width)}, generated {shorten(generated, width)}"


def state_mismatches(
    task_id: str, class_name: str, turn: int, bfcl: Mapping[str, Any], generated: Mapping[str, Any]
) -> list[Mismatch]:
    """BFCL's state check of one class: each public attribute of the BFCL instance."""
    found = []
    for name, value in bfcl.items():
        ours = generated.get(name, MISSING)
        if ours is MISSING or differs(value, ours):
            found.append(Mismatch(task_id, class_name, "state", turn, name, value, ours))
    return found


def compare_traces(task: Task, reference: Trace, candidate: Trace, classes: Iterable[str]) -> list[Mismatch]:
    """Result strings of calls answered by `classes` in either world, then states per turn."""
    classes = tuple(classes)
    found: list[Mismatch] = []
    for ref, cand in zip(reference.calls, candidate.calls):
        owner = ref.owner if ref.owner in classes else cand.owner
        if owner in classes and ref.result != cand.result:
            found.append(Mismatch(task.id, owner, "result", ref.turn, ref.text, ref.result, cand.result))
    for index, (ref_states, cand_states) in enumerate(zip(reference.states, candidate.states)):
        for name in classes:
            found += state_mismatches(task.id, name, index - 1, ref_states[name], cand_states[name])
    return found


def calls_per_class(trace: Trace, classes: Iterable[str]) -> dict[str, int]:
    return {name: sum(1 for record in trace.calls if record.owner == name) for name in classes}


def replay_task(task: Task, ports: Mapping[str, Any]) -> TaskReport:
    """Replay one task in the pure-BFCL and the hybrid world and compare the ported classes.

    `ports` maps a BFCL class name to a generated package (or anything with the same
    `Environment` and `TOOL_SPECS`); the task's ported classes must all be there.
    """
    classes = task.ported
    reset_shared_defaults()
    reference = run_world(task, pure_world(task), classes)
    try:
        world = hybrid_world(task, {name: ports[name] for name in classes})
    except RefusedConfig as error:
        refused = Mismatch(task.id, error.class_name, "state", LOADING, INITIAL_CONFIG, "loaded", str(error))
        return TaskReport(
            task.id, task.category, classes, len(task.turns), calls_per_class(reference, classes), (refused,)
        )
    reset_shared_defaults()
    candidate = run_world(task, world, classes)
    mismatches = compare_traces(task, reference, candidate, classes)
    return TaskReport(
        task.id, task.category, classes, len(task.turns), calls_per_class(reference, classes), tuple(mismatches)
    )


def replay(category_choice: str, ports: Mapping[str, Any] | None = None) -> list[TaskReport]:
    """Replay every task of the categories; the generated packages are imported if not given."""
    chosen = categories(category_choice)
    tasks = [task for category in chosen for task in load_tasks(category)]
    if ports is None:
        ports = load_ports(sorted({name for task in tasks for name in task.ported}))
    return [replay_task(task, ports) for task in tasks]


def summarise(reports: Iterable[TaskReport]) -> dict[str, ClassSummary]:
    summary = {name: ClassSummary() for name in PORTED}
    for report in reports:
        for name in report.classes:
            row = summary[name]
            row.tasks += 1
            row.turns += report.turns
            row.calls += report.calls.get(name, 0)
        for mismatch in report.mismatches:
            if mismatch.kind == "state":
                summary[mismatch.class_name].state_mismatches += 1
            else:
                summary[mismatch.class_name].result_mismatches += 1
    return summary


def summary_table(summary: Mapping[str, ClassSummary], missing: Iterable[str] = ()) -> list[str]:
    """The per-class table; a class whose package is missing gets a row saying so."""
    header = f"{'class':<12}{'package':<14}{'tasks':>7}{'turns':>7}{'calls':>7}{'state mismatches':>18}{'result mismatches':>19}"
    rows = [header]
    total = ClassSummary()
    for name, row in summary.items():
        if name in missing:
            rows.append(f"{name:<12}{PORTED[name]:<14}  package missing: not replayed")
            continue
        rows.append(
            f"{name:<12}{PORTED[name]:<14}{row.tasks:>7}{row.turns:>7}{row.calls:>7}"
            f"{row.state_mismatches:>18}{row.result_mismatches:>19}"
        )
        for attribute in total.__dict__:
            setattr(total, attribute, getattr(total, attribute) + getattr(row, attribute))
    rows.append(
        f"{'all':<26}{total.tasks:>7}{total.turns:>7}{total.calls:>7}"
        f"{total.state_mismatches:>18}{total.result_mismatches:>19}"
    )
    return rows


# --------------------------------------------------------------------------- self-check


@dataclass(frozen=True)
class SelfCheckReport:
    """This script's executor against BFCL's `execute_multi_turn_func_call`, one task.

    Every call of the task is compared (`all_calls`), not only calls to ported classes;
    states are compared for the ported classes after every turn."""

    task_id: str
    category: str
    classes: tuple[str, ...]
    turns: int
    calls: Mapping[str, int]
    all_calls: int
    result_differences: tuple[str, ...]
    state_differences: tuple[str, ...]


_self_check_runs = itertools.count()


def run_bfcl_executor(task: Task) -> tuple[list[str], list[dict[str, dict[str, Any]]]]:
    """BFCL's own executor, turn by turn as its checker drives it: every result string,
    and the ported classes' public state after each turn."""
    model_name = f"envc_self_check_{next(_self_check_runs)}"
    results: list[str] = []
    states: list[dict[str, dict[str, Any]]] = []
    try:
        for turn in task.turns:
            turn_results, instances = multi_turn_utils.execute_multi_turn_func_call(
                func_call_list=list(turn),
                initial_config=task.initial_config,
                involved_classes=list(task.involved_classes),
                model_name=model_name,
                test_entry_id=task.id,
                long_context=task.long_context,
            )
            results += turn_results
            states.append({name: copy.deepcopy(public_attributes(instances[name])) for name in task.ported})
    finally:  # BFCL keeps its instances in its module's globals for the next turn; drop ours
        prefix = re.sub(r"[-./:]", "_", model_name) + "_"
        for name in [name for name in vars(multi_turn_utils) if name.startswith(prefix)]:
            delattr(multi_turn_utils, name)
    return results, states


def self_check_task(task: Task) -> SelfCheckReport:
    reset_shared_defaults()
    ours = run_world(task, pure_world(task), task.ported)
    reset_shared_defaults()
    theirs, states = run_bfcl_executor(task)
    results = []
    if len(theirs) != len(ours.calls):
        results.append(f"{len(ours.calls)} results here, {len(theirs)} from BFCL's executor")
    for record, result in zip(ours.calls, theirs):
        if record.result != result:
            results.append(f"turn {record.turn} {record.text}: {shorten(record.result, 200)} != {shorten(result, 200)}")
    state = []
    for turn, (mine, bfcl) in enumerate(zip(ours.states[1:], states)):
        for name in task.ported:
            if mine[name] != bfcl[name]:
                state.append(f"turn {turn}: {name} {first_difference(bfcl[name], mine[name], 'state')}")
    return SelfCheckReport(
        task.id,
        task.category,
        task.ported,
        len(task.turns),
        calls_per_class(ours, task.ported),
        len(ours.calls),
        tuple(results),
        tuple(state),
    )


def self_check(category_choice: str) -> list[SelfCheckReport]:
    return [self_check_task(task) for category in categories(category_choice) for task in load_tasks(category)]


def self_check_summary(reports: Iterable[SelfCheckReport]) -> dict[str, ClassSummary]:
    """Per class; the mismatch columns count the differing results and states."""
    summary = {name: ClassSummary() for name in PORTED}
    for report in reports:
        for name in report.classes:
            row = summary[name]
            row.tasks += 1
            row.turns += report.turns
            row.calls += report.calls.get(name, 0)
            row.state_mismatches += len(report.state_differences)
            row.result_mismatches += len(report.result_differences)
    return summary


# --------------------------------------------------------------------------- command line


def available_ports(generated: Path) -> tuple[dict[str, ModuleType], dict[str, MissingPort]]:
    """The ports that import, and why the others do not."""
    ports, missing = {}, {}
    for name in PORTED:
        try:
            ports[name] = load_port(name, generated)
        except MissingPort as error:
            missing[name] = error
    return ports, missing


def print_replay(choice: str, generated: Path, verbose: bool) -> int:
    """Replay every task whose ported classes all have a package; exit status 1 on a
    mismatch, else 2 if a package is missing."""
    ports, missing = available_ports(generated)
    mismatched = False
    for category in categories(choice):
        tasks = [task for task in load_tasks(category) if not set(task.ported) & missing.keys()]
        reports = [replay_task(task, ports) for task in tasks]
        print(f"\nmulti_turn_{category}: ground truth replayed on BFCL and on the generated ports")
        print("\n".join(summary_table(summarise(reports), missing)))
        mismatches = [mismatch for report in reports for mismatch in report.mismatches]
        mismatched = mismatched or bool(mismatches)
        if verbose:
            for mismatch in mismatches:
                print(mismatch.describe())
    for error in missing.values():
        print(f"bfcl_replay: {error}", file=sys.stderr)
    return 1 if mismatched else 2 if missing else 0


def print_self_check(choice: str, verbose: bool) -> int:
    exit_status = 0
    for category in categories(choice):
        reports = [self_check_task(task) for task in load_tasks(category)]
        print(f"\nmulti_turn_{category}: this executor against BFCL's execute_multi_turn_func_call, BFCL classes only")
        print("\n".join(summary_table(self_check_summary(reports))))
        differing = [report for report in reports if report.result_differences or report.state_differences]
        every = sum(report.all_calls for report in reports)
        print(
            f"({every} calls in all, to every involved class, compared; states of the ported classes after every turn)"
        )
        if differing:
            exit_status = 1
            for report in differing if verbose else differing[:5]:
                lines = report.result_differences + report.state_differences
                print(f"{report.task_id}:\n    " + "\n    ".join(lines))
    return exit_status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--category", choices=(*CATEGORIES, "all"), default="all", help="which BFCL tasks to replay")
    parser.add_argument("--verbose", action="store_true", help="print every mismatch")
    parser.add_argument(
        "--self-check", action="store_true", help="check this executor against BFCL's own, on BFCL's classes only"
    )
    parser.add_argument("--generated", type=Path, default=GENERATED, help="folder holding the generated packages")
    args = parser.parse_args(argv)
    if args.self_check:
        return print_self_check(args.category, args.verbose)
    return print_replay(args.category, args.generated.resolve(), args.verbose)


if __name__ == "__main__":
    sys.exit(main())
