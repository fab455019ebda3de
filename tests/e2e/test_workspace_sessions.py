"""Sessions on a workspace (spec §27.2), end to end: a real server and Chromium, the fake provider scripting the
agent's file actions, and the official SDK reading the workspace afterwards."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from browser_use_sdk.v3 import AsyncBrowserUse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.e2e.agent_support import agent_steps, settled_with, step_requests, token
from tests.e2e.cached_shop import PRICES, SEARCH_BOX, SEARCH_BUTTON, ShopLayout, cached_shop_app
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_request import LLMRequest, find_index
from tests.fakes.llm_script import agent_step, click_on, done, navigate, type_into
from tests.fakes.llm_server import FakeProvider
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "local-key"
server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY))
FORM = (
    "<!doctype html><html><head><title>Upload form</title></head><body>"
    '<input type="file" id="f" aria-label="People upload" title="People upload">'
    "<script>document.getElementById('f').addEventListener('change', async (event) => {"
    "  for (const file of event.target.files) {"
    "    await fetch('/got', {method: 'POST', headers: {'x-name': file.name}, body: await file.text()});"
    "  }"
    "});</script></body></html>"
)


class Received:
    def __init__(self) -> None:
        self.files: list[tuple[str, str]] = []


@pytest.fixture(scope="module")
def received() -> Received:
    return Received()


@pytest.fixture(scope="module")
def site(received: Received) -> Iterator[ThreadedServer]:
    async def form(_: Request) -> HTMLResponse:
        return HTMLResponse(FORM)

    async def got(request: Request) -> Response:
        received.files.append((request.headers.get("x-name", ""), (await request.body()).decode(errors="replace")))
        return PlainTextResponse("ok")

    async def report(_: Request) -> Response:
        return PlainTextResponse("quarterly numbers", headers={"Content-Disposition": 'attachment; filename="q.txt"'})

    app = Starlette(routes=[Route("/form", form), Route("/got", got, methods=["POST"]), Route("/report", report)])
    with ThreadedServer(app) as served:
        yield served


@pytest.fixture
def client(server: ServerProcess, sdk: Callable[[ServerProcess], AsyncBrowserUse]) -> AsyncBrowserUse:
    return sdk(server)  # its key is "local-key"


def _upload(path: str) -> Callable[[LLMRequest], dict[str, Any]]:
    def choose(request: LLMRequest) -> dict[str, Any]:
        return agent_step({"upload_file": {"index": find_index(request, "People upload"), "path": path}})

    return choose


def _read(name: str) -> dict[str, Any]:
    return agent_step({"read_file": {"file_name": name}})


def _write(name: str, content: str) -> dict[str, Any]:
    return agent_step({"write_file": {"file_name": name, "content": content}})


async def test_the_agent_works_in_its_workspace(
    client: AsyncBrowserUse, http: httpx.Client, fake: FakeProvider, site: ThreadedServer, received: Received,
    tmp_path: Any,
) -> None:  # fmt: skip
    workspace = await client.workspaces.create(name="people")
    people = tmp_path / "people.csv"
    people.write_text("name,city\nAda,London\n")
    await client.workspaces.upload(workspace.id, people)

    marker = token("WORKSPACE")
    fake.script(
        marker,
        [
            _read("uploads/people.csv"),
            _write("out/result.csv", "Ada,found"),
            navigate(f"{site.url}/form"),
            _upload("uploads/people.csv"),
            navigate(f"{site.url}/report"),
            done("all done"),
            _read("out/result.csv"),  # the follow-up, on the same workspace
            done("read back"),
        ],
        when=agent_steps,
    )
    created = http.post(
        "/v3/sessions",
        json={"task": f"{marker} Look up the people", "workspaceId": str(workspace.id), "keepAlive": True},
    )
    assert created.status_code == 200, created.text
    session_id = created.json()["id"]
    assert created.json()["workspaceId"] == str(workspace.id)
    first = settled_with(http, session_id)
    assert first["status"] == "idle" and first["isTaskSuccessful"], first

    requests = step_requests(fake, marker)
    assert "Ada,London" in requests[1].text  # what read_file showed the model
    wait_until(lambda: received.files, 10, what="the page receiving the uploaded file")
    assert received.files == [("people.csv", "name,city\nAda,London\n")]
    listed = await client.workspaces.files(workspace.id)
    by_path = {f.path: f.size for f in listed.files}
    assert by_path.keys() == {"uploads/people.csv", "out/result.csv", "downloads/q.txt"}, by_path
    assert (await client.workspaces.download(workspace.id, "out/result.csv", to=tmp_path / "r.csv")).read_text() == (
        "Ada,found\n"
    )

    # a follow-up keeps the workspace, and may not switch to another one
    other = await client.workspaces.create()
    refused = http.post("/v3/sessions", json={"sessionId": session_id, "task": "x", "workspaceId": str(other.id)})
    assert refused.status_code == 422, refused.text
    follow = http.post("/v3/sessions", json={"sessionId": session_id, "task": f"{marker} read it back"})
    assert follow.status_code == 200, follow.text
    second = settled_with(http, session_id)
    assert second["workspaceId"] == str(workspace.id) and second["isTaskSuccessful"], second
    assert "Ada,found" in step_requests(fake, marker)[7].text
    http.post(f"/v3/sessions/{session_id}/stop", json={"strategy": "session"})


async def test_two_sessions_on_one_workspace_share_finished_files(
    client: AsyncBrowserUse, http: httpx.Client, fake: FakeProvider
) -> None:
    workspace = await client.workspaces.create()
    writer, reader = token("WRITER"), token("READER")
    fake.script(writer, [_write("shared/notes.md", "# from the writer"), done("written")], when=agent_steps)
    fake.script(reader, [_read("shared/notes.md"), done("read")], when=agent_steps)
    for marker in (writer, reader):
        created = http.post("/v3/sessions", json={"task": f"{marker} notes", "workspaceId": str(workspace.id)})
        assert created.status_code == 200, created.text
        assert settled_with(http, created.json()["id"])["isTaskSuccessful"]
    assert "# from the writer" in step_requests(fake, reader)[1].text
    leftovers = [f.path for f in (await client.workspaces.files(workspace.id)).files]
    assert leftovers == ["shared/notes.md"]


def test_unknown_workspace_and_cache_without_workspace_are_refused(http: httpx.Client) -> None:
    missing = http.post("/v3/sessions", json={"task": "x", "workspaceId": "00000000-0000-4000-8000-000000000000"})
    assert missing.status_code == 404 and missing.json()["detail"] == "Workspace not found"
    no_workspace = http.post("/v3/sessions", json={"task": "x", "cacheScript": True})
    assert no_workspace.status_code == 422
    assert no_workspace.json()["code"] == "workspace_required"


# -- cached scripts (spec §27.3) -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shop_layout() -> ShopLayout:
    return ShopLayout()


@pytest.fixture(scope="module")
def shop(shop_layout: ShopLayout) -> Iterator[ThreadedServer]:
    with ThreadedServer(cached_shop_app(shop_layout)) as served:
        yield served


def _look_up(shop: ThreadedServer, product: str) -> list[Any]:
    return [
        navigate(f"{shop.url}/"),
        type_into(SEARCH_BOX, product),
        click_on(SEARCH_BUTTON),
        done(f"{product} costs {PRICES[product]}"),
    ]


def _cache_events(http: httpx.Client, session_id: str) -> list[str]:
    listed = http.get(f"/v3/sessions/{session_id}/messages", params={"limit": 1000}).json()["messages"]
    return [
        m["summary"]
        for m in listed
        if m["type"] == "event" and json.loads(m["data"] or "{}").get("category") == "cache"
    ]


async def test_a_cached_script_replays_heals_and_fails_typed(
    client: AsyncBrowserUse, http: httpx.Client, fake: FakeProvider, shop: ThreadedServer, shop_layout: ShopLayout
) -> None:
    workspace = str((await client.workspaces.create(name="shop")).id)
    marker = token("CACHED")
    fake.script(marker, [*_look_up(shop, "Blue Widget"), *_look_up(shop, "Green Gizmo")], when=agent_steps)

    def run(product: str, **extra: Any) -> dict[str, Any]:
        task = f"{marker} Find the price of @{{{{{product}}}}} at {shop.url}/ and say what it costs"
        created = http.post("/v3/sessions", json={"task": task, "workspaceId": workspace, **extra})
        assert created.status_code == 200, created.text
        return settled_with(http, created.json()["id"])

    first = run("Blue Widget")
    assert first["isTaskSuccessful"] and first["output"] == "Blue Widget costs 42.00", first
    assert "Find the price of Blue Widget at" in step_requests(fake, marker)[0].text  # brackets removed
    scripts = [f.path for f in (await client.workspaces.files(workspace, prefix="scripts/")).files]
    assert len(scripts) == 1

    calls_before = len(fake.requests_matching(marker))
    second = run("Red Gadget")
    assert second["isTaskSuccessful"] and second["output"] == "Red Gadget costs 17.50", second
    assert len(fake.requests_matching(marker)) == calls_before  # no model call at all: no agent step, no pre-flight
    assert second["llmCostUsd"] == "0" and second["totalInputTokens"] == 0
    assert any("Running the cached script" in s for s in _cache_events(http, second["id"]))

    shop_layout.layout = "v2"  # the saved XPaths no longer match
    failed = run("Blue Widget", autoHeal=False)
    assert failed["isTaskSuccessful"] is False and failed["failureKind"] == "agent_failure", failed
    assert "step 2 (type" in failed["lastStepSummary"], failed
    assert len(fake.requests_matching(marker)) == calls_before

    healed = run("Green Gizmo")  # the agent runs (its second scripted look-up) and the script is replaced
    assert healed["isTaskSuccessful"] and healed["output"] == "Green Gizmo costs 8.25", healed
    events = _cache_events(http, healed["id"])
    assert any("to heal it" in s for s in events) and any("replaced" in s for s in events), events

    calls_before = len(fake.requests_matching(marker))
    again = run("Red Gadget")
    assert again["output"] == "Red Gadget costs 17.50" and len(fake.requests_matching(marker)) == calls_before
