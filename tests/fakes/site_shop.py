"""The fixture shop: products, a cart and checkout, a contact form, and the pages the agent tests visit (a page
framing the panel site, lazy and slow lists, a catalog, a huge dump ...). Every request is logged in its state."""

from __future__ import annotations

import html
import itertools
import json
from dataclasses import dataclass, field
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from tests.fakes.site_pages import big_page, catalog_item, lazy_list, page, slow_list_page
from tests.fakes.site_panel import CAREER_COMPANY

PRODUCTS = {
    "blue": ("Blue Widget", "42.00"),
    "red": ("Red Gadget", "17.50"),
    "green": ("Green Gizmo", "8.25"),
}


@dataclass
class ShopState:
    carts: dict[str, list[str]] = field(default_factory=dict)
    orders: list[dict[str, str]] = field(default_factory=list)
    submissions: list[dict[str, str]] = field(default_factory=list)
    order_numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1001))
    hits: list[tuple[str, str]] = field(default_factory=list)
    """(Host header, path) of every request the shop served."""

    def hosts_of(self, path: str) -> list[str]:
        return [host for host, hit in self.hits if hit == path]


def shop_app(state: ShopState, panel_url: str) -> Starlette:
    """The shop's pages; ``panel_url`` is where the cross-origin panel site is served."""
    return Starlette(
        routes=[*_store_routes(state), *_page_routes(panel_url)],
        middleware=[Middleware(HitLog, state=state)],
    )


def _store_routes(state: ShopState) -> list[Route]:
    def cart_id(request: Request) -> str:
        return request.cookies.get("cart", "anonymous")

    async def index(request: Request) -> Response:
        links = "".join(
            f'<li><a href="/product/{key}">{html.escape(name)}</a></li>' for key, (name, _) in PRODUCTS.items()
        )
        return page(
            "Fixture Shop",
            f"<p>Welcome to the offline test shop.</p><ul>{links}</ul>"
            '<p><a href="/form">Contact us</a> · <a href="/cart">View cart</a></p>',
        )

    async def product(request: Request) -> Response:
        key = request.path_params["key"]
        if key not in PRODUCTS:
            return page("Not found", "<p>No such product.</p>")
        name, price = PRODUCTS[key]
        form = (
            f'<form method="post" action="/cart/add"><input type="hidden" name="product" value="{key}">'
            '<button type="submit">Add to cart</button></form>'
        )
        return page(name, f'<p class="price">Price: {price} EUR</p>{form}<p><a href="/">Back to shop</a></p>')

    async def cart_add(request: Request) -> Response:
        form = await request.form()
        key = str(form.get("product", ""))
        response = RedirectResponse("/cart", status_code=303)
        cid = request.cookies.get("cart") or f"c{len(state.carts) + 1}"
        state.carts.setdefault(cid, []).append(key)
        response.set_cookie("cart", cid)
        return response

    async def cart(request: Request) -> Response:
        items = state.carts.get(cart_id(request), [])
        rows = "".join(f"<li>{html.escape(PRODUCTS[k][0])} — {PRODUCTS[k][1]} EUR</li>" for k in items)
        body = f"<ul>{rows}</ul>" if items else "<p>Your cart is empty.</p>"
        if items:
            body += '<p><a href="/checkout">Checkout</a></p>'
        return page("Your cart", body)

    async def checkout(request: Request) -> Response:
        return page(
            "Checkout",
            '<form method="post" action="/order">'
            '<label>Full name <input name="name" placeholder="Full name"></label><br>'
            '<label>Email <input name="email" placeholder="Email"></label><br>'
            '<button type="submit">Place order</button></form>',
        )

    async def order(request: Request) -> Response:
        form = await request.form()
        items = state.carts.pop(cart_id(request), [])
        total = sum(float(PRODUCTS[k][1]) for k in items)
        number = str(next(state.order_numbers))
        names = ", ".join(PRODUCTS[k][0] for k in items)
        state.orders.append({"number": number, "name": str(form.get("name", "")), "items": names})
        return page(
            "Order confirmed",
            f'<p class="big">Order #{number} confirmed</p><p>Thank you, {html.escape(str(form.get("name", "")))}.'
            f" Items: {html.escape(names)}. Total: {total:.2f} EUR.</p>",
        )

    async def contact(request: Request) -> Response:
        return page(
            "Contact us",
            '<form method="post" action="/form">'
            '<label>Your name <input name="name" placeholder="Your name"></label><br>'
            '<label>Topic <select name="topic"><option>General</option><option>Billing</option>'
            "<option>Support</option></select></label><br>"
            '<label>Message <textarea name="message" placeholder="Message"></textarea></label><br>'
            '<button type="submit">Send message</button></form>',
        )

    async def contact_sent(request: Request) -> Response:
        form = await request.form()
        entry = {key: str(form.get(key, "")) for key in ("name", "topic", "message")}
        state.submissions.append(entry)
        return page(
            "Message sent", f"<p>Thanks {html.escape(entry['name'])}, we got your {entry['topic']} message.</p>"
        )

    async def prices(request: Request) -> Response:
        return JSONResponse({key: {"name": name, "price": price} for key, (name, price) in PRODUCTS.items()})

    return [
        Route("/", index),
        Route("/product/{key}", product),
        Route("/cart/add", cart_add, methods=["POST"]),
        Route("/cart", cart),
        Route("/checkout", checkout),
        Route("/order", order, methods=["POST"]),
        Route("/form", contact),
        Route("/form", contact_sent, methods=["POST"]),
        Route("/prices.json", prices),
    ]


def _page_routes(panel_url: str) -> list[Route]:
    async def with_panel(request: Request) -> Response:
        source = panel_url
        if request.query_params.get("embed") == "localhost":  # another site: an out-of-process frame
            source = panel_url.replace("127.0.0.1", "localhost")
        return page(
            "Jobs board",
            f"<p>Open positions are listed in the panel below.</p>"
            f'<iframe src="{source}/panel" width="900" height="400" title="jobs panel"></iframe>',
        )

    async def big(request: Request) -> Response:
        return big_page()

    async def with_pixel(request: Request) -> Response:
        pixel = request.query_params.get("src", "")
        return page(
            "Pixel page", f'<p>A page with an image from elsewhere.</p><img src="{html.escape(pixel)}" alt="p">'
        )

    async def pixel(request: Request) -> Response:
        return Response(b"GIF89a", media_type="image/gif")

    async def lazy(request: Request) -> Response:
        return lazy_list()

    async def lazy_item(request: Request) -> Response:
        return page(f"Lazy item {request.path_params['n']}", "<p>One item of the lazy list.</p>")

    async def slow_list(request: Request) -> Response:
        return slow_list_page()

    async def slow_item(request: Request) -> Response:
        return page(f"Slow item {request.path_params['n']}", "<p>One item of the slow listing.</p>")

    async def catalog(request: Request) -> Response:
        count = int(request.query_params.get("n", "48"))
        items = "".join(f'<li><a href="/catalog/item/{n}">Catalog item {n}</a></li>' for n in range(1, count + 1))
        return page("Catalog", f"<ul>{items}</ul>")

    async def catalog_page(request: Request) -> Response:
        return catalog_item(int(request.path_params["n"]))

    async def shell(request: Request) -> Response:
        detail = panel_url.replace("127.0.0.1", "localhost") + f"/detail/{request.path_params['n']}"
        return page(
            "Product viewer",
            f'<p>Loading the details panel.</p><iframe src="{detail}" width="800" height="300"></iframe>',
        )

    async def careers(request: Request) -> Response:
        """The careers page embedding the board; ``?embed=rewritten`` has the board's embed script point every
        anchor at this page (keeping the real target in ``data-href``), ``?embed=late`` inserts the board 1.5 s
        after load."""
        board = f"{panel_url}/board"
        embed = request.query_params.get("embed")
        if embed == "rewritten":
            board += "?host=" + quote(str(request.url), safe="")
        frame = f'<iframe src="{board}" width="900" height="500" title="jobs board"></iframe>'
        if embed == "late":
            frame = (
                '<div id="board"></div><script>setTimeout(() => { document.getElementById("board").innerHTML = '
                f"{json.dumps(frame)}; }}, 1500);</script>"
            )
        return page(
            f"Careers at {CAREER_COMPANY}", f"<p>Our open vacancies are listed on the jobs board below.</p>{frame}"
        )

    async def colour(request: Request) -> Response:
        return HTMLResponse(
            "<!doctype html><html><head><title>Colour</title></head>"
            '<body style="margin:0;background:#ff00ff"><h1 style="font-size:120px">MAGENTA</h1></body></html>'
        )

    return [
        Route("/jobs", with_panel),
        Route("/careers", careers),
        Route("/colour", colour),
        Route("/big", big),
        Route("/with-pixel", with_pixel),
        Route("/pixel.gif", pixel),
        Route("/lazy", lazy),
        Route("/shell/{n}", shell),
        Route("/lazy/item/{n}", lazy_item),
        Route("/slow-list", slow_list),
        Route("/slow-list/item/{n}", slow_item),
        Route("/catalog", catalog),
        Route("/catalog/item/{n:int}", catalog_page),
    ]


class HitLog(BaseHTTPMiddleware):
    """Logs the Host header and path of every request into the shop's state."""

    def __init__(self, app: ASGIApp, state: ShopState) -> None:
        super().__init__(app)
        self._state = state

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        self._state.hits.append((request.headers.get("host", ""), request.url.path))
        return await call_next(request)
