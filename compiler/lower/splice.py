"""Putting the lowered bodies into the rendered skeleton's methods.

The skeleton (templates/environment.py.jinja) gives every tool and helper method a
docstring and a `...` placeholder; lowering gives each a body. libcst splices them
(`compiler/lower/cst_splice.py`): it parses the skeleton and every body and replaces each
placeholder with the body's statements, indented to the method. That is exact but
costs about a second per spec, most of lowering.

For the bodies lowering writes, the same result is a text edit (`_splice_as_text`):
libcst prints a spliced statement as its own text with the block's indentation put
before every line, except the lines inside a string that spans lines and after a
backslash continuation (it keeps those as they are), and it leaves out comments and
blank lines before a body's first statement or after its last. So a body with no
comment, no string spanning lines and no backslash continuation becomes its lines,
each indented; the placeholder line is found with `ast`, among the class's own methods
(libcst would also fill a function of a body's name nested in a method, which the
templates do not have). Any other body, or a skeleton not shaped as expected, takes
libcst, which also reports a body that does not parse. `tests/test_splice.py` checks
that both give the same text.
"""

from __future__ import annotations

import ast
import io
import tokenize


def splice_bodies(skeleton: str, class_name: str, bodies: dict[str, str]) -> str:
    """The skeleton with each method `class_name.NAME`'s `...` replaced by `bodies[NAME]`;
    LoweringError when a body or the skeleton does not parse, or a body has no method."""
    spliced = _splice_as_text(skeleton, class_name, bodies)
    if spliced is not None:
        return spliced
    from compiler.lower import cst_splice

    return cst_splice.splice_bodies(skeleton, class_name, bodies)


# --------------------------------------------------------------------------- as text


def _splice_as_text(skeleton: str, class_name: str, bodies: dict[str, str]) -> str | None:
    """What libcst would give, or None when that is not certain (libcst decides then)."""
    if "\r" in skeleton or not all(_plain(body) for body in bodies.values()):
        return None
    try:
        tree = ast.parse(skeleton)
    except SyntaxError:
        return None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    if len(classes) != 1 or any(isinstance(n, ast.ClassDef) for n in classes[0].body):
        return None  # libcst's splice leaves a class at a nested class's end
    lines = _lines(skeleton)
    placeholders: dict[int, str] = {}  # index of a `...` line -> the method it belongs to
    for method in classes[0].body:
        if not isinstance(method, ast.FunctionDef) or method.name not in bodies:
            continue
        last = method.body[-1]
        ellipses = [s for s in method.body if _is_ellipsis(s)]
        if (
            method.name in placeholders.values()
            or ellipses != [last]
            or last.end_lineno != last.lineno
            or lines[last.lineno - 1].strip() != "..."
        ):
            return None
        placeholders[last.lineno - 1] = method.name
    if set(placeholders.values()) != set(bodies):
        return None
    out = []
    for index, line in enumerate(lines):
        name = placeholders.get(index)
        if name is None:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.extend(indent + body_line for body_line in _lines(bodies[name]))
    return "".join(out)


def _lines(text: str) -> list[str]:
    """Lines as Python counts them here (only `\\n` ends one; `str.splitlines` also
    splits at form feeds and other separators a string may hold), each with its end."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def _plain(body: str) -> bool:
    """The body parses, and its text is all statements: no comment, no string over
    several lines, no backslash continuation; it starts with a statement and ends with
    a line break."""
    if not body.endswith("\n") or body.endswith("\n\n") or body[:1].isspace() or "\\\n" in body or "\r" in body:
        return False
    try:
        ast.parse(body)
    except SyntaxError:
        return False
    if "#" not in body and '"""' not in body and "'''" not in body:
        return True  # no comment and no string over lines can hide in this text
    for token in tokenize.generate_tokens(io.StringIO(body).readline):
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and token.start[0] != token.end[0]):
            return False
    return True


def _is_ellipsis(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and statement.value.value is Ellipsis
    )
