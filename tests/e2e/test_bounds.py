"""The control plane's bounds (spec §25.1) on a real server: body size, numbers, the slot queue, event streams.

Each is what a client that floods the server sees: a 4xx with one sentence, never a 500, and nothing created.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import AsyncExitStack

import httpx
import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import create, token, wait_until_status
from tests.e2e.servers import server_fixture
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.server import ServerProcess, wait_until

pytestmark = pytest.mark.e2e

MIB = 1 << 20
TOO_LARGE = {"detail": "The request body is larger than the limit of 1 MiB."}


server = server_fixture(
    {"EVENTS_MAX_STREAMS_PER_SESSION": "3", "EVENTS_MAX_STREAMS": "5", "EVENTS_PING_INTERVAL": "0.5"}
)


def sessions_total(server: ServerProcess) -> int:
    return int(loopback.get(f"{server.v3}/sessions").json()["total"])


def padded_task(size: int) -> bytes:
    """A create body of exactly ``size`` bytes: a valid request apart from its size."""
    frame = b'{"task": ""}'
    return b'{"task": "' + b"x" * (size - len(frame)) + b'"}'


def announce_only(server: ServerProcess, method: str, length: int) -> bytes:
    """Send a request's headers announcing ``length`` body bytes, none of the body, and read the answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        head = f"{method} /v3/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n\r\n"
        sock.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        return answer


def test_a_body_over_one_mib_is_refused_before_it_is_read(server: ServerProcess) -> None:
    before = sessions_total(server)
    with httpx.Client(base_url=server.v3, timeout=30) as http:
        declared = http.post("/sessions", content=padded_task(MIB + 1))
        assert (declared.status_code, declared.json()) == (413, TOO_LARGE)

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            body = padded_task(3 * MIB)
            for start in range(0, len(body), 64 * 1024):
                yield body[start : start + 64 * 1024]

        chunked = http.post("/sessions", content=chunks())
        assert (chunked.status_code, chunked.json()) == (413, TOO_LARGE)
        for path in ("/profiles", "/browsers"):
            assert http.post(path, content=padded_task(2 * MIB)).status_code == 413, path
    for method in ("POST", "GET"):  # only the headers are sent: the answer does not wait for the body
        assert announce_only(server, method, 5 * MIB).startswith(b"HTTP/1.1 413 "), method
    assert sessions_total(server) == before
    exactly = loopback.post(f"{server.v3}/sessions", content=padded_task(MIB), timeout=30)
    assert exactly.status_code == 200, exactly.text  # a shell whose task is 1 MiB of text, no provider key needed
    assert sessions_total(server) == before + 1


HUGE_NUMBERS = [
    ('{"task": "t", "maxCostUsd": ' + "1" * 5000 + "}", "too many digits"),
    ('{"task": "t", "maxCostUsd": 9007199254740993}', "within ±2^53"),
    ('{"task": "t", "maxCostUsd": -9007199254740993}', "within ±2^53"),
    ('{"task": "t", "maxCostUsd": 1e400}', "too large"),
    ('{"task": "t", "maxCostUsd": 1e-400}', "too small"),
    ('{"task": "t", "maxCostUsd": 0.' + "1" * 40 + "}", "too many digits"),
    ('{"outputSchema": {"type": "object", "maximum": ' + "9" * 400 + "}}", "too many digits"),
]


@pytest.mark.parametrize(("body", "reason"), HUGE_NUMBERS)
def test_a_number_json_cannot_carry_exactly_is_a_400(server: ServerProcess, body: str, reason: str) -> None:
    before = sessions_total(server)
    answer = loopback.post(f"{server.v3}/sessions", content=body)
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith("The request body holds a number JSON cannot carry exactly") and reason in detail
    assert len(detail) < 200  # a long literal is shortened, not echoed
    assert sessions_total(server) == before


def test_non_json_constants_and_every_json_route_follow_the_number_rule(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.v3) as http:
        for constant in ("NaN", "Infinity", "-Infinity"):
            answer = http.post("/sessions", content=f'{{"task": "t", "maxCostUsd": {constant}}}')
            assert answer.status_code == 400 and constant in answer.json()["detail"], answer.text
        huge = '{"timeoutMinutes": ' + "7" * 5000 + "}"
        profile = http.post("/profiles", json={"name": "p"}).json()["id"]
        for method, path in (
            ("POST", "/browsers"),
            ("POST", "/profiles"),
            ("PATCH", f"/profiles/{profile}"),
            ("PUT", f"/profiles/{profile}/storage-state"),
            ("POST", "/sessions/no-such-session/stop"),
        ):
            answer = http.request(method, path, content=huge)
            assert answer.status_code == 400 and "too many digits" in answer.json()["detail"], (path, answer.text)
    live = loopback.post(f"{server.base_url}/vnc/no-such-target/control", content=huge)
    assert live.status_code == 400 and "too many digits" in live.json()["detail"], live.text


def test_event_streams_are_capped_per_session_and_in_all(server: ServerProcess) -> None:
    first, second = create(server)["id"], create(server)["id"]  # shells: `created` streams stay open

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=server.v3, timeout=30) as http, AsyncExitStack() as streams:

            async def open_stream(session_id: str) -> httpx.Response:
                request = http.build_request("GET", f"/sessions/{session_id}/events")
                response = await http.send(request, stream=True)
                streams.push_async_callback(response.aclose)
                return response

            held = [await open_stream(first) for _ in range(3)]
            assert all(response.status_code == 200 for response in held)
            refused = await open_stream(first)
            await refused.aread()
            assert refused.status_code == 429 and refused.headers["Retry-After"].isdigit()
            assert refused.json()["detail"].startswith("This session already has 3 open event streams")
            held += [await open_stream(second) for _ in range(2)]
            assert all(response.status_code == 200 for response in held)
            over_all = await open_stream(second)
            await over_all.aread()
            assert over_all.status_code == 429
            assert over_all.json()["detail"].startswith("The server already has 5 open event streams")

            await held[0].aclose()  # a closed stream gives its place back, as the server notices the client gone
            deadline = asyncio.get_running_loop().time() + 20
            while True:
                again = await open_stream(first)
                if again.status_code == 200:
                    break
                await again.aread()
                assert again.status_code == 429
                assert asyncio.get_running_loop().time() < deadline, "the closed stream's place was never freed"
                await asyncio.sleep(0.2)

    asyncio.run(scenario())


def hold_first_step(fake: FakeProvider, marker: str) -> Gate:
    gate = Gate()
    fake.script(marker, [structured(done("held then done"), gate=gate)], when=lambda r: r.is_agent_step)
    return gate


async def create_at_once(server: ServerProcess, tasks: list[str]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(tasks))
    async with httpx.AsyncClient(base_url=server.v3, timeout=30, limits=limits) as http:
        return list(await asyncio.gather(*(http.post("/sessions", json={"task": task}) for task in tasks)))


@pytest.mark.display
@pytest.mark.timeout(300)
def test_max_queued_refuses_the_next_run_and_the_next_browser(start_server: StartServer) -> None:
    with FakeProvider() as fake:
        server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=1, MAX_QUEUED=2)
        marker = token("HOLD")
        gate = hold_first_step(fake, marker)
        holder = create(server, task=f"{marker} hold the slot")
        assert gate.wait_entered(90)
        burst = asyncio.run(create_at_once(server, [f"{token('Q')} wait in line" for _ in range(8)]))
        assert sorted(answer.status_code for answer in burst) == [200] * 2 + [429] * 6  # all sent before any queued
        queued = [answer.json() for answer in burst if answer.status_code == 200]
        assert all(session["status"] == "created" for session in queued)
        with httpx.Client(base_url=server.v3, timeout=30) as http:
            total = http.get("/sessions").json()["total"]
            refused = http.post("/sessions", json={"task": "one too many"})
            assert refused.status_code == 429, refused.text
            assert refused.json()["detail"] == (
                "The queue for a display slot is full (2 waiting, MAX_QUEUED); try again when a slot frees up."
            )
            assert refused.headers["Retry-After"].isdigit()
            assert http.post("/browsers", json={}).status_code == 429  # raw browsers share the queue
            assert http.get("/sessions").json()["total"] == total  # nothing was written
            assert http.post("/sessions", json={}).status_code == 200  # a shell does not queue
            assert http.post(f"/sessions/{queued[1]['id']}/stop", json={"strategy": "task"}).status_code == 200
            again = http.post("/sessions", json={"task": f"{token('NEXT')} a place is free again"})
            assert again.status_code == 200, again.text
        gate.open()
        wait_until_status(server, holder["id"], {"stopped"})
        wait_until_status(server, again.json()["id"], {"stopped"}, timeout=120)
        wait_until(lambda: loopback.get(f"{server.base_url}/health/details").json()["queuedSessions"] == 0, 60)
