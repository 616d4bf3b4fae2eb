"""The command-line options `envc serve` and `envc mcp` share: how long a request may take
to arrive (compiler/serve/deadlines.py), written once so the two servers read them alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from compiler.serve.deadlines import BODY_TIMEOUT, HEADER_TIMEOUT
from compiler.serve.http import MAX_BODY_BYTES

Command = TypeVar("Command", bound=Callable[..., object])


def read_deadline_options(scope: str = "") -> Callable[[Command], Command]:
    """`--header-timeout` and `--body-timeout`; `scope` starts their help ("HTTP: " where
    the command also has a transport without requests)."""

    def add(command: Command) -> Command:
        body = click.option(
            "--body-timeout",
            type=click.FloatRange(min=0),
            default=BODY_TIMEOUT,
            show_default=True,
            help=f"{scope}Seconds a request's body (at most {MAX_BODY_BYTES} bytes) may take to arrive once its "
            "headers are in; then 408 (0: no limit).",
        )
        header = click.option(
            "--header-timeout",
            type=click.FloatRange(min=0),
            default=HEADER_TIMEOUT,
            show_default=True,
            help=f"{scope}Seconds a request's headers may take to arrive; then 408 and the connection closes "
            "(0: no limit).",
        )
        return header(body(command))

    return add


def no_limit(seconds: float) -> float | None:
    """An option's 0 ("no limit") as the servers take it: None."""
    return None if seconds == 0 else seconds
