"""Cookies, web storage, emulation overrides and permissions of a real browser through the control routes."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from openbrowse.control import emulation, state
from openbrowse.control.call import ControlCall
from openbrowse.control.engine import ControlEngine
from openbrowse.control.errors import ControlError
from tests.support.asgi_thread import ThreadedServer

PAGE = "<!doctype html><title>state</title><body>state</body>"


async def echo(request: Request) -> JSONResponse:
    return JSONResponse({"debug": request.headers.get("x-debug"), "cookie": request.headers.get("cookie")})


async def private(request: Request) -> Response:
    expected = "Basic " + base64.b64encode(b"ada:lovelace").decode()
    if request.headers.get("authorization") != expected:
        return Response("who?", status_code=401, headers={"WWW-Authenticate": 'Basic realm="test"'})
    return HTMLResponse("<title>inside</title>welcome")


def site() -> Starlette:
    return Starlette(
        routes=[
            Route("/page", lambda _: HTMLResponse(PAGE)),
            Route("/echo", echo),
            Route("/private", private),
            Route("/favicon.ico", lambda _: Response(status_code=204)),
        ]
    )


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(site()) as running:
        yield running


async def call(handler: Any, engine: ControlEngine, path: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
    result: dict[str, Any] = await handler(ControlCall(engine=engine, body=body, path=path or {}))
    return result


async def test_cookies_round_trip(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/page")
    added = await call(state.set_cookie, engine, cookie={"name": "session", "value": "abc", "url": server.url})
    assert added["added"] == 1
    many = await call(
        state.set_cookies,
        engine,
        cookies=[
            {"name": "theme", "value": "dark", "domain": "127.0.0.1", "path": "/"},
            {"name": "lang", "value": "fr", "url": server.url},
        ],
    )
    assert many["added"] == 2
    assert await page.evaluate("fetch('/echo').then((r) => r.json()).then((d) => d.cookie)") in {
        "session=abc; theme=dark; lang=fr",
        "theme=dark; session=abc; lang=fr",
        "session=abc; lang=fr; theme=dark",
        "theme=dark; lang=fr; session=abc",
        "lang=fr; session=abc; theme=dark",
        "lang=fr; theme=dark; session=abc",
    }
    listed = await call(state.cookies, engine)
    assert {cookie["name"]: cookie["value"] for cookie in listed["cookies"]} == {
        "session": "abc",
        "theme": "dark",
        "lang": "fr",
    }
    assert listed["targetId"] == await engine.target_id_of(page)
    await call(state.clear_cookies, engine, name="theme")
    assert {cookie["name"] for cookie in (await call(state.cookies, engine))["cookies"]} == {"session", "lang"}
    await call(state.clear_cookies, engine)
    assert (await call(state.cookies, engine))["cookies"] == []


async def test_bad_cookies_are_refused(engine: ControlEngine) -> None:
    with pytest.raises(ControlError) as caught:
        await call(state.set_cookie, engine, cookie={"name": "x", "value": "y"})
    assert caught.value.status == 400 and "url" in caught.value.message
    with pytest.raises(ControlError):
        await call(state.set_cookies, engine, cookies=[])


async def test_storage_round_trip(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/page")
    local = {"kind": "local"}
    await call(state.storage_set, engine, local, key="theme", value="dark")
    await call(state.storage_set, engine, local, key="size", value="xl")
    assert await page.evaluate("localStorage.getItem('theme')") == "dark"
    got = await call(state.storage_get, engine, local)
    assert got["origin"] == server.url and got["items"] == {"theme": "dark", "size": "xl"}
    assert (await call(state.storage_get, engine, local, key="size"))["items"] == {"size": "xl"}
    await call(state.storage_clear, engine, local, key="size")
    assert (await call(state.storage_get, engine, local))["items"] == {"theme": "dark"}

    session = {"kind": "session"}
    await page.evaluate("sessionStorage.setItem('step', '2')")
    assert (await call(state.storage_get, engine, session))["items"] == {"step": "2"}
    await call(state.storage_clear, engine, session)
    assert await page.evaluate("sessionStorage.length") == 0
    with pytest.raises(ControlError) as caught:
        await call(state.storage_get, engine, {"kind": "cookies"})
    assert caught.value.status == 400


async def test_page_overrides_apply_to_open_and_new_tabs(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/page")
    await call(emulation.setting_routes["timezone"], engine, timezoneId="Asia/Tokyo")
    await call(emulation.setting_routes["locale"], engine, locale="fr-FR")
    result = await call(emulation.setting_routes["media"], engine, colorScheme="dark")
    assert result["overrides"] == {
        "timezone": {"timezoneId": "Asia/Tokyo"},
        "locale": {"locale": "fr-FR"},
        "media": {"colorScheme": "dark"},
    }
    assert await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == "Asia/Tokyo"
    assert await page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") is True
    assert await page.evaluate("Intl.NumberFormat().resolvedOptions().locale") == "fr-FR"
    await page.reload()
    assert await page.evaluate("navigator.language") == "fr-FR"

    second = await engine.context.new_page()
    await second.goto(f"{server.url}/page")
    await second.wait_for_function("Intl.DateTimeFormat().resolvedOptions().timeZone === 'Asia/Tokyo'")
    await second.wait_for_function("matchMedia('(prefers-color-scheme: dark)').matches")

    cleared = await call(emulation.setting_routes["timezone"], engine, clear=True)
    assert "timezone" not in cleared["overrides"]
    assert await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") != "Asia/Tokyo"


async def test_device_override(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/page")
    await call(emulation.setting_routes["device"], engine, name="iPhone 14")
    assert await page.evaluate("[screen.width, window.devicePixelRatio]") == [390, 3]
    assert "iPhone" in await page.evaluate("navigator.userAgent")
    with pytest.raises(ControlError) as caught:
        await call(emulation.setting_routes["device"], engine, name="Toaster 3000")
    assert caught.value.status == 400


async def test_offline_and_headers(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/page")
    shown = await call(emulation.setting_routes["headers"], engine, headers={"X-Debug": "on", "X-Api-Key": "k"})
    assert shown["overrides"]["headers"]["headers"]["X-Api-Key"] == "[redacted]"
    assert await page.evaluate("fetch('/echo').then((r) => r.json()).then((d) => d.debug)") == "on"
    await call(emulation.setting_routes["offline"], engine, offline=True)
    assert await page.evaluate("fetch('/echo').then(() => 'online', () => 'offline')") == "offline"
    await call(emulation.setting_routes["offline"], engine, clear=True)
    await call(emulation.setting_routes["headers"], engine, clear=True)
    assert await page.evaluate("fetch('/echo').then((r) => r.json()).then((d) => d.debug)") is None


async def test_http_credentials(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    shown = await call(emulation.setting_routes["credentials"], engine, username="ada", password="lovelace")
    assert shown["overrides"]["credentials"] == {"username": "ada", "password": "[redacted]"}
    response = await page.goto(f"{server.url}/private")
    assert response is not None and response.status == 200
    assert await page.title() == "inside"


async def test_geolocation_and_permissions(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/page")
    granted = await call(state.grant_permissions, engine, permissions=["geolocation"])
    assert granted["origin"] == server.url
    await call(emulation.setting_routes["geolocation"], engine, latitude=48.85, longitude=2.35)
    position = await page.evaluate(
        "new Promise((ok, no) => navigator.geolocation.getCurrentPosition("
        "(p) => ok([p.coords.latitude, p.coords.longitude]), (e) => no(e.message)))"
    )
    assert position == [48.85, 2.35]
    with pytest.raises(ControlError):
        await call(emulation.setting_routes["geolocation"], engine, latitude=123, longitude=0)
