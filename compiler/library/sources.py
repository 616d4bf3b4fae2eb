"""Built-in value sources: the typed formats a task's values are drawn from.

A spec names where the values of a tool parameter or a record field come from
(`param requester from person_name`, `field total from amount(5, 500)`): one of its own
`values` pools, or one of the formats below. The analyser checks a source's name, its
arguments and that its values fit the parameter's type; the task sampler
(`compiler/synth/values.py`) makes the values, seeded, so the same seed gives the same
values on every machine. Each format is defined here once; both read this table.

No format makes prose: free text (a ticket's title, a note) comes from a pool the spec
writes in the domain's words, never from generated filler.
"""

from __future__ import annotations

from dataclasses import dataclass

ArgValue = int | float | str


@dataclass(frozen=True)
class FormatArg:
    """A literal argument of a format (`amount(5, 500)`), with its type and default."""

    name: str
    type: str
    default: ArgValue


@dataclass(frozen=True)
class Format:
    name: str
    result: str
    """The language type of the values (`str`, `int`, `float`, `date`, `datetime`)."""
    doc: str
    args: tuple[FormatArg, ...] = ()


def _format(name: str, result: str, doc: str, *args: FormatArg) -> Format:
    return Format(name, result, doc, args)


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        _format("person_name", "str", "A person's full name: `Dana Ruiz`."),
        _format("first_name", "str", "A given name: `Dana`."),
        _format("last_name", "str", "A family name: `Ruiz`."),
        _format("email", "str", "An e-mail address at an example domain: `dana.ruiz@example.com`."),
        _format("phone", "str", "A phone number: `+1-415-555-0134`."),
        _format("username", "str", "A sign-in name: `druiz`."),
        _format("company", "str", "A company's name: `Hartley & Sons`."),
        _format("job_title", "str", "A job title: `Logistics manager`."),
        _format("street_address", "str", "A street address: `42 Elm Street`."),
        _format("city", "str", "A city: `Portland`."),
        _format("country", "str", "A country: `Portugal`."),
        _format("postcode", "str", "A postal code: `97204`."),
        _format("url", "str", "A web address at an example domain: `https://www.example.com/reports`."),
        _format("color", "str", "A colour's name: `teal`."),
        _format(
            "amount",
            "float",
            "A sum of money with two decimals, between `low` and `high`: `129.90`.",
            FormatArg("low", "float", 1.0),
            FormatArg("high", "float", 1000.0),
        ),
        _format(
            "integer",
            "int",
            "A whole number between `low` and `high`, both included.",
            FormatArg("low", "int", 1),
            FormatArg("high", "int", 100),
        ),
        _format(
            "date",
            "date",
            "A date within `days` days after the scenario's clock: `2025-01-14`.",
            FormatArg("days", "int", 30),
        ),
        _format(
            "datetime",
            "datetime",
            "A time on the quarter hour within `days` days after the scenario's clock, in working hours.",
            FormatArg("days", "int", 30),
        ),
        _format("time_of_day", "str", "A time on the quarter hour in working hours: `14:30`."),
        _format(
            "file_name",
            "str",
            "A file's name with the extension given: `quarterly_report.csv`.",
            FormatArg("extension", "str", "txt"),
        ),
        _format(
            "file_path",
            "str",
            "A relative path of one or two folders and a file with the extension given: `reports/2025/q1.csv`.",
            FormatArg("extension", "str", "txt"),
        ),
    )
}

NAMING_FORMATS = frozenset(
    {"person_name", "email", "phone", "username", "company", "street_address", "url", "file_name", "file_path"}
)
"""Formats whose value names one person, organisation, place or document: the same value
in two environments is the same thing (a customer's name becomes a calendar's owner).
Amounts, numbers, dates, times, colours and the parts of names or places (a first name, a
city) are shared by unrelated things, so they join no environments (docs/graph.md)."""
