"""Local fixture sites the browser visits: a small shop, a form, and a page embedding a cross-origin panel.

``FixtureSites`` serves the main site on one port and the embedded panel on a second port, so the iframe is
genuinely cross-origin.
"""

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

from tests.support.asgi_thread import ThreadedServer

PRODUCTS = {
    "blue": ("Blue Widget", "42.00"),
    "red": ("Red Gadget", "17.50"),
    "green": ("Green Gizmo", "8.25"),
}


CAREER_COMPANY = "Fixture Careers Ltd"
CAREER_TITLES = (
    "Backend Engineer",
    "Frontend Engineer",
    "Data Analyst",
    "Product Manager",
    "QA Engineer",
    "Site Reliability Engineer",
    "UX Designer",
    "Technical Writer",
    "Support Specialist",
    "Sales Engineer",
    "Security Engineer",
    "ML Engineer",
    "Office Manager",
    "Recruiter",
)
CAREER_CITIES = ("Berlin", "Lisbon", "Remote")


def career_records() -> list[dict[str, str]]:
    """Ground truth of the careers board: 14 vacancies, each with its own detail page (URL path included)."""
    return [
        {
            "title": title,
            "path": f"/board/job/{n}",
            "location": CAREER_CITIES[n % 3],
            "employment": "Part-time" if n % 4 == 0 else "Full-time",
            "datePosted": f"2026-10-{n:02d}",
        }
        for n, title in enumerate(CAREER_TITLES, start=1)
    ]


def page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        "<style>body{font:18px sans-serif;margin:40px} .big{font-size:48px}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


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


BIG_PAGE_ROWS = 50000


def big_page() -> HTMLResponse:
    """About 3 MB of HTML: a catalogue dump that must be capped and saved to a file, never shown whole."""
    rows = "".join(
        f"<tr><td>Part {n}</td><td>SKU-{n:06d}</td><td>{n % 97}.50 EUR</td></tr>" for n in range(BIG_PAGE_ROWS)
    )
    return page("Parts catalogue (full dump)", f"<table>{rows}</table>")


def shop_app(state: ShopState, panel_url: str) -> Starlette:
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

    async def prices(request: Request) -> Response:
        return JSONResponse({key: {"name": name, "price": price} for key, (name, price) in PRODUCTS.items()})

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

    return Starlette(
        routes=[
            Route("/", index),
            Route("/product/{key}", product),
            Route("/cart/add", cart_add, methods=["POST"]),
            Route("/cart", cart),
            Route("/checkout", checkout),
            Route("/order", order, methods=["POST"]),
            Route("/form", contact),
            Route("/form", contact_sent, methods=["POST"]),
            Route("/jobs", with_panel),
            Route("/careers", careers),
            Route("/colour", colour),
            Route("/big", big),
            Route("/prices.json", prices),
            Route("/with-pixel", with_pixel),
            Route("/pixel.gif", pixel),
            Route("/lazy", lazy),
            Route("/shell/{n}", shell),
            Route("/lazy/item/{n}", lazy_item),
            Route("/slow-list", slow_list),
            Route("/slow-list/item/{n}", slow_item),
            Route("/catalog", catalog),
            Route("/catalog/item/{n:int}", catalog_page),
        ],
        middleware=[Middleware(HitLog, state=state)],
    )


class HitLog(BaseHTTPMiddleware):
    def __init__(self, app: ASGIApp, state: ShopState) -> None:
        super().__init__(app)
        self._state = state

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        self._state.hits.append((request.headers.get("host", ""), request.url.path))
        return await call_next(request)


PANEL_JOBS = 24
LAZY_ITEMS, LAZY_BATCH = 60, 20


def lazy_list() -> HTMLResponse:
    """A list that grows by 20 items each time the reader scrolls to its end, up to 60; item 1 is linked twice."""
    script = f"""
<script>
let shown = 0; let busy = false;
function more() {{
  const list = document.getElementById('items');
  for (let i = 0; i < {LAZY_BATCH} && shown < {LAZY_ITEMS}; i++) {{
    shown++;
    const li = document.createElement('li'); li.style.height = '60px';
    li.innerHTML = '<a href="/lazy/item/' + shown + '">Lazy item ' + shown + '</a>';
    list.appendChild(li);
  }}
}}
more();
window.addEventListener('scroll', () => {{
  if (busy || window.innerHeight + window.scrollY < document.body.scrollHeight - 100) return;
  busy = true; setTimeout(() => {{ more(); busy = false; }}, 150);
}});
</script>"""
    return page("Lazy list", f'<ul id="items"></ul><p>Back to <a href="/lazy/item/1">the first item</a>.</p>{script}')


SLOW_LIST_ITEMS, SLOW_LIST_FEATURED, SLOW_LIST_DELAY_MS = 14, 2, 2000


def slow_list_page() -> HTMLResponse:
    """A listing that shows 2 featured items of 14 and a few site links; once scrolled to its end it loads the
    other 12 slowly (2 s, well past find_links' 0.6 s scroll round), so find_links' first scan sees 2 of 14."""
    item = "'<li><a href=\"/slow-list/item/' + n + '\">Slow item ' + n + '</a></li>'"
    script = f"""
<script>
let requested = false;
window.addEventListener('scroll', () => {{
  if (requested || window.innerHeight + window.scrollY < document.body.scrollHeight - 100) return;
  requested = true;
  setTimeout(() => {{
    let html = '';
    for (let n = {SLOW_LIST_FEATURED + 1}; n <= {SLOW_LIST_ITEMS}; n++) html += {item};
    document.getElementById('items').insertAdjacentHTML('beforeend', html);
  }}, {SLOW_LIST_DELAY_MS});
}});
</script>"""
    featured = "".join(
        f'<li><a href="/slow-list/item/{n}">Slow item {n}</a></li>' for n in range(1, SLOW_LIST_FEATURED + 1)
    )
    return page(
        "Slow listing",
        '<p><a href="/">Shop</a> · <a href="/catalog">Catalog</a> · <a href="/form">Contact</a></p>'
        f'<ul id="items">{featured}</ul><div style="height:2500px">More items load as you scroll.</div>{script}',
    )


def catalog_item(number: int) -> HTMLResponse:
    product = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": f"Catalog item {number}",
        "sku": f"CAT-{number:03d}",
        "offers": {"@type": "Offer", "price": f"{number}.99", "priceCurrency": "EUR"},
    }
    description = " ".join(f"Item {number} is a sturdy part made for long service." for _ in range(6))
    return HTMLResponse(
        f"<!doctype html><html><head><title>Catalog item {number}</title>"
        f'<script type="application/ld+json">{json.dumps(product)}</script></head>'
        f"<body><h1>Catalog item {number}</h1><p>Price: {number}.99 EUR</p><p>{description}</p>"
        '<p><a href="/catalog">Back to the catalog</a></p></body></html>'
    )


def panel_app() -> Starlette:
    async def panel(request: Request) -> Response:
        jobs = "".join(f'<li><a href="/job/{n}">Engineer {n}</a></li>' for n in range(1, PANEL_JOBS + 1))
        return page("Panel", f"<ul>{jobs}</ul>")

    async def job(request: Request) -> Response:
        number = request.path_params["n"]
        return page(f"Engineer {number}", f"<p>Engineer {number} builds things. Location: Remote.</p>")

    async def detail(request: Request) -> Response:
        number = request.path_params["n"]
        return page(f"Detail {number}", f"<p>Detail {number}: weight {number} kg, made of oak.</p>")

    records = {r["path"]: r for r in career_records()}

    async def board(request: Request) -> Response:
        rows = "".join(f'<li><a href="{r["path"]}">{html.escape(r["title"])}</a></li>' for r in records.values())
        host = request.query_params.get("host")
        if host:  # an embed script that routes clicks itself: every href points at the host page
            rows += (
                "<script>for (const a of document.querySelectorAll('a')) { a.dataset.href = a.getAttribute('href');"
                f" a.href = {json.dumps(host)} + '#vacancy'; a.onclick = e => {{ e.preventDefault();"
                " location.href = a.dataset.href; }; }</script>"
            )
        return page("Jobs board", f"<ul>{rows}</ul>")

    async def vacancy(request: Request) -> Response:
        record = records.get(request.url.path)
        if record is None:
            return page("Not found", "<p>No such vacancy.</p>")
        about = (
            f"As our {record['title']} you join a small team that ships every week, owns its work from the first "
            "sketch to production and reviews its peers' changes."
        )
        jsonld = {
            "@context": "https://schema.org",
            "@type": "JobPosting",
            "title": record["title"],
            "datePosted": record["datePosted"],
            "employmentType": record["employment"].upper().replace("-", "_"),  # FULL_TIME, as schema.org does
            "jobLocation": {"@type": "Place", "address": {"addressLocality": record["location"]}},
            "hiringOrganization": {"@type": "Organization", "name": CAREER_COMPANY},
        }
        return page(
            record["title"],
            f'<script type="application/ld+json">{json.dumps(jsonld)}</script>'
            f"<p>Location: {html.escape(record['location'])}</p><p>Employment: {record['employment']}</p>"
            f"<p>{html.escape(about)}</p><p>Apply by email to the hiring team.</p>",
        )

    return Starlette(
        routes=[
            Route("/panel", panel),
            Route("/job/{n}", job),
            Route("/detail/{n}", detail),
            Route("/board", board),
            Route("/board/job/{n}", vacancy),
        ]
    )


class FixtureSites:
    """The shop on one port, the cross-origin panel on another."""

    def __init__(self) -> None:
        self.state = ShopState()
        self._panel = ThreadedServer(panel_app())
        self._shop = ThreadedServer(shop_app(self.state, self._panel.url))

    @property
    def url(self) -> str:
        return self._shop.url

    @property
    def port(self) -> int:
        return self._shop.port

    @property
    def panel_port(self) -> int:
        return self._panel.port

    @property
    def panel_url(self) -> str:
        return self._panel.url

    def __enter__(self) -> FixtureSites:
        self._panel.start()
        self._shop.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._shop.close()
        self._panel.close()
