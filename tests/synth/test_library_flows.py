"""The library's environments pass data to each other along flows a user would recognise
(docs/library.md, "Data flows between environments"): each is declared by a source both
specs name, so the env graph holds it, and a source declared too broadly no longer joins
environments whose values only share a format."""

from __future__ import annotations

from pathlib import Path

import pytest
from shipped import library_specs

from compiler import ir
from compiler.analyse import analyse_file
from compiler.synth import graph as g
from compiler.synth import meaning

FLOWS = {
    ("shop_orders", "support_triage"): "Customer.name -> open_conversation(customer) as shop_customers",
    ("identity_access", "team_calendar"): "User.name -> create_calendar(owner) as staff_names",
    ("hr_leave_payroll", "team_calendar"): "Employee.name -> create_calendar(owner) as staff_names",
    ("hr_leave_payroll", "expense_claims"): "Employee.name -> file_claim(claimant) as staff_names",
    ("contacts_crm", "email_inbox"): "Contact.email -> add_rule(sender) as contact_addresses",
    ("event_ticketing", "email_inbox"): "Customer.email -> add_rule(sender) as contact_addresses",
    ("invoicing", "email_inbox"): "Client.email -> add_rule(sender) as contact_addresses",
    ("hotel_bookings", "email_inbox"): "Guest.email -> add_rule(sender) as contact_addresses",
    ("job_matching", "identity_access"): "Hire.candidate -> onboard_joiner(full_name) as new_joiners",
    ("contacts_crm", "claw_contact_cleanup"): "Contact.email -> add_contact_row(email) as contact_addresses",
    ("claw_receipts_expenses", "expense_claims"): "Receipt.traveller -> file_claim(claimant) as staff_names",
}
"""(from env, to env) -> the flow, as `meaning.Flow` prints it."""

SPURIOUS = [("support_triage", "job_matching"), ("team_calendar", "support_triage"), ("support_triage", "shipments")]
"""Pairs a support order's customer or a calendar's owner joined only as `person_name`."""

NOT_JOINERS = [
    ("team_calendar", "identity_access"),
    ("hr_leave_payroll", "identity_access"),
    ("identity_access", "job_matching"),
    ("job_matching", "team_calendar"),
]
"""A calendar's owner or an employee is no new starter, an account's hire date no
placement's start, and a placement reaches the calendar only through its account."""

HIRE = ("job_matching", "identity_access", "team_calendar")
"""A hire gets an account, and the account a calendar."""

CLAW = {"contact_cleanup", "receipts_expenses"}
"""The Claw workspaces a flow joins to the general library (the others are left out: cheaper)."""

CLAW_FLOWS = {
    ("contacts_crm", "claw_contact_cleanup"): ["Contact.email -> add_contact_row(email) as contact_addresses"],
    ("claw_receipts_expenses", "expense_claims"): [
        "Receipt.merchant -> add_claim_line(merchant) as merchants",
        "Receipt.traveller -> file_claim(claimant) as staff_names",
        "Receipt.traveller -> find_employees(name) as staff_names",
    ],
}
"""Every flow into or out of those workspaces: their pools join only what they name."""


@pytest.fixture(scope="module")
def envs() -> dict[str, ir.Environment]:
    """The general library specs and the Claw workspaces in `CLAW` (ports aside), by environment."""
    found: dict[str, ir.Environment] = {}
    for spec in library_specs():
        if "ports" in spec.parts or ("claw" in spec.parts and spec.stem not in CLAW):
            continue
        env = analyse_file(spec).environment
        assert env is not None, spec
        found[env.header.name] = env
    return found


@pytest.fixture(scope="module")
def flows(envs: dict[str, ir.Environment]) -> dict[tuple[str, str], list[str]]:
    """The env flows among those specs."""
    return {pair: [str(f) for f in found] for pair, found in g.env_flows(envs.values()).items()}


@pytest.mark.parametrize("pair", sorted(FLOWS))
def test_a_declared_flow_is_an_env_graph_edge(flows: dict[tuple[str, str], list[str]], pair: tuple[str, str]) -> None:
    assert FLOWS[pair] in flows.get(pair, []), flows.get(pair)


def test_the_flows_span_five_domains() -> None:
    domains = {
        spec.parent.name for spec in library_specs() for pair in FLOWS for name in pair if _env_name(spec) == name
    }
    assert len(domains) >= 5, domains


@pytest.mark.parametrize("pair", SPURIOUS)
def test_a_customer_shares_no_value_with_staff_by_format_alone(
    flows: dict[tuple[str, str], list[str]], pair: tuple[str, str]
) -> None:
    assert pair not in flows, flows[pair]


@pytest.mark.parametrize("pair", NOT_JOINERS)
def test_a_joiner_is_onboarded_only_from_a_placement(
    flows: dict[tuple[str, str], list[str]], pair: tuple[str, str]
) -> None:
    assert pair not in flows, flows[pair]


def test_a_hire_reaches_the_calendar_through_the_new_account(
    envs: dict[str, ir.Environment], flows: dict[tuple[str, str], list[str]]
) -> None:
    """The hire's name is a joiner's in the directory and an owner's in the calendar, and
    the pools hold the same people, so the value carried on is one person."""
    hired, onboarded, calendar = (envs[name].value_pools for name in HIRE)
    assert FLOWS[HIRE[:2]] in flows[HIRE[:2]]
    assert FLOWS[HIRE[1:]] in flows[HIRE[1:]]
    assert hired["new_joiners"] == onboarded["new_joiners"]
    assert set(hired["new_joiners"]) <= set(calendar["staff_names"])
    carried_too = {
        "Hire.role -> onboard_joiner(title) as joiner_titles",
        "Hire.start_date -> onboard_joiner(start_date) as joiner_start_dates",
    }
    assert carried_too <= set(flows[HIRE[:2]])


def test_a_declared_source_is_the_parameters_own(envs: dict[str, ir.Environment]) -> None:
    """`onboard_joiner(full_name from new_joiners)` is stored into `User.name` (`from
    staff_names`): it is that field, but not any staff name, so a calendar's owner or an
    employee is not onboarded."""
    env = envs[HIRE[1]]
    senses = meaning.meanings(env, {name: fact.domains for name, fact in g.tool_facts(env).items()})
    assert senses.param("onboard_joiner", "full_name") == {"source:new_joiners", "field:User.name"}
    assert "source:staff_names" in senses.field("User", "name")


def test_a_claw_workspace_joins_only_the_environments_its_pools_name(
    flows: dict[tuple[str, str], list[str]],
) -> None:
    claw = {pair: found for pair, found in flows.items() if any(name.startswith("claw_") for name in pair)}
    assert claw == CLAW_FLOWS


def test_payroll_staff_reach_a_claim_filed_in_their_name(flows: dict[tuple[str, str], list[str]]) -> None:
    assert "Employee.name -> find_employees(name) as staff_names" in flows[("hr_leave_payroll", "expense_claims")]


def _env_name(spec: Path) -> str:
    """The environment a spec declares, from its header line (cheaper than analysing)."""
    for line in spec.read_text(encoding="utf-8").splitlines():
        if line.startswith("environment "):
            return line.removeprefix("environment ").rstrip(":").strip()
    return ""
