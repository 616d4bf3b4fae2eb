"""The text splice of lowered bodies (compiler/lower/splice.py) gives exactly what libcst's
splice gives (compiler/lower/cst_splice.py), and leaves to libcst what it cannot be sure of."""

from __future__ import annotations

from pathlib import Path

import pytest
from shipped import spec_path

import compiler.lower as lowering
from compiler.analyse import analyse_file
from compiler.lower import cst_splice, splice
from compiler.lower.errors import LoweringError

ROOT = Path(__file__).resolve().parent.parent
SKELETON = '''class Other:
    def add(self) -> None:
        """Not the environment's."""
        ...


class Environment:
    """An environment."""

    def add(self, n: int) -> int:
        """Add.

        With a docstring over lines.
        """
        ...

    def show(self) -> str:
        """Show."""
        ...

    def untouched(self) -> None:
        """Not a tool."""
        ...
'''
BODIES = {
    "add": 'total = n + 1\nif total > 3:\n    raise ValueError(f"#{total}")\n\nreturn (\n    total\n)\n',
    "show": "return 'x # not a comment'\n",
}


def spliced_skeletons() -> dict[str, tuple[str, dict[str, str]]]:
    """The skeleton and the bodies `lower` splices, for two shipped specs (one has `#` in
    strings of its bodies)."""
    captured: dict[str, tuple[str, dict[str, str]]] = {}
    original = lowering.splice_bodies

    def capture(skeleton: str, class_name: str, bodies: dict[str, str]) -> str:
        captured[current] = (skeleton, dict(bodies))
        return original(skeleton, class_name, bodies)

    lowering.splice_bodies = capture
    try:
        for current in ("ticketing", "media_monitoring"):
            env = analyse_file(spec_path(current)).environment
            assert env is not None
            lowering.lower(env, f"specs/{current}.envspec")
    finally:
        lowering.splice_bodies = original
    return captured


@pytest.fixture(scope="module")
def shipped() -> dict[str, tuple[str, dict[str, str]]]:
    return spliced_skeletons()


def test_shipped_bodies_are_spliced_as_text_exactly_as_libcst_does(
    shipped: dict[str, tuple[str, dict[str, str]]],
) -> None:
    assert any("#" in body for _, bodies in shipped.values() for body in bodies.values())
    for name, (skeleton, bodies) in shipped.items():
        as_text = splice._splice_as_text(skeleton, "Environment", bodies)
        assert as_text is not None, f"{name}: the text splice gave up on the bodies lowering writes"
        assert as_text == cst_splice.splice_bodies(skeleton, "Environment", bodies), name


def test_a_small_module_splices_the_same_both_ways() -> None:
    as_text = splice._splice_as_text(SKELETON, "Environment", BODIES)
    assert as_text is not None
    assert as_text == cst_splice.splice_bodies(SKELETON, "Environment", BODIES)
    assert '        """Not the environment\'s."""\n        ...\n' in as_text  # other classes keep theirs
    assert '        """Not a tool."""\n        ...\n' in as_text


@pytest.mark.parametrize(
    "body",
    [
        "# a comment first\nreturn 1\n",
        "x = 1  # a comment after\nreturn x\n",
        "return 1\n# a comment last\n",
        'return """over\nlines"""\n',
        "return 1 + \\\n    2\n",
        "return 1\n\n",
        "return 1",
        "return (\n",
    ],
)
def test_bodies_the_text_splice_is_not_sure_of_go_to_libcst(body: str) -> None:
    bodies = {"add": body, "show": "return ''\n"}
    assert splice._splice_as_text(SKELETON, "Environment", bodies) is None
    try:
        expected = cst_splice.splice_bodies(SKELETON, "Environment", bodies)
    except LoweringError as exc:
        with pytest.raises(LoweringError, match="does not parse"):
            splice.splice_bodies(SKELETON, "Environment", bodies)
        assert "does not parse" in str(exc)
        return
    assert splice.splice_bodies(SKELETON, "Environment", bodies) == expected


def test_a_body_without_a_method_is_an_error() -> None:
    with pytest.raises(LoweringError, match="no method to splice into for: missing"):
        splice.splice_bodies(SKELETON, "Environment", {**BODIES, "missing": "return 1\n"})
