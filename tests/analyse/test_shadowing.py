"""A declaration named like a built-in function shadows it, with a warning (E2042), so
that adding a built-in to the language never breaks a spec that already used the name
(issue 24: a helper `uniform` became E2014 the day `uniform` became a built-in)."""

from __future__ import annotations

from pathlib import Path

from lowered import lowered_files

from compiler import library
from compiler.analyse import analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.library import builtins as bi

SPEC = Path(__file__).resolve().parents[1] / "fixtures" / "growth" / "shadowing.envspec"
HEADER = 'environment shadow_rules:\n    title "Shadow"\n\n'


def diagnostics(body: str) -> list[tuple[str, str]]:
    return [(d.code, d.severity) for d in analyse_source(HEADER + body, "s.envspec").diagnostics]


def test_every_built_in_name_may_name_a_helper_record_enum_or_local() -> None:
    """Which built-ins a spec may shadow is not a list to keep: every one may, unless the
    generated code needs the name itself (a Python built-in a body lowers to: `len`)."""
    for name in library.FUNCTIONS:
        if name in bi.TYPE_NAMES:
            continue
        assert bi.reserved_reason(name, "helper") is None, name
        if name not in bi.MODULE_BUILTINS:
            assert bi.reserved_reason(name, "record") is None, name
            assert bi.reserved_reason(name, "enum") is None, name


def test_the_generated_codes_own_names_stay_reserved() -> None:
    assert bi.reserved_reason("len", "variable") is not None  # bodies lower `len(x)` to Python's len
    assert bi.reserved_reason("len", "record") is not None
    assert bi.reserved_reason("int", "record") is not None  # a type name
    assert bi.reserved_reason("today", "variable") is None


def test_a_shadowing_helper_warns_and_is_called() -> None:
    body = (
        "fn uniform(a: float, b: float) -> float:\n    return a\n\ntool t() -> float:\n    return uniform(1.0, 2.0)\n"
    )
    assert diagnostics(body) == [("E2042", "warning")]


def test_a_shadowing_record_warns_and_a_local_does_not() -> None:
    assert diagnostics("record search:\n    text: str\n") == [("E2042", "warning")]
    assert diagnostics("tool t() -> int:\n    let today = 3\n    return today\n") == []


def test_a_shadowing_helper_is_a_method_of_its_own() -> None:
    """Its method is `_fn_NAME`: `_uniform` is the built-in's own method of Environment."""
    assert bi.helper_method("uniform") == "_fn_uniform" and bi.helper_method("score") == "_score"
    assert "_uniform" in bi.MEMBERS


def test_a_shadowing_helper_does_not_give_the_spec_random_state() -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    assert {f.name for f in result.environment.state} >= {"draws", "found"}
    assert bi.RNG_STATE not in {f.name for f in result.environment.state}


def test_a_spec_shadowing_built_ins_compiles_with_full_qc() -> None:
    files = lowered_files(SPEC)
    assert "def _fn_uniform(self" in files["environment.py"]
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="shadowing", files=files)], dynamic=True)
    outcome = checked["shadowing"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings
