"""Property-based fuzzing of every published route (schemathesis over ``/openapi.json``) on a real server.

Each operation gets a fixed-seed run (reproducible: the same cases every time) and a bounded random run (new
cases each time; Hypothesis prints the seed and the failing case to replay). Every response must be free of
5xx and conform to the published document: declared status code, declared content type, body and headers
matching their schemas.

Not fuzzed, because they are not in the OpenAPI document at all: the WebSocket routes
(``/vnc/{id}/websockify``, ``/v3/browsers/{id}/cdp``; OpenAPI cannot describe them) — they are covered by
``test_origin_host.py``, ``test_auth.py``, ``test_live_view.py`` and ``test_browsers.py``.

The server has no provider key, so a fuzzed task fails before any browser starts, and ``CHROME_BINARY`` is a
program that exits at once, so a fuzzed ``POST /v3/browsers`` answers its declared 503 ("no browser could be
started") quickly instead of starting Chromium per example. Hence "no 5xx" reads: never a 500, and another
5xx only where the operation declares it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any, TypeAlias

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings, strategies as st
from schemathesis.core.failures import ServerError
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.servers import running_server
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e

Operation: TypeAlias = "schemathesis.APIOperation[Any, Any, Any, Any]"

API_KEY = "fuzz-key"
AUTH = {"Authorization": f"Bearer {API_KEY}", "X-Browser-Use-API-Key": API_KEY}  # both: none generated wins


def no_server_fault(_: object, response: schemathesis.Response, case: schemathesis.Case[Operation]) -> bool | None:
    """No 500 ever; another 5xx only where the operation declares it (a 503 when no browser can start)."""
    status = response.status_code
    declared = case.operation.definition.raw.get("responses", {})
    if status == 500 or (status > 500 and str(status) not in declared):
        raise ServerError(operation=case.operation.label, status_code=status)
    return None


CHECKS = [
    no_server_fault,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
SEED = 20261130
FIXED_EXAMPLES = 25
RANDOM_EXAMPLES = 10
REQUEST_TIMEOUT = 30.0
EXPECTED_OPERATIONS = 16
TRANSPORT_HEADERS = {"content-length", "transfer-encoding", "connection", "host", "upgrade"}
"""Headers the HTTP client owns; a malformed one never reaches the app (the parser answers 400 text/plain)."""


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {"API_KEY": API_KEY, "CHROME_BINARY": "/bin/false"}
    with running_server(tmp_path_factory.mktemp("fuzz-home"), env, slots=2) as process:
        yield process


@pytest.fixture(scope="module")
def operations(fuzz_server: ServerProcess) -> list[Operation]:
    schema = schemathesis.openapi.from_url(f"{fuzz_server.base_url}/openapi.json")
    found: list[Operation] = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"our own schema has an operation schemathesis cannot read: {result}"
        found.append(result.ok())
    assert len(found) >= EXPECTED_OPERATIONS, [op.label for op in found]
    return found


def fuzz(operation: Operation, *, examples: int, seed: int | None) -> None:
    """Valid and invalid cases for one operation; raises on the first failing check (shrunk by Hypothesis)."""
    cases = st.one_of(
        operation.as_strategy(schemathesis.GenerationMode.POSITIVE),
        operation.as_strategy(schemathesis.GenerationMode.NEGATIVE),
    )

    @given(case=cases)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    def check(case: schemathesis.Case[Operation]) -> None:
        for name in [name for name in case.headers or {} if name.lower() in TRANSPORT_HEADERS]:
            del case.headers[name]  # framing, not API input: uvicorn's HTTP parser answers a bad one itself
        case.call_and_validate(headers=AUTH, checks=CHECKS, timeout=REQUEST_TIMEOUT)

    if seed is not None:
        check = hypothesis.seed(seed)(check)
    check()


def run_all(operations: list[Operation], *, examples: int, seed: int | None) -> None:
    failures = []
    for operation in operations:
        try:
            fuzz(operation, examples=examples, seed=seed)
        except Exception as exc:  # collect every operation's failure, then report them together
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)


def test_fixed_seed_cases_conform(operations: list[Operation]) -> None:
    run_all(operations, examples=FIXED_EXAMPLES, seed=SEED)


def test_random_cases_conform(operations: list[Operation]) -> None:
    run_all(operations, examples=RANDOM_EXAMPLES, seed=None)


OVERSIZED = {"task": "x" * (2 << 20)}
HUGE_NUMBERS: list[dict[str, Any]] = [
    {"task": "t", "maxCostUsd": 10**5000 // 9},
    {"task": "t", "maxCostUsd": 2**53 + 1, "timeoutMinutes": -(2**64)},
    {"outputSchema": {"maximum": -(10**400)}, "cookies": [{"expires": 2**70}]},
]
"""Integers only: the client refuses to write NaN or Infinity (``test_bounds.py`` sends those as raw text)."""


@pytest.fixture
def any_int_digits() -> Iterator[None]:
    """Let this process write a 5,000-digit integer (Python refuses past 4,300 by default)."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    yield
    sys.set_int_max_str_digits(before)


@pytest.mark.usefixtures("any_int_digits")
def test_oversized_and_huge_number_bodies_get_a_declared_4xx(operations: list[Operation]) -> None:
    """Every operation that takes a body, sent one over 1 MiB (413) and numbers JSON cannot carry (400)."""
    with_body = [op for op in operations if "requestBody" in op.definition.raw]
    assert len(with_body) >= 7, [op.label for op in with_body]
    failures = []
    for operation in with_body:
        path_parameters = {parameter.name: "no-such-id" for parameter in operation.path_parameters}
        for body, expected in [(OVERSIZED, {413}), *((value, {400, 404}) for value in HUGE_NUMBERS)]:
            case = operation.Case(path_parameters=path_parameters, body=body, media_type="application/json")
            try:
                response = case.call_and_validate(headers=AUTH, checks=CHECKS, timeout=REQUEST_TIMEOUT)
            except Exception as exc:  # collect them all, then report them together
                failures.append(f"{operation.label}: {exc}")
                continue
            if response.status_code not in expected:
                failures.append(f"{operation.label}: {response.status_code} {response.text[:200]}")
    assert not failures, "\n\n".join(failures)
