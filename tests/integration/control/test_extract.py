"""``/extract`` on a real page: scoped readable text, and one model call (a scripted stand-in model) on top of it."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from openbrowse.control import extract
from openbrowse.control.call import ControlCall
from openbrowse.control.engine import ControlEngine
from openbrowse.control.errors import ControlError
from openbrowse.control.target import ControlTarget
from tests.support.asgi_thread import ThreadedServer

PAGE = """<!doctype html><title>releases</title><body>
<nav>Home | Blog | Login</nav>
<main>
  <h1>Releases</h1>
  <ul><li>v2.0 — faster</li><li>v1.0 — first</li></ul>
  <div class="ad">BUY NOW</div>
  <p style="display:none">hidden text</p>
  <script>var notText = 1;</script>
</main>
<footer>© Example</footer>
</body>"""


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    app = Starlette(
        routes=[Route("/page", lambda _: HTMLResponse(PAGE)), Route("/favicon.ico", lambda _: Response(b""))]
    )
    with ThreadedServer(app) as running:
        yield running


class ScriptedModel:
    """Answers prompts from a list, in order, and keeps the prompts it saw."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answers.pop(0)


@pytest.fixture
async def model_engine(control_target: ControlTarget) -> AsyncIterator[tuple[ControlEngine, ScriptedModel]]:
    model = ScriptedModel()
    engine = ControlEngine(dataclasses.replace(control_target, ask_model=model))
    try:
        yield engine, model
    finally:
        await engine.aclose()


async def run(engine: ControlEngine, server: ThreadedServer, **body: Any) -> dict[str, Any]:
    page = await engine.page(None)
    if not page.url.endswith("/page"):
        await page.goto(f"{server.url}/page")
    result: dict[str, Any] = await extract.extract(ControlCall(engine=engine, body=body))
    return result


async def test_capture_is_scoped_and_cleaned(engine: ControlEngine, server: ThreadedServer) -> None:
    whole = await run(engine, server)
    assert "Home | Blog" in whole["text"] and "# Releases" in whole["text"]
    assert "hidden text" not in whole["text"] and "notText" not in whole["text"]

    scoped = await run(engine, server, selector="main", ignoreSelectors=[".ad"])
    assert scoped["text"] == "# Releases\n\n- v2.0 — faster\n- v1.0 — first"
    assert scoped["chars"] == len(scoped["text"])


async def test_selector_without_match_is_an_error(engine: ControlEngine, server: ThreadedServer) -> None:
    with pytest.raises(ControlError) as caught:
        await run(engine, server, selector="article")
    assert caught.value.status == 400 and "matches nothing" in caught.value.message
    with pytest.raises(ControlError) as invalid:
        await run(engine, server, ignoreSelectors=["[["])
    assert invalid.value.status == 400


async def test_query_without_a_model_is_501(engine: ControlEngine, server: ThreadedServer) -> None:
    with pytest.raises(ControlError) as caught:
        await run(engine, server, query="Latest version?")
    assert caught.value.status == 501


async def test_query_is_one_model_call(
    model_engine: tuple[ControlEngine, ScriptedModel], server: ThreadedServer
) -> None:
    engine, model = model_engine
    model.answers = ["v2.0", "NOT_FOUND"]
    answered = await run(engine, server, query="Latest version?", selector="main")
    assert answered["answer"] == "v2.0" and answered["found"] is True
    [prompt] = model.prompts
    assert "Latest version?" in prompt and "- v2.0 — faster" in prompt and "Home | Blog" not in prompt
    missing = await run(engine, server, query="Price?")
    assert missing["answer"] == "NOT_FOUND" and missing["found"] is False


async def test_schema_answer_is_validated_with_one_retry(
    model_engine: tuple[ControlEngine, ScriptedModel], server: ThreadedServer
) -> None:
    engine, model = model_engine
    schema = {"type": "array", "items": {"type": "object", "required": ["version"]}}
    model.answers = ['[{"name": "v2.0"}]', '```json\n[{"version": "2.0"}, {"version": "1.0"}]\n```']
    answered = await run(engine, server, query="List the releases", schema=schema, selector="main")
    assert answered["json"] == [{"version": "2.0"}, {"version": "1.0"}]
    assert len(model.prompts) == 2 and "'version' is a required property" in model.prompts[1]

    model.answers, model.prompts = ["not json", "still not json"], []
    with pytest.raises(ControlError) as caught:
        await run(engine, server, query="List", schema=schema)
    assert caught.value.status == 422 and caught.value.code == "ACT_OPERATION_FAILED"
    assert len(model.prompts) == 2


async def test_invalid_schema_is_a_bad_request(engine: ControlEngine, server: ThreadedServer) -> None:
    with pytest.raises(ControlError) as caught:
        await run(engine, server, query="x", schema={"type": 12})
    assert caught.value.status == 400
