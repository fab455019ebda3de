"""The CapSolver client against the fake CapSolver on loopback: polling, reported costs, errors, the deadline."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest

from openbrowse.agent.captcha.capsolver import CapSolverClient, CapSolverSettings
from tests.fakes.capsolver import API_KEY, FakeCapSolver, Outcome

TASK = {"type": "ReCaptchaV2TaskProxyLess", "websiteURL": "https://a.example/", "websiteKey": "k"}


@pytest.fixture
def capsolver() -> Iterator[FakeCapSolver]:
    with FakeCapSolver() as solver:
        yield solver


def settings(solver: FakeCapSolver, deadline: float = 30.0) -> CapSolverSettings:
    return CapSolverSettings(api_key=API_KEY, base_url=solver.url, deadline=deadline, poll_interval=0.01)


async def test_polls_until_ready_and_reads_the_cost(capsolver: FakeCapSolver) -> None:
    capsolver.script(Outcome(token="tok-1", cost="0.0008", processing_polls=3))
    async with CapSolverClient(settings(capsolver)) as client:
        result = await client.solve(TASK)
    assert result.solved and result.solution == {"gRecaptchaResponse": "tok-1", "userAgent": "fake"}
    assert result.cost == Decimal("0.0008") and result.task_id
    assert capsolver.state.polls == 4
    assert capsolver.created == [TASK] and capsolver.state.client_keys == [API_KEY]


async def test_a_failed_task_costs_what_it_reports(capsolver: FakeCapSolver) -> None:
    capsolver.script(Outcome(cost="0.0005", fail="ERROR_CAPTCHA_UNSOLVABLE"))
    async with CapSolverClient(settings(capsolver)) as client:
        result = await client.solve(TASK)
    assert not result.solved and result.cost == Decimal("0.0005")
    assert result.error.startswith("ERROR_CAPTCHA_UNSOLVABLE")


async def test_create_errors_and_the_deadline_end_the_solve(capsolver: FakeCapSolver) -> None:
    capsolver.script(Outcome(create_error="ERROR_KEY_DENIED_ACCESS"), Outcome(processing_polls=10_000, cost=None))
    async with CapSolverClient(settings(capsolver, deadline=0.3)) as client:
        denied = await client.solve(TASK)
        slow = await client.solve(TASK)
    assert not denied.solved and denied.error.startswith("ERROR_KEY_DENIED_ACCESS") and denied.cost == 0
    assert not slow.solved and "no solution within" in slow.error and slow.cost == 0


async def test_an_unreachable_solver_is_a_clear_error() -> None:
    dead = CapSolverSettings(api_key="k", base_url="http://127.0.0.1:9", poll_interval=0.01)
    async with CapSolverClient(dead) as client:
        result = await client.solve(TASK)
    assert not result.solved and result.error.startswith("CapSolver could not be reached")
