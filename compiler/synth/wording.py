"""A sampled task's request as a user's goal, in the spec's own words.

Each write call of the gold solution becomes one of its tool's intents (`describe tool
… intent "…"`), chosen by seed, whose slots hold the call's arguments the way a user
would give them:

- an entity of the start state (the ticket a `ticket_id` names) by the fewest of its
  attributes that tell it apart from every other one (`describe record … refer`), so
  the agent has to look it up; by its identifier only when nothing else does;
- a value an earlier call of the solution produces by what it is ("the new ticket");
- a value an earlier environment of the chain gave (carried along a data flow,
  compiler/synth/meaning.py) by whose attribute it is: "the owner of the new calendar",
  or of an entity the agent has to find ("the title of the ticket filed by carol");
- any other value as the user would write it (free text from a pool in quotes).

Read calls are never mentioned: what to look up is the agent's business. A write tool
without intents cannot be put in words, nor one whose intents leave out an argument
that names an entity; such chains are rejected (`WordingError`) and the report says why.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from dataclasses import dataclass
from typing import Any

from compiler import ir
from compiler.ir import typesys as ts
from compiler.lower.schema import param_default
from compiler.synth import meaning, sample

OPENERS = ("", "Please ", "Could you ", "I need you to ", "Can you ")
JOINERS = (", then ", ", and after that ", ". Then ", ", and ")
MAX_REFERRING_FIELDS = 3
"""The most attributes a reference combines (more reads as a riddle, not a request)."""
SLOT = sample.SLOT_NAMES
QUOTED_ORIGIN = "pool:"
"""Values from a spec's pools are free text, quoted in a request; formats are not."""
QUOTED_WHEN_TEXT = ("state", "world", "earlier")
"""Origins whose values are quoted when they are several words (a title found in the state)."""


class WordingError(ValueError):
    """A chain whose calls the spec gives no words for (a reason the report counts)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Reference:
    """An entity of the start state as the request names it: `container[key]` of `env`,
    told apart by `fields` (its attributes' values); `by_key` when its identifier is all
    the request gives (nothing to look up)."""

    env: str
    container: str
    key: str
    fields: dict[str, Any]
    by_key: bool
    value: Any = None
    """The argument the reference stands for (the key, or the matched field's value)."""
    distractors: int = 0
    """Other entities that share some of the named attributes' values (near misses)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "container": self.container,
            "key": self.key,
            "fields": self.fields,
            "by_key": self.by_key,
            "value": self.value,
            "distractors": self.distractors,
        }


@dataclass
class Request:
    text: str
    references: list[Reference]
    intents: list[str]
    """The intent templates used, in order (the report counts distinct wordings)."""


@dataclass(frozen=True)
class Entity:
    """A record of the start state a parameter's value selects."""

    container: str
    key: str
    record: ir.RecordDecl
    item: dict[str, Any]
    peers: list[dict[str, Any]]
    """Every record of the container, the entity included."""
    matched_by: str
    """The field whose value is the argument (`""`: the argument is the map's key)."""


def request(
    chain: dict[str, Any], envs: dict[str, sample.SampleEnv], initial: dict[str, Any], rng: random.Random
) -> Request:
    """The goal of a chain's write calls, in the words of their specs (see the module doc)."""
    produced: dict[tuple[str, Any], str] = {}  # (environment, value): ids of two systems may be equal
    carried: dict[Any, tuple[str, Reference | None]] = {}
    phrases: list[str] = []
    references: list[Reference] = []
    intents: list[str] = []
    cross = len(chain["envs"]) > 1
    where = ""
    for call in chain["calls"]:
        env = envs[call["env"]]
        tool = env.tools[call["tool"].split(sample.CROSS_SEPARATOR, 1)[-1]]
        if tool.writes:
            phrase, refs, intent = _phrase(env, tool, call, initial[call["env"]], (produced, carried), rng)
            if cross and env.name != where:  # say where once, when the work moves to another system
                phrase, where = f"in {system_name(env)}, {phrase}", env.name
            phrases.append(phrase)
            references += refs
            intents.append(intent)
        _remember_products(env, tool, call, initial[call["env"]], produced)
        if cross:
            _remember_carried(env, tool, call, chain, initial[call["env"]], carried, rng)
    return Request(_compose(phrases, _personas(chain, envs), rng, plain=cross), references, intents)


def system_name(env: sample.SampleEnv) -> str:
    """The environment as a user names the system they work in: its title up to a colon
    or a parenthesis, after "the", its first word in lower case unless it is an acronym
    ("the online shop order desk", "the CI/CD build farm"); its name when it has no title.
    A file workspace is "the shared files" (a Claw title names the job, not a system)."""
    if env.is_workspace:
        return "the shared files"
    title = re.split(r":| \(", env.model.header.title, maxsplit=1)[0].strip()
    if not title:
        return _humane(env.name)
    first = title.split(" ", 1)[0]
    acronym = any(c.isupper() for c in first[1:]) or not first[:1].isalpha()
    return "the " + (title if acronym else title[:1].lower() + title[1:])


def _phrase(
    env: sample.SampleEnv,
    tool: ir.ToolDecl,
    call: dict[str, Any],
    start: dict[str, Any],
    known: tuple[dict[tuple[str, Any], str], dict[Any, tuple[str, Reference | None]]],
    rng: random.Random,
) -> tuple[str, list[Reference], str]:
    """One write call as one of its tool's intents (`known`: the values earlier calls made,
    and those earlier environments gave, by how a request names them)."""
    produced, carried = known
    args: dict[str, Any] = call["args"]
    origins: dict[str, str] = call.get("origins", {})
    fitting = [i for i in tool.intents if set(SLOT.findall(i)) <= set(args)]
    if not tool.intents:
        raise WordingError(f"no intent for `{tool.name}`")
    if not fitting:
        raise WordingError(f"no intent of `{tool.name}` fits its arguments")
    template = rng.choice(fitting)
    words: dict[str, str] = {}
    references: dict[str, Reference] = {}
    for name, value in args.items():
        origin = origins.get(name, "")
        if origin == "carried" and _hashable(value) and value in carried:
            shown, reference = carried[value]
        else:
            shown, reference = _argument(env, tool, name, value, start, produced, origin, rng)
        words[name] = shown
        if reference is not None:
            references[name] = reference
    text = _fill(template, words)
    params = {p.name: p for p in tool.params}
    for name, value in args.items():
        if name not in SLOT.findall(template) and not _goes_without_saying(params[name], value):
            text += _extra(name, value, words[name], name in references)
    return text, list(references.values()), template


def _argument(
    env: sample.SampleEnv,
    tool: ir.ToolDecl,
    name: str,
    value: Any,
    start: dict[str, Any],
    produced: dict[tuple[str, Any], str],
    origin: str,
    rng: random.Random,
) -> tuple[str, Reference | None]:
    """How a request gives one argument, and the entity it refers to, if any."""
    entity = find_entity(env, tool, name, value, start)
    if entity is not None:
        return refer(env, entity, rng)
    if _hashable(value) and (env.name, value) in produced and env.facts[tool.name].domains.get(name):
        return produced[env.name, value], None  # what an earlier call here made (a number that only matches one is not)
    return show(value, origin, env), None


def find_entity(
    env: sample.SampleEnv, tool: ir.ToolDecl, param: str, value: Any, start: dict[str, Any]
) -> Entity | None:
    """The one record of the start state the argument selects: a map's key, or the one
    item whose field (the parameter's domain, compiler/synth/graph.py) holds the value."""
    if not _hashable(value) or isinstance(value, bool):
        return None
    for domain in _likeliest_first(env, param, env.facts[tool.name].domains.get(param, [])):
        if domain.owner != "state" or domain.values or domain.of_param:
            continue
        record = _record_of(env.model, domain.container)
        container = start.get(domain.container)
        if record is None or not isinstance(container, (dict, list)):
            continue
        pairs = container.items() if isinstance(container, dict) else enumerate(container)
        items = {str(k): v for k, v in pairs if isinstance(v, dict)}
        if isinstance(container, list) and not domain.field:
            continue  # a list's index is no name a user gives
        if not domain.field:
            if str(value) in items:
                return Entity(domain.container, str(value), record, items[str(value)], list(items.values()), "")
            continue
        if not _names_field(param, domain.field, record):
            continue  # a value that merely equals a field of some record (an event type, a trigger) names none
        matches = [k for k, item in items.items() if item.get(domain.field) == value]
        if len(matches) == 1:
            key = matches[0]
            return Entity(domain.container, key, record, items[key], list(items.values()), domain.field)
    return None


def _names_field(param: str, field: str, record: ir.RecordDecl) -> bool:
    """Whether a parameter is the record's field by name: `username` for `username`, or
    `runner_name` / `pipeline_id` for `name` / `id` of a Runner / Pipeline."""
    stem = record.name.lower()
    flat = param.replace("_", "").lower()
    return param == field or flat in (field.replace("_", "").lower(), stem + field.replace("_", "").lower())


def _likeliest_first(env: sample.SampleEnv, param: str, domains: list[Any]) -> list[Any]:
    """A parameter's domains, those holding the record its name names first
    (`conversation_id` looks up a `Conversation` before anything else keyed alike)."""
    stem = param.removesuffix("_id").removesuffix("_ids").replace("_", "").lower()

    def named(domain: Any) -> bool:
        record = _record_of(env.model, domain.container)
        return record is not None and record.name.lower() == stem

    return sorted(domains, key=lambda d: not named(d))


def refer(env_: sample.SampleEnv, entity: Entity, rng: random.Random) -> tuple[str, Reference]:
    """The entity by the fewest declared attributes that select it alone among its peers
    (a random one of the smallest such sets); by its identifier when no set does."""
    env = env_.name
    record = entity.record
    noun = record.noun or _humane(record.name).lower()
    usable = [r for r in record.refers if _can_name(entity.item.get(r.field))]
    identifying = {r.field for r in usable if _identifies(r.field, entity)}
    described = [r for r in usable if r.field not in identifying]
    for size in range(1, min(MAX_REFERRING_FIELDS, len(described)) + 1):
        unique = [c for c in itertools.combinations(described, size) if _selects_one(c, entity)]
        if unique:
            chosen = sorted(rng.choice(unique), key=lambda r: record.refers.index(r))
            return _render(noun, chosen, entity, env_), _reference(env, entity, chosen, by_key=False)
    keyed = [r for r in usable if r.field in identifying]
    if keyed:
        return _render(noun, keyed[:1], entity, env_), _reference(env, entity, keyed[:1], by_key=True)
    fields = {entity.matched_by: entity.item[entity.matched_by]} if entity.matched_by else {}
    shown = entity.item[entity.matched_by] if entity.matched_by else entity.key
    return f"{noun} {shown}", Reference(env, entity.container, entity.key, fields, by_key=True, value=shown)


def _identifies(field: str, entity: Entity) -> bool:
    """A field that is the entity's identity: the argument itself, or its map key."""
    value = entity.item.get(field)
    return field == entity.matched_by or str(value) == entity.key or field == "id"


def _selects_one(refers: tuple[ir.Refer, ...], entity: Entity) -> bool:
    wanted = {r.field: entity.item.get(r.field) for r in refers}
    return sum(all(peer.get(f) == v for f, v in wanted.items()) for peer in entity.peers) == 1


def _render(noun: str, refers: list[ir.Refer] | tuple[ir.Refer, ...], entity: Entity, env: sample.SampleEnv) -> str:
    before = [_fill_one(r.template, entity.item[r.field], env) for r in refers if r.before]
    after = [_fill_one(r.template, entity.item[r.field], env) for r in refers if not r.before]
    return " ".join(["the", *before, noun, *after])


def _reference(env: str, entity: Entity, refers: Any, by_key: bool) -> Reference:
    fields = {r.field: entity.item[r.field] for r in refers}
    near = sum(peer is not entity.item and any(peer.get(f) == v for f, v in fields.items()) for peer in entity.peers)
    value = entity.item[entity.matched_by] if entity.matched_by else entity.key
    return Reference(env, entity.container, entity.key, fields, by_key, value, near)


def _fill_one(template: str, value: Any, env: sample.SampleEnv) -> str:
    return template.replace("{}", show(value, "", env), 1)


def show(value: Any, origin: str, env: sample.SampleEnv | None) -> str:
    """A value as a user writes it: free text from a pool in quotes, an enum member or a
    flag in words, a list as a list."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        if env is not None and value in _enum_members(env):
            return _humane(value)
        if origin.startswith(QUOTED_ORIGIN) or (origin in QUOTED_WHEN_TEXT and " " in value.strip()):
            return f'"{value}"'
        return value
    if isinstance(value, list):
        shown = [show(v, origin, env) for v in value]
        return " and ".join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else "".join(shown) or "none"
    if isinstance(value, float):
        return f"{value:.2f}" if round(value, 2) == value else repr(value)
    return str(value)


def _fill(template: str, words: dict[str, str]) -> str:
    """The template with its slots filled; a value the template already quotes is not
    quoted again (`to "{name}"`)."""
    quoted = {
        name: text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text for name, text in words.items()
    }
    template = re.sub(r'"\{(\w+)\}"', lambda m: f'"{quoted[m[1]]}"' if m[1] in words else m[0], template)
    template = re.sub(r"\b([Aa]) \{(\w+)\}", lambda m: _article(m[1], words.get(m[2], "")) + f" {{{m[2]}}}", template)
    return SLOT.sub(lambda m: words[m[1]], template).replace("{{", "{").replace("}}", "}")


def _article(article: str, word: str) -> str:
    """`a` or `an` before a filled slot, by its first letter ("an auto loan"); a `u`
    keeps `a` ("a user")."""
    return article + "n" if word.lstrip('"')[:1].lower() in ("a", "e", "i", "o") else article


def _goes_without_saying(param: ir.Param, value: Any) -> bool:
    """An argument a request need not mention: its parameter's default, or an empty list
    or a false flag where the parameter has a default (asking for nothing extra)."""
    has_default, default = param_default(param)
    return has_default and (value == default or value is False or value is None or value == [])


def _extra(name: str, value: Any, shown: str, is_entity: bool) -> str:
    """An argument the intent leaves out, added after it: an entity as whom it is for, a
    flag as a wish, any other value with its parameter's name."""
    label = _humane(name[:-3] if name.endswith("_id") else name)
    if is_entity:
        return f", for {shown}"
    if value is True:
        return f", {label}"
    if value is False:
        return f", not {label}"
    return f", with {label} {shown}"


def _remember_products(
    env: sample.SampleEnv,
    tool: ir.ToolDecl,
    call: dict[str, Any],
    start: dict[str, Any],
    produced: dict[tuple[str, Any], str],
) -> None:
    """Values a write call brings into being (the id of what it creates) are named by
    what they are in later phrases of the same environment: "the new ticket"."""
    if not tool.writes or sample.is_failure(call.get("result")):
        return
    result = call.get("result")
    record = _record_made(env, tool, result)
    noun = (record.noun or _humane(record.name).lower()) if record is not None else "one you just made"
    for value in _identifiers(result):
        produced.setdefault((env.name, value), f"the new {noun}" if record is not None else f"the {noun}")


def _remember_carried(
    env: sample.SampleEnv,
    tool: ir.ToolDecl,
    call: dict[str, Any],
    chain: dict[str, Any],
    start: dict[str, Any],
    carried: dict[Any, tuple[str, Reference | None]],
    rng: random.Random,
) -> None:
    """Values of the records a call returns that another environment may take, each named
    by the attribute it is and the entity it belongs to (`_owner`): "the owner of the new
    calendar", "the title of the ticket filed by carol"."""
    if sample.is_failure(call.get("result")):
        return
    records = {r.name: r for r in env.model.records}
    for record_name, item in meaning.returned_records(call.get("result"), tool.returns, records):
        record = records[record_name]
        for f in record.fields:
            value = item.get(f.name)
            senses = env.meanings.field(record_name, f.name)
            if not _hashable(value) or value in carried or not any(s.startswith(meaning.SOURCE) for s in senses):
                continue
            owner, reference = _owner(env, tool, record, item, f.name, (chain, start), rng)
            if owner:
                carried[value] = (f"the {_humane(f.name).lower()} of {owner}", reference)


def _owner(
    env: sample.SampleEnv,
    tool: ir.ToolDecl,
    record: ir.RecordDecl,
    item: dict[str, Any],
    carried_field: str,
    found: tuple[dict[str, Any], dict[str, Any]],
    rng: random.Random,
) -> tuple[str, Reference | None]:
    """How a request names the entity a carried value belongs to ("" when it cannot): one
    a write made is "the new X"; one of the start state is referred to by its attributes
    (not the one carried, which would give the value away), when the chain acts on it."""
    chain, start = found
    entity = _in_start(env, record, item, start)
    if entity is None:
        return (_new_one(env, record, item, found) if tool.writes else ""), None
    if not _acted_on(chain, env.name, entity):
        return "", None
    others = record.model_copy(update={"refers": [r for r in record.refers if r.field != carried_field]})
    return refer(env, dataclasses.replace(entity, record=others), rng)


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def _new_one(
    env: sample.SampleEnv, record: ir.RecordDecl, item: dict[str, Any], found: tuple[dict[str, Any], dict[str, Any]]
) -> str:
    """ "the new ticket", or "the second new ticket" when the chain makes several."""
    chain, start = found
    noun = record.noun or _humane(record.name).lower()
    made: list[Any] = []
    records = {r.name: r for r in env.model.records}
    for call in chain["calls"]:
        tool = env.tools.get(call["tool"].split(sample.CROSS_SEPARATOR, 1)[-1])
        if call["env"] != env.name or tool is None or not tool.writes or sample.is_failure(call.get("result")):
            continue
        for name, other in meaning.returned_records(call.get("result"), tool.returns, records):
            identity = other.get("id")
            if name == record.name and identity not in made and _in_start(env, record, other, start) is None:
                made.append(identity)
    if len(made) < 2:
        return f"the new {noun}"
    index = made.index(item.get("id")) if item.get("id") in made else -1
    return f"the {ORDINALS[index]} new {noun}" if 0 <= index < len(ORDINALS) else ""


def _in_start(
    env: sample.SampleEnv, record: ir.RecordDecl, item: dict[str, Any], start: dict[str, Any]
) -> Entity | None:
    """The entity of the start state a returned record is (the same `id`, or its map key)."""
    identity = item.get("id")
    if not _is_scalar(identity):
        return None
    for state_field in env.model.state:
        holds = _record_of(env.model, state_field.name)
        container = start.get(state_field.name)
        if holds is None or holds.name != record.name or not isinstance(container, dict):
            continue
        items = {str(k): v for k, v in container.items() if isinstance(v, dict)}
        if str(identity) in items:
            return Entity(state_field.name, str(identity), record, items[str(identity)], list(items.values()), "")
    return None


def _acted_on(chain: dict[str, Any], env: str, entity: Entity) -> bool:
    """Whether a call of the chain in `env` names the entity (its key or a value of its
    fields): only then does the request's reference to it lead to what the solution does."""
    identities = {entity.key} | {str(v) for v in entity.item.values() if _is_scalar(v)}
    return any(
        str(value) in identities
        for call in chain["calls"]
        if call["env"] == env
        for value in call["args"].values()
        if _is_scalar(value)
    )


def _record_made(env: sample.SampleEnv, tool: ir.ToolDecl, result: Any) -> ir.RecordDecl | None:
    """The record type a write returns (a created entity), if it returns one."""
    returned = ts.strip_optional(tool.returns)
    return next((r for r in env.model.records if r.name == returned.name), None)


def _identifiers(result: Any) -> list[Any]:
    """The identifier a write returns: its result's `id`, or the result itself when it
    is a plain key (a new ticket's number)."""
    value = result.get("id") if isinstance(result, dict) else result
    return [value] if _is_scalar(value) else []


def _record_of(model: ir.Environment, field_name: str) -> ir.RecordDecl | None:
    field = next((f for f in model.state if f.name == field_name), None)
    if field is None:
        return None
    ty = ts.strip_optional(field.type)
    inner = ty.args[-1] if ty.name in ("map", "list") and ty.args else None
    if inner is None:
        return None
    return next((r for r in model.records if r.name == inner.name), None)


def _personas(chain: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> list[str]:
    return [p for name in chain["envs"] for p in envs[name].model.personas]


def _compose(phrases: list[str], personas: list[str], rng: random.Random, plain: bool = False) -> str:
    """The phrases joined with seeded connectives, after an opener (none when the first
    phrase says where it happens: "In the help desk, …") and an optional persona."""
    text = phrases[0]
    for phrase in phrases[1:]:
        joiner = rng.choice(JOINERS)
        text += joiner + (_capitalised(phrase) if joiner.endswith(". ") else phrase)
    opener = rng.choice(OPENERS)
    if plain:
        opener = ""
    question = opener.strip() in ("Could you", "Can you")
    if question and ". " in text:  # a question over several sentences reads oddly
        opener, question = "", False
    return introduce(_capitalised(opener + text) + ("?" if question else "."), personas, rng)


def introduce(body: str, personas: list[str], rng: random.Random) -> str:
    """A request with a persona sentence in front, chosen by seed (or none), when the
    spec has personas: who asks, as a user would say it."""
    persona = rng.choice([*personas, ""]) if personas else ""
    return f"{persona} {body}" if persona else body


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _humane(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return spaced.replace("_", " ").strip()


def _enum_members(env: sample.SampleEnv) -> set[str]:
    return {m for e in env.model.enums for m in e.members}


def _can_name(value: Any) -> bool:
    """A field value a user can describe an entity by: a scalar that says something (a
    blank description is no way to point at a stream)."""
    return _is_scalar(value) and not (isinstance(value, str) and not value.strip())


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def slots(template: str) -> list[str]:
    """The parameters an intent template names, in order."""
    return SLOT.findall(template)
