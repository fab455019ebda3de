"""Bad input is refused at request time with a 4xx that says why, never a 500 and never after a run was paid for.

* An invalid ``outputSchema`` (unknown type, bad regex, unresolvable or remote ``$ref``, not JSON Schema) is a
  422 naming the problem, on create and on follow-up; a remote ``$ref`` is never fetched. A valid schema the
  answer store cannot convert is still accepted (prose mode, spec §13.1).
* Integers past any sane range (SQLite's int64 included) are a 422; a body nested too deeply is a 400.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.servers import server_fixture
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e


# one server for the module: each test counts the sessions it finds before it, not from zero
server = server_fixture(check_temp=True)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A local port that records whether anything connected to it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def nobody_connected(sock: socket.socket) -> bool:
    try:
        connection, _ = sock.accept()
    except BlockingIOError:
        return True
    connection.close()
    return False


def schema_with(property_schema: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"answer": property_schema}, **top}


INVALID = [
    (schema_with({"type": "strnig"}), "/properties/answer/type"),
    (schema_with({"type": "string", "pattern": "([a-z"}), "regex"),
    (schema_with({"$ref": "#/$defs/missing"}), "#/$defs/missing"),
    (schema_with({"type": "array", "items": [{"type": "string"}]}), "/properties/answer/items"),
    ({"type": "object", "required": "answer"}, "/required"),
    ({"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}, "/properties/n/minimum"),
]


def problem_of(answer: httpx.Response) -> str:
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert isinstance(detail, list) and detail[0]["loc"] == ["body", "outputSchema"], detail
    return str(detail[0]["msg"])


def test_invalid_output_schemas_are_refused_at_create_and_follow_up(
    server: ServerProcess, listener: socket.socket
) -> None:
    with httpx.Client(base_url=server.v3) as http:
        before = http.get("/sessions").json()["total"]
        for schema, named in INVALID:
            assert named in problem_of(http.post("/sessions", json={"task": "t", "outputSchema": schema}))
        remote = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
        message = problem_of(http.post("/sessions", json={"task": "t", "outputSchema": schema_with({"$ref": remote})}))
        assert remote in message and "only references inside the schema" in message
        assert nobody_connected(listener)  # never fetched
        assert http.get("/sessions").json()["total"] == before  # nothing was created, nothing was paid for

        shell = http.post("/sessions", json={}).json()
        for schema, named in INVALID[:2]:
            follow_up = {"sessionId": shell["id"], "task": "t", "outputSchema": schema}
            assert named in problem_of(http.post("/sessions", json=follow_up))
        after = http.get(f"/sessions/{shell['id']}").json()
        assert after["status"] == "created" and after["outputSchema"] is None


def test_valid_schemas_the_store_cannot_convert_are_accepted(server: ServerProcess) -> None:
    accepted = [
        schema_with({"anyOf": [{"type": "string"}, {"type": "integer"}]}),  # a genuine union: prose mode
        {"type": "array", "items": {"type": "string"}},  # a non-object top level: prose mode
        schema_with({"$ref": "#/$defs/item"}, **{"$defs": {"item": {"type": "string", "pattern": "^[A-Z]+$"}}}),
    ]
    with httpx.Client(base_url=server.v3) as http:
        for schema in accepted:
            answer = http.post("/sessions", json={"outputSchema": schema})
            assert answer.status_code == 200, answer.text
            assert answer.json()["outputSchema"] == schema


def test_out_of_range_numbers_and_deep_bodies_get_a_4xx(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.base_url) as http:
        before = http.get("/v3/sessions").json()["total"]
        for path in ("/v3/sessions?page=21669798957116311994368", "/v3/browsers?pageNumber=9223372036854775808"):
            answer = http.get(path)
            assert answer.status_code == 422 and isinstance(answer.json()["detail"], list), path
        too_deep = {"detail": "The request body is nested too deeply."}
        for depth in (100_000, 700):  # past the JSON parser's own limit, and past what validators can render
            for field in ("task", "outputSchema", "thinkingLevel"):
                deep = http.post("/v3/sessions", content=f'{{"{field}": {"[" * depth}1{"]" * depth}}}')
                assert deep.status_code == 400 and deep.json() == too_deep, (depth, field)
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(25):  # 25 schema levels (50 JSON levels) is deep for a real schema, and fine
            schema = {"type": "object", "properties": {"a": schema}}
        assert http.post("/v3/sessions", json={"outputSchema": schema}).status_code == 200
        assert http.get("/v3/sessions").json()["total"] == before + 1  # only the last one was created
