"""Pages of the fixture sites that are built in code: the common page frame, a huge catalogue dump, lists that grow
as the reader scrolls, and catalog items carrying JSON-LD."""

from __future__ import annotations

import html
import json

from starlette.responses import HTMLResponse


def page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        "<style>body{font:18px sans-serif;margin:40px} .big{font-size:48px}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


BIG_PAGE_ROWS = 50000


def big_page() -> HTMLResponse:
    """About 3 MB of HTML: a catalogue dump that must be capped and saved to a file, never shown whole."""
    rows = "".join(
        f"<tr><td>Part {n}</td><td>SKU-{n:06d}</td><td>{n % 97}.50 EUR</td></tr>" for n in range(BIG_PAGE_ROWS)
    )
    return page("Parts catalogue (full dump)", f"<table>{rows}</table>")


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
