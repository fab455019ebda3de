"""The fixture shop of the cached-script tests and benchmark (spec §27.3): a search form and a result page whose
layout can change (``layout = "v2"`` moves the form one level down, so a saved script's XPaths no longer match)."""

from __future__ import annotations

import html
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

PRICES = {"Blue Widget": "42.00", "Red Gadget": "17.50", "Green Gizmo": "8.25"}
SEARCH_BOX = "Product name box"
SEARCH_BUTTON = "Find price"


@dataclass
class ShopLayout:
    layout: str = "v1"


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>")


def cached_shop_app(state: ShopLayout) -> Starlette:
    async def index(_: Request) -> HTMLResponse:
        form = (
            f'<form action="/search"><input name="q" aria-label="{SEARCH_BOX}" title="{SEARCH_BOX}">'
            f"<button>{SEARCH_BUTTON}</button></form>"
        )
        if state.layout == "v2":
            form = f"<div><section><p>New look!</p>{form}</section></div>"
        return _page("Shop", f"<h2>Price finder</h2>{form}")

    async def search(request: Request) -> HTMLResponse:
        name = request.query_params.get("q", "").strip()
        price = PRICES.get(name)
        if price is None:
            return _page("Not found", "<p>No such product.</p>")
        body = f'<h1 class="name">{html.escape(name)}</h1><p>Price: <span class="price">{price}</span> EUR</p>'
        return _page(name, body)

    return Starlette(routes=[Route("/", index), Route("/search", search)])
