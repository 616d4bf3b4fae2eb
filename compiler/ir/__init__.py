"""The intermediate representation: plain pydantic data, no behaviour.

The parser builds it, the analyser annotates it (expression types, inferred read and
write sets), and every later stage (format, lower, graph) reads it. It serialises to
JSON (`envc check --emit-ir`), so a stage can be tested on IR alone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class Node(BaseModel):
    """Base of every IR node: a source span, 1-based lines and columns.

    `defer_build`: pydantic builds a model's validator and serializer when one is first
    needed, not when the class is made. The fast parser and the analysis build nodes
    without validating them, so a run that never validates or dumps IR (`envc check` on
    a cold parse cache) never pays for the ~90 schemas: importing this module takes
    0.14 s instead of 0.30 s."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    line: int = 0
    col: int = 0
    end_line: int = 0
    end_col: int = 0


# --------------------------------------------------------------------------- types


class TypeRef(Node):
    """A type as written: `int`, `list[Ticket]`, `map[str, int]`, `optional[str]`, `None`.

    `name` is the head; `args` the bracketed arguments. The analyser resolves names to
    primitives, enums or records; see `compiler.types` for the semantic view.
    """

    name: str
    args: list[TypeRef] = Field(default_factory=list)


# --------------------------------------------------------------------------- expressions


class ExprBase(Node):
    """Every expression gets its resolved type from the analyser (`ty`)."""

    ty: TypeRef | None = None


class Name(ExprBase):
    kind: Literal["name"] = "name"
    id: str
    # Filled by the analyser: what the name refers to.
    ref: Literal["", "local", "param", "state", "world", "enum", "record", "builtin", "tool", "fn"] = ""


class Const(ExprBase):
    kind: Literal["const"] = "const"
    value: int | float | str | bool | None


class FString(ExprBase):
    """`f"text {expr} text"`: alternating literal text and expressions."""

    kind: Literal["fstring"] = "fstring"
    parts: list[str | Expr]


class ListLit(ExprBase):
    kind: Literal["list"] = "list"
    items: list[Expr]


class MapEntry(Node):
    key: Expr
    value: Expr


class MapLit(ExprBase):
    kind: Literal["map"] = "map"
    entries: list[MapEntry]


class Attr(ExprBase):
    kind: Literal["attr"] = "attr"
    obj: Expr
    name: str


class Index(ExprBase):
    kind: Literal["index"] = "index"
    obj: Expr
    index: Expr


class Slice(ExprBase):
    """`xs[lower:upper]` on lists and strings; either bound may be omitted."""

    kind: Literal["slice"] = "slice"
    obj: Expr
    lower: Expr | None = None
    upper: Expr | None = None


class Keyword(Node):
    name: str
    value: Expr


class Call(ExprBase):
    kind: Literal["call"] = "call"
    func: Expr
    args: list[Expr] = Field(default_factory=list)
    kwargs: list[Keyword] = Field(default_factory=list)
    # Set by the analyser on method calls that change a value living in state, so
    # lowering journals the change for rollback.
    mutates_state: bool = False


class Unary(ExprBase):
    kind: Literal["unary"] = "unary"
    op: Literal["-", "not"]
    operand: Expr


class Binary(ExprBase):
    """Arithmetic, comparison and boolean operators alike."""

    kind: Literal["binary"] = "binary"
    op: str
    left: Expr
    right: Expr


class Compare(ExprBase):
    """A chain of two or more comparisons, `0 <= p <= 1` (as in Python: each operand is
    evaluated once, and the chain is true when every link is). One comparison alone is a
    `Binary`."""

    kind: Literal["compare"] = "compare"
    operands: list[Expr]
    ops: list[str]  # between operands[i] and operands[i + 1]


class Formatted(ExprBase):
    """`{value:spec}` inside an f-string: the value shown with a format spec (`.2f`, `>8`);
    only ever a part of an `FString`."""

    kind: Literal["formatted"] = "formatted"
    value: Expr
    spec: str


class Ternary(ExprBase):
    kind: Literal["ternary"] = "ternary"
    cond: Expr
    then: Expr
    other: Expr


class Comprehension(ExprBase):
    """`[elt for a, b in iter if cond]`, or a map comprehension when `value` is set."""

    kind: Literal["comprehension"] = "comprehension"
    elt: Expr
    value: Expr | None = None
    targets: list[str]
    iter: Expr
    cond: Expr | None = None


class Lambda(ExprBase):
    kind: Literal["lambda"] = "lambda"
    params: list[str]
    body: Expr


Expr = Annotated[
    Union[
        Name,
        Const,
        FString,
        ListLit,
        MapLit,
        Attr,
        Index,
        Slice,
        Call,
        Unary,
        Binary,
        Compare,
        Formatted,
        Ternary,
        Comprehension,
        Lambda,
    ],
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------- statements


class ErrorCall(Node):
    """`kind("message {x}", entity="ticket", field="status", ...)`: a domain error."""

    kind: str
    message: Expr | None = None
    fields: list[Keyword] = Field(default_factory=list)


class StmtBase(Node):
    pass


class Let(StmtBase):
    kind: Literal["let"] = "let"
    name: str
    type: TypeRef | None = None
    value: Expr


class Assign(StmtBase):
    kind: Literal["assign"] = "assign"
    target: Expr
    op: Literal["=", "+=", "-="] = "="
    value: Expr
    touches_state: bool = False  # set by the analyser: the target lives in state


class Return(StmtBase):
    kind: Literal["return"] = "return"
    value: Expr | None = None


class Require(StmtBase):
    kind: Literal["require"] = "require"
    cond: Expr
    error: ErrorCall | None = None
    """None only in a family's `plan` (`require COND`: a failing one discards the draw);
    the analyser refuses a `require` without `else` anywhere else."""


class Fail(StmtBase):
    kind: Literal["fail"] = "fail"
    error: ErrorCall


class Delete(StmtBase):
    kind: Literal["delete"] = "delete"
    target: Expr
    touches_state: bool = False


class ExprStmt(StmtBase):
    kind: Literal["expr"] = "expr"
    value: Expr


class Pass(StmtBase):
    kind: Literal["pass"] = "pass"


class Break(StmtBase):
    kind: Literal["break"] = "break"


class Continue(StmtBase):
    kind: Literal["continue"] = "continue"


class IfBranch(Node):
    cond: Expr
    body: list[Stmt]


class If(StmtBase):
    kind: Literal["if"] = "if"
    branches: list[IfBranch]
    orelse: list[Stmt] = Field(default_factory=list)


class For(StmtBase):
    kind: Literal["for"] = "for"
    targets: list[str]
    iter: Expr
    body: list[Stmt]


class While(StmtBase):
    """`while cond max 100:`: runs its body while `cond` holds, at most `limit` times (the
    default when `max` is not written, `None` here); once more is a `limit_exceeded`."""

    kind: Literal["while"] = "while"
    cond: Expr
    limit: int | None = None
    body: list[Stmt]


Stmt = Annotated[
    Union[Let, Assign, Return, Require, Fail, Delete, ExprStmt, Pass, Break, Continue, If, For, While],
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------- declarations


class Decl(Node):
    """A top-level declaration; `file` is the spec it came from (prototypes differ)."""

    file: str = ""
    doc: str = ""


class EnvHeader(Decl):
    name: str
    title: str = ""
    archetype: str = ""
    domains: list[str] = Field(default_factory=list)
    extends: str = ""
    seed: int = 0
    rng: str = "splitmix64"
    clock: str = "2025-01-01T09:00:00"
    item_places: dict[str, Node] = Field(default_factory=dict)
    """Where each item written in this header is, so a diagnostic about one points at it."""


class EnumDecl(Decl):
    name: str
    members: list[str]


class SourceRef(Node):
    """`from person_name`, `from amount(5, 500)`, `from ticket_titles`: where the values of a
    tool parameter or a record field come from when tasks are made. `name` is one of the
    spec's `values` pools or a built-in format (`compiler/library/sources.py`); `args` the
    format's literal arguments (JSON values)."""

    name: str
    args: list[Any] = Field(default_factory=list)
    file: str = ""
    """The spec that named the source (set by loading; a prototype's tool may get its
    sources from the spec that extends it), for diagnostics."""


class Field_(Node):
    """A typed field with an optional default (records, state)."""

    name: str
    type: TypeRef
    default: Expr | None = None
    alias: str = ""
    """`alias "userCount"` (state fields only): the key a scenario mapping passed at run
    time may use for the field, as a foreign configuration names it."""
    source: str = ""  # a state field's default from a JSON file next to the spec
    absent: bool = False
    """`name?: T` in a record: the key may be left out (absent, which is not None)."""
    tag: str = ""
    """The fixed value of a union member's tag field, which the union adds to the member."""
    values_from: SourceRef | None = None
    """A record field's task values (`field title from ticket_titles` in `describe record`),
    set by loading. Not `source`, which is a state field's default from a JSON file."""


class RecordDecl(Decl):
    name: str
    fields: list[Field_]
    override: bool = False
    tag: str = ""
    """For a union (`union Payment by source:`): the field whose value tells the members apart."""
    members: dict[str, str] = Field(default_factory=dict)
    """For a union: each member record and its tag value (`Card = "credit_card"`). A union's
    `fields` are filled by the analyser: the tag, then the fields every member has alike."""
    noun: str = ""
    """From `describe record`: what a request calls one of these (`ticket`), set by loading."""
    refers: list[Refer] = Field(default_factory=list)
    """From `describe record`: how a request may point at one by a field's value, set by loading."""

    @property
    def is_union(self) -> bool:
        return bool(self.members)


class StateDecl(Decl):
    fields: list[Field_]


class WorldField(Node):
    name: str
    type: TypeRef
    value: Expr | None = None
    source: str = ""  # JSON file next to the spec, when loaded from one


class WorldDecl(Decl):
    fields: list[WorldField]


class ScenarioItem(Node):
    name: str
    value: Expr | None = None
    source: str = ""  # `field = from "FILE"`: the value from a JSON file next to the spec


class ScenarioDecl(Decl):
    name: str
    items: list[ScenarioItem]
    source: str = ""  # `scenario NAME from "FILE"`: the fields it sets, from a JSON object
    renamed: dict[str, str] = Field(default_factory=dict)
    """For a scenario from a file: the file's keys that name a state field which a spec
    extending the prototype renamed (`rename state`), and the field's name now. Set by
    loading (the file keeps the prototype's names)."""


class Constraint(Node):
    kind: Literal["min", "max", "min_length", "max_length", "min_items", "max_items", "pattern"]
    value: Expr


class Param(Node):
    name: str
    type: TypeRef
    default: Expr | None = None
    constraints: list[Constraint] = Field(default_factory=list)
    doc: str = ""
    """From a `param NAME "text"` line: the parameter's description in the tool schema."""
    values_from: SourceRef | None = None
    """From `param NAME from SOURCE` in `describe tool`: where a task's value comes from."""


class Escape(Node):
    """A body not written in the body language: raw Python, or a hole an LLM fills."""

    kind: Literal["python", "llm"]
    text: str


class ToolDecl(Decl):
    name: str
    params: list[Param]
    returns: TypeRef
    body: list[Stmt] = Field(default_factory=list)
    escape: Escape | None = None
    declared_reads: list[str] | None = None
    declared_writes: list[str] | None = None
    side_effect: str = ""
    override: bool = False
    # Filled by the analyser.
    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    intents: list[str] = Field(default_factory=list)
    """From `describe tool`: templates of what a user asks for with this tool, `{param}` slots
    (set by loading)."""


class FnDecl(ToolDecl):
    """A helper callable from tools; not exposed to the agent."""

    recursion: list[str] = Field(default_factory=list)
    """Filled by the analyser: the helpers of its call cycle, itself included, when it
    calls itself directly or through others (the lowering bounds their depth); else empty."""


class OnLoadDecl(Decl):
    """`on load:`: statements run on every load of a scenario, after its values (and the
    defaults) are in place; they may read world data and the load options."""

    body: list[Stmt] = Field(default_factory=list)
    override: bool = False


class LoadOptionsDecl(Decl):
    """`load options:`: typed keyword options of the generated loader, each with a default."""

    fields: list[Field_]


class UseScenario(StmtBase):
    kind: Literal["scenario"] = "scenario"
    name: str


class TestLet(StmtBase):
    kind: Literal["let"] = "let"
    name: str
    value: Expr


class TestCall(StmtBase):
    kind: Literal["call"] = "call"
    call: Expr


class ExpectRaises(StmtBase):
    kind: Literal["raises"] = "raises"
    call: Expr
    error: str
    message: str = ""


class ExpectTrue(StmtBase):
    kind: Literal["expect"] = "expect"
    cond: Expr


TestStmt = Annotated[
    Union[UseScenario, TestLet, TestCall, ExpectRaises, ExpectTrue],
    Field(discriminator="kind"),
]


class TestDecl(Decl):
    name: str
    steps: list[TestStmt]


class TaskDecl(Decl):
    name: str
    scenario: str = ""
    request: str = ""
    solution: list[Expr] = Field(default_factory=list)
    verify: list[Expr] = Field(default_factory=list)


FamilyKind = Literal["lookup", "bulk", "branch", "compute", "symptom"]
"""The kinds of problem a task family poses (docs/tasks.md, "Task families"); one place."""
FAMILY_KINDS: tuple[str, ...] = ("lookup", "bulk", "branch", "compute", "symptom")


class VerifyLine(Node):
    """`verify [each NAME in EXPR:] COND [weight N]` of a task family: a condition on the
    final state (bare state field names, and the plan's values), expanded once per item of
    EXPR (a list made of the plan's values) when `each` is given; `weight` is its share of
    partial credit (1 when not given)."""

    cond: Expr
    weight: float = 1.0
    each: str = ""
    over: Expr | None = None


class FamilyDecl(Decl):
    """`family NAME:` a task family: a `plan` run on a copy of the start (its top-level
    `let`s are the family's values, its state writes the task's changes, its random
    built-ins seeded per task; a failing `require` discards the draw), requests with
    `{value}` slots (the seed picks one), a `solution` whose tool-call statements run on
    the task's start and are the gold calls, and `verify` lines over the final state."""

    name: str
    kind: FamilyKind = "lookup"
    scenario: str = ""
    reward: Literal["binary", "partial"] = "binary"
    plan: list[Stmt] = Field(default_factory=list)
    requests: list[str] = Field(default_factory=list)
    solution: list[Stmt] = Field(default_factory=list)
    verify: list[VerifyLine] = Field(default_factory=list)
    request_places: list[Node] = Field(default_factory=list)  # where each `request` line is
    item_places: dict[str, Node] = Field(default_factory=dict)
    """Where the `kind`, `scenario`, `reward`, `plan` and `solution` lines are, by word."""


class DropDecl(Decl):
    what: Literal["tool", "scenario", "test", "task", "fn", "family"]
    name: str


class RenameDecl(Decl):
    """`rename tool create_entity as create_ticket`: a prototype name, renamed everywhere."""

    what: Literal["tool", "fn", "record", "enum", "scenario", "state", "param"]
    old: str
    new: str


class DescribeDecl(Decl):
    """`describe tool NAME:`: a tool in the domain's words (its doc, param docs, where each
    parameter's task values come from, what users ask for with it), without rewriting its
    body: a prototype's tool, or one of the spec's own."""

    name: str
    param_docs: dict[str, str] = Field(default_factory=dict)
    param_lines: dict[str, int] = Field(default_factory=dict)  # where each `param` line is
    param_cols: dict[str, int] = Field(default_factory=dict)
    intents: list[str] = Field(default_factory=list)
    intent_places: list[Node] = Field(default_factory=list)  # where each `intent` line is
    param_sources: dict[str, SourceRef] = Field(default_factory=dict)


class ValuesDecl(Decl):
    """`values NAME = ["a", "b"]` or `values NAME from "FILE"`: a pool of meaningful values
    (str, int or float, one type) that tasks draw a parameter's or field's value from."""

    name: str
    items: list[Expr] = Field(default_factory=list)
    source: str = ""  # a JSON list in a file next to the spec


class PersonaDecl(Decl):
    """`persona "text"`: who the user asking for tasks is, in their own words."""

    text: str


class Refer(Node):
    """`refer FIELD ["before"] "template"`: words that point at a record by a field's value;
    the template holds one `{}` for the value; `before` puts the words before the noun."""

    field: str
    template: str
    before: bool = False


class DescribeRecordDecl(Decl):
    """`describe record NAME:`: a record in the domain's words for tasks: its noun, how a
    request refers to one, where its fields' values come from."""

    name: str
    noun: str = ""
    noun_place: Node | None = None  # where the `noun` line is
    refers: list[Refer] = Field(default_factory=list)
    field_sources: dict[str, SourceRef] = Field(default_factory=dict)


class Module(BaseModel):
    """One parsed `.envspec` file, declarations in source order."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    path: str
    header: EnvHeader | None = None
    enums: list[EnumDecl] = Field(default_factory=list)
    records: list[RecordDecl] = Field(default_factory=list)
    state: list[StateDecl] = Field(default_factory=list)
    world: list[WorldDecl] = Field(default_factory=list)
    scenarios: list[ScenarioDecl] = Field(default_factory=list)
    tools: list[ToolDecl] = Field(default_factory=list)
    fns: list[FnDecl] = Field(default_factory=list)
    tests: list[TestDecl] = Field(default_factory=list)
    tasks: list[TaskDecl] = Field(default_factory=list)
    families: list[FamilyDecl] = Field(default_factory=list)
    drops: list[DropDecl] = Field(default_factory=list)
    renames: list[RenameDecl] = Field(default_factory=list)
    describes: list[DescribeDecl] = Field(default_factory=list)
    on_load: list[OnLoadDecl] = Field(default_factory=list)
    load_options: list[LoadOptionsDecl] = Field(default_factory=list)
    values: list[ValuesDecl] = Field(default_factory=list)
    personas: list[PersonaDecl] = Field(default_factory=list)
    describe_records: list[DescribeRecordDecl] = Field(default_factory=list)


class Environment(BaseModel):
    """A resolved environment: a module merged with the prototype it extends, analysed.

    This is what lowering consumes. World data is embedded as JSON values, checked
    against their declared types; `world_values` and `state_defaults` are JSON-ready.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    path: str
    header: EnvHeader
    enums: list[EnumDecl]
    records: list[RecordDecl]
    state: list[Field_]
    world: list[WorldField]
    world_values: dict[str, Any] = Field(default_factory=dict)
    state_defaults: dict[str, Any] = Field(default_factory=dict)
    scenarios: list[ScenarioDecl]
    scenario_values: dict[str, dict[str, Any]] = Field(default_factory=dict)
    tools: list[ToolDecl]
    fns: list[FnDecl]
    tests: list[TestDecl]
    tasks: list[TaskDecl]
    families: list[FamilyDecl] = Field(default_factory=list)
    """The `family` declarations of the spec and its prototype (a spec's replaces a
    prototype's of the same name)."""
    inputs: list[str] = Field(default_factory=list)  # world data files read
    load_options: list[Field_] = Field(default_factory=list)
    on_load: FnDecl | None = None
    """The `on load:` block as the analyser checked it: a helper taking the load options
    as parameters and returning None (`reads`/`writes` inferred like a helper's)."""
    value_pools: dict[str, list[Any]] = Field(default_factory=dict)
    """Every `values` pool of the spec and its prototypes, by name: JSON-ready values."""
    personas: list[str] = Field(default_factory=list)
    """The `persona` texts: the prototype's, then the spec's."""


for _model in list(globals().values()):
    if isinstance(_model, type) and issubclass(_model, BaseModel) and _model is not BaseModel:
        _model.model_rebuild()
