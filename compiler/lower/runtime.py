"""Module-level helper functions a generated environment includes when its bodies use
them: date arithmetic on ISO-8601 strings and list removal without errors. Each is
emitted only where needed so generated modules stay small.
"""

from __future__ import annotations

_MOMENT = '''def _moment(text: str) -> dt.datetime:
    """An ISO-8601 date or datetime as a datetime (dates at midnight)."""
    return dt.datetime.fromisoformat(text if "T" in text else text + "T00:00:00")'''

_FORMAT = '''def _format_like(moment: dt.datetime, template: str) -> str:
    """Back to text, in the same shape (date or datetime) as the input had."""
    return moment.date().isoformat() if "T" not in template else moment.isoformat(timespec="seconds")'''

RUNTIME_HELPERS: dict[str, str] = {
    "moment": _MOMENT,
    "format_like": _FORMAT,
    "remove_first": '''def _remove_first(items: list[Any], item: Any) -> None:
    """Remove the first equal item, if there is one."""
    if item in items:
        items.remove(item)''',
    "add_seconds": """def _add_seconds(text: str, seconds: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(seconds=seconds), text)""",
    "add_minutes": """def _add_minutes(text: str, minutes: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(minutes=minutes), text)""",
    "add_hours": """def _add_hours(text: str, hours: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(hours=hours), text)""",
    "add_days": """def _add_days(text: str, days: int) -> str:
    return _format_like(_moment(text) + dt.timedelta(days=days), text)""",
    "seconds_between": """def _seconds_between(start: str, end: str) -> int:
    return int((_moment(end) - _moment(start)).total_seconds())""",
    "days_between": """def _days_between(start: str, end: str) -> int:
    return (_moment(end).date() - _moment(start).date()).days""",
    "weekday": '''def _weekday(text: str) -> int:
    """Monday is 0."""
    return _moment(text).weekday()''',
}

_DATE_HELPERS = {"add_seconds", "add_minutes", "add_hours", "add_days", "seconds_between", "days_between", "weekday"}


def helpers_needed(used: set[str]) -> set[str]:
    """Close the set of used helpers over their dependencies."""
    needed = set(used)
    if "advance_clock" in needed:
        needed |= {"add_seconds", "datetime"}
    if needed & _DATE_HELPERS:
        needed |= {"moment", "datetime"}
    if needed & {"add_seconds", "add_minutes", "add_hours", "add_days"}:
        needed.add("format_like")
    if "random_choice" in needed:
        needed.add("random_int")
    return needed
